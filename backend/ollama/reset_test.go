package ollama

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
)

// Reset unloads the client's model and any other of the lab's models the server still lists as
// loaded (an earlier run's renderer on the same server), leaves a user's model loaded, and
// returns once /api/ps lists none of those it unloaded.
func TestResetUnloadsTheLabsLoadedModels(t *testing.T) {
	var mu sync.Mutex
	loaded := []string{"lab-qwen3-glm-4.7-synth:latest", "users-chat:8b", "lab-qwen3-lfm2-synth:latest"}
	var unloads []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/api/generate":
			var req api.GenerateRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.KeepAlive == nil || req.KeepAlive.Duration != 0 {
				http.Error(w, "want keep_alive 0", http.StatusBadRequest)
				return
			}
			unloads = append(unloads, req.Model)
			loaded = slices.DeleteFunc(loaded, func(m string) bool { return m == req.Model || m == req.Model+":latest" })
			json.NewEncoder(w).Encode(map[string]any{"done": true})
		case "/api/ps":
			var ms []map[string]any
			for _, m := range loaded {
				ms = append(ms, map[string]any{"name": m, "model": m})
			}
			json.NewEncoder(w).Encode(map[string]any{"models": ms})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, "lab-qwen3-lfm2-synth")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"lab-qwen3-lfm2-synth", "lab-qwen3-glm-4.7-synth:latest"}; !slices.Equal(unloads, want) || !slices.Equal(loaded, []string{"users-chat:8b"}) {
		t.Errorf("unloaded %q, still loaded %q; want %q and the user's model alone", unloads, loaded, want)
	}
}
