package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
)

// familyCache returns a cache folder for a live run of liveFamily on backend: links to the lab's
// cache's ollama build, llama.cpp, npm packages and models, but no shared servers' folders, so
// that the run starts servers of its own and leaves `lab server start`'s alone. It skips the
// test when the family's model or what the backend needs is not in the lab's cache.
func familyCache(t *testing.T, backend string, liveFamily gguf.Family) string {
	t.Helper()
	labCache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	if m, _ := filepath.Glob(filepath.Join(labCache, "models", "lab-"+string(liveFamily)+"-synth-*.gguf")); len(m) == 0 {
		t.Skipf("no %s model in %s (lab server prepare --family %s writes it)", liveFamily, labCache, liveFamily)
	}
	switch backend {
	case "ollama":
		bin, err := localserver.BinaryPath(localserver.DefaultBuildOptions(labCache))
		if err != nil {
			t.Skip(err)
		}
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("no cached ollama binary (lab server prepare builds it): %v", err)
		}
	case "llamacpp":
		if _, ok := localserver.CachedLlamaServer(labCache); !ok {
			t.Skipf("llama-server %s is not in the cache (lab server prepare --server llamacpp fetches it)", localserver.LlamaCppVersion)
		}
	}
	cache := t.TempDir()
	for _, d := range []string{"ollama", "llama.cpp", "npm", "models"} {
		if err := os.Symlink(filepath.Join(labCache, d), filepath.Join(cache, d)); err != nil {
			t.Fatal(err)
		}
	}
	return cache
}

// firstTurnOfMidnight writes midnight's first turn (its steps up to the second user message)
// as a scenario file of its own beside its workspace, and returns its path.
func firstTurnOfMidnight(t *testing.T) string {
	t.Helper()
	return midnightFirstSteps(t, 0)
}

