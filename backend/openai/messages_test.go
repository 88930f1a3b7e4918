package openai

import (
	"encoding/json"
	"testing"

	"lab/chat"
)

func TestEncodeMessages(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: "sys"},
		{Role: chat.RoleUser, Content: "fix <it> & go"},
		{Role: chat.RoleAssistant, Reasoning: "look first", ToolCalls: []chat.ToolCall{
			{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go", "limit": 5}`)},
			{ID: "c2", Name: "list"},
		}},
		{Role: chat.RoleTool, Content: "[#0001]\nx", ToolCallID: "c1", ToolName: "read"},
		{Role: chat.RoleTool, Content: "[#0002]\ny", ToolCallID: "c2", ToolName: "list"},
		{Role: chat.RoleAssistant, Content: "done", Thinking: []chat.ThinkingBlock{{Text: "t", Signature: "s"}}},
	}
	got, err := EncodeMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"system","content":"sys"},{"role":"user","content":"fix <it> & go"},` +
		`{"role":"assistant","content":"","reasoning_content":"look first","tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\": \"a.go\", \"limit\": 5}"}},` +
		`{"id":"c2","type":"function","function":{"name":"list","arguments":"{}"}}]},` +
		`{"role":"tool","content":"[#0001]\nx","tool_call_id":"c1"},{"role":"tool","content":"[#0002]\ny","tool_call_id":"c2"},` +
		`{"role":"assistant","content":"done"}]`
	if string(got) != want {
		t.Fatalf("EncodeMessages =\n%s\nwant\n%s", got, want)
	}
}

func TestEncodeMessagesErrors(t *testing.T) {
	for name, msgs := range map[string][]chat.Message{
		"tool without id":   {{Role: chat.RoleTool, Content: "x"}},
		"call without id":   {{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "read"}}}},
		"call without name": {{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c"}}}},
		"unknown role":      {{Role: "developer", Content: "x"}},
	} {
		if _, err := EncodeMessages(msgs); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if got, err := EncodeMessages(nil); err != nil || string(got) != "[]" {
		t.Fatalf("EncodeMessages(nil) = %s, %v; want []", got, err)
	}
}
