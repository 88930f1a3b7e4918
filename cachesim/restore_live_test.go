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

	"lab/backend/llamacpp"
	"lab/cachesim"
	"lab/chat"
	"lab/localserver"
	"lab/localserver/localservertest"
)

// A slot saved on a real llama-server, the server stopped and another started on the same
// --slot-save-path, the slot restored: the next prompt's timings.cache_n is its common prefix
// with the saved prompt, as [cachesim.Attributor.RestoreSlot] models it (without the restore,
// 0). It runs on the lab's own llama-server and synthetic model (localservertest.LlamaServer);
// -short skips it.
func TestSlotRestoreOnLlamaServer(t *testing.T) {
	bin, model := localservertest.LlamaServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	turn := func(role, text string) string { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n" }
	var w []string
	for i := range 150 {
		w = append(w, fmt.Sprintf("step%d alpha beta", i))
	}
	a1 := turn("system", "You are a coding agent.") + turn("user", strings.Join(w, " "))
	a2 := a1 + turn("assistant", "Done.") + turn("user", "Now run the tests.")
	run := func(restore bool) (first, prompt []int32, saved, restored, cacheN, want int) {
		t.Helper()
		srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{Binary: bin, Model: model, Dir: dir, CtxSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		c, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		completion := func(p string) int {
			b, _ := json.Marshal(map[string]any{"prompt": p, "n_predict": 0, "cache_prompt": true, "id_slot": 0})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/completion", bytes.NewReader(b))
			req.Close = true
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var r struct {
				Timings struct {
					CacheN int `json:"cache_n"`
				}
			}
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
				t.Fatalf("/completion: HTTP %d", resp.StatusCode)
			}
			return r.Timings.CacheN
		}
		if prompt, err = c.Tokenizer().Encode(a2); err != nil {
			t.Fatal(err)
		}
		if first, err = c.Tokenizer().Encode(a1); err != nil {
			t.Fatal(err)
		}
		if !restore {
			completion(a1)
			if saved, err = c.SaveSlot(ctx, "a1.bin"); err != nil {
				t.Fatal(err)
			}
			return first, prompt, saved, 0, 0, 0
		}
		if restored, err = c.RestoreSlot(ctx, "a1.bin"); err != nil {
			t.Fatal(err)
		}
		// The model: the slot holds what was saved (a1's tokens), and a2 is observed after it.
		a := &cachesim.Attributor{Tok: c.Tokenizer()}
		if err := a.RestoreSlot(first, 4096); err != nil {
			t.Fatal(err)
		}
		at, err := a.Observe(&chat.Request{}, a2, "", -1)
		if err != nil {
			t.Fatal(err)
		}
		return first, prompt, 0, restored, completion(a2), int(at.ExpectedCachedTokens)
	}
	first, _, saved, _, _, _ := run(false)
	_, prompt, _, restored, cacheN, want := run(true)
	// The slot held a1's prompt (n_predict 0: no reply) when it was saved.
	if saved != len(first) || restored != saved {
		t.Fatalf("saved %d tokens, restored %d; want a1's %d", saved, restored, len(first))
	}
	t.Logf("saved %d tokens; after the restart and restore the next prompt (%d tokens) found %d cached; the model %d", saved, len(prompt), cacheN, want)
	if cacheN != want {
		t.Errorf("cache_n %d after the restore; the model %d", cacheN, want)
	}
}
