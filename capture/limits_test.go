package capture_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/capture"
	"lab/chat"
	"lab/metrics"
)

// A request body over --max-request-bytes is forwarded whole (the harness measured is not
// broken), with or without a declared length, and its row is an error row naming the limit and
// the flag, with the upstream's figures and the body's size; a body under it is recorded as
// ever; the manifest records both limits; no saved request is written for the body not read.
func TestProxyRequestBodyOverTheLimit(t *testing.T) {
	const limit = 1024
	got := make(chan []byte, 3)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":77,"completion_tokens":1}}`)
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap", SaveRequests: true, MaxRequestBytes: limit, MaxReplyBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	body := func(n int) []byte {
		return []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", n) + `"}]}`)
	}
	for _, tc := range []struct {
		body    []byte
		chunked bool
	}{{body(4000), false}, {body(4000), true}, {body(100), false}} {
		var rd io.Reader = bytes.NewReader(tc.body)
		if tc.chunked {
			rd = io.MultiReader(rd) // a length the client cannot see: sent chunked
		}
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", rd)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"prompt_tokens":77`) {
			t.Errorf("a %d-byte body (chunked %v): HTTP %d %q; want the upstream's answer", len(tc.body), tc.chunked, resp.StatusCode, answer)
		}
		select { // the upstream answers once it read the body
		case b := <-got:
			if !bytes.Equal(b, tc.body) {
				t.Errorf("a %d-byte body (chunked %v): the upstream got %d bytes; want the body unchanged", len(tc.body), tc.chunked, len(b))
			}
		default:
			t.Errorf("a %d-byte body (chunked %v): not forwarded", len(tc.body), tc.chunked)
		}
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	man, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows; want 3", len(rows))
	}
	want := fmt.Sprintf("request body over the limit of %d bytes (--max-request-bytes)", limit)
	for _, s := range rows {
		over := s.RequestBytes > limit
		if over && !strings.Contains(s.Error, want) {
			t.Errorf("row of a %d-byte body: error %q; want it to say %q", s.RequestBytes, s.Error, want)
		}
		if !over && s.Error != "" {
			t.Errorf("row of a %d-byte body: error %q; want none", s.RequestBytes, s.Error)
		}
		if s.PromptTokens != 77 {
			t.Errorf("row of a %d-byte body: prompt tokens %d; want the upstream's 77", s.RequestBytes, s.PromptTokens)
		}
	}
	var sizes []int64
	for _, s := range rows {
		sizes = append(sizes, s.RequestBytes)
	}
	if n := int64(len(body(4000))); sizes[0] != n || sizes[1] != n || sizes[2] != int64(len(body(100))) {
		t.Errorf("request_bytes %v; want %d, %d, %d", sizes, n, n, len(body(100)))
	}
	if man.Settings["max_request_bytes"] != "1024" || man.Settings["max_reply_bytes"] != "1048576" {
		t.Errorf("manifest settings %v; want max_request_bytes 1024, max_reply_bytes 1048576", man.Settings)
	}
	f, err := os.Open(filepath.Join(dir, metrics.PartRequestsFile(metrics.Shard{Index: 1, Count: 1})))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines++
	}
	if lines != 1 {
		t.Errorf("%d saved requests; want 1 (the body under the limit)", lines)
	}
}

