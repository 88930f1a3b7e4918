package capture

import (
	"encoding/json"
	"testing"

	"lab/chat"
)

// Only calls whose arguments hold more than one key are counted: those Ollama's Anthropic
// conversion reorders.
func TestMultiArgumentCalls(t *testing.T) {
	req := &chat.Request{Messages: []chat.Message{
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
			{Name: "Read", Arguments: json.RawMessage(`{"file_path":"a.go"}`)},
			{Name: "Edit", Arguments: json.RawMessage(`{"file_path":"a.go","old_string":"x","new_string":"y"}`)},
		}},
		{Role: chat.RoleTool, Content: "ok"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "Bash", Arguments: json.RawMessage(`{"command":"ls","timeout":5}`)}}},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "Odd", Arguments: json.RawMessage(`"not an object"`)}}},
	}}
	if n := multiArgumentCalls(req); n != 2 {
		t.Fatalf("multiArgumentCalls = %d, want 2 (Edit and Bash)", n)
	}
}
