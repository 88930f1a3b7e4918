package capture_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/capture"
	"lab/metrics"
)

const secret = "sk-test-SECRETKEY0123456789"

// upstream answers are recorded-stream shaped, one per API, with known usage figures.
type answer struct {
	name, path, ctype, body string
	status                  int
	// want are the figures the row must carry.
	backend                         string
	prompt, completion, reasoning   int64 // -1: unknown (null)
	cached, write, write5m, write1h *int64
	reqBody                         string
}

func n(v int64) *int64 { return &v }

var answers = []answer{
	{
		name: "openai chat stream", path: "/v1/chat/completions", ctype: "text/event-stream",
		body: "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":2006,\"completion_tokens\":300,\"prompt_tokens_details\":{\"cached_tokens\":1920},\"completion_tokens_details\":{\"reasoning_tokens\":128}}}\n\n" +
			"data: [DONE]\n\n",
		backend: "proxy:openai-chat", prompt: 2006, cached: n(1920), completion: 300, reasoning: 128,
		reqBody: `{"model":"gpt-x","stream":true,"messages":[{"role":"system","content":"sys"},{"role":"user","content":"chat stream"}]}`,
	},
	{
		name: "openai chat whole", path: "/v1/chat/completions", ctype: "application/json",
		body:    `{"choices":[{"message":{"role":"assistant","content":"Hi"}}],"usage":{"prompt_tokens":50,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`,
		backend: "proxy:openai-chat", prompt: 50, cached: n(0), completion: 3, reasoning: -1, // not counted by the server: unknown
		reqBody: `{"model":"gpt-x","messages":[{"role":"system","content":"sys"},{"role":"user","content":"chat whole"}]}`,
	},
	{
		name: "openai responses stream", path: "/v1/responses", ctype: "text/event-stream",
		body: "event: response.created\ndata: {\"type\":\"response.created\"}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi\"}]}],\"usage\":{\"input_tokens\":1500,\"output_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":1024,\"cache_write_tokens\":100},\"output_tokens_details\":{\"reasoning_tokens\":8}}}}\n\n",
		backend: "proxy:openai-responses", prompt: 1500, cached: n(1024), write: n(100), completion: 20, reasoning: 8,
		reqBody: `{"model":"gpt-x","stream":true,"instructions":"sys","input":[{"type":"message","role":"user","content":"responses"}]}`,
	},
	{
		name: "anthropic stream", path: "/v1/messages", ctype: "text/event-stream",
		body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":50,\"cache_read_input_tokens\":100000,\"cache_creation_input_tokens\":200,\"cache_creation\":{\"ephemeral_5m_input_tokens\":150,\"ephemeral_1h_input_tokens\":50},\"output_tokens\":1}}}\n\n" +
			"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":503}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		backend: "proxy:anthropic", prompt: 100250, cached: n(100000), write: n(200), write5m: n(150), write1h: n(50), completion: 503, reasoning: -1, // not counted by the server: unknown
		reqBody: `{"model":"claude-x","stream":true,"max_tokens":1024,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"anthropic stream"}]}`,
	},
	{
		name: "anthropic whole", path: "/v1/messages", ctype: "application/json",
		body:    `{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":4000,"output_tokens":2}}`,
		backend: "proxy:anthropic", prompt: 4010, cached: n(0), write: n(4000), completion: 2, reasoning: -1, // not counted by the server: unknown
		reqBody: `{"model":"claude-x","max_tokens":1024,"messages":[{"role":"user","content":"anthropic whole"}]}`,
	},
	{
		name: "ollama chat stream", path: "/api/chat", ctype: "application/x-ndjson",
		body: `{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"hmm"},"done":false}` + "\n" +
			`{"model":"qwen3","message":{"role":"assistant","content":"Hi"},"done":false}` + "\n" +
			`{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":2345678901,"load_duration":1000,"prompt_eval_count":512,"prompt_eval_duration":81234567,"eval_count":7,"eval_duration":100}` + "\n",
		backend: "proxy:ollama-chat", prompt: 512, completion: 7, reasoning: -1, // not counted by the server: unknown
		reqBody: `{"model":"qwen3","messages":[{"role":"system","content":"sys"},{"role":"user","content":"ollama"}],"think":true}`,
	},
	{
		name: "llama-server chat stream", path: "/v1/chat/completions", ctype: "text/event-stream",
		body: "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"timings\":{\"cache_n\":236,\"prompt_n\":1,\"prompt_ms\":30.9,\"predicted_n\":35}}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":237,\"completion_tokens\":35,\"total_tokens\":272}}\n\n" +
			"data: [DONE]\n\n",
		backend: "proxy:openai-chat", prompt: 237, cached: n(236), completion: 35, reasoning: -1, // not counted by the server: unknown
		reqBody: `{"stream":true,"messages":[{"role":"system","content":"sys"},{"role":"user","content":"llama chat"}]}`,
	},
	{
		name: "llama-server completion", path: "/completion", ctype: "application/json",
		body:    `{"content":"x","stop":true,"tokens_evaluated":100,"tokens_predicted":5,"timings":{"cache_n":90,"prompt_n":10,"prompt_ms":12.5,"predicted_n":5}}`,
		backend: "proxy:llamacpp-completion", prompt: 100, cached: n(90), completion: 5, reasoning: -1, // not counted by the server: unknown
		reqBody: `{"prompt":"<|im_start|>user\ncompletion<|im_end|>\n","n_predict":5}`,
	},
}

