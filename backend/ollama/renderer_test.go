package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
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
