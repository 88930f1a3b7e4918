package localserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/gguf"
)

// fakeCreate is a fake Ollama API for CreateModel: it keeps each /api/create body and lists the
// model with a digest that changes with each create.
func fakeCreate(t *testing.T) (*httptest.Server, func() []map[string]any) {
	var mu sync.Mutex
	var creates []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/api/ps":
			w.Write([]byte(`{"models":[]}`))
		case strings.HasPrefix(r.URL.Path, "/api/blobs/"):
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/api/create":
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				t.Error(err)
			}
			creates = append(creates, body)
			w.Write([]byte(`{"status":"success"}`))
		case r.URL.Path == "/api/tags":
			d := strings.Repeat("0", 63) + string(rune('0'+len(creates)))
			w.Write([]byte(`{"models":[{"name":"lab-synth:latest","model":"lab-synth:latest","digest":"` + d + `"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	return srv, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), creates...)
	}
}

// The model the lab registers carries its own window and a sampling that does not trip Ollama's
// repeat limit, because clients of its OpenAI- and Anthropic-compatible endpoints cannot send
// num_ctx; the parameters are recorded, kept by a later CreateModel, and changed only when asked.
func TestCreateModelCarriesItsParameters(t *testing.T) {
	up, creates := fakeCreate(t)
	defer up.Close()
	s := &Server{URL: up.URL, Dir: t.TempDir()}
	model := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CreateModel(ctx, "lab-synth", model); err != nil {
		t.Fatal(err)
	}
	c := creates()
	if len(c) != 1 {
		t.Fatalf("%d creates; want 1", len(c))
	}
	params, _ := c[0]["parameters"].(map[string]any)
	if params["num_ctx"] != float64(gguf.DefaultContextLength) {
		t.Errorf("num_ctx %v; want %d (the lab's default context)", params["num_ctx"], gguf.DefaultContextLength)
	}
	if temp, ok := params["temperature"].(float64); !ok || temp <= 0 {
		t.Errorf("temperature %v; want a sampling temperature above 0 (greedy decoding trips the repeat limit)", params["temperature"])
	}
	if c[0]["renderer"] != "qwen3.5" || c[0]["parser"] != "qwen3.5" {
		t.Errorf("renderer %v parser %v; want qwen3.5", c[0]["renderer"], c[0]["parser"])
	}
	got, err := s.ModelParams("lab-synth")
	if err != nil || got != DefaultModelParams(0) {
		t.Fatalf("ModelParams = %+v, %v; want %+v", got, err, DefaultModelParams(0))
	}
	if params["num_predict"] != float64(DefaultReplyCap) {
		t.Errorf("num_predict %v; want %d (a reply cap for the clients that send none)", params["num_predict"], DefaultReplyCap)
	}
	if want := "num_ctx=65536 temperature=1 top_k=40 top_p=1 seed=42 num_predict=1024"; got.String() != want {
		t.Errorf("String() = %q; want %q", got.String(), want)
	}

	// Another window: registered again, and a plain CreateModel (a run on that server) keeps it.
	if err := s.CreateModelWith(ctx, "lab-synth", model, DefaultModelParams(8192)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateModel(ctx, "lab-synth", model); err != nil {
		t.Fatal(err)
	}
	c = creates()
	if len(c) != 2 {
		t.Fatalf("%d creates; want 2 (the same parameters again register nothing)", len(c))
	}
	if p, _ := c[1]["parameters"].(map[string]any); p["num_ctx"] != float64(8192) {
		t.Errorf("num_ctx %v; want 8192", p["num_ctx"])
	}
	if got, _ := s.ModelParams("lab-synth"); got.NumCtx != 8192 {
		t.Errorf("ModelParams after a plain CreateModel: num_ctx %d; want 8192 kept", got.NumCtx)
	}
	if _, err := s.ModelParams("other"); err == nil {
		t.Error("ModelParams of a model the lab did not register: no error")
	}
}
