package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"lab/chat"
)

// renderingServer is an Ollama v0.17.4 stand-in serving a qwen3-family model with the qwen3.5
// renderer: it renders `_debug_render_only` requests with Ollama's own renderer (after the
// ChatHandler's steps: think on by default, think tags dropped from earlier assistant
// messages), counts them, answers a measured /api/chat with prompt_eval_count = the rendered
// prompt's length in bytes (the test's token count), and takes emulations and unloads.
type renderingServer struct {
	srv *httptest.Server
	// version is what /api/version answers; edit, when set, changes each rendering (a server
	// that renders otherwise than the module).
	version string
	edit    func(string) string
	// countOff is added to prompt_eval_count (a tokenizer that counts otherwise).
	countOff int

	mu      sync.Mutex
	renders int
}

func newRenderingServer(t *testing.T) *renderingServer {
	t.Helper()
	if moduleVersion == "" {
		// A test binary records no module versions: the one go.mod pins.
		moduleVersion = "0.17.4"
		t.Cleanup(func() { moduleVersion = "" })
	}
	s := &renderingServer{version: moduleVersion}
	render := func(req *api.ChatRequest) string {
		think := req.Think
		if think == nil {
			think = &api.ThinkValue{Value: true}
		}
		msgs := filterThinkTags(req.Messages, "qwen3", req.Model)
		text, err := renderers.RenderWithRenderer("qwen3.5", msgs, req.Tools, think)
		if err != nil {
			t.Error(err)
		}
		if s.edit != nil {
			text = s.edit(text)
		}
		return text
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.URL.Path {
		case "/api/version":
			json.NewEncoder(w).Encode(map[string]string{"version": s.version})
		case "/api/show":
			json.NewEncoder(w).Encode(map[string]any{
				"modelfile":    "FROM /x.gguf\nRENDERER qwen3.5\nPARSER qwen3.5\n",
				"details":      map[string]any{"family": "qwen3"},
				"capabilities": []string{"completion", "tools", "thinking"},
			})
		case "/api/chat":
			var req api.ChatRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			text := render(&req)
			if req.DebugRenderOnly {
				s.renders++
				json.NewEncoder(w).Encode(api.ChatResponse{Model: req.Model, DebugInfo: &api.DebugInfo{RenderedTemplate: text}})
				return
			}
			w.Write([]byte(`{"model":"m","message":{"role":"assistant","content":"x"},"done":false}` + "\n"))
			json.NewEncoder(w).Encode(map[string]any{"model": "m", "message": map[string]string{"role": "assistant"}, "done": true,
				"prompt_eval_count": len(text) + s.countOff, "prompt_eval_duration": 5000000, "eval_count": 1})
		case "/api/generate":
			json.NewEncoder(w).Encode(map[string]any{"model": "m", "done": true})
		case "/api/ps":
			json.NewEncoder(w).Encode(map[string]any{"models": []any{}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *renderingServer) rendersSoFar() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renders
}

// byteCount counts a prompt's tokens as the stand-in server does: one per byte.
func byteCount(text string) (int, error) { return len(text), nil }

// turns is a session's requests: each the previous one's messages, its reply and a new user
// message; the assistant messages' content starts with a think block that the server drops.
func turns(n int) []*chat.Request {
	var out []*chat.Request
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "You are a coding agent."}}
	tools := []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	for i := range n {
		msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: "step " + strings.Repeat("x", i)})
		out = append(out, &chat.Request{Messages: append([]chat.Message(nil), msgs...), Tools: tools, Think: true})
		msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, Reasoning: "r", Content: "<think>old</think>done " + strings.Repeat("y", i)})
	}
	return out
}

// With local rendering the server renders only each session's first prompt (to compare), and
// every prompt is the server's text byte for byte: the server's own rendering of the request,
// its think-tag filtering included.
func TestLocalRenderChecksEachSessionStart(t *testing.T) {
	s := newRenderingServer(t)
	c := newClient(t, s.srv.URL, WithLocalRender(byteCount))
	ctx := context.Background()
	if err := c.CheckModel(ctx); err != nil {
		t.Fatal(err)
	}
	if src := c.RenderSource(); !strings.HasPrefix(src, "lab: Ollama "+moduleVersion+"'s qwen3.5 renderer in process") {
		t.Fatalf("RenderSource = %q; want the in-process renderer", src)
	}
	reqs := turns(4)
	for session := range 2 {
		if err := c.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		before := s.rendersSoFar()
		for i, req := range reqs {
			res, err := c.Send(ctx, req, &chat.Reply{Content: "ok"})
			if err != nil {
				t.Fatal(err)
			}
			creq, _ := c.ChatRequest(req)
			creq.Model = "m"
			want, _ := renderers.RenderWithRenderer("qwen3.5", filterThinkTags(creq.Messages, "qwen3", "m"), creq.Tools, creq.Think)
			if res.Rendered != want || len(res.Warnings) != 0 {
				t.Fatalf("session %d request %d: rendered %q, warnings %q; want the server's %q", session, i, res.Rendered, res.Warnings, want)
			}
			if i > 0 && strings.Contains(res.Rendered, "<think>old</think>") {
				t.Fatalf("request %d keeps the think block the server drops: %q", i, res.Rendered)
			}
		}
		if got := s.rendersSoFar() - before; got != 1 {
			t.Errorf("session %d: the server rendered %d of %d prompts; want 1 (the session's first)", session, got, len(reqs))
		}
	}
}

