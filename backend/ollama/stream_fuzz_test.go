package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"lab/chat"
)

// FuzzChatStream serves arbitrary bytes as Ollama's /api/chat NDJSON stream (after a good
// _debug_render_only answer) and sends a request through the client: Send never panics, and it
// either fails with an error or returns a result with the rendered prompt; also for requests
// with Generate > 0 (the live driver), which parse the model's reply.
func FuzzChatStream(f *testing.F) {
	var mu sync.Mutex
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/chat":
			if strings.Contains(string(raw), `"_debug_render_only":true`) {
				json.NewEncoder(w).Encode(map[string]any{"model": "m", "done": true, "_debug_info": map[string]any{"rendered_template": "<|im_start|>user\nhi<|im_end|>\n"}})
				return
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			mu.Lock()
			w.Write(body)
			mu.Unlock()
		case "/api/generate":
			io.WriteString(w, `{"model":"m","done":true}`+"\n")
		default:
			http.NotFound(w, r)
		}
	}))
	f.Cleanup(srv.Close)
	c, err := New(srv.URL, "m")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"model":"m","message":{"role":"assistant","content":"o"},"done":false}`+"\n"+
		`{"model":"m","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":9,"eval_count":1,"prompt_eval_duration":1000}`+"\n"), 0)
	f.Add([]byte(`{"model":"m","message":{"role":"assistant","thinking":"t","tool_calls":[{"function":{"name":"read","arguments":{"path":"a"}}}]},"done":true}`+"\n"), 8)
	f.Add([]byte(`{"error":"model not found"}`+"\n"), 0)
	f.Add([]byte(`{"model":"m","message":{"role":"assistant","content":"o"},"done":false}`), 0)
	f.Add([]byte("not json\n"), 4)
	f.Fuzz(func(t *testing.T, b []byte, generate int) {
		mu.Lock()
		body = b
		mu.Unlock()
		req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, Generate: generate % 64}
		res, err := c.Send(context.Background(), req, &chat.Reply{Content: "ok"})
		var ae *chat.APIError
		if err != nil && errors.As(err, &ae) && ae.Backend != "ollama" {
			t.Fatalf("APIError from backend %q", ae.Backend)
		}
		if err == nil && (res == nil || res.Rendered == "" || res.PromptTokens < 0) {
			t.Fatalf("result %+v", res)
		}
	})
}

// FuzzParseCacheLine: the server log's `loading cache slot` line parser never panics and, when
// it recognises a line, returns counts that are not negative.
func FuzzParseCacheLine(f *testing.F) {
	f.Add(`time=2026-11-29T22:45:01.123Z level=DEBUG source=cache.go:128 msg="loading cache slot" id=0 cache=512 prompt=1024 used=511 remaining=513`)
	f.Add(`msg="loading cache slot" id=0 cache=0 prompt=99999999999999999999 used=1 remaining=-3`)
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		prompt, used, remaining, ok := ParseCacheLine(line)
		if !ok && (prompt != 0 || used != 0 || remaining != 0) {
			t.Fatalf("not a cache line, yet %d %d %d", prompt, used, remaining)
		}
		if ok && (prompt < 0 || used < 0 || remaining < 0) {
			t.Fatalf("ParseCacheLine(%q) = %d, %d, %d", line, prompt, used, remaining)
		}
	})
}
