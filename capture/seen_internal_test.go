package capture

import "testing"

// A value under a credential name that is a plain word (a tool call's {"key":"model"}) is not
// remembered for later rows: "model" in the next request's error stays as it is; a value that
// looks like a key is remembered.
func TestSeenSecretsSkipPlainWords(t *testing.T) {
	var s seenSecrets
	s.add([]string{"model", "sk-live-1234", "abc", "hunter22", "Bearer"})
	for _, v := range []string{"sk-live-1234", "hunter22"} {
		if !s.set[v] {
			t.Errorf("%q not remembered", v)
		}
	}
	for _, v := range []string{"model", "abc", "Bearer"} {
		if s.set[v] {
			t.Errorf("%q remembered: every later %q would be redacted", v, v)
		}
	}
	if got := Redact("which model? sk-live-1234", s.list); got != "which model? "+Redacted {
		t.Errorf("Redact = %q", got)
	}
}
