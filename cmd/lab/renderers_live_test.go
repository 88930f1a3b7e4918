package main

import (
	"strings"
	"testing"
	"time"

	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
)

// liveRendererAlias are the renderers TestRenderersRunLive leaves out to stay short: each is
// another's renderer with one option changed (Ollama v0.17.4 model/renderers/renderer.go:
// olmo3.1 is olmo3's Olmo3Renderer with the extended system message, qwen3-vl-thinking and
// qwen3-vl-instruct qwen3.5's Qwen3VLRenderer with and without thinking); make families
// measures them all.
var liveRendererAlias = map[string]bool{"olmo3.1": true, "qwen3-vl-thinking": true, "qwen3-vl-instruct": true}

// TestRenderersRunLive runs midnight's first two steps and its answer (spec arm, 3 requests)
// with lab run --renderer on every built-in renderer of Ollama's that can run the lab's
// sessions, but the families' own (qwen3.5, deepseek3.1 and functiongemma, which the other live
// tests run), each on one Ollama the test starts in a cache of its own (lab server start), each
// renderer's model registered beside the others. It checks the manifest (the renderer, the
// family the table serves it with, the chat_template and token_counter, a stand-in said where
// the model is not the renderer's own) and every row: the cached tokens are the server log's,
// the expected ones known and equal to them. Skipped with -short and when the ollama build or
// a family's model are not cached (lab server prepare --renderer all writes them).
func TestRenderersRunLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real ollama server")
	}
	cache := familyCache(t, "ollama", gguf.Qwen3)
	code, out, errOut := runLab(t, "server", "start", "--server", "ollama", "--cache", cache)
	if code != 0 {
		t.Fatalf("lab server start: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	defer runLab(t, "server", "stop", "--cache", cache)
	sc := midnightFirstSteps(t, 2)
	for _, format := range localserver.OllamaRenderers() {
		if format.NoSessions != "" || format.IsFamilyFormat() || liveRendererAlias[format.Renderer] {
			continue
		}
		t.Run(format.Renderer, func(t *testing.T) {
			start := time.Now()
			results := t.TempDir()
			code, out, errOut := runLab(t, "run", "--backend", "ollama", "--renderer", format.Renderer, "--cache", cache,
				"--scenario", sc, "--arm", "spec", "--results", results, "--run-id", "r", "--quiet")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
			man, samples, err := metrics.ReadRun(metrics.RunDir(results, "r"))
			if err != nil {
				t.Fatal(err)
			}
			set := man.Settings
			if set["renderer"] != format.Renderer || set[settingFamily] != string(format.Family.OrQwen3()) || set[settingChatTemplate] != format.Template || set[settingTokenCounter] != format.Tokens {
				t.Errorf("manifest renderer %q, family %q, chat_template %q, token_counter %q; want %s on %s with the table's texts",
					set["renderer"], set[settingFamily], set[settingChatTemplate], set[settingTokenCounter], format.Renderer, format.Family)
			}
			if standIn := format.Family.OrQwen3() == gguf.Qwen3 && !strings.HasPrefix(format.Renderer, "qwen3"); standIn != strings.Contains(set[settingChatTemplate], "stand-in") {
				t.Errorf("chat_template %q; want a stand-in said exactly for another model's renderer on the Qwen3 model", set[settingChatTemplate])
			}
			if man.Model != format.ModelName() || metrics.SetupOf(man).Settings["renderer"] != format.Renderer {
				t.Errorf("model %q, setup %v; want %s and the renderer in the setup", man.Model, metrics.SetupOf(man).Settings, format.ModelName())
			}
			if len(samples) != 3 {
				t.Errorf("%d rows; want the 3 requests", len(samples))
			}
			for i, s := range samples {
				if s.Error != "" || s.CachedTokens == nil || s.ExpectedCachedTokens == nil || s.CachedSource != "server_log" {
					t.Errorf("request %d: error %q, cached %v from %q, expected %v; want both figures, cached from the server log", i, s.Error, s.CachedTokens, s.CachedSource, s.ExpectedCachedTokens)
					continue
				}
				t.Logf("request %d: prompt %d, cached %d, expected %d", i, s.PromptTokens, *s.CachedTokens, *s.ExpectedCachedTokens)
				if *s.CachedTokens != *s.ExpectedCachedTokens {
					t.Errorf("request %d: cached %d, expected %d; want equal", i, *s.CachedTokens, *s.ExpectedCachedTokens)
				}
			}
			t.Logf("%s: %d requests in %s", format.Renderer, len(samples), time.Since(start).Round(time.Millisecond))
		})
	}
}
