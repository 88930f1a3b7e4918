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

// A credential in a base URL's query (?key=, as Gemini's API takes its key; api_key, token) is
// hidden too, every other parameter kept as it was.
func TestRedactedURLHidesQueryCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:9/v1?key=s3cretpw":                 "http://127.0.0.1:9/v1?key=xxxxx",
		"https://h/v1?alt=sse&API_KEY=s3cretpw&x=1#frag":     "https://h/v1?alt=sse&API_KEY=xxxxx&x=1#frag",
		"http://u:s3cretpw@h/v1?token=s3cretpw&keys=visible": "http://u:xxxxx@h/v1?token=xxxxx&keys=visible",
		"h:80/v1?access%5Ftoken=s3cretpw":                    "h:80/v1?access%5Ftoken=xxxxx",
		"http://h/v1?monkey=banana":                          "http://h/v1?monkey=banana",
	} {
		if got := RedactedURL(raw); got != want {
			t.Errorf("RedactedURL(%q) = %q; want %q", raw, got, want)
		}
	}
}
