package capture_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/capture"
)

// syncBuffer is a bytes.Buffer safe for the recorder's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A failed request has no prompt count: its progress line says unknown, not 0.
func TestProgressLineOfAFailedRequest(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	}))
	defer up.Close()
	var out syncBuffer
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: filepath.Join(t.TempDir(), "run_id=p"), RunID: "p", Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	post(t, srv.URL, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "? prompt tokens, ? cached") || !strings.Contains(got, "error: HTTP 500") {
		t.Errorf("progress: %q; want the prompt tokens unknown", got)
	}
}
