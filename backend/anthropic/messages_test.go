package anthropic

import (
	"encoding/json"
	"testing"

	"lab/chat"
)

func TestEncodeMessages(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: "sys"},
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, Reasoning: "plain text only", Content: "reading", Thinking: []chat.ThinkingBlock{
			{Text: "think <a>", Signature: "SIG1=="},
			{Redacted: true, Data: "ENC=="},
			{Text: "", Signature: "SIG2"},
		}, ToolCalls: []chat.ToolCall{
			{ID: "toolu_1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)},
			{ID: "toolu_2", Name: "list"},
		}},
		{Role: chat.RoleTool, Content: "r1", ToolCallID: "toolu_1"},
		{Role: chat.RoleTool, Content: "r2", ToolCallID: "toolu_2"},
		{Role: chat.RoleUser, Content: "and this", Interjection: true},
		{Role: chat.RoleAssistant, Content: "ok", Reasoning: "unsigned"},
	}
	got, err := EncodeMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"go"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"think <a>","signature":"SIG1=="},` +
		`{"type":"redacted_thinking","data":"ENC=="},{"type":"thinking","thinking":"","signature":"SIG2"},` +
		`{"type":"text","text":"reading"},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.go"}},` +
		`{"type":"tool_use","id":"toolu_2","name":"list","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r1"},` +
		`{"type":"tool_result","tool_use_id":"toolu_2","content":"r2"},{"type":"text","text":"and this"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"ok"}]}]`
	if string(got) != want {
		t.Fatalf("EncodeMessages =\n%s\nwant\n%s", got, want)
	}
	if s := System(msgs); s != "sys" {
		t.Fatalf("System = %q", s)
	}
	if s := System([]chat.Message{{Role: chat.RoleSystem, Content: "a"}, {Role: chat.RoleSystem, Content: "b"}, {Role: chat.RoleUser}}); s != "a\n\nb" {
		t.Fatalf("System of two = %q", s)
	}
}

func TestEncodeMessagesErrors(t *testing.T) {
	for name, msgs := range map[string][]chat.Message{
		"late system":       {{Role: chat.RoleUser, Content: "x"}, {Role: chat.RoleSystem, Content: "s"}},
		"tool without id":   {{Role: chat.RoleTool, Content: "x"}},
		"call without id":   {{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "read"}}}},
		"empty user":        {{Role: chat.RoleUser}},
		"unknown role":      {{Role: "developer", Content: "x"}},
		"invalid arguments": {{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{`)}}}},
	} {
		if _, err := EncodeMessages(msgs); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A live reply with nothing the API takes back (an empty answer, or one cut at max_tokens inside
// its only thinking block, whose signature never came) is left out: the API refuses an
// assistant message with empty content, and the session goes on.
func TestEncodeMessagesLeavesOutAnEmptyAssistantMessage(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, Reasoning: "First I need to"},
		{Role: chat.RoleUser, Content: "next"},
		{Role: chat.RoleAssistant},
		{Role: chat.RoleUser, Content: "again"},
		{Role: chat.RoleAssistant, Content: "ok"},
	}
	got, err := EncodeMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"go"},{"type":"text","text":"next"},{"type":"text","text":"again"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"ok"}]}]`
	if string(got) != want {
		t.Fatalf("EncodeMessages =\n%s\nwant\n%s", got, want)
	}
}
