package localserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"lab/backend/ollama"
	"lab/chattemplate"
	"lab/gguf"
)

// TestLlama32OllamaLive registers the synthetic Llama 3.2 model with the lab's cached Ollama
// build as the lab does (CreateFamilyModel: TEMPLATE Llama32OllamaTemplate, no renderer or
// parser) and checks that Ollama lists it with that template and the tools capability, that it
// renders each of chattemplate's recorded requests (_debug_render_only) in the format the GGUF's
// Jinja template gives them (chattemplate.Render, llama-server's rendering: see
// sameLlama32Format for what may differ), an assistant message with two tool calls as two JSON
// lines (the Jinja template refuses it), and that the model runs in Ollama's llama.cpp runner,
// whose "loading cache slot" lines the lab's cache log reader reads. Skipped by -short and when
// the ollama binary or the npm package is not cached.
func TestLlama32OllamaLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real ollama server")
	}
	cache := testCacheDir(t)
	bin, err := BinaryPath(DefaultBuildOptions(cache))
	if err != nil {
		t.Skip(err)
	}
	if !isFile(bin) {
		t.Skipf("no cached ollama binary at %s (lab server prepare builds it)", bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prep, err := PrepareModel(ctx, Setup{CacheDir: cache, Model: gguf.ModelOptions{Family: gguf.Llama32}, Log: testLog{t}})
	if err != nil {
		t.Skip(err)
	}
	vocab, err := gguf.ReadFamilyVocab(prep.TokenizerDir, gguf.Llama32)
	if err != nil {
		t.Fatal(err)
	}
	jinja, err := chattemplate.Compile(vocab.Template, chattemplate.Tokens{BOS: vocab.Tokens[vocab.BOS], EOS: vocab.Tokens[vocab.EOS], AddBOS: vocab.AddBOS})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, StartOptions{Binary: bin, Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.CreateFamilyModel(ctx, prep.ModelName, prep.GGUF, gguf.Llama32, nil); err != nil {
		t.Fatal(err)
	}
	show, err := s.client().Show(ctx, &api.ShowRequest{Model: prep.ModelName})
	if err != nil {
		t.Fatal(err)
	}
	if show.Template != Llama32OllamaTemplate || !slices.Contains(show.Capabilities, "tools") || show.Renderer != "" || show.Parser != "" {
		t.Errorf("show: template equal %v, capabilities %v, renderer %q, parser %q; want the lab's template, tools, no renderer or parser",
			show.Template == Llama32OllamaTemplate, show.Capabilities, show.Renderer, show.Parser)
	}

	for _, name := range []string{"chat", "midnight-first", "midnight-second-nothink", "loops-reasoning", "midnight-reasoning"} {
		body, err := os.ReadFile(filepath.Join("..", "chattemplate", "testdata", "requests", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var req api.ChatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		req.Model, req.Think = prep.ModelName, nil // the model has no thinking capability
		got := ollamaRender(ctx, t, s, &req)
		lreq, err := ollama.DecodeChatRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		want, jerr := jinja.Render(lreq, chattemplate.Options{})
		if name == "midnight-reasoning" {
			// Two tool calls in one message: the Jinja template refuses them, the lab's writes
			// each call's JSON on a line of its own.
			if jerr == nil || !strings.Contains(jerr.Error(), "single tool-calls") {
				t.Errorf("%s: Jinja error %v; want its refusal of two tool calls", name, jerr)
			}
			if !strings.Contains(got, "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"read\", \"parameters\": {") ||
				!strings.Contains(got, "}}\n{\"name\": \"read\", \"parameters\": {") {
				t.Errorf("%s: two calls not rendered one a line: %.300q", name, got[strings.Index(got, "{\"name\": \"read\""):])
			}
			continue
		}
		if jerr != nil {
			t.Fatalf("%s: %v", name, jerr)
		}
		if why := sameLlama32Format(got, want); why != "" {
			t.Errorf("%s: %s", name, why)
		} else {
			t.Logf("%s: Ollama %d bytes, the Jinja template %d: the same turns", name, len(got), len(want))
		}
	}

	// One real request: the llama.cpp runner serves it, and logs the cache line the lab reads.
	clog := ollama.OpenCacheLog(s.LogPath)
	stream := false
	if err := s.client().Generate(ctx, &api.GenerateRequest{Model: prep.ModelName, Prompt: "Hello there, how are you?", Raw: true, Stream: &stream,
		Options: map[string]any{"num_predict": 1, "num_ctx": 2048, "temperature": 0}}, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	logText, _ := os.ReadFile(s.LogPath)
	runner := ""
	for _, line := range strings.Split(string(logText), "\n") {
		if strings.Contains(line, `msg="starting runner"`) && strings.Contains(line, "--model") {
			runner = line
		}
	}
	t.Logf("runner: %s", runner)
	if runner == "" || strings.Contains(runner, "--ollama-engine") {
		t.Errorf("runner %q; want the llama.cpp runner (no --ollama-engine)", runner)
	}
	line, err := clog.Next(5 * time.Second)
	t.Logf("cache line: %+v", line)
	if err != nil || line == nil || line.Prompt != 8 {
		t.Errorf("cache log: %+v, %v; want a line with prompt=8 (BOS and 7 tokens)", line, err)
	}
}

// ollamaRender is Ollama's rendering of req (_debug_render_only).
func ollamaRender(ctx context.Context, t *testing.T, s *Server, req *api.ChatRequest) string {
	t.Helper()
	r := *req
	r.DebugRenderOnly = true
	stream := false
	r.Stream = &stream
	var out string
	if err := s.client().Chat(ctx, &r, func(resp api.ChatResponse) error {
		if resp.DebugInfo != nil {
			out = resp.DebugInfo.RenderedTemplate
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameLlama32Format reports how got (Ollama's rendering with Llama32OllamaTemplate) differs from
// want (the Jinja template's), "" when they hold the same turns: the same headers in the same
// order, and bodies that are equal, equal once trimmed (the Jinja template trims contents), or
// the same JSON (compact and sorted in Go, indented and ordered in Jinja), paragraph by
// paragraph (the tools turn: instructions, each tool's JSON, the user's message).
func sameLlama32Format(got, want string) string {
	g, w := strings.Split(got, "<|eot_id|>"), strings.Split(want, "<|eot_id|>")
	if len(g) != len(w) {
		return "turns: " + llama32Itoa(len(g)) + " in Ollama's, " + llama32Itoa(len(w)) + " in the Jinja template's"
	}
	for i := range g {
		gh, gb, _ := strings.Cut(g[i], "<|end_header_id|>\n\n")
		wh, wb, _ := strings.Cut(w[i], "<|end_header_id|>\n\n")
		if gh != wh {
			return "turn " + llama32Itoa(i) + ": header " + llama32Quote(gh) + ", the Jinja template " + llama32Quote(wh)
		}
		if sameLlama32Body(gb, wb) {
			continue
		}
		gp, wp := strings.Split(gb, "\n\n"), strings.Split(wb, "\n\n")
		if len(gp) != len(wp) {
			return "turn " + llama32Itoa(i) + " (" + llama32Quote(gh) + "): " + llama32Itoa(len(gp)) + " paragraphs, the Jinja template " + llama32Itoa(len(wp))
		}
		for j := range gp {
			if !sameLlama32Body(gp[j], wp[j]) {
				return "turn " + llama32Itoa(i) + " paragraph " + llama32Itoa(j) + ": " + llama32Quote(gp[j][:min(200, len(gp[j]))]) + ", the Jinja template " + llama32Quote(wp[j][:min(200, len(wp[j]))])
			}
		}
	}
	return ""
}

// sameLlama32Body reports whether a and b are equal, equal trimmed, or the same JSON value.
func sameLlama32Body(a, b string) bool {
	if a == b || strings.TrimSpace(a) == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func llama32Quote(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return strings.TrimSpace(b.String())
}
func llama32Itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
