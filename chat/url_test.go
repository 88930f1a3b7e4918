package chat

import (
	"strings"
	"testing"
)

// No form of a base URL with a password, parsed or not, keeps the password in RedactedURL.
func TestRedactedURLHidesThePassword(t *testing.T) {
	for _, raw := range []string{
		"http://user:s3cret-pw@127.0.0.1:8080/v1",
		"https://user:s3cret-pw@host/v1?x=1",
		"http://user:s3cret-pw@127.0.0.1:80a80/v1", // a bad port: does not parse
		"ftp://user:s3cret-pw@host",
		"user:s3cret-pw@host:8080",
		"http://us%zzer:s3cret-pw@host", // a bad escape: does not parse
	} {
		got := RedactedURL(raw)
		if strings.Contains(got, "s3cret-pw") || !strings.Contains(got, "host") && !strings.Contains(got, "127.0.0.1") {
			t.Errorf("RedactedURL(%q) = %q; want the password replaced, the host kept", raw, got)
		}
	}
	if got := RedactedURL("http://127.0.0.1:8080/v1"); got != "http://127.0.0.1:8080/v1" {
		t.Errorf("RedactedURL of a URL without user info = %q; want it unchanged", got)
	}
}
