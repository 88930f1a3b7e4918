package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"lab/chat"
	"lab/internal/replytest"
)

func TestParseCacheLine(t *testing.T) {
	line := `time=2026-11-29T23:01:02.000Z level=DEBUG source=cache.go:140 msg="loading cache slot" id=0 cache=52 prompt=82 used=52 remaining=30`
	p, u, r, ok := ParseCacheLine(line)
	if !ok || p != 82 || u != 52 || r != 30 {
		t.Fatalf("ParseCacheLine = %d %d %d %v; want 82 52 30 true", p, u, r, ok)
	}
	if _, _, _, ok := ParseCacheLine(`msg="loading model"`); ok {
		t.Fatal("ParseCacheLine matched a line without cache slot")
	}
}

// The emulated generation must be what the server's template renders back for the current
// turn's last assistant message, when the template keeps it verbatim: then the next request of
// the turn finds the whole reply in the cache.
func TestQwen3OutputMatchesTheRendererWithinATurn(t *testing.T) {
	c, _ := New("http://127.0.0.1:1", "m")
	call := chat.ToolCall{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go","limit":20}`)}
	for _, tc := range []struct {
		name    string
		reply   chat.Reply
		prefix  bool
		diverge string // what the renderer writes where it differs
	}{
		{"text and call", chat.Reply{Reasoning: "Look at a.go.", Content: "Reading it.", ToolCalls: []chat.ToolCall{call}}, true, ""},
		// Ollama v0.17.4's qwen3.5 renderer writes no "</think>" when the content is empty: the
		// tool call follows the reasoning directly. A real divergence, measured, not hidden.
		{"call only", chat.Reply{Reasoning: "Look at a.go.", ToolCalls: []chat.ToolCall{call}}, false, "<tool_call>"},
		// The renderer re-encodes < as \u003c; the model wrote <.
		{"html in args", chat.Reply{Reasoning: "Fix.", Content: "Editing.", ToolCalls: []chat.ToolCall{{Name: "edit", Arguments: json.RawMessage(`{"old_string":"i < n"}`)}}}, false, `\u003c`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := []chat.Message{{Role: chat.RoleSystem, Content: "sys"}, {Role: chat.RoleUser, Content: "go"}}
			before, err := c.ChatRequest(&chat.Request{Messages: msgs, Think: true})
			if err != nil {
				t.Fatal(err)
			}
			prompt, err := renderers.RenderWithRenderer("qwen3.5", before.Messages, nil, before.Think)
			if err != nil {
				t.Fatal(err)
			}
			cache := prompt + Qwen3Output(&tc.reply)
			msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, Reasoning: tc.reply.Reasoning, Content: tc.reply.Content, ToolCalls: tc.reply.ToolCalls},
				chat.Message{Role: chat.RoleTool, Content: "[#0001]\nok", ToolName: "read"})
			after, err := c.ChatRequest(&chat.Request{Messages: msgs, Think: true})
			if err != nil {
				t.Fatal(err)
			}
			next, err := renderers.RenderWithRenderer("qwen3.5", after.Messages, nil, after.Think)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.HasPrefix(next, cache); got != tc.prefix {
				t.Fatalf("next prompt starts with the emulated cache = %v; want %v\ncache: %q\nnext:  %q", got, tc.prefix, cache, next)
			}
			if !tc.prefix {
				i := 0
				for i < len(cache) && i < len(next) && cache[i] == next[i] {
					i++
				}
				if !strings.HasPrefix(next[i:], tc.diverge) && !strings.HasPrefix(next[i-1:], tc.diverge) {
					t.Fatalf("diverges at %q; want at %q", next[i:min(i+20, len(next))], tc.diverge)
				}
			}
		})
	}
}

// fakeServer answers like Ollama v0.17.4 and writes its cache lines to a log, as the runner does.
func fakeServer(t *testing.T, logPath string) *httptest.Server {
	t.Helper()
	var cached int
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logf := func(prompt, used int) {
			f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			fmt.Fprintf(f, "time=x level=DEBUG msg=\"loading cache slot\" id=0 cache=%d prompt=%d used=%d remaining=%d\n", cached, prompt, used, prompt-used)
			f.Close()
		}
		switch r.URL.Path {
		case "/api/chat":
			if renderOnly(w, r) {
				return
			}
			var req api.ChatRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.Options["num_ctx"] != float64(8192) {
				http.Error(w, `{"error":"num_ctx not pinned"}`, http.StatusBadRequest)
				return
			}
			logf(100, min(cached, 99)) // a fully cached prompt still evaluates one token
			w.Write([]byte(`{"model":"m","message":{"role":"assistant","content":"x"},"done":false}` + "\n"))
			w.Write([]byte(`{"model":"m","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":100,"prompt_eval_duration":5000000,"eval_count":1,"eval_duration":1000,"load_duration":7}` + "\n"))
		case "/api/generate":
			var req api.GenerateRequest
			json.NewDecoder(r.Body).Decode(&req)
			if !req.Raw || !strings.HasPrefix(req.Prompt, "RENDERED") {
				http.Error(w, `{"error":"want a raw prompt starting with the rendered text"}`, http.StatusBadRequest)
				return
			}
			logf(120, 99)
			cached = 120
			json.NewEncoder(w).Encode(map[string]any{"model": "m", "done": true})
		default:
			http.NotFound(w, r)
		}
	}))
}

