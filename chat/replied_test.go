package chat

import (
	"encoding/json"
	"testing"
)

func TestReplied(t *testing.T) {
	req := &Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	reply := &Reply{Content: "Looking.", ToolCalls: []ToolCall{{Name: "read", Arguments: json.RawMessage(`{}`)}, {ID: "c2", Name: "grep"}}}
	next := Replied(req, reply)
	if len(next.Messages) != 4 || next.Messages[1].Role != RoleAssistant || next.Messages[1].ToolCalls[0].ID != "next-0" ||
		next.Messages[2].ToolCallID != "next-0" || next.Messages[3].ToolCallID != "c2" || next.Messages[3].ToolName != "grep" {
		t.Errorf("Replied = %+v", next.Messages)
	}
	if len(req.Messages) != 1 || reply.ToolCalls[0].ID != "" {
		t.Errorf("Replied changed its arguments: %+v, %+v", req.Messages, reply.ToolCalls)
	}
	if m := Replied(req, &Reply{Content: "Done."}).Messages; len(m) != 3 || m[2].Role != RoleTool || m[2].ToolCallID != "next" {
		t.Errorf("a reply without calls: %+v", m)
	}
}

func TestOpenTagStart(t *testing.T) {
	for _, tc := range []struct {
		s                 string
		at, maxBack, want int
	}{
		{"ab<t", 4, 24, 2},   // inside an open tag
		{"ab<b>c", 6, 24, 6}, // the tag is closed
		{"a< b", 4, 24, 4},   // not a tag
		{"<xxxxx", 6, 24, 0}, // within reach
		{"<xxxxx", 6, 3, 6},  // out of it
	} {
		if got := OpenTagStart(tc.s, tc.at, tc.maxBack); got != tc.want {
			t.Errorf("OpenTagStart(%q, %d, %d) = %d; want %d", tc.s, tc.at, tc.maxBack, got, tc.want)
		}
	}
}
