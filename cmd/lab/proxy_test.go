package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/metrics"
)

// startProxyCmd runs `lab proxy` in the background and returns its address and a function that
// stops it (as Ctrl-C does) and returns its exit code and output.
func startProxyCmd(t *testing.T, o *proxyOptions) (addr string, stop func() (error, string, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	o.ready = func(a string) { ready <- a }
	var out, errb bytes.Buffer
	s := &streams{out: &out, err: &errb, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() { done <- runProxy(ctx, s, o) }()
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("lab proxy stopped: %v\n%s", err, errb.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("lab proxy did not start")
	}
	return addr, func() (error, string, string) {
		cancel()
		err := <-done
		return err, out.String(), errb.String()
	}
}

// The done-when in miniature: lab run --backend openai through lab proxy against a fake
// OpenAI upstream. The proxy's rows carry the same prompt, cached, completion and cache-write
// figures per request as the run's own rows; lab report and lab check --run read the capture
// folder as a run folder.
func TestProxyCapturesALabRun(t *testing.T) {
	f := &fakeOpenAI{}
	up := httptest.NewServer(f)
	defer up.Close()
	results := t.TempDir()
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, ResultsDir: results, RunID: "cap", Label: "lab-harness"})
	code, stdout, stderr := runLab(t, "run", "--backend", "openai", "--base-url", "http://"+addr+"/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--repeat", "2", "--results", results, "--run-id", "run", "--quiet")
	if code != 0 {
		t.Fatalf("lab run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	err, pout, perr := stop()
	if err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, perr)
	}
	capDir := metrics.RunDir(results, "cap")
	if !strings.Contains(pout, capDir) {
		t.Errorf("lab proxy's stdout does not name its folder %s: %s", capDir, pout)
	}
	_, runRows, err := metrics.ReadRun(runFolder(t, results, "run"))
	if err != nil {
		t.Fatal(err)
	}
	man, capRows, err := metrics.ReadRun(capDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(capRows) != len(runRows) || len(runRows) == 0 {
		t.Fatalf("the capture has %d rows, the run %d", len(capRows), len(runRows))
	}
	if !man.Complete || man.Backend != "proxy:openai-chat" || man.Arms[0] != "lab-harness" {
		t.Errorf("capture manifest: complete %v backend %q arms %v", man.Complete, man.Backend, man.Arms)
	}
	if got := strings.Count(perr, " request "); got != len(runRows) {
		t.Errorf("lab proxy printed %d request lines; want %d", got, len(runRows))
	}
	conversations := map[string]bool{}
	for i := range runRows {
		r, c := runRows[i], capRows[i]
		conversations[c.Scenario] = true
		if c.PromptTokens != r.PromptTokens || !eq(c.CachedTokens, r.CachedTokens) || c.CompletionTokens != r.CompletionTokens ||
			!eq(c.CacheWriteTokens, r.CacheWriteTokens) || c.CachedSource != r.CachedSource || c.RereadTokens != r.RereadTokens {
			t.Errorf("request %d (rep %d #%d): capture prompt %d cached %v completion %d write %v; run %d %v %d %v",
				i, r.Repetition, r.RequestIndex, c.PromptTokens, deref(c.CachedTokens), c.CompletionTokens, deref(c.CacheWriteTokens),
				r.PromptTokens, deref(r.CachedTokens), r.CompletionTokens, deref(r.CacheWriteTokens))
		}
		if c.Turn != r.Turn || c.Step != r.Step || c.RequestIndex != r.RequestIndex {
			t.Errorf("request %d: capture request %d turn %d step %d, run request %d turn %d step %d", i, c.RequestIndex, c.Turn, c.Step, r.RequestIndex, r.Turn, r.Step)
		}
	}
	// Each repetition starts with its own nonce in the system prompt: a conversation of its own.
	if len(conversations) != 2 {
		t.Errorf("the capture found %d conversations in two sessions", len(conversations))
	}

	code, stdout, stderr = runLab(t, "report", capDir)
	if code != 0 {
		t.Fatalf("lab report on the capture: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(capDir, "report.md")); err != nil {
		t.Errorf("lab report wrote no report.md: %v", err)
	}
	check := filepath.Join(t.TempDir(), "check.yaml")
	os.WriteFile(check, []byte("expect:\n  - scenario: \"*\"\n    arm: lab-harness\n    min_cached_share: 0\n    from_request: 0\n"), 0o644)
	if code, stdout, stderr = runLab(t, "check", check, "--run", capDir); code != 0 {
		t.Errorf("lab check --run on the capture: exit %d\n%s\n%s", code, stdout, stderr)
	}
	os.WriteFile(check, []byte("expect:\n  - scenario: \"*\"\n    arm: lab-harness\n    min_cached_share: 1\n    from_request: 0\n"), 0o644)
	if code, _, _ = runLab(t, "check", check, "--run", capDir); code != exitFailed {
		t.Errorf("lab check --run with an expectation the capture fails: exit %d; want %d", code, exitFailed)
	}
}

// runFolder returns the run's folder in either results layout.
func runFolder(t *testing.T, results, id string) string {
	t.Helper()
	if d := metrics.RunDir(results, id); metrics.IsRunDir(d) {
		return d
	}
	return filepath.Join(results, id)
}

func eq(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// lab proxy refuses a listen address off loopback and bad flags, before it listens.
func TestProxyFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--listen", "0.0.0.0:8081", "--upstream", "http://127.0.0.1:9"}, "not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:9"}, "--listen and --upstream are required"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--render", "ollama"}, "needs --gguf"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--render", "vllm"}, "want ollama or llamacpp"},
	} {
		code, _, stderr := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, exitBadInput, tc.want)
		}
	}
}
