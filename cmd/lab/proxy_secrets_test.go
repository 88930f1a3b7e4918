package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// lab proxy --save-requests in front of an upstream that echoes the request body in its error:
// the credential fields of the body (nested, and inside a tool call's arguments) reach neither
// stderr nor any file of the capture folder, while the client gets the echo unchanged.
func TestProxyKeepsBodyCredentialsOutOfStderrAndFiles(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": "authentication_error", "message": "invalid key in " + string(b)}})
	}))
	defer up.Close()
	results := t.TempDir()
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, ResultsDir: results, RunID: "cap", Label: "capture", SaveRequests: true})
	body := `{"model":"m","api_key":"sk-LEAKED-one","messages":[{"role":"user","content":"hi"},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"login","arguments":"{\"password\":\"LEAKED-two\"}"}}]}],` +
		`"metadata":{"session":{"auth":{"refresh_token":"rt-LEAKED-three"}}}}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(got, []byte("sk-LEAKED-one")) {
		t.Errorf("the client got %d %q; want the upstream's echo unchanged", resp.StatusCode, got)
	}
	err, _, stderr := stop()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "error: HTTP 401") || strings.Contains(stderr, "LEAKED") {
		t.Errorf("stderr %q; want the request's error line with no secret", stderr)
	}
	// The Parquet file may compress its columns: read them back as well.
	_, rows, err := metrics.ReadRun(filepath.Join(results, "run_id=cap"))
	if err != nil || len(rows) != 1 || !strings.HasPrefix(rows[0].Error, "HTTP 401") || strings.Contains(rows[0].Error+rows[0].Warnings, "LEAKED") {
		t.Errorf("rows %+v, %v; want one, its error with no secret", rows, err)
	}
	files := 0
	filepath.WalkDir(filepath.Join(results, "run_id=cap"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("LEAKED")) {
			t.Errorf("%s holds a secret of the request body", path)
		}
		return nil
	})
	if files < 3 {
		t.Errorf("%d files in the capture; want its manifest, samples and requests", files)
	}
}
