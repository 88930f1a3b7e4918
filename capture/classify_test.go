package capture

import "testing"

func TestClassify(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"POST", "/v1/chat/completions", APIOpenAIChat},
		{"POST", "/openai/v1/chat/completions/", APIOpenAIChat},
		{"POST", "/v1/responses", APIOpenAIResponses},
		{"POST", "/v1/messages", APIAnthropic},
		{"POST", "/api/chat", APIOllamaChat},
		{"POST", "/api/generate", APIOllamaGenerate},
		{"POST", "/completion", APILlamaCppCompletion},
		{"POST", "/v1/threads/thread_abc/messages", ""}, // OpenAI Assistants: passed through
		{"POST", "/v1/messages/count_tokens", ""},
		{"GET", "/v1/chat/completions", ""},
		{"POST", "/api/tags", ""},
	} {
		if got := Classify(c.method, c.path); got != c.want {
			t.Errorf("Classify(%s %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
}
