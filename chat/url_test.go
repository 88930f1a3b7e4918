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
// hidden too, every other parameter kept as it was. keys= is a credential's plural (a list of
// keys), hidden as the proxy hides a body's api_keys: the strongest redaction is the one.
func TestRedactedURLHidesQueryCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:9/v1?key=s3cretpw":                  "http://127.0.0.1:9/v1?key=xxxxx",
		"https://h/v1?alt=sse&API_KEY=s3cretpw&x=1#frag":      "https://h/v1?alt=sse&API_KEY=xxxxx&x=1#frag",
		"http://u:s3cretpw@h/v1?token=s3cretpw&keys=s3cretpw": "http://u:xxxxx@h/v1?token=xxxxx&keys=xxxxx",
		"h:80/v1?access%5Ftoken=s3cretpw":                     "h:80/v1?access%5Ftoken=xxxxx",
		"http://h/v1?monkey=banana":                           "http://h/v1?monkey=banana",
	} {
		if got := RedactedURL(raw); got != want {
			t.Errorf("RedactedURL(%q) = %q; want %q", raw, got, want)
		}
	}
}

// An address is redacted by the same list of credential names as the proxy's saved bodies,
// headers and URLs: Anthropic's x-api-key, OAuth's refresh_token, a prefixed key, a passwd, a
// signed URL's sig are hidden; token ids, a prompt cache key and a token limit are not.
func TestRedactedURLHidesEveryCredentialName(t *testing.T) {
	raw := "http://h/v1?x-api-key=s1&refresh_token=s2&openai_api_key=s3&passwd=s4&sig=s5&client-secret=s6&cookies=s7" +
		"&tokens=1,2&prompt_cache_key=conv&max_tokens=5"
	want := "http://h/v1?x-api-key=xxxxx&refresh_token=xxxxx&openai_api_key=xxxxx&passwd=xxxxx&sig=xxxxx&client-secret=xxxxx&cookies=xxxxx" +
		"&tokens=1,2&prompt_cache_key=conv&max_tokens=5"
	if got := RedactedURL(raw); got != want {
		t.Errorf("RedactedURL(%q) =\n%q; want\n%q", raw, got, want)
	}
	for name, want := range map[string]bool{"keys": true, "API_KEYS": true, "secrets": true, "signature": false, "tokens": false, "bos_token": false, "idempotency_key": false} {
		if got := IsCredentialName(name); got != want {
			t.Errorf("IsCredentialName(%q) = %v; want %v", name, got, want)
		}
	}
	if !IsCredentialParam("Signature") {
		t.Errorf("IsCredentialParam(%q) = false; want true (a signed URL's)", "Signature")
	}
}