// A server that renders otherwise than the module: the session's first prompt shows it, the
// row keeps the server's text with a warning, and the server renders every later prompt.
func TestLocalRenderStopsWhenTheServerDiffers(t *testing.T) {
	s := newRenderingServer(t)
	s.edit = func(text string) string { return strings.Replace(text, "coding agent", "coding  agent", 1) }
	c := newClient(t, s.srv.URL, WithLocalRender(byteCount))
	ctx := context.Background()
	if err := c.CheckModel(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := turns(3)
	for i, req := range reqs {
		res, err := c.Send(ctx, req, &chat.Reply{Content: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Rendered, "coding  agent") {
			t.Fatalf("request %d: rendered %q; want the server's text", i, res.Rendered)
		}
		warned := len(res.Warnings) == 1 && strings.HasPrefix(res.Warnings[0], "rendered prompt: the lab's in-process rendering its rendering of a prompt differed from the server's at byte ")
		if warned != (i == 0) {
			t.Fatalf("request %d: warnings %q; want one on the first request only", i, res.Warnings)
		}
	}
	if got := s.rendersSoFar(); got != len(reqs) {
		t.Errorf("the server rendered %d of %d prompts; want all of them", got, len(reqs))
	}
	if src := c.RenderSource(); !strings.HasPrefix(src, "server (its rendering of a prompt differed") {
		t.Errorf("RenderSource = %q; want the server, and why", src)
	}
}

// A prompt_eval_count other than the lab's count of a prompt rendered in process makes the client
// ask the server for that prompt; when the server renders it alike, the counts say nothing of the
// rendering and are not followed again.
func TestLocalRenderChecksAPromptCountedOtherwise(t *testing.T) {
	s := newRenderingServer(t)
	s.countOff = 1
	c := newClient(t, s.srv.URL, WithLocalRender(byteCount))
	ctx := context.Background()
	if err := c.CheckModel(ctx); err != nil {
		t.Fatal(err)
	}
	for i, req := range turns(4) {
		res, err := c.Send(ctx, req, &chat.Reply{Content: "ok"})
		if err != nil || len(res.Warnings) != 0 {
			t.Fatalf("request %d: %v, warnings %q", i, err, res.Warnings)
		}
	}
	// The first (a session start), the second (counted otherwise, rendered alike), no more.
	if got := s.rendersSoFar(); got != 2 {
		t.Errorf("the server rendered %d prompts; want 2", got)
	}
}

// The client renders in process only where it can be sure: not for another server version, not
// without a count, not for a prompt past num_ctx (the server would drop messages).
func TestLocalRenderOnlyWhereSure(t *testing.T) {
	ctx := context.Background()
	s := newRenderingServer(t)
	s.version = "0.0.1"
	c := newClient(t, s.srv.URL, WithLocalRender(byteCount))
	if err := c.CheckModel(ctx); err != nil {
		t.Fatal(err)
	}
	if src := c.RenderSource(); !strings.HasPrefix(src, `server (the server is Ollama 0.0.1, the lab's renderers are module version "`+moduleVersion+`"`) {
		t.Errorf("another server version: RenderSource = %q", src)
	}
	if c := newClient(t, s.srv.URL); c.RenderSource() != "server" {
		t.Errorf("no WithLocalRender: RenderSource = %q; want server", c.RenderSource())
	}

	s = newRenderingServer(t)
	c = newClient(t, s.srv.URL, WithLocalRender(byteCount), WithNumCtx(64))
	if err := c.CheckModel(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := turns(3)
	for _, req := range reqs {
		if _, err := c.Send(ctx, req, &chat.Reply{Content: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.rendersSoFar(); got != len(reqs) {
		t.Errorf("prompts past num_ctx 64: the server rendered %d of %d; want all", got, len(reqs))
	}
}