// fakeUpstream serves each answer on its path, chosen by the request body's last user text.
func fakeUpstream(t *testing.T, seen *sync.Map) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.Store(string(b), r.Header.Get("Authorization"))
		for _, a := range answers {
			if a.path == r.URL.Path && a.reqBody == string(b) {
				w.Header().Set("Content-Type", a.ctype)
				if a.status != 0 {
					w.WriteHeader(a.status)
				}
				// Stream in pieces, flushed, as a server does.
				for _, part := range strings.SplitAfter(a.body, "\n\n") {
					io.WriteString(w, part)
					w.(http.Flusher).Flush()
				}
				return
			}
		}
		http.Error(w, `{"error":{"type":"not_found","message":"no such answer"}}`, http.StatusNotFound)
	}))
}

// startProxy serves a proxy to upstream and returns its URL, its folder and a function that
// stops it and returns the capture's rows and manifest.
func startProxy(t *testing.T, upstream string, progress io.Writer, save bool) (string, string, func() (*metrics.Manifest, []metrics.Sample)) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: upstream, Dir: dir, RunID: "cap", Progress: progress, SaveRequests: save})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	return srv.URL, dir, func() (*metrics.Manifest, []metrics.Sample) {
		srv.Close()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		man, rows, err := metrics.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		return man, rows
	}
}

