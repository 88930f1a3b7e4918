package capture

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// manifestBytesPerRow records rows requests, each a conversation of its own, and returns the
// manifest bytes the capture wrote per row while recording them (the manifest New writes and the
// one Close writes left out).
func manifestBytesPerRow(t *testing.T, rows int) float64 {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(t.TempDir(), "run_id=cap"), RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	p.rec.mu.Lock()
	before := p.rec.manifestBytes
	p.rec.mu.Unlock()
	for i := range rows {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"task %d"}]}`, i)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for p.Samples() < rows { // the recorder writes a row once its answer ended
		time.Sleep(time.Millisecond)
	}
	p.rec.mu.Lock()
	written := p.rec.manifestBytes - before
	p.rec.mu.Unlock()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return float64(written) / float64(rows)
}

// The work a row costs does not grow with the capture: the manifest bytes written per row are
// the same for a capture of 300 conversations as for one of 20 (the manifest, which lists every
// conversation, is not rewritten per row).
func TestCaptureRowWorkDoesNotGrowWithConversations(t *testing.T) {
	small, big := manifestBytesPerRow(t, 20), manifestBytesPerRow(t, 300)
	if big > small+64 {
		t.Errorf("manifest bytes written per row: %.0f with 20 conversations, %.0f with 300", small, big)
	}
}
