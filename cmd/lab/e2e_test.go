package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// realServers are the local servers the lab sets up itself, each with the source its cached
// tokens come from and how close they must be to the expected ones on every request after the
// first: Ollama's cache-slot log (within 5 %), llama-server's timings in the answer (within 1 %).
var realServers = []struct {
	backend string
	source  string
	within  float64
}{
	{"ollama", "server_log", 0.05},
	{"llamacpp", "response", 0.01},
}

// TestMidnightOnTheRealServer is the walking skeleton's end-to-end test: `lab run` on each real
// local server the lab sets up (Ollama built from its Go module, llama-server from Debian's
// unstable suite, both serving the synthetic Qwen3 model; prepared once and cached) with the
// midnight scenario and both arms. Skipped with -short.
func TestMidnightOnTheRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test on the real local server; skipped with -short")
	}
	for _, srv := range realServers {
		t.Run(srv.backend, func(t *testing.T) { midnightOn(t, srv.backend, srv.source, srv.within) })
	}
}

// midnightOn runs midnight on one real server and checks its rows.
func midnightOn(t *testing.T, backend, source string, within float64) {
	results := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", "--backend", backend, "--scenario", "midnight", "--arm", "spec,date-in-system-prompt", "--results", results, "--run-id", "e2e", "--save-requests", "--png"}, &out, &errb)
	t.Logf("stdout:\n%s", out.String())
	if code != 0 {
		t.Fatalf("lab run exited %d\nstderr:\n%s", code, errb.String())
	}
	dir := metrics.RunDir(results, "e2e")
	man, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !man.Complete || man.ServerVersion == "" {
		t.Fatalf("manifest: complete %v, server version %q", man.Complete, man.ServerVersion)
	}
	for _, f := range []string{"report.md", "plots/midnight-cached-share.svg", "plots/midnight-cached-share.png", metrics.PartRequestsFile(metrics.Shard{})} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}

	byArm := map[string][]metrics.Sample{}
	for _, s := range samples {
		byArm[s.Arm] = append(byArm[s.Arm], s)
	}
	if len(byArm["spec"]) < 30 || len(byArm["spec"]) != len(byArm["date-in-system-prompt"]) {
		t.Fatalf("requests per arm: spec %d, date %d; want the same, at least 30", len(byArm["spec"]), len(byArm["date-in-system-prompt"]))
	}
	for arm, ss := range byArm {
		maxPrompt := int64(0)
		for i, s := range ss {
			maxPrompt = max(maxPrompt, s.PromptTokens)
			if s.Error != "" {
				t.Errorf("%s request %d: %s", arm, i, s.Error)
			}
			if s.Retries != 0 {
				t.Errorf("%s request %d: sent again %d times", arm, i, s.Retries)
			}
			if s.CachedTokens == nil || s.CachedSource != source {
				t.Errorf("%s request %d: cached tokens %v from %q; want a figure from %s", arm, i, s.CachedTokens, s.CachedSource, source)
				continue
			}
			if s.ExpectedCachedTokens == nil {
				t.Errorf("%s request %d: expected cached tokens unknown", arm, i)
				continue
			}
			if c, e := float64(*s.CachedTokens), float64(*s.ExpectedCachedTokens); i > 0 && (c < (1-within)*e || c > (1+within)*e+1) {
				t.Errorf("%s request %d: cached %d, expected %d; want within %.0f%%", arm, i, *s.CachedTokens, *s.ExpectedCachedTokens, 100*within)
			}
		}
		if maxPrompt < 15000 {
			t.Errorf("%s: the session grows to %d prompt tokens; want past 15,000", arm, maxPrompt)
		}
	}

	// The first request after midnight: the first request of the turn whose user message
	// carries the new date (found from the spec arm's saved requests).
	mid := firstAfterMidnight(t, filepath.Join(dir, metrics.PartRequestsFile(metrics.Shard{})))
	spec, date := byArm["spec"][mid], byArm["date-in-system-prompt"][mid]
	t.Logf("first request after midnight (index %d): spec cached %d of %d (diverged in %q), date arm cached %d of %d (diverged in %q)",
		mid, *spec.CachedTokens, spec.PromptTokens, spec.DivergenceSegment, *date.CachedTokens, date.PromptTokens, date.DivergenceSegment)
	if share := float64(*date.CachedTokens) / float64(date.PromptTokens); share >= 0.10 {
		t.Errorf("date-in-system-prompt reuses %.1f%% after midnight; want under 10%%", 100*share)
	}
	if date.DivergenceSegment != "system" {
		t.Errorf("date-in-system-prompt diverged in %q; want system", date.DivergenceSegment)
	}
	if spec.DivergenceSegment == "system" || spec.DivergenceSegment == "tools" || spec.DivergenceSegment == "" {
		t.Errorf("spec diverged in %q; want after the system prompt and tools", spec.DivergenceSegment)
	}
	if *spec.CachedTokens < 10**date.CachedTokens+1000 {
		t.Errorf("spec reused %d tokens after midnight, date arm %d; want spec far ahead", *spec.CachedTokens, *date.CachedTokens)
	}
}

// firstAfterMidnight returns the request index, in the spec arm, of the first request whose
// messages carry a second date note.
func firstAfterMidnight(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Arm          string          `json:"arm"`
			RequestIndex int             `json:"request_index"`
			Body         json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("requests.jsonl: %v", err)
		}
		if r.Arm == "spec" && strings.Count(string(r.Body), "Today's date is") >= 2 {
			return r.RequestIndex
		}
	}
	t.Fatal("no spec request carries a second date note")
	return 0
}
