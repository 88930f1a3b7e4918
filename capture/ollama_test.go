package capture_test

import (
	"context"
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
	"lab/metrics"
)

// compatUpstream is an Ollama whose OpenAI- and Anthropic-compatible endpoints answer
// cached_tokens 0 (and cache_read_input_tokens 0) whatever its KV cache reused, while its debug
// log, when logPath is set, says what it reused: used = prompt − 10.
func compatUpstream(t *testing.T, logPath string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prompt = 50
		if logPath != "" {
			f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(f, "time=x level=DEBUG source=cache.go:140 msg=\"loading cache slot\" id=0 cache=40 prompt=%d used=%d remaining=10\n", prompt, prompt-10)
			f.Close()
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/version":
			fmt.Fprint(w, `{"version":"0.17.4"}`)
		case "/v1/chat/completions":
			fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"Hi"}}],"usage":{"prompt_tokens":%d,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`, prompt)
		case "/v1/messages":
			fmt.Fprintf(w, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"cache_read_input_tokens":0,"output_tokens":2}}`, prompt)
		}
	}))
}

// In front of Ollama the proxy never takes the 0 cached tokens of its OpenAI- and
// Anthropic-compatible answers for a measurement: with the server log the figure is the log's,
// without it unknown (and so is the re-read). In front of any other server the answer's own
// count stands.
func TestProxyIgnoresOllamasConstantCachedTokens(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ollama, log    bool
		cached, reread int64 // -1: null
		source         string
	}{
		{"ollama with its log", true, true, 40, 10, metrics.CachedSourceServerLog},
		{"ollama without a log", true, false, -1, -1, ""},
		{"another server", false, false, 0, 50, metrics.CachedSourceResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logPath := ""
			if tc.log {
				logPath = filepath.Join(t.TempDir(), "server.log")
				if err := os.WriteFile(logPath, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			up := compatUpstream(t, logPath)
			defer up.Close()
			dir := filepath.Join(t.TempDir(), "run_id=c")
			p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "c", UpstreamOllama: tc.ollama,
				ServerLog: logPath, LogWait: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			post(t, srv.URL, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
			post(t, srv.URL, "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi again"}]}`, nil)
			srv.Close()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			_, rows, err := metrics.ReadRun(dir)
			if err != nil || len(rows) != 2 {
				t.Fatalf("%d rows, %v", len(rows), err)
			}
			for _, s := range rows {
				if val(s.CachedTokens) != tc.cached || val(s.RereadTokens) != tc.reread || s.CachedSource != tc.source {
					t.Errorf("%s: cached %s (%q), reread %s; want %d (%q), %d (-1: null); warnings %q", s.Backend,
						show(s.CachedTokens), s.CachedSource, show(s.RereadTokens), tc.cached, tc.source, tc.reread, s.Warnings)
				}
				if tc.ollama && (strings.Contains(s.UsageFields, "CachedRead") || !strings.Contains(s.Warnings, "always answer 0 cached tokens")) {
					t.Errorf("%s: usage_fields %s, warnings %q; want no cached field and the warning", s.Backend, s.UsageFields, s.Warnings)
				}
			}
		})
	}
}

// IsOllama asks /api/version: an Ollama answers with its version, anything else does not.
func TestIsOllama(t *testing.T) {
	up := compatUpstream(t, "")
	defer up.Close()
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	ctx := context.Background()
	if !capture.IsOllama(ctx, http.DefaultClient, up.URL+"/v1") {
		t.Error("IsOllama(an Ollama) = false")
	}
	if capture.IsOllama(ctx, http.DefaultClient, other.URL) {
		t.Error("IsOllama(a server without /api/version) = true")
	}
	if capture.IsOllama(ctx, http.DefaultClient, "http://127.0.0.1:1") {
		t.Error("IsOllama(nothing listening) = true")
	}
}

// Ollama's /v1/messages stream opens with message_start carrying its estimate of the prompt
// (the request's length / 4), not a count; the count comes with message_delta. A stream cut
// before message_delta therefore has no prompt count in front of Ollama: prompt_tokens and the
// re-read are null, not the estimate. In front of another server message_start's count stands.
func TestProxyOllamaMessageStartIsAnEstimate(t *testing.T) {
	const stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":7,\"output_tokens\":0}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
	for _, ollama := range []bool{true, false} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, stream)
		}))
		dir := filepath.Join(t.TempDir(), "run_id=c")
		p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "c", UpstreamOllama: ollama})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		post(t, srv.URL, "/v1/messages", `{"model":"m","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi there you"}]}`, nil)
		srv.Close()
		up.Close()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		_, rows, err := metrics.ReadRun(dir)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		s := rows[0]
		want := int64(7)
		if ollama {
			want = 0
		}
		if s.Error != "stream cut: no message_stop" || s.PromptTokens != want || (ollama && s.RereadTokens != nil) {
			t.Errorf("ollama %v: error %q prompt %d reread %s; want the cut, prompt %d (0: null)", ollama, s.Error, s.PromptTokens, show(s.RereadTokens), want)
		}
	}
}
