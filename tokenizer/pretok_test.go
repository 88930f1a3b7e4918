package tokenizer

import (
	"slices"
	"testing"
)

// The pre-tokenizers split as llama.cpp does (the same words give llama-server's ids in
// TestFamilyTokenizersLlamaServerLive): Llama 3 keeps a contraction apart and digits in threes;
// gpt-4o joins the contraction and splits CamelCase, and ends a Devanagari word at a vowel sign
// (no \p{M}); DeepSeek V3 takes digits, then CJK runs, then punctuation with its leading space.
func TestPreTokenizerSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pre, text string
		want      []string
	}{
		{"llama-bpe", "I'm 12345 CamelCase", []string{"I", "'m", " ", "123", "45", " CamelCase"}},
		{"llama3", "I'M", []string{"I", "'M"}},
		{"gpt-4o", "I'm 12345 CamelCase", []string{"I'm", " ", "123", "45", " Camel", "Case"}},
		{"gpt-4o", "मराठी", []string{"मर", "ाठ", "ी"}},
		{"deepseek-v3", " ~/x 日本語のテキスト。ÄBc", []string{" ~/", "x", " ", "日本語のテキスト", "。", "ÄBc"}},
		{"deepseek-v3", "a\u00a0 b\n\n  c", []string{"a", "\u00a0", " b", "\n\n", " ", " c"}},
		{"deepseek-v3", "", nil},
	} {
		p, err := newPreTokenizer(tc.pre)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.split(tc.text); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: split(%q) = %q, %v; want %q", tc.pre, tc.text, got, err, tc.want)
		}
	}
	if _, err := newPreTokenizer("falcon"); err == nil {
		t.Error(`newPreTokenizer("falcon") = nil error`)
	}
}

// collapseExpr writes a class's stand-in and ASCII members inside a bracket expression as they
// are, and wraps them in one outside it.
func TestCollapseExpr(t *testing.T) {
	t.Parallel()
	if got, want := collapseExpr(`[^\s\p{L}]\p{N}+\[\p{M}`), "[^\\s\u00d2A-Za-z][\u00d10-9]+\\[[\u00d4]"; got != want {
		t.Errorf("collapseExpr = %q; want %q", got, want)
	}
	for r, want := range map[rune]rune{'a': 'a', '~': '~', 'é': 0xD2, '٣': 0xD1, '。': 0xD3, 'ा': 0xD4, '€': 0xD5, '\u00a0': 0x0B, '\u200d': 0xD0} {
		if got := collapseRune(r); got != want {
			t.Errorf("collapseRune(%q) = %#x; want %#x", r, got, want)
		}
	}
}
