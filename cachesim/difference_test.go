package cachesim

import (
	"encoding/json"
	"testing"

	"lab/chat"
)

func TestFirstDifference(t *testing.T) {
	tools := []chat.Tool{{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type": "object"}`)}, {Name: "edit", Description: "Edit a file.", Parameters: json.RawMessage(`{"type":"object"}`)}}
	call := chat.ToolCall{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)}
	base := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a coding agent."},
		{Role: chat.RoleUser, Content: "Fix the bug.\n\n<session-note>date 2026-11-29</session-note>"},
		{Role: chat.RoleAssistant, Reasoning: "Look first.", ToolCalls: []chat.ToolCall{call}},
		{Role: chat.RoleTool, ToolCallID: "call_1", ToolName: "read", Content: "package a"},
	}
	with := func(f func(r *chat.Request)) *chat.Request {
		r := &chat.Request{Tools: append([]chat.Tool(nil), tools...), Messages: append([]chat.Message(nil), base...)}
		f(r)
		return r
	}
	prev := &chat.Request{Tools: tools, Messages: base}
	for _, tc := range []struct {
		name string
		cur  *chat.Request
		want string
	}{
		{"the same request", with(func(*chat.Request) {}), ""},
		{"appends messages", with(func(r *chat.Request) {
			r.Messages = append(r.Messages, chat.Message{Role: chat.RoleAssistant, Content: "Done."})
		}), ""},
		{"shorter", with(func(r *chat.Request) { r.Messages = r.Messages[:2] }), ""},
		{"system prompt changed", with(func(r *chat.Request) { r.Messages[0].Content = "Today is Monday. You are a coding agent." }), "system"},
		// Parts anchors "tools" on the last tool's description only; the difference sees every tool.
		{"first tool's schema changed", with(func(r *chat.Request) {
			r.Tools[0].Parameters = json.RawMessage(`{"type":"object","required":["path"]}`)
		}), "tools"},
		{"white space in a schema is no change", with(func(r *chat.Request) { r.Tools[0].Parameters = json.RawMessage(`{"type":"object"}`) }), ""},
		{"tool added", with(func(r *chat.Request) { r.Tools = append(r.Tools, chat.Tool{Name: "grep"}) }), "tools"},
		{"note changed", with(func(r *chat.Request) {
			r.Messages[1].Content = "Fix the bug.\n\n<session-note>date 2026-11-30</session-note>"
		}), "note"},
		{"user text changed", with(func(r *chat.Request) {
			r.Messages[1].Content = "Fix the bug!\n\n<session-note>date 2026-11-29</session-note>"
		}), "message 1"},
		{"reasoning dropped", with(func(r *chat.Request) { r.Messages[2].Reasoning = "" }), "reasoning 2"},
		{"reasoning changed", with(func(r *chat.Request) { r.Messages[2].Reasoning = "Look." }), "reasoning 2"},
		{"tool call arguments changed", with(func(r *chat.Request) {
			r.Messages[2].ToolCalls = []chat.ToolCall{{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path": "/abs/a.go"}`)}}
		}), "message 2"},
		{"tool call id changed", with(func(r *chat.Request) {
			r.Messages[2].ToolCalls = []chat.ToolCall{{ID: "call_9", Name: "read", Arguments: call.Arguments}}
		}), "message 2"},
		{"tool result pruned", with(func(r *chat.Request) { r.Messages[3].Content = "[output pruned]" }), "tool result 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FirstDifference(DifferenceParts(prev, "<session-note>"), DifferenceParts(tc.cur, "<session-note>"))
			if got.String() != tc.want {
				t.Fatalf("FirstDifference = %q; want %q", got, tc.want)
			}
		})
	}
}

// Without a system message the tool list still counts, first; a message gaining reasoning
// differs at its reasoning.
func TestFirstDifferenceNoSystem(t *testing.T) {
	prev := &chat.Request{Tools: []chat.Tool{{Name: "a"}}, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}, {Role: chat.RoleAssistant, Content: "yes"}}}
	parts := DifferenceParts(prev, "")
	if len(parts) != 3 || parts[0].Name != seg("tools") || parts[1].Name != seg("message 0") || parts[2].Name != seg("message 1") {
		t.Fatalf("DifferenceParts = %+v; want tools, message 0, message 1", parts)
	}
	cur := &chat.Request{Tools: []chat.Tool{{Name: "b"}}, Messages: prev.Messages}
	if got := FirstDifference(parts, DifferenceParts(cur, "")); got != seg("tools") {
		t.Fatalf("tool renamed: %q; want tools", got)
	}
	cur = &chat.Request{Tools: prev.Tools, Messages: []chat.Message{prev.Messages[0], {Role: chat.RoleAssistant, Reasoning: "hm", Content: "yes"}}}
	if got := FirstDifference(parts, DifferenceParts(cur, "")); got != seg("reasoning 1") {
		t.Fatalf("reasoning added: %q; want reasoning 1", got)
	}
	if got := FirstDifference(nil, parts); got != (Segment{}) {
		t.Fatalf("no previous request: %q; want \"\"", got)
	}
}
