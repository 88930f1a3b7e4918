package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"lab/chat"
)

// llamaLikeServer answers /api/chat with _debug_render_only by rendering the messages in a
// Llama 3.2-like format (a header per turn, a tool call as {"name": …, "parameters": …}, each
// turn ended by <|eot_id|>, the assistant's header as the generation prompt; end "" ends no
// turn), and records the raw prompts /api/generate is sent.
func llamaLikeServer(t *testing.T, end string, raw *[]string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/chat":
			var req api.ChatRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !req.DebugRenderOnly {
				t.Errorf("chat request: %v, debug %v", err, req.DebugRenderOnly)
			}
			var b strings.Builder
			for _, m := range req.Messages {
				role := m.Role
				if role == "tool" {
					role = "ipython"
				}
				b.WriteString("<|start_header_id|>" + role + "<|end_header_id|>\n\n")
				if len(m.ToolCalls) > 0 {
					b.WriteString(`{"name": "` + m.ToolCalls[0].Function.Name + `", "parameters": ` + m.ToolCalls[0].Function.Arguments.String() + "}")
				} else {
					b.WriteString(m.Content)
				}
				b.WriteString(end)
			}
			b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
			json.NewEncoder(w).Encode(map[string]any{"done": true, "_debug_info": map[string]any{"rendered_template": b.String()}})
		case "/api/generate":
			var req api.GenerateRequest
			json.NewDecoder(r.Body).Decode(&req)
			*raw = append(*raw, req.Prompt)
			json.NewEncoder(w).Encode(map[string]any{"done": true})
		default:
			http.NotFound(w, r)
		}
	}))
}

// With WithReplyEnds, a reply is written into the cache as the server's template renders it in
// the history, through its end token: a tool call's JSON, or the answer's text; the raw prompt
// FillCache sends is the rendered prompt followed by it, and the next request's rendering
// starts with that whole text.
func TestReplyTextFromTheServersTemplate(t *testing.T) {
	var raw []string
	srv := llamaLikeServer(t, "<|eot_id|>", &raw)
	defer srv.Close()
	c, err := New(srv.URL, "m", WithReplyEnds("<|eot_id|>"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "S"}, {Role: chat.RoleUser, Content: "Read a"}}}
	creq, err := c.ChatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := c.Render(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reply *chat.Reply
		want  string
	}{
		{&chat.Reply{Reasoning: "hmm", Content: "x", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}}, `{"name": "read", "parameters": {"path":"a"}}<|eot_id|>`},
		{&chat.Reply{Content: "Done."}, "Done.<|eot_id|>"},
	} {
		got, err := c.ReplyText(ctx, req, rendered, tc.reply)
		if err != nil || got != tc.want {
			t.Errorf("ReplyText(%+v) = %q, %v; want %q", tc.reply, got, err, tc.want)
		}
		res := &chat.Result{Rendered: rendered}
		if err := c.FillCache(ctx, req, tc.reply, res); err != nil {
			t.Fatal(err)
		}
		if res.CacheText != rendered+tc.want || raw[len(raw)-1] != res.CacheText {
			t.Errorf("FillCache: cache text %q, raw prompt %q; want %q", res.CacheText, raw[len(raw)-1], rendered+tc.want)
		}
		next := *req
		next.Messages = append(append([]chat.Message{}, req.Messages...), chat.Message{Role: chat.RoleAssistant, Content: tc.reply.Content, ToolCalls: tc.reply.ToolCalls},
			chat.Message{Role: chat.RoleUser, Content: "more"})
		nreq, _ := c.ChatRequest(&next)
		nr, err := c.Render(ctx, nreq)
		if err != nil || !strings.HasPrefix(nr, res.CacheText) {
			t.Errorf("the next request's rendering %q does not start with the cache text %q (%v)", nr, res.CacheText, err)
		}
	}

	// Without WithReplyEnds the reply is Qwen3's output, as before.
	q, _ := New(srv.URL, "m")
	res := &chat.Result{Rendered: rendered}
	if err := q.FillCache(ctx, req, &chat.Reply{Content: "Done."}, res); err != nil || res.CacheText != rendered+Qwen3Output(&chat.Reply{Content: "Done."}) {
		t.Errorf("without WithReplyEnds: %q, %v; want Qwen3's output", res.CacheText, err)
	}

	// A history rendered otherwise than in the prompt (a date header after midnight): an error.
	if _, err := c.ReplyText(ctx, req, strings.Replace(rendered, "S<|eot_id|>", "T<|eot_id|>", 1), &chat.Reply{Content: "Done."}); err == nil || !strings.Contains(err.Error(), "otherwise") {
		t.Errorf("history rendered otherwise: error %v; want one saying so", err)
	}

	// A template whose turns have no end token: an error naming it, and no cache fill.
	var raw2 []string
	bad := llamaLikeServer(t, "", &raw2)
	defer bad.Close()
	b, _ := New(bad.URL, "m", WithReplyEnds("<|eot_id|>"))
	badRendered, err := b.Render(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FillCache(ctx, req, &chat.Reply{Content: "Done."}, &chat.Result{Rendered: badRendered}); err == nil || !strings.Contains(err.Error(), `none of its end texts ["<|eot_id|>"]`) || len(raw2) != 0 {
		t.Errorf("no end token: error %v, %d raw prompts; want an error naming it and none sent", err, len(raw2))
	}
}
