package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
	"lab/internal/replytest"
)

const testKey = "sk-ant-test-0123456789abcdef"

// server replays a testdata file (or a status and body) and records what it received.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	headers http.Header
	body    []byte
}

func newServer(t *testing.T, status int, file string) *server {
	t.Helper()
	payload, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.headers, s.body = r.Header.Clone(), b
		s.mu.Unlock()
		if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if strings.HasSuffix(file, ".sse") {
			w.Header().Set("content-type", "text/event-stream")
		} else {
			w.Header().Set("content-type", "application/json")
		}
		w.WriteHeader(status)
		w.Write(payload)
	}))
	t.Cleanup(s.Close)
	return s
}

func newClient(t testing.TB, base string, opts Options) *Client {
	t.Helper()
	t.Setenv(KeyEnv, testKey)
	opts.BaseURL = base
	if opts.Model == "" {
		opts.Model = "claude-opus-4-5"
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testRequest() *chat.Request {
	return &chat.Request{
		Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: "You are a coding agent."},
			{Role: chat.RoleUser, Content: "read a.go"},
			{Role: chat.RoleAssistant, Thinking: []chat.ThinkingBlock{{Text: "look", Signature: "SIG=="}},
				ToolCalls: []chat.ToolCall{{ID: "toolu_1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)}}},
			{Role: chat.RoleTool, ToolCallID: "toolu_1", Content: "package a"},
		},
		Tools: []chat.Tool{
			{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "list", Description: "List a directory."},
		},
	}
}

func i64(v int64) *int64 { return &v }

func TestSendStreamedText(t *testing.T) {
	s := newServer(t, 200, "stream_text.sse")
	c := newClient(t, s.URL, Options{})
	res, err := c.Send(context.Background(), testRequest(), &chat.Reply{Content: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	// input_tokens excludes the cache: 50 + 100000 read + 1200 written.
	if res.PromptTokens != 101250 {
		t.Errorf("PromptTokens = %d; want 101250", res.PromptTokens)
	}
	if res.CachedTokens == nil || *res.CachedTokens != 100000 || res.CachedSource != chat.SourceResponse {
		t.Errorf("CachedTokens = %v (%s); want 100000 (response)", res.CachedTokens, res.CachedSource)
	}
	if res.CompletionTokens != 1 {
		t.Errorf("CompletionTokens = %d; want 1", res.CompletionTokens)
	}
	want := &chat.Usage{
		Prompt: i64(101250), CachedRead: i64(100000), CacheWrite: i64(1200), CacheWrite5m: i64(200),
		CacheWrite1h: i64(1000), Uncached: i64(50), Generated: i64(1),
		Fields: map[chat.UsageField]string{
			chat.UsagePrompt:       "usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens",
			chat.UsageUncached:     "message_start.message.usage.input_tokens",
			chat.UsageCachedRead:   "message_start.message.usage.cache_read_input_tokens",
			chat.UsageCacheWrite:   "message_start.message.usage.cache_creation_input_tokens",
			chat.UsageCacheWrite5m: "message_start.message.usage.cache_creation.ephemeral_5m_input_tokens",
			chat.UsageCacheWrite1h: "message_start.message.usage.cache_creation.ephemeral_1h_input_tokens",
			chat.UsageGenerated:    "message_delta.usage.output_tokens",
		},
	}
	if diff := cmp.Diff(want, res.Usage); diff != "" {
		t.Errorf("Usage (-want +got):\n%s", diff)
	}
	if res.TTFT <= 0 || res.Total < res.TTFT {
		t.Errorf("TTFT %v, Total %v: want 0 < TTFT <= Total", res.TTFT, res.Total)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %q; want none", res.Warnings)
	}
	if res.RequestBytes != int64(len(s.body)) || string(res.Body) != string(s.body) {
		t.Errorf("Body/RequestBytes do not match what the server received")
	}
	if res.Rendered != "" || res.CacheText != "" || res.CostUSD != nil {
		t.Errorf("Rendered %q, CacheText %q, CostUSD %v: want all empty", res.Rendered, res.CacheText, res.CostUSD)
	}
	for h, v := range map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"} {
		if got := s.headers.Get(h); got != v {
			t.Errorf("header %s = %q; want %q", h, got, v)
		}
	}
	if strings.Contains(string(res.Body), testKey) {
		t.Error("the key is in Result.Body")
	}
}

func TestRequestBody(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", Options{Breakpoints: []Breakpoint{{At: AtTools, TTL: TTL1h}, {At: AtSystem, TTL: TTL1h}, {At: AtLastMessage}}})
	body, warnings, err := c.Body(testRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-opus-4-5","max_tokens":1,"stream":true,` +
		`"system":[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"tools":[{"name":"read","description":"Read a file.","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},` +
		`{"name":"list","description":"List a directory.","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"read a.go"}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"look","signature":"SIG=="},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.go"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a","cache_control":{"type":"ephemeral"}}]}]}`
	if string(body) != want {
		t.Errorf("Body =\n%s\nwant\n%s", body, want)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q", warnings)
	}

	// Thinking: the minimal valid budget, max_tokens one more; default breakpoints (system and
	// last message); a request with no tools and no system prompt warns for the system one.
	c = newClient(t, "http://127.0.0.1:1", Options{})
	req := &chat.Request{Think: true, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
	body, warnings, err = c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"model":"claude-opus-4-5","max_tokens":1025,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	if string(body) != want {
		t.Errorf("Body =\n%s\nwant\n%s", body, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "system") {
		t.Errorf("warnings = %q; want one about the system breakpoint", warnings)
	}

	// Adaptive thinking (Claude 4.6 and later): no budget, max_tokens stays 1; thinking off: no
	// thinking field.
	for mode, want := range map[string]string{
		ThinkingAdaptive: `{"model":"claude-opus-4-5","max_tokens":1,"stream":true,"thinking":{"type":"adaptive"},"messages":`,
		ThinkingOff:      `{"model":"claude-opus-4-5","max_tokens":1,"stream":true,"messages":`,
	} {
		c = newClient(t, "http://127.0.0.1:1", Options{Thinking: mode})
		body, _, err = c.Body(req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(body), want) {
			t.Errorf("thinking %s: Body =\n%s\nwant it to start\n%s", mode, body, want)
		}
	}
	t.Setenv(KeyEnv, testKey)
	if _, err := New(Options{Model: "m", Thinking: "sometimes"}); err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("New with thinking %q: %v", "sometimes", err)
	}

	// The arm's placement is used when Options give none, and ignored when they do.
	armReq := &chat.Request{Messages: testRequest().Messages, Tools: testRequest().Tools, CacheBreakpoints: []string{"last-message"}}
	c = newClient(t, "http://127.0.0.1:1", Options{})
	body, _, err = c.Body(armReq)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(body), "cache_control"); n != 1 || strings.Contains(string(body), `"You are a coding agent.","cache_control"`) {
		t.Errorf("arm placement last-message: %d markers in %s; want one, on the last message", n, body)
	}
	c = newClient(t, "http://127.0.0.1:1", Options{Breakpoints: []Breakpoint{{At: AtSystem}}})
	body, _, _ = c.Body(armReq)
	if n := strings.Count(string(body), "cache_control"); n != 1 || !strings.Contains(string(body), `"You are a coding agent.","cache_control"`) {
		t.Errorf("explicit system placement: %d markers in %s; want one, on the system prompt", n, body)
	}

	// No breakpoints at all.
	c = newClient(t, "http://127.0.0.1:1", Options{Breakpoints: []Breakpoint{}, NoStream: true})
	body, _, err = c.Body(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "cache_control") || !strings.Contains(string(body), `"stream":false`) {
		t.Errorf("Body = %s; want no cache_control and stream false", body)
	}
}

func TestSendThinkingAndToolUse(t *testing.T) {
	s := newServer(t, 200, "stream_thinking_tool.sse")
	c := newClient(t, s.URL, Options{})
	resp, res, err := c.Create(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := &Response{ID: "msg_01Think", StopReason: "tool_use", Message: chat.Message{
		Role:      chat.RoleAssistant,
		Content:   "Reading it.",
		Reasoning: "I should read <a.go> first.",
		Thinking: []chat.ThinkingBlock{
			{Text: "I should read <a.go> first.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds=="},
			{Redacted: true, Data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
		},
		ToolCalls: []chat.ToolCall{{ID: "toolu_01A", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)}},
	}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("Response (-want +got):\n%s", diff)
	}
	if res.PromptTokens != 4012 || *res.CachedTokens != 4000 || res.CompletionTokens != 89 {
		t.Errorf("prompt %d cached %d completion %d; want 4012 4000 89", res.PromptTokens, *res.CachedTokens, res.CompletionTokens)
	}
	// The answer goes back unchanged: thinking first, with its signature, HTML not escaped.
	back, err := EncodeMessages([]chat.Message{resp.Message})
	if err != nil {
		t.Fatal(err)
	}
	wantBack := `[{"role":"assistant","content":[{"type":"thinking","thinking":"I should read <a.go> first.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds=="},` +
		`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},` +
		`{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_01A","name":"read","input":{"path":"a.go"}}]}]`
	if string(back) != wantBack {
		t.Errorf("round trip =\n%s\nwant\n%s", back, wantBack)
	}
}

func TestSendNotStreamed(t *testing.T) {
	s := newServer(t, 200, "message.json")
	c := newClient(t, s.URL, Options{NoStream: true})
	resp, res, err := c.Create(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Done." || len(resp.Message.ToolCalls) != 1 || string(resp.Message.ToolCalls[0].Arguments) != `{"dir": "src", "depth": 1}` ||
		len(resp.Message.Thinking) != 1 || resp.Message.Thinking[0].Signature != "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve" {
		t.Errorf("Response = %+v", resp)
	}
	if res.PromptTokens != 2054 || *res.CachedTokens != 0 || res.CompletionTokens != 40 || *res.Usage.CacheWrite5m != 2051 || res.Usage.Fields[chat.UsageCacheWrite] != "usage.cache_creation_input_tokens" {
		t.Errorf("Result = %+v, Usage = %+v", res, res.Usage)
	}
	if strings.Contains(s.headers.Get("Accept"), "event-stream") {
		t.Error("a non-streamed request asked for an event stream")
	}
}

func TestSendUsageInLastEventOnly(t *testing.T) {
	s := newServer(t, 200, "stream_usage_last.sse")
	c := newClient(t, s.URL, Options{})
	res, err := c.Send(context.Background(), testRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 2355 || res.CachedTokens == nil || *res.CachedTokens != 2048 || res.CompletionTokens != 1 {
		t.Errorf("prompt %d cached %v completion %d; want 2355 2048 1", res.PromptTokens, res.CachedTokens, res.CompletionTokens)
	}
	if got := res.Usage.Fields[chat.UsageCachedRead]; got != "message_delta.usage.cache_read_input_tokens" {
		t.Errorf("Fields[CachedRead] = %q", got)
	}
	if res.Usage.CacheWrite5m != nil || res.Usage.CacheWrite1h != nil {
		t.Errorf("the 5m/1h split = %v/%v; want nil (not reported)", res.Usage.CacheWrite5m, res.Usage.CacheWrite1h)
	}
}

func TestSendUsageMissing(t *testing.T) {
	s := newServer(t, 200, "stream_no_usage.sse")
	c := newClient(t, s.URL, Options{})
	res, err := c.Send(context.Background(), testRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedTokens != nil || res.Usage.Prompt != nil || res.Usage.Generated != nil || len(res.Usage.Fields) != 0 {
		t.Errorf("CachedTokens %v, Usage %+v: want all unknown", res.CachedTokens, res.Usage)
	}
	if res.PromptTokens != 0 || res.CompletionTokens != 0 {
		t.Errorf("PromptTokens %d CompletionTokens %d; want 0 (unknown, warned)", res.PromptTokens, res.CompletionTokens)
	}
	joined := strings.Join(res.Warnings, "\n")
	if !strings.Contains(joined, "input_tokens") || !strings.Contains(joined, "output_tokens") {
		t.Errorf("Warnings = %q; want the missing prompt and output counts named", res.Warnings)
	}
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		status     int
		wantStatus int
		wantBody   string
	}{
		{"overloaded mid-stream", "stream_error.sse", 200, 200, "error event in the stream: overloaded_error: Overloaded"},
		{"400 JSON body", "error_400.json", 400, 400, "invalid_request_error: A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"502 not JSON", "stream_text.sse", 502, 502, `"event: message_start\ndata: {`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.status, tc.file)
			c := newClient(t, s.URL, Options{})
			res, err := c.Send(context.Background(), testRequest(), nil)
			var ae *chat.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("Send error = %v; want *chat.APIError", err)
			}
			if ae.Backend != "anthropic" || ae.URL != s.URL+"/v1/messages" || ae.StatusCode != tc.wantStatus || !strings.Contains(ae.Body, tc.wantBody) {
				t.Errorf("APIError = %+v; want status %d, body containing %q", ae, tc.wantStatus, tc.wantBody)
			}
			if len(ae.Body) > 504 {
				t.Errorf("error body is %d bytes; want it cut to about 500", len(ae.Body))
			}
			if res == nil || res.RequestBytes == 0 {
				t.Errorf("Result = %v; want the request's measurements so far", res)
			}
		})
	}
}

// A server answering 401 with the key it was sent: the error must not carry the key.
func TestKeyRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: %s"}}`, r.Header.Get("x-api-key"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(KeyEnv, "")
	c, err := New(Options{BaseURL: srv.URL, Model: "claude-opus-4-5", KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(context.Background(), testRequest(), nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("Send error = %v; want a 401 *chat.APIError", err)
	}
	if !strings.Contains(ae.Body, "authentication_error: invalid x-api-key: [redacted]") {
		t.Errorf("APIError.Body = %q; want the key redacted", ae.Body)
	}
	everything := fmt.Sprintf("%v %+v %s %q", err, *res, res.Body, res.Warnings)
	if strings.Contains(everything, testKey) {
		t.Errorf("the key appears in the error or the result: %s", everything)
	}
}

func TestNew(t *testing.T) {
	t.Setenv(KeyEnv, testKey)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no model", Options{}, "no model"},
		{"ftp", Options{Model: "m", BaseURL: "ftp://127.0.0.1"}, "bad base URL"},
		{"no host", Options{Model: "m", BaseURL: "http://"}, "bad base URL"},
		{"five breakpoints", Options{Model: "m", Breakpoints: make([]Breakpoint, 5)}, "at most 4"},
		{"unknown place", Options{Model: "m", Breakpoints: []Breakpoint{{At: "middle"}}}, `"middle"`},
		{"twice", Options{Model: "m", Breakpoints: []Breakpoint{{At: AtSystem}, {At: AtSystem}}}, "twice"},
		{"bad ttl", Options{Model: "m", Breakpoints: []Breakpoint{{At: AtSystem, TTL: "10m"}}}, `"10m"`},
		{"1h after 5m", Options{Model: "m", Breakpoints: []Breakpoint{{At: AtLastMessage, TTL: TTL1h}, {At: AtSystem, TTL: TTL5m}}}, "longer-lived"},
		{"small budget", Options{Model: "m", ThinkingBudget: 100}, "minimum is 1024"},
		{"missing key file", Options{Model: "m", KeyFile: "/nonexistent/key"}, "key file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%+v) error = %v; want one containing %q", tc.opts, err, tc.want)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		t.Setenv(KeyEnv, "")
		_, err := New(Options{Model: "m"})
		if err == nil || !strings.Contains(err.Error(), KeyEnv) {
			t.Errorf("New without a key: error = %v; want one naming %s", err, KeyEnv)
		}
	})
	c, err := New(Options{Model: "m", BaseURL: "http://127.0.0.1:8080/proxy/"})
	if err != nil {
		t.Fatal(err)
	}
	if c.URL() != "http://127.0.0.1:8080/proxy/v1/messages" {
		t.Errorf("URL = %q", c.URL())
	}
}

func TestParseBreakpoints(t *testing.T) {
	got, err := ParseBreakpoints("tools:1h, system:1h,last-message")
	if err != nil {
		t.Fatal(err)
	}
	want := []Breakpoint{{AtTools, TTL1h}, {AtSystem, TTL1h}, {AtLastMessage, ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseBreakpoints (-want +got):\n%s", diff)
	}
	if got, err := ParseBreakpoints("none"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ParseBreakpoints(none) = %v, %v; want an empty non-nil list", got, err)
	}
	if _, err := ParseBreakpoints("system:2h"); err == nil {
		t.Error("ParseBreakpoints(system:2h): no error")
	}
}

func TestReadEvents(t *testing.T) {
	in := ": comment\r\nevent: a\r\ndata: {\"type\":\r\ndata: \"x\"}\r\n\r\ndata: {\"k\":1}\n\nevent: b\ndata: {\"type\":\"y\"}"
	var got []string
	err := readEvents(strings.NewReader(in), func(ev event) error {
		got = append(got, ev.name+"/"+ev.typ+"/"+string(ev.data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/x/{\"type\":\n\"x\"}", "//{\"k\":1}", "b/y/{\"type\":\"y\"}"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if err := readEvents(strings.NewReader("data: not json\n\n"), func(event) error { return nil }); err == nil {
		t.Error("readEvents of a non-JSON data line: no error")
	}
}

// FuzzStream feeds arbitrary bytes to the stream reader and accumulator: no panic, and an
// answer assembled from whatever events parsed.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var acc accumulator
		_ = readEvents(strings.NewReader(string(b)), acc.add)
		_ = acc.response()
		fill(&chat.Result{}, &acc, true)
	})
}

// A server that echoes the key masked (its first and last characters, as OpenAI's and
// Anthropic's 401s do) leaves no part of it in the error: the key's shape is redacted too.
func TestMaskedKeyRedacted(t *testing.T) {
	const key = "sk-ant-api03-0123456789abcdefXYZ"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("x-api-key")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s****%s"}}`, k[:12], k[len(k)-4:])
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{BaseURL: srv.URL, Model: "claude-x", KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(context.Background(), testRequest(), nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("Send error = %v; want a 401 *chat.APIError", err)
	}
	if strings.Contains(ae.Body, key[:12]) || !strings.Contains(ae.Body, "[redacted]") {
		t.Errorf("APIError.Body = %q; want the masked key redacted", ae.Body)
	}
}

// A base URL's password (http://user:secret@host) is in no error text: an HTTP error, an
// answer that is not the API's, a reply past the limit, a bad address.
func TestBaseURLPasswordNotInErrors(t *testing.T) {
	replytest.PasswordNotInErrors(t, "text/event-stream", streamHead+textDelta(2000)+streamTail, nil, func(u string) error {
		c := newClient(t, u, Options{})
		req := testRequest()
		req.MaxReplyBytes, req.Generate = 1000, 100
		_, err := c.Send(context.Background(), req, nil)
		return err
	})
	if _, err := New(Options{BaseURL: "ftp://user:" + replytest.Secret + "@host", Model: "m"}); err == nil || strings.Contains(err.Error(), replytest.Secret) {
		t.Errorf("a bad base URL: error %v; want one without its password", err)
	}
}
