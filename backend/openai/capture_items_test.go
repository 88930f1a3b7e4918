package openai

import (
	"testing"

	"lab/chat"
)

// Responses: reasoning that no assistant item follows stays where it stands (before the
// developer message, not moved onto a later answer); custom tool calls, their outputs and
// tools of every type are read; an unknown item is an item message.
func TestDecodeResponsesKeepsItemsWhereTheyStand(t *testing.T) {
	body := `{"tools":[{"type":"function","name":"shell"},{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"text"}},{"type":"web_search"}],
	 "input":[{"role":"user","content":"a"},
	  {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]},
	  {"type":"message","role":"developer","content":"dev"},
	  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"answer"}]},
	  {"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin"},
	  {"type":"custom_tool_call_output","call_id":"c1","output":"ok"},
	  {"type":"mcp_call","id":"m1","name":"x"}]}`
	req, err := DecodeResponsesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m := req.Messages
	if len(m) != 6 {
		t.Fatalf("%d messages %+v; want 6", len(m), m)
	}
	if m[1].Role != chat.RoleAssistant || m[1].Reasoning != "think" || m[1].Content != "" || len(m[1].Thinking) != 1 {
		t.Errorf("message 1 %+v; want the reasoning alone, where it stood", m[1])
	}
	if m[2].Role != chat.RoleDeveloper || m[2].Content != "dev" {
		t.Errorf("message 2 %+v; want the developer message", m[2])
	}
	if m[3].Content != "answer" || m[3].Thinking != nil || len(m[3].ToolCalls) != 1 || m[3].ToolCalls[0].Name != "apply_patch" || string(m[3].ToolCalls[0].Arguments) != `"*** Begin"` {
		t.Errorf("message 3 %+v; want the answer with its custom tool call", m[3])
	}
	if m[4].Role != chat.RoleTool || m[4].ToolCallID != "c1" || m[4].Content != "ok" {
		t.Errorf("message 4 %+v; want the custom tool's output", m[4])
	}
	if m[5].Item != "mcp_call" || m[5].Role != chat.RoleAssistant {
		t.Errorf("message 5 %+v; want an mcp_call item", m[5])
	}
	if len(req.Tools) != 3 || req.Tools[1].Name != "apply_patch" || req.Tools[2].Name != "web_search" {
		t.Errorf("tools %+v; want shell, apply_patch, web_search", req.Tools)
	}
}
