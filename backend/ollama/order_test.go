package ollama

import (
	"encoding/json"
	"testing"
)

// A tool_use input's keys come out in the order the body wrote them, on every conversion
// (Ollama's own conversion draws a new order from a Go map each time).
func TestOrderAnthropicArguments(t *testing.T) {
	body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"edit it"},
{"role":"assistant","content":[{"type":"tool_use","id":"call_1_2","name":"Edit","input":{"file_path":"/p/a.go","old_string":"x","new_string":"y","replace_all":false}}]},
{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1_2","content":"ok"}]}]}`)
	const want = `{"file_path":"/p/a.go","old_string":"x","new_string":"y","replace_all":false}`
	for range 20 {
		c, err := CompatibleChatRequest(CompatibleAnthropic, body)
		if err != nil {
			t.Fatal(err)
		}
		if err := OrderAnthropicArguments(c, body); err != nil {
			t.Fatal(err)
		}
		var got string
		for _, m := range c.Messages {
			for _, tc := range m.ToolCalls {
				b, _ := json.Marshal(tc.Function.Arguments)
				got = string(b)
			}
		}
		if got != want {
			t.Fatalf("arguments %s, want %s", got, want)
		}
	}
	if err := OrderAnthropicArguments(nil, []byte(`[1]`)); err == nil {
		t.Fatal("a body that is not a Messages request: no error")
	}
}
