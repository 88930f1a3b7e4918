package capture_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/capture"
	"lab/metrics"
	"lab/report"
)

// A key sent in the query string (Gemini's ?key=, Azure's ?api-key=) and echoed by the upstream
// in its error is redacted like a header's, from the rows, the progress lines and every file; so
// is a key in the upstream's own URL.
func TestProxyRedactsKeysInTheQuery(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"API key not valid: %s; token %s"}}`, r.URL.Query().Get("key"), r.URL.Query().Get("access_token"))
	}))
	defer up.Close()
	var progress bytes.Buffer
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL + "?access_token=" + secret + "2", Dir: dir, RunID: "cap", Progress: &progress, SaveRequests: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	code, got := post(t, srv.URL, "/v1/chat/completions?alt=sse&key="+secret, `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		map[string]string{"Authorization": "", "X-Api-Key": ""})
	if code != http.StatusBadRequest || !strings.Contains(got, secret) {
		t.Errorf("the client got %d %q; want the upstream's answer unchanged", code, got)
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if want := "HTTP 400: API key not valid: [redacted]; token [redacted]"; rows[0].Error != want {
		t.Errorf("row error %q; want %q", rows[0].Error, want)
	}
	noSecret(t, dir, progress.String())
}

// An upstream that compresses its answer although the proxy asked for identity: the client gets
// the bytes unchanged and the row is read from the decompressed answer, with the time to first
// token of the chunk that carried the first content.
func TestProxyReadsACompressedAnswer(t *testing.T) {
	events := []string{
		"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\ndata: [DONE]\n\n",
	}
	for _, enc := range []string{"gzip", "br"} {
		t.Run(enc, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", enc)
				if enc != "gzip" {
					io.WriteString(w, "\x1b\x00\x00garbage")
					return
				}
				gz := gzip.NewWriter(w)
				for _, e := range events {
					io.WriteString(gz, e)
					gz.Flush()
					w.(http.Flusher).Flush()
				}
				gz.Close()
			}))
			defer up.Close()
			url, _, stop := startProxy(t, up.URL, nil, false)
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"x"}]}`))
			req.Header.Set("Accept-Encoding", enc)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Header.Get("Content-Encoding") != enc {
				t.Errorf("the client got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
			}
			_, rows := stop()
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			s := rows[0]
			if enc == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				plain, _ := io.ReadAll(zr)
				if string(plain) != strings.Join(events, "") {
					t.Errorf("the client's answer decompresses to %q", plain)
				}
				if s.Error != "" || s.PromptTokens != 20 || s.CachedTokens == nil || *s.CachedTokens != 16 || val(s.CompletionTokens) != 3 || s.TTFTNs <= 0 {
					t.Errorf("row error %q prompt %d cached %s completion %s ttft %d; want 20, 16, 3", s.Error, s.PromptTokens, show(s.CachedTokens), show(s.CompletionTokens), s.TTFTNs)
				}
				return
			}
			if !strings.Contains(s.Error, "Content-Encoding br") || s.PromptTokens != 0 {
				t.Errorf("row error %q prompt %d; want an error naming the encoding", s.Error, s.PromptTokens)
			}
		})
	}
}

// Rows are written as they come, and say how their conversations ended: a capture killed before
// Close (kill -9), whose manifest was written only at the start, still reads, every conversation
// answered so far counts in the figures, and one whose last request failed is left out.
func TestProxyCaptureReadsBeforeClose(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if b, _ := io.ReadAll(r.Body); strings.Contains(string(b), "task D") {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"boom"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}}`)
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, u := range []string{"task A", "task B", "task C", "task D"} {
		post(t, srv.URL, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+u+`"}]}`, nil)
	}
	// The recorder writes a row once the answer ended; wait for the four.
	for p.Samples() < 4 {
		time.Sleep(time.Millisecond)
	}
	man, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 4 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if man.Complete || man.Samples != 4 || len(man.Scenarios) != 4 || len(man.Sessions) != 4 || man.Model != "m" || man.Backend != "proxy:openai-chat" {
		t.Errorf("manifest complete %v, samples %d, scenarios %v, %d sessions, model %q, backend %q; want incomplete, 4 of each, m, proxy:openai-chat",
			man.Complete, man.Samples, man.Scenarios, len(man.Sessions), man.Model, man.Backend)
	}
	complete, left := report.Sessions([]*metrics.Manifest{man}, rows)
	if len(complete) != 3 || len(left) != 1 || left[0].Scenario != rows[3].Scenario || left[0].Reason != report.LeftFailed {
		t.Errorf("%d rows in the figures, left out %+v; want 3, the failed conversation left out", len(complete), left)
	}
}

// Bytes are unchanged for the client whatever it asks: a HEAD, a 204 and a body of a few MiB
// without Content-Length.
func TestProxyPassesOddAnswersUnchanged(t *testing.T) {
	big := strings.Repeat("0123456789", 500_000)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush()
			io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"`+big+`"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer up.Close()
	url, _, stop := startProxy(t, up.URL, nil, false)
	code, got := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, nil)
	if code != 200 || !strings.Contains(got, big) {
		t.Errorf("HTTP %d, %d bytes", code, len(got))
	}
	resp, err := http.Head(url + "/v1/models")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("HEAD: %v %v", resp, err)
	}
	_, rows := stop()
	if len(rows) != 1 || rows[0].Error != "" || rows[0].PromptTokens != 10 {
		t.Errorf("rows %d", len(rows))
	}
}

// An answer the proxy's own stop cuts (its upstream stalled) is recorded as cut by the stop, not
// as a client that went away.
func TestProxyStopCutsAStalledAnswer(t *testing.T) {
	got := make(chan struct{})
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		close(got)
		<-release // the stream stalls
	}))
	defer up.Close()
	defer close(release)
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-got
	p.Stopping()
	srv.CloseClientConnections()
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Error != "the proxy was stopped before the answer ended" {
		t.Fatalf("rows %+v; want one, cut by the proxy's stop", rows)
	}
}