func post(t *testing.T, url, path, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("X-Api-Key", secret)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// val is *p, or -1 for nil (unknown), so that a comparison with a figure fails on a null.
func val(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

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

// Every API, streamed and not: the client gets the upstream's bytes unchanged, the upstream
// gets the client's key, and the row carries what the upstream reported.
func TestProxyRecordsWhatTheUpstreamReported(t *testing.T) {
	var seen sync.Map
	up := fakeUpstream(t, &seen)
	defer up.Close()
	var progress bytes.Buffer
	url, dir, stop := startProxy(t, up.URL, &progress, true)
	for _, a := range answers {
		code, got := post(t, url, a.path, a.reqBody, nil)
		if code != http.StatusOK || got != a.body {
			t.Errorf("%s: the client got HTTP %d %q; want the upstream's bytes %q", a.name, code, got, a.body)
		}
		if auth, _ := seen.Load(a.reqBody); auth != "Bearer "+secret {
			t.Errorf("%s: the upstream got Authorization %q", a.name, auth)
		}
	}
	man, rows := stop()
	if len(rows) != len(answers) || !man.Complete || man.Samples != len(answers) {
		t.Fatalf("%d rows, manifest complete %v samples %d; want %d rows, complete", len(rows), man.Complete, man.Samples, len(answers))
	}
	for i, a := range answers {
		s := rows[i]
		if s.Error != "" || s.Backend != a.backend || s.PromptTokens != a.prompt || !eqPtr(s.CachedTokens, a.cached) ||
			val(s.CompletionTokens) != a.completion || val(s.ReasoningTokensGenerated) != a.reasoning || !eqPtr(s.CacheWriteTokens, a.write) ||
			!eqPtr(s.CacheWrite5mTokens, a.write5m) || !eqPtr(s.CacheWrite1hTokens, a.write1h) {
			t.Errorf("%s: row error %q backend %s prompt %d cached %s completion %d reasoning %d write %s (5m %s, 1h %s); want %s %d %s %d %d %s (%s, %s)",
				a.name, s.Error, s.Backend, s.PromptTokens, show(s.CachedTokens), val(s.CompletionTokens), val(s.ReasoningTokensGenerated),
				show(s.CacheWriteTokens), show(s.CacheWrite5mTokens), show(s.CacheWrite1hTokens),
				a.backend, a.prompt, show(a.cached), a.completion, a.reasoning, show(a.write), show(a.write5m), show(a.write1h))
		}
		if a.cached != nil && s.CachedSource != metrics.CachedSourceResponse {
			t.Errorf("%s: cached_source %q", a.name, s.CachedSource)
		}
		if s.UsageFields == "" || s.RequestBytes != int64(len(a.reqBody)) || s.Arm != capture.DefaultLabel || s.RunID != "cap" || !s.ExpectedUnknown {
			t.Errorf("%s: usage_fields %q request_bytes %d arm %q run %q expected_unknown %v", a.name, s.UsageFields, s.RequestBytes, s.Arm, s.RunID, s.ExpectedUnknown)
		}
		// An unstreamed (JSON) answer has no time to first token: null, as in lab run.
		if unstreamed := a.ctype == "application/json"; (s.TTFTNs > 0) == unstreamed || s.TotalNs <= 0 || s.TotalNs < s.TTFTNs {
			t.Errorf("%s: ttft %d, total %d; want a time to first token only for a stream", a.name, s.TTFTNs, s.TotalNs)
		}
	}
	if rows[5].PrefillNs != 81234567 {
		t.Errorf("ollama prefill %d; want prompt_eval_duration 81234567", rows[5].PrefillNs)
	}
	// Each request is the first of a conversation of its own (no shared user message).
	if len(man.Scenarios) != len(answers) || len(man.Sessions) != len(answers) {
		t.Errorf("manifest scenarios %v, %d session records", man.Scenarios, len(man.Sessions))
	}
	if got := strings.Count(progress.String(), "\n"); got != len(answers) {
		t.Errorf("%d progress lines; want one per request:\n%s", got, progress.String())
	}
	noSecret(t, dir, progress.String())
}

// noSecret fails when the key appears in a file of dir or in the log.
func noSecret(t *testing.T, dir, log string) {
	t.Helper()
	if strings.Contains(log, "SECRETKEY") {
		t.Errorf("the progress lines hold the key:\n%s", log)
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte("SECRETKEY")) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	if files == 0 {
		t.Errorf("the proxy wrote no file in %s", dir)
	}
}

// An upstream error status is the row's error, with the key the server echoed redacted, and the
// client gets the error unchanged.
func TestProxyUpstreamError(t *testing.T) {
	body := `{"error":{"type":"rate_limit_error","message":"slow down, key ` + secret + `"}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, body)
	}))
	defer up.Close()
	var progress bytes.Buffer
	url, dir, stop := startProxy(t, up.URL, &progress, true)
	code, got := post(t, url, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, nil)
	if code != http.StatusTooManyRequests || got != body {
		t.Errorf("client got %d %q", code, got)
	}
	_, rows := stop()
	if len(rows) != 1 || !strings.HasPrefix(rows[0].Error, "HTTP 429: rate_limit_error: slow down") || !strings.Contains(rows[0].Error, "[redacted]") {
		t.Fatalf("rows %+v", rows)
	}
	noSecret(t, dir, progress.String())
}

// A client that goes away during the stream leaves a row that says so; the proxy goes on.
func TestProxyClientDisconnects(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer up.Close()
	defer close(release)
	url, _, stop := startProxy(t, up.URL, nil, false)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	_, rows := stop()
	if len(rows) != 1 || rows[0].Error == "" {
		t.Fatalf("rows %+v; want one with an error", rows)
	}
	if !strings.Contains(rows[0].Error, "client disconnected") && !strings.Contains(rows[0].Error, "read the answer") {
		t.Errorf("error %q", rows[0].Error)
	}
}

// Two conversations sent interleaved are told apart: by their messages without a key, by the
// key when their messages are the same.
func TestProxyGroupsConversations(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	msgs := func(user string, more ...string) string {
		m := `{"role":"system","content":"You are a coding agent."},{"role":"user","content":"` + user + `"}`
		for _, x := range more {
			m += "," + x
		}
		return `{"model":"m","messages":[` + m + `]}`
	}
	call := `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}]}`
	result := `{"role":"tool","content":"package a","tool_call_id":"c1"}`
	for _, tc := range []struct {
		name   string
		bodies []string
		keys   []string
		want   []string // scenario/request_index/turn/step of each row
	}{
		{
			name:   "by prefix",
			bodies: []string{msgs("fix A"), msgs("fix B"), msgs("fix A", call, result), msgs("fix B", `{"role":"assistant","content":"ok"}`, `{"role":"user","content":"and B2"}`)},
			want:   []string{"conversation-0001/0/1/1", "conversation-0002/0/1/1", "conversation-0001/1/1/2", "conversation-0002/1/2/1"},
		},
		{
			name:   "by key",
			bodies: []string{msgs("same"), msgs("same"), msgs("same", call, result), msgs("same", call, result)},
			keys:   []string{"k1", "k2", "k2", "k1"},
			want:   []string{"conversation-0001/0/1/1", "conversation-0002/0/1/1", "conversation-0002/1/1/2", "conversation-0001/1/1/2"},
		},
		{
			// A client's side request (a title, a subagent) under the session's key is a
			// conversation of its own; the session goes on in its own.
			name:   "side request under the session's key",
			bodies: []string{msgs("fix A"), msgs("Write a title for: fix A"), msgs("fix A", call, result)},
			keys:   []string{"k1", "k1", "k1"},
			want:   []string{"conversation-0001/0/1/1", "conversation-0002/0/1/1", "conversation-0001/1/1/2"},
		},
		{
			name:   "the same session twice",
			bodies: []string{msgs("same"), msgs("same", call, result), msgs("same")},
			want:   []string{"conversation-0001/0/1/1", "conversation-0001/1/1/2", "conversation-0002/0/1/1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _, stop := startProxy(t, up.URL, nil, false)
			for i, b := range tc.bodies {
				h := map[string]string{}
				if tc.keys != nil {
					h["X-Claude-Code-Session-Id"] = tc.keys[i]
				}
				if code, _ := post(t, url, "/v1/chat/completions", b, h); code != 200 {
					t.Fatalf("request %d: HTTP %d", i, code)
				}
			}
			_, rows := stop()
			var got []string
			for _, s := range rows {
				got = append(got, fmt.Sprintf("%s/%d/%d/%d", s.Scenario, s.RequestIndex, s.Turn, s.Step))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("rows %v; want %v", got, tc.want)
			}
		})
	}
}

// Requests the proxy does not record pass through unchanged, and a non-loopback listen address
// is refused.
func TestProxyPassesThroughAndRefusesNonLoopback(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	defer up.Close()
	url, _, stop := startProxy(t, up.URL, nil, false)
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "GET /v1/models" {
		t.Errorf("pass-through answered %q", b)
	}
	post(t, url, "/api/chat", `{"model":"m","messages":[{"role":"user","content":"x"}],"_debug_render_only":true}`, nil)
	if _, rows := stop(); len(rows) != 0 {
		t.Errorf("%d rows for requests that are not recorded", len(rows))
	}
	for addr, ok := range map[string]bool{"127.0.0.1:0": true, "[::1]:80": true, "localhost:8080": true, "0.0.0.0:8080": false, "192.168.1.2:80": false, ":8080": false} {
		if err := capture.CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v; want ok %v", addr, err, ok)
		}
	}
	if _, err := capture.New(capture.Options{Upstream: "ftp://x", Dir: t.TempDir(), RunID: "r"}); err == nil {
		t.Errorf("New with an ftp upstream: %v", err)
	}
}

// byteTok counts one token per byte.
type byteTok struct{}

func (byteTok) Encode(s string) ([]int32, error) {
	out := make([]int32, len(s))
	for i := range s {
		out[i] = int32(s[i])
	}
	return out, nil
}

// With an Ollama upstream's own rendering and the model's tokenizer, the proxy models the one
// cache slot: expected cached tokens and the first divergence, as lab run computes them.
func TestProxyAttributesAgainstTheUpstreamsSlot(t *testing.T) {
	render := func(body []byte) string {
		var r struct {
			Messages []struct{ Role, Content string }
		}
		json.Unmarshal(body, &r)
		var b strings.Builder
		for _, m := range r.Messages {
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
		return b.String() + "<|im_start|>assistant\n"
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		text := render(body)
		if bytes.Contains(body, []byte(`"_debug_render_only":true`)) {
			b, _ := json.Marshal(map[string]any{"_debug_info": map[string]string{"rendered_template": text}})
			w.Write(b)
			return
		}
		fmt.Fprintf(w, "{\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"prompt_eval_count\":%d,\"eval_count\":1}\n", len(text))
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=a")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "a",
		Attribution: capture.Attribution{Render: capture.RenderOllama, Tokenizer: byteTok{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	first := `{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it"}]}`
	second := `{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`
	third := `{"model":"m","messages":[{"role":"system","content":"Today is Monday. You are a coding agent."},{"role":"user","content":"fix it"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`
	for _, b := range []string{first, second, third} {
		post(t, srv.URL, "/api/chat", b, nil)
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	firstLen := int64(len(render([]byte(first))))
	for i, want := range []struct {
		expected int64
		segment  string
	}{{0, ""}, {firstLen, ""}, {len64("<|im_start|>system\n"), "system"}} {
		s := rows[i]
		if s.ExpectedUnknown || val(s.ExpectedCachedTokens) != want.expected || s.DivergenceSegment != want.segment {
			t.Errorf("request %d: expected_unknown %v expected %s segment %q; want %d %q (warnings %q)", i, s.ExpectedUnknown, show(s.ExpectedCachedTokens), s.DivergenceSegment, want.expected, want.segment, s.Warnings)
		}
	}
	// Without the server's log the cached tokens are unknown, and so is what was re-read: never
	// the prompt less the expected cached tokens, an estimate.
	if rows[2].CachedTokens != nil || rows[2].RereadTokens != nil || rows[2].RereadSystemTokens != nil {
		t.Errorf("request 2: cached %s, reread %s (system %s); want all unknown", show(rows[2].CachedTokens), show(rows[2].RereadTokens), show(rows[2].RereadSystemTokens))
	}
}

func len64(s string) int64 { return int64(len(s)) }
