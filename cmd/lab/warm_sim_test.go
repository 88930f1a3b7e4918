package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// lab run --backend sim --warm: the sim keeps its cache from session to session, and so does
// the lab's expected cached tokens. Under an arm that shuffles the tool order per session, the
// second session's first request finds the first session's prefix up to the tool list, as the
// lab expected, and the report says so; without --warm it starts cold.
func TestRunSimWarmSessions(t *testing.T) {
	needTokenizer(t)
	t.Setenv("TMPDIR", "/tmp")
	dir := t.TempDir()
	armsFile := filepath.Join(dir, "arms.yaml")
	if err := os.WriteFile(armsFile, []byte("arms:\n  - name: shuffled\n    description: the tool list in an order of its own per session\n    practices:\n      - tool_order: {order: session}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, warm := range []bool{true, false} {
		id := map[bool]string{true: "warm", false: "cold"}[warm]
		args := []string{"run", "--backend", "sim", "--scenario", "midnight", "--arms", armsFile, "--arm", "shuffled", "--repeat", "2",
			"--results", dir, "--run-id", id, "--quiet"}
		if warm {
			args = append(args, "--warm")
		}
		code, out, errOut := runLab(t, args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", id, code, out, errOut)
		}
		man, samples, err := metrics.ReadRun(metrics.RunDir(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: metrics.CacheWarm, false: metrics.CacheColdVerified}[warm]; man.CacheState != want {
			t.Errorf("%s: cache_state %q; want %q", id, man.CacheState, want)
		}
		var second *metrics.Sample
		for i := range samples {
			s := &samples[i]
			if s.ExpectedCachedTokens == nil || s.CachedTokens == nil || *s.CachedTokens != *s.ExpectedCachedTokens {
				t.Errorf("%s: %d/%d: cached %v expected %v; want equal", id, s.Repetition, s.RequestIndex, deref(s.CachedTokens), deref(s.ExpectedCachedTokens))
			}
			if s.Repetition == 2 && s.RequestIndex == 0 {
				second = s
			}
		}
		if second == nil {
			t.Fatalf("%s: no first request of repetition 2", id)
		}
		report, err := os.ReadFile(filepath.Join(metrics.RunDir(dir, id), "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !warm {
			if *second.CachedTokens != 0 || second.DivergenceSegment != "" || strings.Contains(string(report), "Warm starts") {
				t.Errorf("cold: repetition 2's first request cached %d, divergence %q; want 0 and none, and no warm line", *second.CachedTokens, second.DivergenceSegment)
			}
			continue
		}
		if *second.CachedTokens <= 0 || second.DivergenceSegment != "tools" {
			t.Fatalf("warm: repetition 2's first request cached %d, divergence %q; want > 0 and tools", *second.CachedTokens, second.DivergenceSegment)
		}
		t.Logf("warm: repetition 2's first request: %d of %d prompt tokens cached, diverging at %s", *second.CachedTokens, second.PromptTokens, second.DivergenceSegment)
		text := strings.Join(strings.Fields(string(report)), " ")
		for _, want := range []string{"1 of 2 sessions' first requests were served from an earlier session's cache, ", " over the 2 whose start it knew."} {
			if !strings.Contains(text, want) {
				t.Errorf("warm: report.md lacks %q", want)
			}
		}
	}
}
