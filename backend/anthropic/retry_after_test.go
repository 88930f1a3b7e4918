package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"lab/chat"
)

// A 429 or 529 with Retry-After gives an error carrying the wait, for the harness to retry after
// it; both header forms are read (RFC 9110 §10.2.3).
func TestRetryAfterInTheError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "12")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("k"), 0o600)
	c, err := New(Options{BaseURL: srv.URL, Model: "claude-x", KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), testRequest(), nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 529 || ae.RetryAfter != 12*time.Second {
		t.Errorf("error %#v; want HTTP 529 with RetryAfter 12s", err)
	}
	now := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": 0, "3": 3 * time.Second, "-1": 0, "x": 0,
		"Mon, 30 Nov 2026 02:01:00 GMT": time.Minute, "Mon, 30 Nov 2026 01:00:00 GMT": 0} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s; want %s", v, got, want)
		}
	}
}
