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

// Two sessions alternating on one slot of a real llama-server (pinned with id_slot, as the lab
// sends): with --cache-ram the first session's prompt, saved when the second replaced it, comes
// back for the first session's next prompt, and timings.cache_n is what [cachesim.HostCache]
// gives; with --cache-ram 0 it is the system prompt alone. It runs on the lab's own llama-server
// and synthetic model (localservertest.LlamaServer); -short skips it.
func TestHostCacheOnLlamaServer(t *testing.T) {
	bin, model := localservertest.LlamaServer(t)
	turn := func(role, text string) string { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n" }
	words := func(tag string, n int) string {
		var w []string
		for i := range n {
			w = append(w, fmt.Sprintf("%s%d alpha beta", tag, i))
		}
		return strings.Join(w, " ")
	}
	sys := turn("system", words("rule", 60))
	a1 := sys + turn("user", words("apple", 200))
	b1 := sys + turn("user", words("berry", 200))
	a2 := a1 + turn("assistant", "Done.") + turn("user", words("cherry", 20))
	for _, ram := range []string{"64", "0"} {
		t.Run("cache-ram "+ram, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{
				Binary: bin, Model: model, Dir: t.TempDir(), CtxSize: 8192, Args: []string{"--cache-ram", ram},
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
				post("/completion", map[string]any{"prompt": prompt, "n_predict": 0, "cache_prompt": true, "id_slot": 0}, &r)
				return r.Timings.CacheN
			}
			var h *cachesim.HostCache
			if ram != "0" {
				h = &cachesim.HostCache{}
			}
			var slot []int32
			for i, p := range []string{a1, b1, a2} {
				prompt := tokens(p)
				held := slot
				if h != nil {
					held, _ = h.Launch(slot, prompt, true)
				}
				want := min(cachesim.CommonPrefix(held, prompt), len(prompt)-1)
				got := cached(p)
				t.Logf("request %d: %d prompt tokens, cache_n %d, the model %d", i+1, len(prompt), got, want)
				if got != want {
					t.Errorf("request %d: cache_n %d; the model %d", i+1, got, want)
				}
				slot = prompt
			}
		})
	}
}
