package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	ollamatok "github.com/ollama/ollama/tokenizer"
)

// cachedModel returns the path of a synthetic model file in the lab's cache matching pattern
// (lab-<family>-synth-<key>.gguf) whose architecture is arch; it skips when there is none.
func cachedModel(t *testing.T, pattern, arch string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(testCacheDir(t), "models", pattern))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		g, err := ggml.Decode(f, -1)
		f.Close()
		if err == nil && g.KV().Architecture() == arch {
			return p
		}
	}
	t.Skipf("no %s model on the %s architecture in the lab's cache (lab server prepare --family writes one)", pattern, arch)
	return ""
}

// LoadOllama on Gemma 3's model (the gemma3 architecture, Ollama's own engine) counts as Ollama's
// SentencePiece does, built as model/models/gemma3 builds it — the lab's memoised pieces included
// — which differs from llama.cpp's count (Load) on white-space runs: "\n\n\n" is one token in
// llama.cpp, three in Ollama. Skipped with -short and when the model is not cached.
func TestLoadOllamaGemma3(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Ollama's SentencePiece takes a minute over Gemma 3's 262,145 tokens and the sample texts")
	}
	path := cachedModel(t, "lab-gemma3-synth-*.gguf", "gemma3")
	tk, err := LoadOllama(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ggml.Decode(f, -1)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	kv := g.KV()
	v := &ollamatok.Vocabulary{
		Values: kv.Strings("tokenizer.ggml.tokens"), Scores: kv.Floats("tokenizer.ggml.scores"), Types: kv.Ints("tokenizer.ggml.token_type"),
		AddBOS: kv.Bool("tokenizer.ggml.add_bos_token", true), BOS: []int32{int32(kv.Uint("tokenizer.ggml.bos_token_id"))},
		EOS: []int32{int32(kv.Uint("tokenizer.ggml.eos_token_id"))},
	}
	ref := ollamatok.NewSentencePiece(v)
	// Ollama's SentencePiece cuts special tokens out in time quadratic in the text's pieces (a
	// 100 KB file takes minutes): the long texts' first 8 KB only.
	texts := slices.Clone(familyTexts)
	for _, long := range familyLongTexts(t) {
		texts = append(texts, long[:8<<10])
	}
	texts = append(texts,
		"<bos><start_of_turn>developer\nYou are terse.\nYou can do function calling with the following functions:<start_function_declaration>declaration:read{description:<escape>Read a file<escape>}<end_function_declaration><end_of_turn>\n<start_of_turn>user\nHi\n\n\nthere<end_of_turn>\n<start_of_turn>model\n",
		"\n\n\n")
	for i, text := range texts {
		got, err := tk.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Encode(text, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			j := firstDiff(got, want)
			t.Errorf("text %d (%.40q…): %d tokens, Ollama's SentencePiece %d; first difference at %d", i, text, len(got), len(want), j)
		}
		if again, _ := tk.Encode(text); !slices.Equal(again, want) {
			t.Errorf("text %d: the memoised ids differ", i)
		}
		if whole, _ := tk.encodeWhole(text); !slices.Equal(whole, want) {
			t.Errorf("text %d: encodeWhole differs", i)
		}
	}
	ids, _ := tk.Encode("\n\n\n")
	if len(ids) != 4 { // BOS and three "\n"
		t.Errorf(`"\n\n\n" is %v; want BOS and three "\n" tokens, as Ollama cuts the shorter user-defined token first`, ids)
	}
	ll, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if lids, _ := ll.Encode("\n\n\n"); len(lids) != 2 {
		t.Errorf(`llama.cpp's count of "\n\n\n" is %v; want BOS and one token`, lids)
	}
	if s, err := tk.Decode(ids[1:]); err != nil || s != "\n\n\n" {
		t.Errorf("Decode = %q, %v", s, err)
	}
	if _, err := tk.Decode([]int32{-1}); err == nil {
		t.Error("Decode(-1): no error")
	}
}

// LoadOllama on a file served by Ollama's llama.cpp runner (DeepSeek V3 on the llama stand-in)
// is Load, llama.cpp's tokenizer; on DeepSeek V3's own deepseek2 architecture (Ollama's engine,
// whose byte-pair encoder repeats text) it is an error naming the architecture.
func TestLoadOllamaDeepSeekV3(t *testing.T) {
	path := cachedModel(t, "lab-deepseek-v3-synth-*.gguf", "llama")
	tk, err := LoadOllama(path)
	if err != nil {
		t.Fatal(err)
	}
	ll, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range familyTexts {
		if a, b := mustEncode(t, tk, text), mustEncode(t, ll, text); !slices.Equal(a, b) || tk.lv == nil {
			t.Errorf("%.40q: LoadOllama %v, Load %v; want llama.cpp's ids from both", text, a, b)
		}
	}
	own := cachedModel(t, "lab-deepseek-v3-synth-*.gguf", "deepseek2")
	if _, err := LoadOllama(own); err == nil || !strings.Contains(err.Error(), `"deepseek2"`) {
		t.Errorf("LoadOllama(deepseek2 file) error %v; want one naming the architecture", err)
	}
}
