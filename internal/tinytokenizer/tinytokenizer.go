// Package tinytokenizer writes, for tests, a tokenizer.json and tokenizer_config.json of twelve
// tokens laid out like Qwen3's (a BPE vocabulary, merges, special and user-defined added tokens,
// a chat template, <|im_end|> as end of sequence and <|endoftext|> as padding), small enough to
// check a GGUF file or a tokenizer built from them by hand.
package tinytokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// Write writes the two files to a new temporary folder of t and returns it. The vocabulary is
// a=0 b=1 ab=2 Ġ=3 Ċ=4 h=5 i=6 hi=7, then the added tokens <|endoftext|>=8, <|im_start|>=9,
// <|im_end|>=10 (special) and <think>=11 (not special); the merges are "a b" and "h i", given as
// pairs when pairs is true, else as strings (tokenizer.json has both forms in the wild).
func Write(t testing.TB, pairs bool) string {
	t.Helper()
	dir := t.TempDir()
	vocab := map[string]int{"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ċ": 4, "h": 5, "i": 6, "hi": 7}
	var merges any = [][]string{{"a", "b"}, {"h", "i"}}
	if !pairs {
		merges = []string{"a b", "h i"}
	}
	tj := map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"added_tokens": []map[string]any{
			{"id": 8, "content": "<|endoftext|>", "special": true},
			{"id": 9, "content": "<|im_start|>", "special": true},
			{"id": 10, "content": "<|im_end|>", "special": true},
			{"id": 11, "content": "<think>", "special": false},
		},
	}
	cfg := map[string]any{"chat_template": "{{ messages }}", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
	for name, v := range map[string]any{"tokenizer.json": tj, "tokenizer_config.json": cfg} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Bytes is a tokenizer of one token per byte (the byte's value), so token counts and offsets
// are byte counts of the text: the stand-in for the served model's tokenizer where a test needs
// exact figures, not Qwen3's.
type Bytes struct{}

// Encode returns one token per byte of s; it never fails.
func (Bytes) Encode(s string) ([]int32, error) {
	out := make([]int32, len(s))
	for i := range len(s) {
		out[i] = int32(s[i])
	}
	return out, nil
}

// DecodeGGUF decodes the GGUF file at path with Ollama's reader (ggml.Decode, every array
// read whole), failing t when it cannot be opened or decoded: how a test checks a file the lab
// wrote as the server will read it.
func DecodeGGUF(t testing.TB, path string) *ggml.GGML {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatalf("ggml.Decode(%s): %v", path, err)
	}
	return g
}
