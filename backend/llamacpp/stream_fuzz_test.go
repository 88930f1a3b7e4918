package llamacpp

import (
	"bytes"
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

// FuzzReadStream feeds arbitrary bytes to llama-server's stream reader, as an event stream and as
// an application/json answer: it never panics, calls first at most once, and either fails (an
// error, a *chat.APIError for an error the server sent) or returns a completion.
func FuzzReadStream(f *testing.F) {
	for _, pat := range []string{"testdata/*.sse", "testdata/*.json"} {
		files, _ := filepath.Glob(pat)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, filepath.Ext(file) == ".json")
		}
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"o\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":7,\"function\":{\"arguments\":\"{\"}}]}}]}\n"), false)
	f.Add([]byte("error: {\"code\":500,\"message\":\"x\"}\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, asJSON bool) {
		firsts := 0
		first := func() { firsts++ }
		ct := "text/event-stream"
		if asJSON {
			ct = "application/json"
		}
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(b))}
		c, err := readCompletion(resp, first)
		if firsts > 1 {
			t.Fatalf("first called %d times", firsts)
		}
		if err == nil && c == nil {
			t.Fatal("no error and no completion")
		}
		var ae *chat.APIError
		if errors.As(err, &ae) && ae.Backend != backendName {
			t.Fatalf("APIError from backend %q", ae.Backend)
		}
	})
}

// A 503 (llama-server busy: no free slot) with Retry-After gives an error carrying the wait,
// for the harness to retry after it.
func TestRetryAfterInTheError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "4")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`)
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.RetryAfter != 4*time.Second {
		t.Errorf("error %#v; want HTTP 503 with RetryAfter 4s", err)
	}
}