func TestSendMeasuresAndEmulates(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logPath, []byte("old line msg=\"loading cache slot\" id=0 cache=0 prompt=5 used=4 remaining=1\n"), 0o644)
	srv := fakeServer(t, logPath)
	defer srv.Close()
	c := newClient(t, srv.URL, WithNumCtx(8192), WithServerLog(logPath))
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, Think: true}
	reply := &chat.Reply{Reasoning: "r", Content: "ok"}
	res, err := c.Send(context.Background(), req, reply)
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 100 || res.CachedTokens == nil || *res.CachedTokens != 0 || res.CachedSource != chat.SourceServerLog {
		t.Fatalf("first Send: prompt %d cached %v (%s); want 100, 0 from the server log (not the old line)", res.PromptTokens, res.CachedTokens, res.CachedSource)
	}
	if res.Prefill.Milliseconds() != 5 || res.CacheText != "RENDERED"+Qwen3Output(reply) {
		t.Fatalf("prefill %v, cache text %q", res.Prefill, res.CacheText)
	}
	res, err = c.Send(context.Background(), req, reply)
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedTokens == nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("second Send: no cached tokens; log:\n%s", b)
	}
	if *res.CachedTokens != 99 {
		t.Fatalf("second Send cached = %d; want 99 (from what the emulation left), not the emulation's own line", *res.CachedTokens)
	}
}

func TestUnreachableServerNamesTheAddress(t *testing.T) {
	c, _ := New("http://127.0.0.1:9", "m")
	_, err := c.Version(context.Background())
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "http://127.0.0.1:9") {
		t.Fatalf("Version on a closed port = %v; want a *chat.APIError naming http://127.0.0.1:9", err)
	}
}

// A log truncated or rotated under the client is read again from its start.
func TestLogTruncationIsFollowed(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logPath, []byte(strings.Repeat("padding line\n", 50)), 0o644)
	srv := fakeServer(t, logPath)
	defer srv.Close()
	c, _ := New(srv.URL, "m", WithNumCtx(8192), WithServerLog(logPath))
	os.WriteFile(logPath, nil, 0o644) // rotated: now shorter than the offset
	res, err := c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, &chat.Reply{Content: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if res.CachedTokens == nil || len(res.Warnings) != 0 {
		t.Fatalf("after truncation: cached %v, warnings %q; want the new line read", res.CachedTokens, res.Warnings)
	}
}

// A chat stream that breaks off before its done message is an error (the api client ends such a
// stream quietly), and the cache fill is a step of its own: it fails alone and is tried again
// alone, without measuring the request again.
func TestCutStreamAndCacheFill(t *testing.T) {
	var chats, generates int
	var failGenerates int
	cut := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/chat":
			if renderOnly(w, r) {
				return
			}
			chats++
			w.Write([]byte(`{"model":"m","message":{"role":"assistant","content":"x"},"done":false}` + "\n"))
			if cut {
				return // the body ends here: no done message
			}
			w.Write([]byte(`{"model":"m","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":100,"eval_count":1}` + "\n"))
		case "/api/generate":
			generates++
			if generates <= failGenerates {
				http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"model": "m", "done": true})
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
	reply := &chat.Reply{Content: "ok"}

	cut = true
	_, err := c.Send(context.Background(), req, reply)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 200 || ae.Body != "stream cut: no done message" {
		t.Fatalf("a cut stream: %v; want an APIError with status 200 and stream cut: no done message", err)
	}
	if generates != 0 {
		t.Errorf("the cache was filled after a cut stream")
	}

	// A failed fill is a CacheFillError with the measured result; FillCache fills again
	// without measuring the request again.
	cut, failGenerates = false, 1
	res, err := c.Send(context.Background(), req, reply)
	var fill *chat.CacheFillError
	if !errors.As(err, &fill) || res == nil || res.PromptTokens != 100 || res.CacheText != "" || chats != 2 || generates != 1 {
		t.Fatalf("a cache fill failing: err %v, result %+v, %d chat requests, %d generate requests; want a CacheFillError, the measured result without cache text, 2, 1", err, res, chats, generates)
	}
	if err := c.FillCache(context.Background(), req, reply, res); err != nil || chats != 2 || generates != 2 || res.CacheText != "RENDERED"+Qwen3Output(reply) {
		t.Fatalf("the fill again: %v, %d chat requests, %d generate requests, cache text %q", err, chats, generates, res.CacheText)
	}
	res, err = c.Measure(context.Background(), req, reply)
	if err != nil || chats != 3 || generates != 2 || res.CacheText != "" {
		t.Fatalf("Measure: %v, %d chat requests, %d generate requests, cache text %q; want no fill", err, chats, generates, res.CacheText)
	}
}

// A base URL's password (http://user:secret@host) is in no error text: an HTTP error, an
// answer that is not the API's, a reply past the limit, a bad address.
func TestBaseURLPasswordNotInErrors(t *testing.T) {
	replytest.PasswordNotInErrors(t, "application/x-ndjson", line(2000), renderOnly, func(u string) error {
		c, err := New(u, "m")
		if err != nil {
			t.Fatal(err)
		}
		req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}
		req.MaxReplyBytes, req.Generate = 1000, 100
		_, err = c.Send(context.Background(), req, nil)
		return err
	})
	if _, err := New("user:"+replytest.Secret+"@host:8080", "m"); err == nil || strings.Contains(err.Error(), replytest.Secret) {
		t.Errorf("a bad base URL: error %v; want one without its password", err)
	}
}
