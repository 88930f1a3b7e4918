package openai

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

	"lab/chat"
	"lab/internal/replytest"
)

// recorded is one request the test server received.
type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// replay is a loopback server that answers each request with the next of its responses (a
// file under testdata/, or literal text), recording what it was sent.
type replay struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	got   []recorded
	steps []step
}

type step struct {
	status int
	file   string // under testdata/
	text   string // used when file is ""
	sse    bool
	// ctype, when set, is the Content-Type instead of sse's.
	ctype string
	// echoAuth writes the request's Authorization header into the body, as a careless
	// server's error message might.
	echoAuth bool
}

func newReplay(t *testing.T, steps ...step) *replay {
	t.Helper()
	r := &replay{t: t, steps: steps}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		i := len(r.got)
		r.got = append(r.got, recorded{req.URL.Path, req.Header.Clone(), body})
		r.mu.Unlock()
		if i >= len(r.steps) {
			http.Error(w, "no more responses", http.StatusTeapot)
			return
		}
		s := r.steps[i]
		out := []byte(s.text)
		if s.file != "" {
			var err error
			if out, err = os.ReadFile(filepath.Join("testdata", s.file)); err != nil {
				t.Error(err)
			}
		}
		if s.echoAuth {
			out = []byte(fmt.Sprintf(`{"error":{"message":"invalid header %q","type":"auth"}}`, req.Header.Get("Authorization")))
		}
		switch {
		case s.ctype != "":
			w.Header().Set("Content-Type", s.ctype)
		case s.sse:
			w.Header().Set("Content-Type", "text/event-stream")
		default:
			w.Header().Set("Content-Type", "application/json")
		}
		if s.status != 0 {
			w.WriteHeader(s.status)
		}
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replay) request(i int) recorded {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.got) {
		r.t.Fatalf("the server got %d requests; want at least %d", len(r.got), i+1)
	}
	return r.got[i]
}

