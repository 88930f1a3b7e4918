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
// it (the header's forms are read by wire.ParseRetryAfter, tested there).
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
}