// midnightFirstSteps is [firstTurnOfMidnight] cut after its first n assistant steps (n > 0;
// 0 keeps the whole turn), with a final answer after them, as a session must end.
func midnightFirstSteps(t *testing.T, n int) string {
	t.Helper()
	src := filepath.Join("..", "..", "scenarios", "midnight")
	b, err := os.ReadFile(filepath.Join(src, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "# ------------------------------------------------------------------ turn 2")
	if i < 0 {
		t.Fatal("midnight's scenario.yaml has no turn 2 marker")
	}
	ws, err := os.ReadFile(filepath.Join(src, "workspace.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	turn := string(b[:i])
	if n > 0 {
		const step = "\n  - assistant:"
		at := 0
		for k := 0; k <= n; k++ {
			j := strings.Index(turn[at+1:], step)
			if j < 0 {
				t.Fatalf("midnight's first turn has fewer than %d assistant steps", n+1)
			}
			at += 1 + j
		}
		turn = turn[:at] + step + "\n      text: Enough for now.\n"
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "workspace.txtar"), ws, 0o644)
	path := filepath.Join(dir, "scenario.yaml")
	os.WriteFile(path, []byte(turn), 0o644)
	return path
}

// TestFamilyRunLive runs midnight's first turn (spec arm) with lab run --family on the lab's own
// servers, a server started for each run from the cached build: llama-server (--backend
// llamacpp) for llama3.1 and deepseek-v3, Ollama (--backend ollama) for deepseek-v3 (the
// deepseek3.1 renderer, the model on the llama stand-in in Ollama's llama.cpp runner) and gemma3
// (the functiongemma renderer, Ollama's own engine), and checks the rows: every request's cached
// tokens are the server's figure (the answer's, or Ollama's debug log), and the expected cached
// tokens are known (counted as the server tokenizes: llama-server's /tokenize, or package
// tokenizer as Ollama's runner does, the BOS it adds) and equal to them. The manifest records
// the family, what renders its prompt and, on Ollama, what counts its tokens. Gemma 3 on Ollama
// runs the turn's first three steps only (Ollama's SentencePiece takes time far worse than
// linear in the prompt, and its sliding-window cache re-reads the whole prompt on every
// generation emulation after a tool result). Skipped with -short and when the server or the
// family's model are not cached.
func TestFamilyRunLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real server per backend")
	}
	for _, tc := range []struct {
		backend, source string
		family          gguf.Family
	}{
		{"llamacpp", "response", gguf.Llama31},
		{"llamacpp", "response", gguf.DeepSeekV3},
		{"ollama", "server_log", gguf.DeepSeekV3},
		{"ollama", "server_log", gguf.Gemma3},
	} {
		t.Run(tc.backend+"/"+string(tc.family), func(t *testing.T) {
			liveFamily := tc.family
			cache := familyCache(t, tc.backend, liveFamily)
			sc := firstTurnOfMidnight(t)
			if tc.backend == "ollama" && liveFamily == gguf.Gemma3 {
				// Ollama's SentencePiece takes time far worse than linear in the prompt (7,202
				// tokens 38 s, counted twice per request): the first three steps.
				sc = midnightFirstSteps(t, 3)
			}
			results := t.TempDir()
			code, out, errOut := runLab(t, "run", "--backend", tc.backend, "--family", string(liveFamily), "--cache", cache,
				"--scenario", sc, "--arm", "spec", "--results", results, "--run-id", "fam", "--quiet")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
			man, samples, err := metrics.ReadRun(metrics.RunDir(results, "fam"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("manifest: model %s, settings %v", man.Model, man.Settings)
			if man.Settings[settingFamily] != string(liveFamily) || man.Settings[settingChatTemplate] == "" {
				t.Errorf("manifest family %q, chat_template %q; want %s and what renders it", man.Settings[settingFamily], man.Settings[settingChatTemplate], liveFamily)
			}
			if tc.backend == "ollama" && (man.Settings[settingTokenCounter] == "" || (liveFamily == gguf.DeepSeekV3) != strings.HasPrefix(man.Settings[settingArchitecture], "llama")) {
				t.Errorf("manifest token_counter %q, model_architecture %q; want what counts the tokens, and the llama stand-in for DeepSeek V3 only", man.Settings[settingTokenCounter], man.Settings[settingArchitecture])
			}
			if setup := metrics.SetupOf(man); setup.Settings[settingFamily] != string(liveFamily) {
				t.Errorf("setup settings %v; want the family among them", setup.Settings)
			}
			if !strings.Contains(man.Model, "lab-"+string(liveFamily)+"-synth") {
				t.Errorf("model %q; want the family's synthetic model", man.Model)
			}
			if len(samples) < 3 {
				t.Fatalf("%d rows; want the first turn's requests", len(samples))
			}
			for i, s := range samples {
				t.Logf("request %d: prompt %d, cached %v, expected %v (unknown %v)", i, s.PromptTokens, deref(s.CachedTokens), deref(s.ExpectedCachedTokens), s.ExpectedUnknown)
				if s.Error != "" {
					t.Errorf("request %d: %s", i, s.Error)
					continue
				}
				if s.PromptTokens <= 0 || s.CachedTokens == nil || s.CachedSource != tc.source {
					t.Errorf("request %d: prompt %d, cached %v from %q; want both figures, cached from %s", i, s.PromptTokens, s.CachedTokens, s.CachedSource, tc.source)
					continue
				}
				if s.ExpectedCachedTokens == nil {
					t.Errorf("request %d: expected cached tokens unknown", i)
					continue
				}
				// The server's BOS counted (Llama 3.1 adds one): cached equals expected exactly, and
				// the lab counts the prompt as the server does.
				if *s.CachedTokens != *s.ExpectedCachedTokens || strings.Contains(s.Warnings, "the lab's tokenizer counts") {
					t.Errorf("request %d: cached %d, expected %d, warnings %q; want equal, the prompt counted alike", i, *s.CachedTokens, *s.ExpectedCachedTokens, s.Warnings)
				}
			}
		})
	}
}

// TestFamilyOllamaLive starts the lab's Ollama with lab server start --family gemma3 (in a cache
// of its own) and registers DeepSeek V3's model beside it, then checks what Ollama renders each
// with (/api/show): Gemma 3 with the functiongemma renderer and parser, DeepSeek V3 with the
// deepseek3.1 renderer and deepseek3 parser on the llama stand-in architecture, which Ollama
// serves in its llama.cpp runner (the runner's command line in the log has no --ollama-engine);
// and that lab run refuses gpt-oss on Ollama (no chat template, so no harmony).
// Skipped with -short and when the ollama build or the models are not cached.
func TestFamilyOllamaLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real ollama server")
	}
	cache := familyCache(t, "ollama", gguf.Gemma3)
	if m, _ := filepath.Glob(filepath.Join(cache, "models", "lab-deepseek-v3-synth-*.gguf")); len(m) == 0 {
		t.Skip("no deepseek-v3 model in the cache (lab server prepare --family deepseek-v3 writes it)")
	}
	for _, fam := range []gguf.Family{gguf.Gemma3, gguf.DeepSeekV3} {
		code, out, errOut := runLab(t, "server", "start", "--server", "ollama", "--family", string(fam), "--cache", cache)
		if code != 0 {
			t.Fatalf("lab server start --family %s: exit %d\nstdout %s\nstderr %s", fam, code, out, errOut)
		}
		t.Logf("start --family %s: %s", fam, out)
	}
	defer runLab(t, "server", "stop", "--cache", cache)
	srv, err := localserver.Attach(context.Background(), localserver.SharedOllamaDir(cache))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	client := api.NewClient(u, http.DefaultClient)
	show := func(name string) *api.ShowResponse {
		t.Helper()
		r, err := client.Show(context.Background(), &api.ShowRequest{Model: name})
		if err != nil {
			t.Fatalf("show %s: %v", name, err)
		}
		return r
	}
	// Ollama v0.17.4's /api/show gives the renderer and parser in the Modelfile only.
	g := show("lab-gemma3-synth")
	if !strings.Contains(g.Modelfile, "\nRENDERER functiongemma\n") || !strings.Contains(g.Modelfile, "\nPARSER functiongemma\n") || g.ModelInfo["general.architecture"] != "gemma3" {
		t.Errorf("gemma3: modelfile %q, architecture %v; want RENDERER and PARSER functiongemma on gemma3", g.Modelfile, g.ModelInfo["general.architecture"])
	}
	d := show("lab-deepseek-v3-synth")
	if !strings.Contains(d.Modelfile, "\nRENDERER deepseek3.1\n") || !strings.Contains(d.Modelfile, "\nPARSER deepseek3\n") || d.ModelInfo["general.architecture"] != "llama" {
		t.Errorf("deepseek-v3: modelfile %q, architecture %v; want RENDERER deepseek3.1, PARSER deepseek3 on the llama stand-in", d.Modelfile, d.ModelInfo["general.architecture"])
	}
	// Loading DeepSeek V3's model starts the llama.cpp runner.
	stream := false
	if err := client.Generate(context.Background(), &api.GenerateRequest{Model: "lab-deepseek-v3-synth", Prompt: "hi", Raw: true, Stream: &stream,
		Options: map[string]any{"num_predict": 1, "num_ctx": 2048}}, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(srv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var runner string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "starting runner") && strings.Contains(line, " --model ") {
			runner = line
		}
	}
	if runner == "" || strings.Contains(runner, "--ollama-engine") {
		t.Errorf("deepseek-v3's runner line %q; want the llama.cpp runner (no --ollama-engine)", runner)
	}
	code, _, errOut := runLab(t, "run", "--backend", "ollama", "--family", "gpt-oss", "--cache", cache, "--scenario", "midnight", "--arm", "spec", "--results", t.TempDir(), "--quiet")
	if code != exitBadInput || !strings.Contains(errOut, "no chat template") {
		t.Errorf("lab run --family gpt-oss on Ollama: exit %d, stderr %q; want %d naming \"no chat template\"", code, errOut, exitBadInput)
	}
}