// bodyFields decodes a request body's top-level fields.
func bodyFields(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("request body is not a JSON object: %v\n%s", err, b)
	}
	return m
}

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func newClient(t testing.TB, o Options) *Client {
	t.Helper()
	if o.Getenv == nil {
		o.Getenv = env()
	}
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// session is a short scripted conversation: a tool loop with reasoning in the current turn.
func session() *chat.Request {
	return &chat.Request{
		Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: "lab-run: 0123456789abcdef\nYou are a coding agent."},
			{Role: chat.RoleUser, Content: "fix the <bug>"},
			{Role: chat.RoleAssistant, Reasoning: "read it first", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}},
			{Role: chat.RoleTool, ToolCallID: "c1", ToolName: "read", Content: "package a"},
		},
		Tools: []chat.Tool{{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}}`)}},
	}
}

func ptr(v int64) *int64 { return &v }

func eqPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func show(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func checkUsage(t *testing.T, u *chat.Usage, prompt, cached, uncached, generated, reasoning *int64) {
	t.Helper()
	if u == nil {
		t.Fatal("Usage = nil")
	}
	for _, c := range []struct {
		name      chat.UsageField
		got, want *int64
	}{{chat.UsagePrompt, u.Prompt, prompt}, {chat.UsageCachedRead, u.CachedRead, cached}, {chat.UsageUncached, u.Uncached, uncached},
		{chat.UsageGenerated, u.Generated, generated}, {chat.UsageReasoningGenerated, u.ReasoningGenerated, reasoning}} {
		if !eqPtr(c.got, c.want) {
			t.Errorf("Usage.%s = %s; want %s", c.name, show(c.got), show(c.want))
		}
		if _, ok := u.Fields[c.name]; ok != (c.want != nil) {
			t.Errorf("Usage.Fields[%s] present = %v; want %v (%v)", c.name, ok, c.want != nil, u.Fields)
		}
	}
}

func TestSendChatStreamOpenAI(t *testing.T) {
	r := newReplay(t, step{file: "chat_stream.sse", sse: true})
	c := newClient(t, Options{Profile: "openai", BaseURL: r.srv.URL + "/v1", Model: "gpt-x", PromptCacheKey: "run-1/spec",
		Getenv: env("OPENAI_API_KEY", "sk-test-0123456789")})
	req := session()
	res, err := c.Send(context.Background(), req, &chat.Reply{Content: "done"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.request(0)
	if got.path != "/v1/chat/completions" {
		t.Errorf("path = %s; want /v1/chat/completions", got.path)
	}
	if h := got.header.Get("Authorization"); h != "Bearer sk-test-0123456789" {
		t.Errorf("Authorization = %q", h)
	}
	f := bodyFields(t, got.body)
	// OpenAI's Chat Completions takes no reasoning back: the messages are the lab's encoding
	// without it.
	want, _ := EncodeMessagesWith(req.Messages, EncodeOptions{})
	if string(f["messages"]) != string(want) {
		t.Errorf("messages =\n%s\nwant\n%s", f["messages"], want)
	}
	for k, v := range map[string]string{"model": `"gpt-x"`, "stream": "true", "max_completion_tokens": "1",
		"stream_options": `{"include_usage":true}`, "prompt_cache_key": `"run-1/spec"`,
		"tools": `[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`} {
		if string(f[k]) != v {
			t.Errorf("body %s = %s; want %s", k, f[k], v)
		}
	}
	if _, ok := f["max_tokens"]; ok {
		t.Error("body has max_tokens; the openai profile sends max_completion_tokens")
	}
	if string(res.Body) != string(got.body) || res.RequestBytes != int64(len(got.body)) {
		t.Errorf("Result.Body/RequestBytes (%d) differ from the body the server got (%d bytes)", res.RequestBytes, len(got.body))
	}
	if res.PromptTokens != 2006 || res.CompletionTokens != 1 || !eqPtr(res.CachedTokens, ptr(1920)) || res.CachedSource != chat.SourceResponse {
		t.Errorf("Result = prompt %d, completion %d, cached %s (%q); want 2006, 1, 1920 (response)", res.PromptTokens, res.CompletionTokens, show(res.CachedTokens), res.CachedSource)
	}
	checkUsage(t, res.Usage, ptr(2006), ptr(1920), ptr(86), ptr(1), ptr(0))
	if f := res.Usage.Fields[chat.UsageCachedRead]; f != "usage.prompt_tokens_details.cached_tokens" {
		t.Errorf("Fields[CachedRead] = %q", f)
	}
	if res.TTFT <= 0 || res.TTFT > res.Total {
		t.Errorf("TTFT %v, Total %v: want 0 < TTFT <= Total", res.TTFT, res.Total)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "reasoning of 1 assistant message") {
		t.Errorf("Warnings = %q; want one about the reasoning not sent", res.Warnings)
	}
}

func TestSendChatUsageMissing(t *testing.T) {
	r := newReplay(t, step{file: "chat_stream_no_usage.sse", sse: true})
	c := newClient(t, Options{BaseURL: r.srv.URL, Model: "m"})
	res, err := c.Send(context.Background(), session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != nil || res.CachedTokens != nil || res.CachedSource != chat.SourceUnknown {
		t.Errorf("Usage %+v, CachedTokens %s, source %q; want nil, nil, unknown", res.Usage, show(res.CachedTokens), res.CachedSource)
	}
	if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "no usage") {
		t.Errorf("Warnings = %q; want one saying the usage is missing", res.Warnings)
	}
	// The generic profile sends reasoning back as reasoning_content, and max_tokens.
	f := bodyFields(t, r.request(0).body)
	if !strings.Contains(string(f["messages"]), `"reasoning_content":"read it first"`) || string(f["max_tokens"]) != "1" {
		t.Errorf("body = %s", r.request(0).body)
	}
	if h := r.request(0).header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q; want none without a key", h)
	}
}

func TestSendChatVLLM(t *testing.T) {
	r := newReplay(t,
		step{file: "vllm_reasoning_tool.sse", sse: true},
		step{file: "vllm_cached.sse", sse: true},
		step{file: "vllm_reasoning_tool.sse", sse: true})
	c := newClient(t, Options{Profile: "vllm", BaseURL: r.srv.URL + "/v1", Model: "Qwen/Qwen3-8B"})
	ctx := context.Background()

	// No prompt_tokens_details while the server has never sent it: cached tokens unknown (the
	// server may run without the flag), with a warning.
	res, err := c.Send(ctx, session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkUsage(t, res.Usage, ptr(812), nil, nil, ptr(1), nil)
	if res.CachedTokens != nil {
		t.Errorf("first request: cached %s; want unknown", show(res.CachedTokens))
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "--enable-prompt-tokens-details") {
		t.Errorf("Warnings = %q; want one naming the flag", res.Warnings)
	}
	msgs := string(bodyFields(t, r.request(0).body)["messages"])
	if !strings.Contains(msgs, `"reasoning":"read it first"`) || strings.Contains(msgs, "reasoning_content") {
		t.Errorf("messages = %s; want reasoning in vLLM's `reasoning` field", msgs)
	}

	res, err = c.Send(ctx, session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkUsage(t, res.Usage, ptr(900), ptr(800), ptr(100), ptr(1), nil)

	// Once the server has shown it reports cached tokens, a missing field is a plain 0.
	res, err = c.Send(ctx, session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !eqPtr(res.CachedTokens, ptr(0)) || len(res.Warnings) != 0 {
		t.Errorf("third request: cached %s, warnings %q; want 0 and none", show(res.CachedTokens), res.Warnings)
	}
}

func TestSendChatDeepSeek(t *testing.T) {
	r := newReplay(t, step{file: "deepseek_stream.sse", sse: true})
	c := newClient(t, Options{Profile: "deepseek", BaseURL: r.srv.URL, Model: "deepseek-v4-flash",
		Extra:  map[string]json.RawMessage{"thinking": json.RawMessage(`{"type":"enabled"}`)},
		Getenv: env("DEEPSEEK_API_KEY", "ds-key")})
	req := session()
	req.Messages[2].Reasoning = "" // hygiene dropped it: DeepSeek still needs the field
	res, err := c.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := bodyFields(t, r.request(0).body)
	if !strings.Contains(string(f["messages"]), `{"role":"assistant","content":"","reasoning_content":"","tool_calls":[`) {
		t.Errorf("messages = %s; want an empty reasoning_content on the tool-call turn", f["messages"])
	}
	if string(f["thinking"]) != `{"type":"enabled"}` {
		t.Errorf("thinking = %s", f["thinking"])
	}
	checkUsage(t, res.Usage, ptr(3000), ptr(2944), ptr(56), ptr(1), ptr(1))
	if res.Usage.Fields[chat.UsageCachedRead] != "usage.prompt_cache_hit_tokens" || res.Usage.Fields[chat.UsageUncached] != "usage.prompt_cache_miss_tokens" {
		t.Errorf("Fields = %v", res.Usage.Fields)
	}
}

func TestSendChatLlamaServerTimings(t *testing.T) {
	r := newReplay(t, step{file: "llamacpp_timings.sse", sse: true})
	c := newClient(t, Options{BaseURL: r.srv.URL, Model: "qwen3"})
	res, err := c.Send(context.Background(), session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checkUsage(t, res.Usage, ptr(237), ptr(236), ptr(1), ptr(1), nil)
	if res.Usage.Fields[chat.UsageCachedRead] != "timings.cache_n" {
		t.Errorf("Fields[CachedRead] = %q; want timings.cache_n", res.Usage.Fields[chat.UsageCachedRead])
	}
	if res.Prefill.Microseconds() != 30958 {
		t.Errorf("Prefill = %v; want 30.958ms (timings.prompt_ms)", res.Prefill)
	}
}

func TestSendChatUnstreamed(t *testing.T) {
	r := newReplay(t, step{file: "chat_response.json"})
	c := newClient(t, Options{Profile: "openai", BaseURL: r.srv.URL, Model: "gpt-x", NoStream: true, Getenv: env("OPENAI_API_KEY", "k")})
	res, err := c.Send(context.Background(), session(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := bodyFields(t, r.request(0).body)
	if string(f["stream"]) != "false" {
		t.Errorf("stream = %s; want false", f["stream"])
	}
	if _, ok := f["stream_options"]; ok {
		t.Error("stream_options sent on an unstreamed request")
	}
	checkUsage(t, res.Usage, ptr(1500), ptr(1024), ptr(476), ptr(1), ptr(0))
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      step
		status int
		want   string
	}{
		{"json 400", step{status: 400, file: "error_400.json"}, 400, "invalid_request_error: This model's maximum context length"},
		{"html 502", step{status: 502, text: "<html>Bad Gateway</html>"}, 502, `"<html>Bad Gateway</html>"`},
		{"mid-stream", step{sse: true, text: "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"}, 0, "overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplay(t, tc.s)
			c := newClient(t, Options{BaseURL: r.srv.URL, Model: "m"})
			_, err := c.Send(context.Background(), session(), nil)
			var ae *chat.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T); want *chat.APIError", err, err)
			}
			if ae.StatusCode != tc.status || ae.URL != r.srv.URL || ae.Backend != "openai" || !strings.Contains(ae.Body, tc.want) {
				t.Errorf("APIError = %+v; want status %d, URL %s, body containing %q", ae, tc.status, r.srv.URL, tc.want)
			}
		})
	}
	// No server at all.
	c := newClient(t, Options{BaseURL: "http://127.0.0.1:1", Model: "m"})
	_, err := c.Send(context.Background(), session(), nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 {
		t.Errorf("unreachable server: err = %v; want *chat.APIError with status 0", err)
	}
}

func TestKeyNeverLeaks(t *testing.T) {
	const key = "sk-proj-SECRETsecret0123456789"
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{APIChat, APIResponses} {
		r := newReplay(t, step{status: 401, echoAuth: true})
		c := newClient(t, Options{Profile: "openai", API: api, BaseURL: r.srv.URL, Model: "gpt-x", KeyFile: keyFile})
		res, err := c.Send(context.Background(), session(), nil)
		if err == nil {
			t.Fatal("no error for HTTP 401")
		}
		if got := r.request(0).header.Get("Authorization"); got != "Bearer "+key {
			t.Fatalf("the key file's key was not sent: Authorization %q", got)
		}
		var ae *chat.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 401 {
			t.Errorf("%s: err = %v; want *chat.APIError 401", api, err)
		}
		all := fmt.Sprintf("%v %+v %s %+v", err, ae, res.Body, res)
		for _, part := range []string{key, "SECRETsecret"} {
			if strings.Contains(all, part) {
				t.Errorf("%s: the key appears in the error or result: %s", api, all)
			}
		}
	}
}

func TestSendResponses(t *testing.T) {
	r := newReplay(t, step{file: "responses_stream.sse", sse: true})
	c := newClient(t, Options{Profile: "openai", API: APIResponses, BaseURL: r.srv.URL + "/v1", Model: "o-x", PromptCacheKey: "k1",
		Getenv: env("OPENAI_API_KEY", "k")})
	req := session()
	req.Think = true
	req.Messages[2].Thinking = []chat.ThinkingBlock{ReasoningBlock("rs_0", "gAAAA-prev", "")}
	res, err := c.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := r.request(0)
	if got.path != "/v1/responses" {
		t.Errorf("path = %s", got.path)
	}
	f := bodyFields(t, got.body)
	wantInput := `[{"type":"message","role":"system","content":"lab-run: 0123456789abcdef\nYou are a coding agent."},` +
		`{"type":"message","role":"user","content":"fix the <bug>"},` +
		`{"type":"reasoning","id":"rs_0","summary":[],"encrypted_content":"gAAAA-prev"},` +
		`{"type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"a.go\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"package a"}]`
	if string(f["input"]) != wantInput {
		t.Errorf("input =\n%s\nwant\n%s", f["input"], wantInput)
	}
	for k, v := range map[string]string{"model": `"o-x"`, "stream": "true", "max_output_tokens": "16", "store": "false",
		"include": `["reasoning.encrypted_content"]`, "prompt_cache_key": `"k1"`,
		"tools": `[{"type":"function","name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}}},"strict":false}]`} {
		if string(f[k]) != v {
			t.Errorf("body %s = %s; want %s", k, f[k], v)
		}
	}
	checkUsage(t, res.Usage, ptr(5000), ptr(4864), ptr(136), ptr(16), ptr(16))
	if res.Usage.Fields[chat.UsageCachedRead] != "response.usage.input_tokens_details.cached_tokens" {
		t.Errorf("Fields = %v", res.Usage.Fields)
	}
	if res.PromptTokens != 5000 || !eqPtr(res.CachedTokens, ptr(4864)) || res.TTFT <= 0 {
		t.Errorf("Result = prompt %d cached %s TTFT %v", res.PromptTokens, show(res.CachedTokens), res.TTFT)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("Warnings = %q; want none (incomplete at max_output_tokens is expected)", res.Warnings)
	}
}

func TestSendResponsesFailed(t *testing.T) {
	r := newReplay(t, step{file: "responses_failed.sse", sse: true})
	c := newClient(t, Options{API: APIResponses, BaseURL: r.srv.URL, Model: "m"})
	_, err := c.Send(context.Background(), session(), nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.Body, "server_error: The model failed") {
		t.Errorf("err = %v; want *chat.APIError with the response's error", err)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"bad scheme", Options{BaseURL: "ftp://x", Model: "m"}, "bad base URL"},
		{"no host", Options{BaseURL: "http://", Model: "m"}, "bad base URL"},
		{"not a URL", Options{BaseURL: "http://a b:%%", Model: "m"}, "bad base URL"},
		{"self-hosted without URL", Options{Profile: "vllm", Model: "m"}, "needs a base URL"},
		{"no model", Options{BaseURL: "http://127.0.0.1:1"}, "no model"},
		{"unknown profile", Options{Profile: "azure", BaseURL: "http://127.0.0.1:1", Model: "m"}, `unknown profile "azure"`},
		{"unknown API", Options{API: "assistants", BaseURL: "http://127.0.0.1:1", Model: "m"}, `unknown API`},
		{"missing key", Options{Profile: "openrouter", Model: "m"}, "OPENROUTER_API_KEY"},
		{"missing key file", Options{KeyFile: "/nonexistent/key", BaseURL: "http://127.0.0.1:1", Model: "m"}, "read key file"},
		{"bad extra", Options{BaseURL: "http://127.0.0.1:1", Model: "m", Extra: map[string]json.RawMessage{"x": json.RawMessage("{")}}, `extra field "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Getenv = env()
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%+v) = %v; want an error containing %q", tc.o, err, tc.want)
			}
		})
	}
	// The generic profile never reads OPENAI_API_KEY: a user's OpenAI key does not go to
	// another server.
	c := newClient(t, Options{BaseURL: "http://127.0.0.1:1", Model: "m", Getenv: env("OPENAI_API_KEY", "sk-x")})
	if c.key != "" {
		t.Errorf("generic profile read OPENAI_API_KEY")
	}
	c = newClient(t, Options{Profile: "openai", Model: "m", Getenv: env("OPENAI_API_KEY", "sk-x")})
	if c.URL() != "https://api.openai.com/v1" {
		t.Errorf("openai default URL = %s", c.URL())
	}
}

func TestOpenRouterHeaders(t *testing.T) {
	r := newReplay(t, step{file: "chat_stream.sse", sse: true})
	c := newClient(t, Options{Profile: "openrouter", BaseURL: r.srv.URL, Model: "x/y", Getenv: env("OPENROUTER_API_KEY", "k"),
		Headers: map[string]string{"HTTP-Referer": "https://example.invalid/lab"}})
	if _, err := c.Send(context.Background(), session(), nil); err != nil {
		t.Fatal(err)
	}
	h := r.request(0).header
	if h.Get("X-Title") != "lab" || h.Get("HTTP-Referer") != "https://example.invalid/lab" {
		t.Errorf("headers = %v", h)
	}
}

func TestNonce(t *testing.T) {
	a, b := Nonce("20261129-231502"), Nonce("20261129-231503")
	if a == b || a != Nonce("20261129-231502") {
		t.Errorf("Nonce: %q, %q; want distinct per run id and stable for one", a, b)
	}
	if !strings.HasPrefix(a, "lab-run: ") || len(a) != len("lab-run: ")+16 || strings.Contains(a, "\n") {
		t.Errorf("Nonce = %q; want lab-run: and 16 hex digits on one line", a)
	}
}

// A body is its fields in order; an extra field replaces one of the same name in place, or is
// appended.
func TestEncodeFieldsWithExtra(t *testing.T) {
	c := newClient(t, Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m",
		Extra: map[string]json.RawMessage{"stream": json.RawMessage(`false`), "z": json.RawMessage(`{}`)}})
	got := encodeFields(c.withExtra([]field{{"model", json.RawMessage(`"m"`)}, {"stream", json.RawMessage(`true`)}, {"max_tokens", json.RawMessage(`1`)}}))
	if want := `{"model":"m","stream":false,"max_tokens":1,"z":{}}`; string(got) != want {
		t.Errorf("body = %s; want %s", got, want)
	}
}

// A base URL's password (http://user:secret@host) is in no error text: an HTTP error, an
// answer that is not the API's, a reply past the limit, a bad address.
func TestBaseURLPasswordNotInErrors(t *testing.T) {
	replytest.PasswordNotInErrors(t, "text/event-stream", sseChunk(2000)+chatEnd, nil, func(u string) error {
		c := newClient(t, Options{Profile: "generic", BaseURL: u, Model: "m"})
		req := session()
		req.MaxReplyBytes, req.Generate = 1000, 100
		_, err := c.Send(context.Background(), req, nil)
		return err
	})
	if _, err := New(Options{Profile: "generic", BaseURL: "ftp://user:" + replytest.Secret + "@host/v1", Model: "m"}); err == nil || strings.Contains(err.Error(), replytest.Secret) {
		t.Errorf("a bad base URL: error %v; want one without its password", err)
	}
}
