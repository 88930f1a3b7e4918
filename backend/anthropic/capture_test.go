package anthropic

import (
	"slices"
	"testing"
)

func TestAtMessageRoundTrip(t *testing.T) {
	for _, i := range []int{0, 1, 42} {
		p := AtMessage(i)
		if got, ok := MessageAt(p); !ok || got != i {
			t.Errorf("MessageAt(%q) = %d, %v; want %d", p, got, ok, i)
		}
	}
	if AtMessage(3) != "message 3" {
		t.Errorf("AtMessage(3) = %q", AtMessage(3))
	}
	for _, p := range []string{AtTools, AtSystem, AtLastMessage, "message", "message ", "message -1", "message 01", "message x", "messages 1"} {
		if i, ok := MessageAt(p); ok {
			t.Errorf("MessageAt(%q) = %d, true; want not a message place", p, i)
		}
	}
}

// DecodeRequest lists each cache_control marker by its place: the tool list, the system prompt,
// and a message by its index in the decoded messages (the system prompt is message 0, and a user
// turn's tool results each become a message of their own).
func TestDecodeRequestBreakpoints(t *testing.T) {
	body := `{"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
		"tools":[{"name":"read","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"},{"type":"text","text":"go on","cache_control":{"type":"ephemeral"}}]}]}`
	req, err := DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{AtTools, AtSystem, "message 4"}; !slices.Equal(req.CacheBreakpoints, want) {
		t.Errorf("CacheBreakpoints = %q; want %q (messages %d)", req.CacheBreakpoints, want, len(req.Messages))
	}
}
