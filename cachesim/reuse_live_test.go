package cachesim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"lab/cachesim"
	"lab/localserver"
	"lab/localserver/localservertest"
)

// A real llama-server started with --cache-reuse 64 reports as cached (timings.cache_n) exactly
// the tokens [cachesim.ChunkReuse] finds, less the one token it always evaluates: after a part
// left out of the prompt the chunk that follows is reused; after a part that changed, nothing.
// It runs on the lab's own llama-server and synthetic model (localservertest.LlamaServer); -short
// skips it.
func TestChunkReuseOnLlamaServer(t *testing.T) {
	bin, model := localservertest.LlamaServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{
		Binary: bin, Model: model, Dir: t.TempDir(), CtxSize: 4096, Args: []string{"--cache-reuse", "64"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	post := func(path string, body, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Close = true // llama-server closes the connection after each answer
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	tokens := func(text string) []int32 {
		var r struct{ Tokens []int32 }
		post("/tokenize", map[string]any{"content": text, "parse_special": true}, &r)
		return r.Tokens
	}
	cached := func(prompt string) int {
		var r struct {
			Timings struct {
				CacheN int `json:"cache_n"`
			}
		}
		post("/completion", map[string]any{"prompt": prompt, "n_predict": 1, "cache_prompt": true}, &r)
		return r.Timings.CacheN
	}
	turn := func(role, text string) string { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n" }
	var words []string
	for i := range 120 {
		words = append(words, fmt.Sprintf("word%d alpha beta", i))
	}
	sys := turn("system", "Current date: 2026-12-01")
	left := turn("user", strings.Repeat("The parser drops the last field. ", 8))
	kept := turn("user", strings.Join(words, " "))
	for _, tc := range []struct {
		name          string
		first, second string
		chunk         bool
	}{
		{"a message left out", sys + left + kept, sys + kept + "<|im_start|>assistant\n", true},
		{"the date changed", sys + left + kept, turn("system", "Current date: 2026-12-02") + left + kept, false},
	} {
		cached(tc.first)
		got := cached(tc.second)
		n, chunks := cachesim.ChunkReuse(tokens(tc.first), tokens(tc.second), 64)
		want := min(n, len(tokens(tc.second))-1)
		if got != want || (len(chunks) > 0) != tc.chunk {
			t.Errorf("%s: cache_n %d; the model %d (chunks %v)", tc.name, got, want, chunks)
		}
	}
}
