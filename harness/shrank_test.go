package harness

import (
	"strings"
	"testing"
)

// A prompt counted as fewer tokens than the one before, although the request grew, was cut by
// the server (Ollama's /v1 endpoints at their default 4,096-token window: midnight measured
// 4,012 then 3,383 prompt tokens); a request an arm made smaller, or unknown figures, never warn.
func TestPromptShrank(t *testing.T) {
	for _, tc := range []struct {
		name                                 string
		prevPrompt, prevBytes, prompt, bytes int64
		warn                                 bool
	}{
		{"cut to the window", 4012, 20000, 3383, 23000, true},
		{"grew", 3383, 20000, 4012, 23000, false},
		{"pruned: the request shrank too", 4012, 23000, 3383, 20000, false},
		{"first request", 0, 0, 3383, 23000, false},
		{"prompt unknown", 4012, 20000, 0, 23000, false},
		{"same size", 4012, 20000, 4012, 20000, false},
		{"reasoning dropped by the template", 13850, 45694, 13311, 47086, false},
	} {
		got := promptShrank(tc.prevPrompt, tc.prevBytes, tc.prompt, tc.bytes)
		if (got != "") != tc.warn {
			t.Errorf("%s: %q; want warning %v", tc.name, got, tc.warn)
		}
		if tc.warn && !strings.HasPrefix(got, WarningPromptShrank) {
			t.Errorf("%s: %q does not start with %q", tc.name, got, WarningPromptShrank)
		}
	}
}
