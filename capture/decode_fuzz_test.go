package capture

import (
	"testing"

	"lab/cachesim"
)

// FuzzDecodeRequest feeds any body to every API's request decoder (the client's bytes are
// untrusted): no decoder may panic, and a request it accepts must group and split into parts.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}],"tools":[{"type":"function","function":{"name":"read","parameters":{}}}]}`,
		`{"model":"m","instructions":"s","input":[{"type":"message","role":"user","content":"hi"},{"type":"reasoning","id":"r1","encrypted_content":"e","summary":[]},{"type":"function_call","call_id":"c1","name":"read","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"x"}]}`,
		`{"model":"claude","max_tokens":10,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"tool_use","id":"t1","name":"read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi","thinking":"t","tool_calls":[{"function":{"name":"read","arguments":{"path":"a"}}}]}]}`,
		`{"model":"m","prompt":"<|im_start|>user\nhi","raw":true,"options":{"num_predict":1}}`,
		`{"prompt":"hello","n_predict":0}`,
		`{"prompt":[1,2,3]}`,
	} {
		f.Add([]byte(seed))
	}
	apis := []string{APIOpenAIChat, APIOpenAIResponses, APIAnthropic, APIOllamaChat, APIOllamaGenerate, APILlamaCppCompletion}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, api := range apis {
			req, err := DecodeRequest(api, body)
			if err != nil || req == nil {
				continue
			}
			messageKeys(req.Messages)
			cachesim.Parts(req, "<session-note>")
			cachesim.DifferenceParts(req, "<session-note>")
		}
	})
}
