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

// rendererServer is an Ollama stand-in that renders /api/chat `_debug_render_only` requests with
// Ollama's own built-in renderer name (v0.17.4, in process) and records the prompts of raw
// /api/generate requests (the generation emulation).
func rendererServer(t *testing.T, name string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/chat":
			var req api.ChatRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.DebugRenderOnly {
				http.Error(w, "want a _debug_render_only request", http.StatusBadRequest)
				return
			}
			p, err := renderers.RenderWithRenderer(name, req.Messages, req.Tools, req.Think)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"done": true, "_debug_info": map[string]any{"rendered_template": p}})
		case "/api/generate":
			var req api.GenerateRequest
			json.NewDecoder(r.Body).Decode(&req)
			mu.Lock()
			prompts = append(prompts, req.Prompt)
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"done": true})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), prompts...) }
}

// With WithReplyEnds, FillCache writes the reply as the family's renderer renders it back, cut
// after its end-of-generation text: for DeepSeek V3.1's format (deepseek3.1) and FunctionGemma's
// (functiongemma), a reply with a tool call and a final one; the cache then holds exactly the
// start of the next request's prompt, up to the reply's end. Without it the reply is Qwen3's.
func TestFillCacheWithTheRenderersReply(t *testing.T) {
	tools := []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the path"}},"required":["path"]}`)}}
	call := &chat.Reply{Content: "Let me look.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}
	final := &chat.Reply{Content: "Done: a.go is fine."}
	for _, tc := range []struct {
		renderer string
		ends     []string
		// callText and finalText are what the cache gets after the prompt for each reply.
		callText, finalText string
	}{
		{"deepseek3.1", []string{"<｜end▁of▁sentence｜>"},
			`Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{"path":"a.go"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>`,
			"Done: a.go is fine.<｜end▁of▁sentence｜>"},
		{"functiongemma", []string{"<end_of_turn>", "<start_function_response>"},
			"Let me look.<start_function_call>call:read{path:<escape>a.go<escape>}<end_function_call><start_function_response>",
			"Done: a.go is fine.<end_of_turn>"},
	} {
		t.Run(tc.renderer, func(t *testing.T) {
			srv, prompts := rendererServer(t, tc.renderer)
			c, err := New(srv.URL, "m", WithReplyEnds(tc.ends...))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			req := &chat.Request{Tools: tools, Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are terse."}, {Role: chat.RoleUser, Content: "Check a.go"}}}
			// First the reply with a tool call, after the user's message; then, after its tool
			// result, the final reply.
			for i, step := range []struct {
				reply *chat.Reply
				want  string
			}{{call, tc.callText}, {final, tc.finalText}} {
				creq, err := c.ChatRequest(req)
				if err != nil {
					t.Fatal(err)
				}
				rendered, err := c.Render(ctx, creq)
				if err != nil {
					t.Fatal(err)
				}
				res := &chat.Result{Rendered: rendered}
				if err := c.FillCache(ctx, req, step.reply, res); err != nil {
					t.Fatal(err)
				}
				if got := strings.TrimPrefix(res.CacheText, rendered); got != step.want || !strings.HasPrefix(res.CacheText, rendered) {
					t.Errorf("step %d: cache text after the prompt %q; want %q", i, got, step.want)
				}
				if p := prompts(); len(p) != i+1 || p[i] != res.CacheText {
					t.Errorf("step %d: emulated prompts %d, last %.80q; want the cache text", i, len(p), p[len(p)-1])
				}
				// The next request renders the reply back: it starts with the cache's text.
				next := *req
				next.Messages = append(append([]chat.Message(nil), req.Messages...), chat.Message{Role: chat.RoleAssistant, Content: step.reply.Content, ToolCalls: step.reply.ToolCalls})
				for _, tcall := range step.reply.ToolCalls {
					next.Messages = append(next.Messages, chat.Message{Role: chat.RoleTool, ToolCallID: tcall.ID, ToolName: tcall.Name, Content: "package a"})
				}
				if len(step.reply.ToolCalls) == 0 {
					next.Messages = append(next.Messages, chat.Message{Role: chat.RoleUser, Content: "Thanks"})
				}
				nreq, _ := c.ChatRequest(&next)
				after, err := c.Render(ctx, nreq)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(after, res.CacheText) {
					t.Errorf("step %d: the next prompt does not start with the cache text\nnext  %q\ncache %q", i, after, res.CacheText)
				}
				req = &next
			}
		})
	}
	// Without WithReplyEnds: Qwen3's output format, as before.
	srv, _ := rendererServer(t, "deepseek3.1")
	c, _ := New(srv.URL, "m")
	res := &chat.Result{Rendered: "P"}
	if err := c.FillCache(context.Background(), &chat.Request{}, final, res); err != nil || res.CacheText != "P"+Qwen3Output(final) {
		t.Errorf("without reply ends: %v, cache text %q; want Qwen3's output", err, res.CacheText)
	}
	// A renderer whose rendering has none of the end texts is an error naming them.
	c, _ = New(srv.URL, "m", WithReplyEnds("<never>"))
	err := c.FillCache(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, final, &chat.Result{Rendered: "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>"})
	if err == nil || !strings.Contains(err.Error(), "<never>") || !strings.Contains(err.Error(), "generation emulation") {
		t.Errorf("no end text: error %v; want one naming it", err)
	}
}
