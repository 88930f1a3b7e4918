package capture_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ollamaanthropic "github.com/ollama/ollama/anthropic"
	"github.com/ollama/ollama/api"
	ollamaopenai "github.com/ollama/ollama/openai"

	"lab/backend/ollama"
	"lab/capture"
	"lab/metrics"
)

// fakeOllama is an Ollama upstream of the compatible endpoints: it converts each request as
// Ollama does, renders the converted messages Qwen-style, answers with Ollama's own answer
// converters (the Responses answer says cached_tokens 0, as Ollama's does), and writes one
// `loading cache slot` line per generation whose used= is the rendering's common prefix with the
// previous one less one token. renders holds the /api/chat bodies of the rendering requests.
type fakeOllama struct {
	t       *testing.T
	logPath string
	mu      sync.Mutex
	prev    string
	renders []api.ChatRequest
	used    []int
	// noThinking refuses a rendering with think true, as Ollama's /api/chat does for a model
	// without thinking.
	noThinking bool
}

func renderQwen(r *api.ChatRequest) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString("<tool_call>" + tc.Function.Name + "</tool_call>")
		}
		b.WriteString("<|im_end|>\n")
	}
	return b.String() + "<|im_start|>assistant\n"
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/api/chat" {
		var c api.ChatRequest
		if err := json.Unmarshal(body, &c); err != nil || !c.DebugRenderOnly {
			http.Error(w, `{"error":"want a rendering request"}`, http.StatusBadRequest)
			return
		}
		if f.noThinking && c.Think != nil && c.Think.Bool() {
			http.Error(w, `{"error":"\"m\" does not support thinking"}`, http.StatusBadRequest)
			return
		}
		f.renders = append(f.renders, c)
		b, _ := json.Marshal(map[string]any{"_debug_info": map[string]string{"rendered_template": renderQwen(&c)}})
		w.Write(b)
		return
	}
	apiName := map[string]string{"/v1/chat/completions": ollama.CompatibleOpenAIChat, "/v1/responses": ollama.CompatibleOpenAIResponses, "/v1/messages": ollama.CompatibleAnthropic}[r.URL.Path]
	c, err := ollama.CompatibleChatRequest(apiName, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	text := renderQwen(c)
	common := 0
	for common < len(text) && common < len(f.prev) && text[common] == f.prev[common] {
		common++
	}
	used := max(common-1, 0)
	f.prev = text
	f.used = append(f.used, used)
	lf, err := os.OpenFile(f.logPath, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		f.t.Error(err)
		return
	}
	fmt.Fprintf(lf, "time=x level=DEBUG source=cache.go:140 msg=\"loading cache slot\" id=0 cache=%d prompt=%d used=%d remaining=%d\n", used, len(text), used, len(text)-used)
	lf.Close()
	resp := api.ChatResponse{Model: "m", Message: api.Message{Role: "assistant", Content: "ok"}, Done: true, DoneReason: "stop",
		Metrics: api.Metrics{PromptEvalCount: len(text), EvalCount: 1}}
	var out any
	switch apiName {
	case ollama.CompatibleOpenAIChat:
		out = ollamaopenai.ToChatCompletion("chatcmpl-1", resp)
	case ollama.CompatibleOpenAIResponses:
		var rr ollamaopenai.ResponsesRequest
		json.Unmarshal(body, &rr)
		out = ollamaopenai.ToResponse("m", "resp_1", "msg_1", resp, rr)
	case ollama.CompatibleAnthropic:
		out = ollamaanthropic.ToMessagesResponse("msg_1", resp)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// For each of Ollama's OpenAI- and Anthropic-compatible endpoints, the proxy converts the
// request as Ollama does, asks Ollama's /api/chat for its rendering (expected cached tokens
// known) and takes cached tokens from the server's log (cached_source server_log), never the
// answer's constant 0.
func TestProxyMeasuresOllamasCompatibleEndpoints(t *testing.T) {
	for _, tc := range []struct {
		path, api      string
		first, second  string
		system, detail string
	}{
		{"/v1/chat/completions", capture.APIOpenAIChat,
			`{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it"}]}`,
			`{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`,
			"You are a coding agent.", ""},
		{"/v1/responses", capture.APIOpenAIResponses,
			`{"model":"m","instructions":"You are a coding agent.","input":[{"role":"user","content":[{"type":"input_text","text":"fix it"}]}]}`,
			`{"model":"m","instructions":"You are a coding agent.","input":[{"role":"user","content":[{"type":"input_text","text":"fix it"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},{"role":"user","content":[{"type":"input_text","text":"more"}]}]}`,
			"You are a coding agent.", "instructions become the system message"},
		{"/v1/messages", capture.APIAnthropic,
			`{"model":"m","max_tokens":64,"system":"You are a coding agent.","messages":[{"role":"user","content":"fix it"}]}`,
			`{"model":"m","max_tokens":64,"system":"You are a coding agent.","messages":[{"role":"user","content":"fix it"},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":[{"type":"text","text":"more"}]}]}`,
			"You are a coding agent.", "system becomes the system message"},
	} {
		t.Run(tc.api, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "server.log")
			if err := os.WriteFile(logPath, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			f := &fakeOllama{t: t, logPath: logPath}
			up := httptest.NewServer(f)
			defer up.Close()
			dir := filepath.Join(t.TempDir(), "run_id=v1")
			p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "v1", ServerLog: logPath, LogWait: 500 * time.Millisecond,
				Attribution: capture.Attribution{Render: capture.RenderOllama, Tokenizer: byteTok{}}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			for _, b := range []string{tc.first, tc.second} {
				if code, out := post(t, srv.URL, tc.path, b, nil); code != http.StatusOK {
					t.Fatalf("HTTP %d: %s", code, out)
				}
			}
			srv.Close()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			_, rows, err := metrics.ReadRun(dir)
			if err != nil || len(rows) != 2 {
				t.Fatalf("%d rows, %v", len(rows), err)
			}
			if len(f.renders) != 2 {
				t.Fatalf("%d rendering requests; want 2", len(f.renders))
			}
			// The rendering was asked of the converted request: the system text where Ollama
			// puts it, not the body as the client wrote it.
			if m := f.renders[0].Messages; len(m) == 0 || m[0].Role != "system" || m[0].Content != tc.system {
				t.Errorf("rendering request's messages %+v; want the system message first (%s)", m, tc.detail)
			}
			firstLen := int64(len(renderQwen(&f.renders[0])))
			for i, want := range []int64{0, firstLen} {
				s := rows[i]
				if s.ExpectedUnknown || val(s.ExpectedCachedTokens) != want {
					t.Errorf("row %d: expected_unknown %v expected %s; want %d (warnings %q)", i, s.ExpectedUnknown, show(s.ExpectedCachedTokens), want, s.Warnings)
				}
				if !eqPtr(s.CachedTokens, n(int64(f.used[i]))) || s.CachedSource != metrics.CachedSourceServerLog {
					t.Errorf("row %d: cached %s (%q); want the log's used=%d (server_log) (warnings %q)", i, show(s.CachedTokens), s.CachedSource, f.used[i], s.Warnings)
				}
				// Neither the answer's cached count (0) nor, for Messages, its input_tokens as
				// the uncached count (Ollama's whole prompt there) is a figure of the row.
				if strings.Contains(s.UsageFields, "CachedRead") || strings.Contains(s.UsageFields, "Uncached") || !strings.Contains(s.UsageFields, "Prompt") {
					t.Errorf("row %d: usage_fields %q; want the prompt count and no cached or uncached figure of the answer", i, s.UsageFields)
				}
			}
		})
	}
}

// Ollama's /v1/messages serves a request asking for thinking of a model without it (its handler
// unsets `think`), where /api/chat refuses it: the proxy renders it as served, without think.
func TestProxyRendersMessagesWithThinkingOfAModelWithout(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeOllama{t: t, logPath: logPath, noThinking: true}
	up := httptest.NewServer(f)
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=think")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "think", ServerLog: logPath, LogWait: 500 * time.Millisecond,
		Attribution: capture.Attribution{Render: capture.RenderOllama, Tokenizer: byteTok{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	if code, out := post(t, srv.URL, "/v1/messages", `{"model":"m","max_tokens":64,"thinking":{"type":"enabled","budget_tokens":32},"messages":[{"role":"user","content":"fix it"}]}`, nil); code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, out)
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if s := rows[0]; s.ExpectedUnknown || s.ExpectedCachedTokens == nil || len(f.renders) != 1 || f.renders[0].Think != nil {
		t.Errorf("expected_unknown %v, %d renderings (think %v); want one rendering without think and expected known (warnings %q)", s.ExpectedUnknown, len(f.renders), f.renders, s.Warnings)
	}
}
