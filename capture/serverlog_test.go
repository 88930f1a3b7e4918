package capture_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/capture"
	"lab/metrics"
)

// An Ollama upstream reports no cached tokens; its debug log does, one `loading cache slot` line
// per request, cache fills and requests the proxy does not record included. Each row gets its
// own line, in request order, matched by prompt= to its prompt_eval_count.
func TestProxyCachedTokensFromTheServerLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(logPath, []byte(`time=x level=DEBUG msg="loading cache slot" id=0 cache=0 prompt=100 used=77 remaining=23`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	logLine := func(prompt, used int) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		fmt.Fprintf(f, "time=x level=DEBUG source=cache.go:140 msg=\"loading cache slot\" id=0 cache=%d prompt=%d used=%d remaining=%d\n", used, prompt, used, prompt-used)
		f.Close()
	}
	// Each request says in its last message (or prompt) the prompt= and used= of its line;
	// "-" writes no line.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string }
			Prompt   string
		}
		json.NewDecoder(r.Body).Decode(&body)
		text := body.Prompt
		if len(body.Messages) > 0 {
			text = body.Messages[len(body.Messages)-1].Content
		}
		var prompt, used int
		noLine := strings.HasPrefix(text, "-")
		fmt.Sscanf(strings.TrimPrefix(text, "-"), "%d %d", &prompt, &used)
		if !noLine {
			logLine(prompt, used)
		}
		switch r.URL.Path {
		case "/api/chat":
			fmt.Fprintf(w, "{\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"prompt_eval_count\":%d,\"eval_count\":1}\n", prompt)
		case "/api/generate":
			fmt.Fprintf(w, "{\"response\":\"\",\"done\":true,\"prompt_eval_count\":%d,\"eval_count\":1}", prompt)
		case "/api/embed":
			io.WriteString(w, `{"embeddings":[[0.1]]}`)
		}
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=log")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "log", ServerLog: logPath, LogWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	chat := func(text string) {
		post(t, srv.URL, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"`+text+`"}]}`, nil)
	}
	fill := func(text string) {
		post(t, srv.URL, "/api/generate", `{"model":"m","raw":true,"stream":false,"prompt":"`+text+`","options":{"num_predict":1}}`, nil)
	}
	chat("100 0")
	fill("150 99") // the cache fill has the prompt length of the next request: it must take its own line
	chat("150 140")
	fill("200 149")
	post(t, srv.URL, "/api/embed", `{"model":"m","input":"7 3"}`, nil) // passed through, not recorded: its line is skipped
	chat("210 200")
	chat("-300 0") // no line: unknown, not another request's
	chat("310 300")
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []*int64{n(0), n(140), n(200), nil, n(300)}
	if len(rows) != len(want) {
		t.Fatalf("%d rows; want %d", len(rows), len(want))
	}
	for i, s := range rows {
		if !eqPtr(s.CachedTokens, want[i]) {
			t.Errorf("row %d (prompt %d): cached %s; want %s (warnings %q)", i, s.PromptTokens, show(s.CachedTokens), show(want[i]), s.Warnings)
		}
		if want[i] != nil && (s.CachedSource != metrics.CachedSourceServerLog || val(s.RereadTokens) != s.PromptTokens-*want[i]) {
			t.Errorf("row %d: cached_source %q, reread %s; want server_log, %d", i, s.CachedSource, show(s.RereadTokens), s.PromptTokens-*want[i])
		}
		if want[i] == nil && !strings.Contains(s.Warnings, "prompt=300") {
			t.Errorf("row %d: warnings %q; want one naming the missing line", i, s.Warnings)
		}
	}
}

// Without a rendering (a cloud API) the divergence segment is the first part of the request
// that differs from the conversation's previous one; the token stays unknown.
func TestProxyDivergenceSegmentWithoutRendering(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}}`)
	}))
	defer up.Close()
	url, _, stop := startProxy(t, up.URL, nil, false)
	body := func(system string, msgs ...string) string {
		return `{"model":"claude-x","max_tokens":100,"system":"` + system + `","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	u1 := `{"role":"user","content":"fix it"}`
	a1 := `{"role":"assistant","content":"ok"}`
	u2 := `{"role":"user","content":"more"}`
	h := map[string]string{"X-Claude-Code-Session-Id": "s1"}
	for _, b := range []string{
		body("You are a coding agent.", u1),
		body("You are a coding agent.", u1, a1, u2),
		body("Today is Monday. You are a coding agent.", u1, a1, u2),
		body("Today is Monday. You are a coding agent.", u1, a1, `{"role":"user","content":"less"}`),
	} {
		if code, got := post(t, url, "/v1/messages", b, h); code != 200 {
			t.Fatalf("HTTP %d: %s", code, got)
		}
	}
	_, rows := stop()
	want := []string{"", "", "system", "message 3"} // message 0 is the system prompt
	if len(rows) != len(want) {
		t.Fatalf("%d rows; want %d", len(rows), len(want))
	}
	for i, s := range rows {
		if s.DivergenceSegment != want[i] || s.DivergenceToken != nil || !s.ExpectedUnknown || s.Scenario != "conversation-0001" {
			t.Errorf("row %d: %s segment %q token %s expected_unknown %v; want conversation-0001, %q, nil, true", i, s.Scenario, s.DivergenceSegment, show(s.DivergenceToken), s.ExpectedUnknown, want[i])
		}
	}
}
