package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"lab/capture"
	"lab/internal/fakellama"
	"lab/metrics"
)

// lab run --backend llamacpp through lab proxy --render llamacpp against a llama-server (a fake
// one: a slot with a prefix cache, the Qwen3 template, its tokens the bytes) that closes its
// connections after each streamed answer and ends each stream a moment after data: [DONE], by
// when the run's client, which stops reading at [DONE], has gone. Every row of the capture
// equals the run's own on prompt, cached and expected cached tokens, divergence and re-read: no
// whole answer read as a client that disconnected, no rendering lost to a closed connection, the
// cache fill and the slot erase between the sessions modelled as the run models them.
func TestProxyCapturesALlamaCppRunAsTheRunRecordsIt(t *testing.T) {
	up := fakellama.Start(t)
	up.HoldAfterDone = 20 * time.Millisecond
	cache := t.TempDir()
	t.Setenv("LAB_CACHE", cache)
	results := filepath.Join(t.TempDir(), "results")
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, ResultsDir: results, RunID: "cap",
		Label: capture.DefaultLabel, Render: capture.RenderLlamaCpp, CacheDir: cache})
	code, stdout, stderr := runLab(t, "run", "--backend", "llamacpp", "--base-url", "http://"+addr,
		"--scenario", "midnight", "--arm", "spec,date-in-system-prompt", "--results", results, "--run-id", "run", "--quiet")
	if code != 0 {
		t.Fatalf("lab run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if err, _, perr := stop(); err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, perr)
	}
	_, runRows, err := metrics.ReadRun(runFolder(t, results, "run"))
	if err != nil {
		t.Fatal(err)
	}
	_, capRows, err := metrics.ReadRun(metrics.RunDir(results, "cap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(capRows) != len(runRows) || len(runRows) < 90 {
		t.Fatalf("the capture has %d rows, the run %d; want the same, two sessions of midnight", len(capRows), len(runRows))
	}
	cols := func(s *metrics.Sample) string {
		return fmt.Sprintf("prompt %d cached %v (%s) expected %v/%v divergence %v %q reread %v [%v %v %v %v %v %v %v %v] completion %v turn %d step %d error %q",
			s.PromptTokens, deref(s.CachedTokens), s.CachedSource, deref(s.ExpectedCachedTokens), s.ExpectedUnknown, deref(s.DivergenceToken), s.DivergenceSegment,
			deref(s.RereadTokens), deref(s.RereadSystemTokens), deref(s.RereadToolsTokens), deref(s.RereadMessageTokens), deref(s.RereadToolResultTokens),
			deref(s.RereadReasoningTokens), deref(s.RereadNoteTokens), deref(s.RereadOtherTokens), deref(s.RereadUnattributedTokens),
			deref(s.CompletionTokens), s.Turn, s.Step, s.Error)
	}
	segments := map[string]bool{}
	for i := range runRows {
		r, c := &runRows[i], &capRows[i]
		if r.ExpectedUnknown || r.CachedTokens == nil || r.Error != "" {
			t.Fatalf("run request %d: expected_unknown %v, cached %v, error %q; want a measured, attributed row", i, r.ExpectedUnknown, deref(r.CachedTokens), r.Error)
		}
		if got, want := cols(c), cols(r); got != want {
			t.Errorf("request %d (%s #%d):\ncapture %s\nrun     %s\nwarnings %q", i, r.Arm, r.RequestIndex, got, want, c.Warnings)
		}
		segments[r.DivergenceSegment] = true
	}
	// The second session's first request follows the slot erase: nothing expected cached.
	if s := runRows[len(runRows)/2]; s.RequestIndex != 0 || deref(s.ExpectedCachedTokens) != int64(0) {
		t.Errorf("run request %d (#%d): expected %v; want 0 after the slot erase", len(runRows)/2, s.RequestIndex, deref(s.ExpectedCachedTokens))
	}
	if !segments["system"] {
		t.Errorf("divergence segments %v; want system among them", segments)
	}
}
