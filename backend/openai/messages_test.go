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

func TestEncodeMessagesWith(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleAssistant, Reasoning: "r", Content: "a"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c", Name: "n"}}},
		{Role: chat.RoleAssistant, Content: "b"},
	}
	for _, tc := range []struct {
		name string
		o    EncodeOptions
		want string
	}{
		{"none", EncodeOptions{}, `[{"role":"assistant","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]},{"role":"assistant","content":"b"}]`},
		{"vllm", EncodeOptions{ReasoningField: FieldReasoning}, `[{"role":"assistant","content":"a","reasoning":"r"},{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]},{"role":"assistant","content":"b"}]`},
		{"deepseek", EncodeOptions{ReasoningField: FieldReasoningContent, ReasoningOnToolCalls: true}, `[{"role":"assistant","content":"a","reasoning_content":"r"},{"role":"assistant","content":"","reasoning_content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]},{"role":"assistant","content":"b"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeMessagesWith(msgs, tc.o)
			if err != nil || string(got) != tc.want {
				t.Errorf("EncodeMessagesWith(%+v) = %s, %v; want %s", tc.o, got, err, tc.want)
			}
		})
	}
}

func TestEncodeTools(t *testing.T) {
	got, err := EncodeTools([]chat.Tool{{Name: "a", Description: "x < y", Parameters: json.RawMessage("{\n \"type\": \"object\"\n}")}, {Name: "b"}})
	want := `[{"type":"function","function":{"name":"a","description":"x < y","parameters":{"type":"object"}}},` +
		`{"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{}}}}]`
	if err != nil || string(got) != want {
		t.Errorf("EncodeTools = %s, %v; want %s", got, err, want)
	}
	if _, err := EncodeTools([]chat.Tool{{Name: "a", Parameters: json.RawMessage("{")}}); err == nil {
		t.Error("EncodeTools with bad parameters: no error")
	}
}

func TestEncodeInput(t *testing.T) {
	msgs := []chat.Message{
		{Role: chat.RoleUser, Content: "q"},
		{Role: chat.RoleAssistant, Reasoning: "plain text cannot go back", Content: "ans"},
		{Role: chat.RoleAssistant, Thinking: []chat.ThinkingBlock{ReasoningBlock("rs_1", "enc", "sum"), {Text: "anthropic", Signature: "s"}}},
	}
	got, dropped, err := EncodeInput(msgs)
	want := `[{"type":"message","role":"user","content":"q"},{"type":"message","role":"assistant","content":"ans"},` +
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"sum"}],"encrypted_content":"enc"},` +
		`{"type":"message","role":"assistant","content":""}]`
	if err != nil || string(got) != want || dropped != 1 {
		t.Errorf("EncodeInput = %s, %d, %v; want %s, 1", got, dropped, err, want)
	}
	if _, _, err := EncodeInput([]chat.Message{{Role: chat.RoleTool, Content: "x"}}); err == nil {
		t.Error("EncodeInput of a tool message without id: no error")
	}
}
