package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/chat"
)

// FuzzStream serves arbitrary bytes as the event stream of Chat Completions and of the
// Responses API (and, unstreamed, as a JSON answer) and sends a request through the client:
// Send never panics, its errors are *chat.APIError without the API key,
// and a result that came back has no negative count.
func FuzzStream(f *testing.F) {
	var mu sync.Mutex
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		b := body
		mu.Unlock()
		if strings.Contains(r.Header.Get("Accept"), "event-stream") || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write(b)
	}))
	f.Cleanup(srv.Close)
	clients := map[int]*Client{}
	for i, o := range []Options{
		{BaseURL: srv.URL + "/v1", Model: "m"},
		{BaseURL: srv.URL + "/v1", Model: "m", Profile: "deepseek", Getenv: func(string) string { return "sk-fuzz-key-0123456789" }},
		{BaseURL: srv.URL + "/v1", Model: "m", API: APIResponses},
		{BaseURL: srv.URL + "/v1", Model: "m", NoStream: true},
	} {
		c, err := New(o)
		if err != nil {
			f.Fatal(err)
		}
		clients[i] = c
	}
	for _, pat := range []string{"testdata/*.sse", "testdata/*.json"} {
		files, _ := filepath.Glob(pat)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			which := 0
			switch {
			case strings.HasPrefix(filepath.Base(file), "responses"):
				which = 2
			case strings.HasPrefix(filepath.Base(file), "deepseek"):
				which = 1
			case filepath.Ext(file) == ".json":
				which = 3
			}
			f.Add(b, which)
		}
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"o\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":-5,\"prompt_tokens_details\":{\"cached_tokens\":9}}}\n\n"), 0)
	f.Add([]byte("data: {\"error\":{\"message\":\"sk-fuzz-key-0123456789 is bad\"}}\n\n"), 1)
	f.Fuzz(func(t *testing.T, b []byte, which int) {
		c := clients[(which%4+4)%4]
		mu.Lock()
		body = b
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "s"}, {Role: chat.RoleUser, Content: "hi"}}}
		res, err := c.Send(ctx, req, nil)
		if err != nil {
			var ae *chat.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v; want *chat.APIError", err, err)
			}
			if strings.Contains(ae.Body, "sk-fuzz-key-0123456789") {
				t.Fatalf("the API key is in the error: %s", ae.Body)
			}
			return
		}
		if res == nil || res.TTFT < 0 || res.Total < 0 {
			t.Fatalf("result %+v", res)
		}
	})
}

// A 429's Retry-After reaches the error, for the harness to wait it out.
func TestRetryAfterInTheError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
	}))
	defer srv.Close()
	for _, api := range []string{APIChat, APIResponses} {
		c, err := New(Options{BaseURL: srv.URL + "/v1", Model: "m", API: api})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, nil)
		var ae *chat.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.RetryAfter != 3*time.Second {
			t.Errorf("%s: error %#v; want HTTP 429 with RetryAfter 3s", api, err)
		}
	}
}
