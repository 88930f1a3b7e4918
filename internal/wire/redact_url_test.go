package wire

import (
	"strings"
	"testing"
)

// An error's text names its address with the key a URL's query carries (?key=…, as Gemini's
// API takes it) redacted, as Redact redacts it in the same error's body: the error column of a
// failed row otherwise keeps the key once, in "openai at <URL>:", and redacts it after.
func TestErrorRedactsAQueryKeyInItsURL(t *testing.T) {
	e := Endpoint{Backend: "openai", URL: "http://127.0.0.1:9/v1?key=s3cretpw"}
	err := e.Error(500, `Post "http://127.0.0.1:9/v1?key=s3cretpw": refused`)
	if s := err.Error(); strings.Contains(s, "s3cretpw") {
		t.Errorf("error text %q holds the query key", s)
	}
}
