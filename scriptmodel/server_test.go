package scriptmodel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"

	"lab/backend/ollama"
	"lab/chat"
)

// fakeOllama is an Ollama server as the scripted model uses it: /api/chat renders (with
// _debug_render_only, the rendering being "R:" and the last message's text) or prefills
// (num_predict 1, prompt_eval_count the rendering's length), /api/generate fills; every call is
// recorded. failPrefill makes the prefill answer HTTP 500.
type fakeOllama struct {
	mu          sync.Mutex
	calls       []string
	fills       []string
	failPrefill bool
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/chat":
		var c api.ChatRequest
		if err := json.Unmarshal(body, &c); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rendered := "R:" + c.Messages[len(c.Messages)-1].Content
		if c.DebugRenderOnly {
			f.calls = append(f.calls, "render")
			json.NewEncoder(w).Encode(api.ChatResponse{Model: c.Model, Done: true, DebugInfo: &api.DebugInfo{RenderedTemplate: rendered}})
			return
		}
		f.calls = append(f.calls, "prefill num_predict="+jsonText(c.Options["num_predict"]))
		if f.failPrefill {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"model runner has unexpectedly stopped"}`)
			return
		}
		json.NewEncoder(w).Encode(api.ChatResponse{Model: c.Model, Done: true, Metrics: api.Metrics{PromptEvalCount: len(rendered)}})
	case "/api/generate":
		var g api.GenerateRequest
		_ = json.Unmarshal(body, &g)
		f.calls = append(f.calls, "fill raw="+jsonText(g.Raw))
		f.fills = append(f.fills, g.Prompt)
		json.NewEncoder(w).Encode(api.GenerateResponse{Model: g.Model, Done: true})
	default:
		f.calls = append(f.calls, "pass "+r.URL.Path)
		io.WriteString(w, `{"models":[]}`)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// chatTools is a small OpenAI Chat tool list: read (path) and bash (command).
const chatTools = `[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
{"type":"function","function":{"name":"bash","description":"Run a shell command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}]`

func chatBody(t *testing.T, tools string, msgs ...map[string]any) []byte {
	t.Helper()
	b := map[string]any{"model": "lab-model", "messages": msgs, "stream": false}
	if tools != "" {
		b["tools"] = json.RawMessage(tools)
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func post(t *testing.T, url string, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// The scripted model answers each request of a session with the script's step that the
// request's own history reaches, after a measured prefill, and then fills the server's cache
// with the rendering followed by the reply as the model writes it; a request without tools is a
// side request; the proxy's render-only questions and other paths pass through.
func TestServerAnswersFromTheScriptAndFillsTheCache(t *testing.T) {
	script, err := ParseScript("s.yaml", []byte(`name: s
turns:
  - user: "Look at the project."
    steps:
      - do: read main.go
        reasoning: First the main file.
      - grep Greet
      - answer "It greets."
`))
	if err != nil {
		t.Fatal(err)
	}
	up := &fakeOllama{}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	var events bytes.Buffer
	sm, err := New(Options{Upstream: upstream.URL, Script: script, Events: &events, Env: Env{Project: "/proj", Agent: "pi"},
		CountTokens: func(s string) (int, error) { return len(strings.Fields(s)), nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sm)
	defer srv.Close()

	sys := map[string]any{"role": "system", "content": "You are a coding agent."}
	user := map[string]any{"role": "user", "content": "Look at the project."}
	resp, b := post(t, srv.URL+"/v1/chat/completions", chatBody(t, chatTools, sys, user))
	if resp.StatusCode != 200 || resp.Header.Get(chat.ScriptedStepHeader) != "turn=1 step=1 intent=read" {
		t.Fatalf("step 1: HTTP %d, step %q: %s", resp.StatusCode, resp.Header.Get(chat.ScriptedStepHeader), b)
	}
	var first struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(b, &first); err != nil || len(first.Choices) != 1 || len(first.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("step 1 answer: %v %s", err, b)
	}
	tc := first.Choices[0].Message.ToolCalls[0]
	if tc.Function.Name != "read" || tc.Function.Arguments != `{"path":"main.go"}` {
		t.Fatalf("step 1 call %s %s: want read {\"path\":\"main.go\"}", tc.Function.Name, tc.Function.Arguments)
	}
	if want := len("R:Look at the project."); first.Usage.PromptTokens != want || first.Usage.CompletionTokens == 0 {
		t.Fatalf("step 1 usage %+v: want the prefill's prompt_eval_count %d and counted completion tokens", first.Usage, want)
	}
	// The fill is the rendering followed by the reply as the model writes it.
	reply := &chat.Reply{Reasoning: "First the main file.", ToolCalls: []chat.ToolCall{{Name: "read", Arguments: json.RawMessage(`{"path":"main.go"}`)}}}
	if len(up.fills) != 1 || up.fills[0] != "R:Look at the project."+ollama.Qwen3Output(reply) {
		t.Fatalf("fills %q: want the rendering then %q", up.fills, ollama.Qwen3Output(reply))
	}

	// The agent ran the call: the next request holds the reply and the tool result.
	call := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": tc.ID, "type": "function",
		"function": map[string]any{"name": "read", "arguments": tc.Function.Arguments}}}}
	result := map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "package main"}
	resp, b = post(t, srv.URL+"/v1/chat/completions", chatBody(t, chatTools, sys, user, call, result))
	if resp.Header.Get(chat.ScriptedStepHeader) != "turn=1 step=2 intent=grep" || !strings.Contains(string(b), `grep -rnE Greet .`) {
		t.Fatalf("step 2: step %q: %s", resp.Header.Get(chat.ScriptedStepHeader), b)
	}
	// The same request again (an agent's retry) gets the same step: the step is the request's.
	resp, _ = post(t, srv.URL+"/v1/chat/completions", chatBody(t, chatTools, sys, user, call, result))
	if resp.Header.Get(chat.ScriptedStepHeader) != "turn=1 step=2 intent=grep" {
		t.Fatalf("retried step 2: %q", resp.Header.Get(chat.ScriptedStepHeader))
	}
	call2 := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "c2", "type": "function",
		"function": map[string]any{"name": "bash", "arguments": `{"command":"grep -rnE Greet ."}`}}}}
	result2 := map[string]any{"role": "tool", "tool_call_id": "c2", "content": "greet.go:3: func Greet"}
	resp, b = post(t, srv.URL+"/v1/chat/completions", chatBody(t, chatTools, sys, user, call, result, call2, result2))
	if resp.Header.Get(chat.ScriptedStepHeader) != "turn=1 step=3 intent=answer" || !strings.Contains(string(b), `It greets.`) {
		t.Fatalf("step 3: step %q: %s", resp.Header.Get(chat.ScriptedStepHeader), b)
	}

	// A title request (no tools) is a side request: a short text, still prefilled and filled.
	resp, b = post(t, srv.URL+"/v1/chat/completions", chatBody(t, "", map[string]any{"role": "user", "content": "Title for: Look at the project."}))
	if resp.Header.Get(chat.ScriptedStepHeader) != "side" || !strings.Contains(string(b), sideReply.Content) {
		t.Fatalf("side request: step %q: %s", resp.Header.Get(chat.ScriptedStepHeader), b)
	}
	// The proxy's render-only question and /api/tags go to the upstream untouched.
	render, _ := json.Marshal(map[string]any{"model": "lab-model", "messages": []any{user}, "_debug_render_only": true, "stream": false})
	if resp, b = post(t, srv.URL+"/api/chat", render); !strings.Contains(string(b), "R:Look at the project.") {
		t.Fatalf("render-only: HTTP %d %s", resp.StatusCode, b)
	}
	if r, err := http.Get(srv.URL + "/api/tags"); err != nil || r.StatusCode != 200 {
		t.Fatalf("/api/tags: %v", err)
	}

	perRequest := []string{"render", "prefill num_predict=1", "fill raw=true"}
	var want []string
	for range 5 {
		want = append(want, perRequest...)
	}
	want = append(want, "render", "pass /api/tags")
	if strings.Join(up.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("upstream calls:\n%s\nwant:\n%s", strings.Join(up.calls, "\n"), strings.Join(want, "\n"))
	}
	var evs []Event
	for _, line := range strings.Split(strings.TrimSpace(events.String()), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	if len(evs) != 5 || evs[0].Intent != "read main.go" || evs[0].Call != `read {"path":"main.go"}` || evs[4].Side != "no tool list" || evs[4].N != 5 {
		t.Fatalf("events: %+v", evs)
	}
}

// An intent the agent offers no tool for is skipped and recorded (the response header and the
// event), and the next step is served in its place; an upstream that fails the prefill is the
// API's own error to the agent and an event with the error, and the next request is served.
func TestServerSkipsAndFails(t *testing.T) {
	script, err := ParseScript("s.yaml", []byte(`name: s
turns:
  - user: "Edit it."
    steps:
      - edit a.go "x" → "y"
      - run go vet
      - answer done
`))
	if err != nil {
		t.Fatal(err)
	}
	up := &fakeOllama{failPrefill: true}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	var events bytes.Buffer
	sm, err := New(Options{Upstream: upstream.URL, Script: script, Events: &events, Env: Env{Project: "/proj", Agent: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sm)
	defer srv.Close()
	readOnly := `[{"type":"function","function":{"name":"view","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`
	body := chatBody(t, readOnly, map[string]any{"role": "user", "content": "Edit it."})
	resp, b := post(t, srv.URL+"/v1/chat/completions", body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), "prefill") {
		t.Fatalf("failed prefill: HTTP %d %s: want 502 with an OpenAI error naming the prefill", resp.StatusCode, b)
	}
	up.mu.Lock()
	up.failPrefill = false
	up.mu.Unlock()
	resp, b = post(t, srv.URL+"/v1/chat/completions", body)
	skipped := resp.Header.Values(chat.ScriptedSkippedHeader)
	if resp.StatusCode != 200 || resp.Header.Get(chat.ScriptedStepHeader) != "turn=1 step=3 intent=answer" || len(skipped) != 2 ||
		!strings.Contains(skipped[0], "edit a.go") || !strings.Contains(skipped[1], "run go vet") {
		t.Fatalf("HTTP %d step %q skipped %q: %s", resp.StatusCode, resp.Header.Get(chat.ScriptedStepHeader), skipped, b)
	}
	lines := strings.Split(strings.TrimSpace(events.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"error":"prefill`) || !strings.Contains(lines[1], `"skipped":["turn=1 step=1 edit`) {
		t.Fatalf("events:\n%s", events.String())
	}
}

// A turn's prompt is found in the user message however the agent quoted it: opencode's run
// sends a prompt holding double quotes as `"say \"Hi\""`.
func TestFindTurnQuotedPrompt(t *testing.T) {
	script, err := ParseScript("s.yaml", []byte("name: s\nturns:\n  - user: 'Look.'\n    steps: [answer ok]\n  - user: 'Say \"Hi\" instead of \"Hello\".'\n    steps: [answer ok]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{opts: Options{Script: script}}
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "Look."}, {Role: chat.RoleAssistant, Content: "ok"},
		{Role: chat.RoleUser, Content: `"Say \"Hi\" instead of   \"Hello\"."`}}
	if turn, at := s.findTurn(msgs); turn != 1 || at != 2 {
		t.Fatalf("findTurn = %d, %d; want turn 2 (index 1) at message 2", turn, at)
	}
}