// An answer over --max-reply-bytes reaches the client whole, streamed or not; its row is an
// error row that names the limit and the flag (chat.ReplyTooLong).
func TestProxyAnswerOverTheLimit(t *testing.T) {
	const limit = 1024
	var stream strings.Builder
	for range 200 {
		stream.WriteString("data: {\"choices\":[{\"delta\":{\"content\":\"some words \"}}]}\n\n")
	}
	stream.WriteString("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":600}}\n\ndata: [DONE]\n\n")
	whole := `{"choices":[{"message":{"role":"assistant","content":"` + strings.Repeat("y", 3000) + `"}}],"usage":{"prompt_tokens":50,"completion_tokens":600}}`
	for _, tc := range []struct{ ctype, body string }{{"text/event-stream", stream.String()}, {"application/json", whole}} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", tc.ctype)
			for part := range strings.SplitAfterSeq(tc.body, "\n\n") {
				io.WriteString(w, part)
				w.(http.Flusher).Flush()
			}
		}))
		dir := filepath.Join(t.TempDir(), "run_id=cap")
		p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap", MaxReplyBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		up.Close()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.body {
			t.Errorf("%s: the client got %d bytes; want the answer's %d unchanged", tc.ctype, len(got), len(tc.body))
		}
		_, rows, err := metrics.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("the limit of %d bytes", limit)
		if len(rows) != 1 || !strings.HasPrefix(rows[0].Error, chat.ReplyTooLong) || !strings.Contains(rows[0].Error, want) || !strings.Contains(rows[0].Error, "--max-reply-bytes") {
			var errs []string
			for _, r := range rows {
				errs = append(errs, r.Error)
			}
			t.Errorf("%s: rows with errors %q; want one whose error begins %q and names %q and --max-reply-bytes", tc.ctype, errs, chat.ReplyTooLong, want)
		}
	}
}

// The same answer, the same limit: the same row whether the upstream wrote it at once or in
// 10-byte pieces (the limit counts the answer's bytes, not the pieces it was read in).
func TestProxyReplyLimitIgnoresTheWritesSplit(t *testing.T) {
	const limit = 4096
	var stream strings.Builder
	for range 20 {
		stream.WriteString("data: {\"choices\":[{\"delta\":{\"content\":\"some words \"}}]}\n\n")
	}
	stream.WriteString("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":60}}\n\ndata: [DONE]\n\n")
	body := stream.String() // about 1.3 KB, a third of the limit
	errs := map[bool]string{}
	for _, split := range []bool{false, true} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			if !split {
				io.WriteString(w, body)
				return
			}
			for i := 0; i < len(body); i += 10 {
				io.WriteString(w, body[i:min(i+10, len(body))])
				w.(http.Flusher).Flush()
				time.Sleep(200 * time.Microsecond)
			}
		}))
		dir := filepath.Join(t.TempDir(), "run_id=cap")
		p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap", MaxReplyBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		up.Close()
		p.Close()
		_, rows, err := metrics.ReadRun(dir)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		errs[split] = rows[0].Error
	}
	if errs[false] != errs[true] {
		t.Errorf("a %d-byte answer with --max-reply-bytes %d: written at once, error %q; written in 10-byte pieces, error %q; want the same row", len(body), limit, errs[false], errs[true])
	}
}

// A request body of exactly the limit is recorded, one byte more is not, with a length and
// chunked.
func TestProxyRequestBodyAtTheLimit(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":77,"completion_tokens":1}}`)
	}))
	defer up.Close()
	mk := func(n int) []byte {
		head, tail := `{"model":"m","messages":[{"role":"user","content":"`, `"}]}`
		return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
	}
	const limit = 1024
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap", MaxRequestBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	type c struct {
		n       int
		chunked bool
	}
	cases := []c{{limit, false}, {limit, true}, {limit + 1, false}, {limit + 1, true}, {1, true}}
	for _, tc := range cases {
		b := mk(max(tc.n, 60))
		if tc.n == 1 {
			b = []byte("{")
		}
		var rd io.Reader = bytes.NewReader(b)
		if tc.chunked {
			rd = io.MultiReader(rd)
		}
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", rd)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	srv.Close()
	p.Close()
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != len(cases) {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for i, tc := range cases {
		over := strings.Contains(rows[i].Error, "over the limit")
		if over != (tc.n > limit) {
			t.Errorf("body of %d bytes (chunked %v): row error %q", tc.n, tc.chunked, rows[i].Error)
		}
		t.Logf("body %d chunked %v: request_bytes %d error %q", tc.n, tc.chunked, rows[i].RequestBytes, rows[i].Error)
	}
}
