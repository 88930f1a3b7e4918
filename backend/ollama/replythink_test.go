package ollama

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"lab/chat"
)

// With thinking on, the deepseek3.1 renderer ends the generation prompt after a user message
// with <think>, but renders the reply in the history after a bare </think>: the renderings part
// inside the tag. The cache then holds what a model writes after <think> — the tag closed, then
// the calls — not the history's text from the parting byte on ("<think>/think>").
func TestFillCacheThinkTagOpenedByTheGenerationPrompt(t *testing.T) {
	srv, _ := rendererServer(t, "deepseek3.1")
	c, err := New(srv.URL, "m", WithReplyEnds("<｜end▁of▁sentence｜>"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := &chat.Request{Think: true, Messages: []chat.Message{{Role: chat.RoleUser, Content: "Check a.go"}},
		Tools: []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
	creq, err := c.ChatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := c.Render(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(rendered, "<｜Assistant｜><think>") {
		t.Fatalf("generation prompt %q; want it to end <｜Assistant｜><think>", rendered[max(0, len(rendered)-40):])
	}
	reply := &chat.Reply{ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}
	res := &chat.Result{Rendered: rendered}
	if err := c.FillCache(ctx, req, reply, res); err != nil {
		t.Fatal(err)
	}
	got := strings.TrimPrefix(res.CacheText, rendered)
	if want := `</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{"path":"a.go"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>`; got != want {
		t.Errorf("cache text after the prompt %q; want %q", got, want)
	}
}

// With WithReasoningTags and thinking asked for, the reply's reasoning is written before the
// renderer's text of it, between the tags: the lfm2-thinking renderer opens no <think> in its
// generation prompt and never renders reasoning in the history, so the cache holds what the
// model wrote and the next request parts from it at the reply's first byte. Without thinking
// asked for, or without the option, the cache holds the history's text alone.
func TestFillCacheReasoningTheHistoryDrops(t *testing.T) {
	srv, _ := rendererServer(t, "lfm2-thinking")
	ctx := context.Background()
	reply := &chat.Reply{Reasoning: "Read a.go first.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}
	const calls = `<|tool_call_start|>[read(path="a.go")]<|tool_call_end|><|im_end|>`
	for _, tc := range []struct {
		name  string
		think bool
		opts  []Option
		want  string
	}{
		{"tags, thinking", true, []Option{WithReasoningTags("<think>", "</think>")}, "<think>Read a.go first.</think>" + calls},
		{"tags, no thinking", false, []Option{WithReasoningTags("<think>", "</think>")}, calls},
		{"no tags", true, nil, calls},
	} {
		c, err := New(srv.URL, "m", append([]Option{WithReplyEnds("<|im_end|>")}, tc.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		req := &chat.Request{Think: tc.think, Messages: []chat.Message{{Role: chat.RoleUser, Content: "Check a.go"}},
			Tools: []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
		creq, err := c.ChatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		rendered, err := c.Render(ctx, creq)
		if err != nil {
			t.Fatal(err)
		}
		res := &chat.Result{Rendered: rendered}
		if err := c.FillCache(ctx, req, reply, res); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimPrefix(res.CacheText, rendered); got != tc.want {
			t.Errorf("%s: cache text after the prompt %q; want %q", tc.name, got, tc.want)
		}
	}
}

// A model that does not think writes no reasoning: the glm-ocr renderer (whose parser does not
// think, so Ollama gets no think value) renders a message's reasoning into the history when it
// is given, but the cache holds the reply as the model writes it, an empty think block first.
func TestFillCacheNoReasoningWithoutThinking(t *testing.T) {
	srv, _ := rendererServer(t, "glm-ocr")
	c, err := New(srv.URL, "m", WithReplyEnds("<|observation|>", "<|user|>"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "Check a.go"}},
		Tools: []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
	creq, err := c.ChatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := c.Render(ctx, creq)
	if err != nil {
		t.Fatal(err)
	}
	reply := &chat.Reply{Reasoning: "Read a.go first.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}
	res := &chat.Result{Rendered: rendered}
	if err := c.FillCache(ctx, req, reply, res); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimPrefix(res.CacheText, rendered), "<think></think>\n<tool_call>read<arg_key>path</arg_key><arg_value>a.go</arg_value></tool_call>\n<|observation|>"; got != want {
		t.Errorf("cache text after the prompt %q; want %q", got, want)
	}
}
