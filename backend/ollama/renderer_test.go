package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"lab/chat"
)

// CheckModel keeps the renderer /api/show names: the report names the chat template's rules
// from it.
func TestCheckModelKeepsTheRenderer(t *testing.T) {
	for _, renderer := range []string{"qwen3.5", ""} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/show" {
				http.NotFound(w, r)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"renderer": renderer, "parser": renderer, "template": "{{ .Prompt }}"})
		}))
		c, err := New(srv.URL, "m")
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Renderer(); got != "" {
			t.Errorf("before CheckModel: renderer %q; want none", got)
		}
		if err := c.CheckModel(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := c.Renderer(); got != renderer {
			t.Errorf("renderer %q; want %q", got, renderer)
		}
		srv.Close()
	}
}

// A model whose capabilities lack "thinking" (a Go template without .Think: Ollama's
// llama3-instruct, gemma3-instruct) gets no `think`, which Ollama would refuse; one with it,
// or a server that lists no capabilities, gets it when the request asks.
func TestNoThinkForAModelThatCannot(t *testing.T) {
	for _, tc := range []struct {
		caps  []string
		think bool
	}{
		{[]string{"completion", "tools", "thinking"}, true},
		{[]string{"completion"}, false},
		{nil, true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"capabilities": tc.caps})
		}))
		c, err := New(srv.URL, "m")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckModel(context.Background()); err != nil {
			t.Fatal(err)
		}
		req, err := c.ChatRequest(&chat.Request{Think: true, Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := req.Think != nil && req.Think.Bool(); got != tc.think || c.Thinks() != tc.think {
			t.Errorf("capabilities %v: think %v, Thinks %v; want %v", tc.caps, got, c.Thinks(), tc.think)
		}
		srv.Close()
	}
}
