package cachesim

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestExcerptAt(t *testing.T) {
	cached := strings.Repeat("a", 50) + "<think>\nplan\n</think>\n\n<tool_call>"
	prompt := strings.Repeat("a", 50) + "<tool_call>"
	at := CommonPrefixBytes(cached, prompt)
	e := ExcerptAt(cached, prompt, at)
	if e == nil {
		t.Fatal("nil excerpt")
	}
	// The shared "<t" of both tags starts the difference: each side shows its tag whole.
	if want := strings.Repeat("a", 50)[52-ExcerptBefore:]; e.Before != want {
		t.Errorf("Before %q, want %q", e.Before, want)
	}
	if e.Cached != "<think>\nplan\n</think>\n\n<tool_call>" || e.Prompt != "<tool_call>" {
		t.Errorf("Cached %q Prompt %q", e.Cached, e.Prompt)
	}
	// A tag closed before the difference stays in the shared text.
	if e := ExcerptAt("x <b>yy1", "x <b>yy2", 7); e == nil || e.Before != "x <b>yy" || e.Cached != "1" {
		t.Errorf("closed tag: %+v", e)
	}
	if ExcerptAt("same", "same", 4) != nil {
		t.Error("equal texts: want nil")
	}
	// The prompt goes on past all the cache held.
	if e := ExcerptAt("ab", "abc", 2); e == nil || e.Cached != "" || e.Prompt != "c" || e.Before != "ab" {
		t.Errorf("append: %+v", e)
	}
}

func TestExcerptAtCharacterBoundaries(t *testing.T) {
	// "é" (C3 A9) and "è" (C3 A8) share their first byte: the difference starts at the character.
	cached := strings.Repeat("ü", 30) + "é" + strings.Repeat("x", 100)
	prompt := strings.Repeat("ü", 30) + "è" + strings.Repeat("ß", 100)
	e := ExcerptAt(cached, prompt, CommonPrefixBytes(cached, prompt))
	for _, s := range []string{e.Before, e.Cached, e.Prompt} {
		if !utf8.ValidString(s) {
			t.Errorf("not valid UTF-8: %q", s)
		}
	}
	if !strings.HasPrefix(e.Cached, "é") || !strings.HasPrefix(e.Prompt, "è") || len(e.Before) > ExcerptBefore {
		t.Errorf("%+v", e)
	}
	if len(e.Prompt) > ExcerptAfter || len(e.Cached) > ExcerptAfter {
		t.Errorf("too long: %d %d", len(e.Cached), len(e.Prompt))
	}
}

// The cut flags say where an excerpt's texts were cut, whatever their lengths: a text that ends
// within the limits is whole, and a cut at a character boundary may fall short of them.
func TestExcerptAtCutFlags(t *testing.T) {
	// 38 shared bytes from the start: Before is all of them, not cut; the rests are whole.
	whole := ExcerptAt(strings.Repeat("x", 38)+strings.Repeat("a", 58), strings.Repeat("x", 38)+"b", 38)
	if whole == nil || whole.Before != strings.Repeat("x", 38) || whole.BeforeCut || whole.CachedCut || whole.PromptCut {
		t.Errorf("whole: %+v", whole)
	}
	// At a character both begin alike ("é" C3 A9, "è" C3 A8) after 4-byte characters: Before
	// starts at the next character boundary (3 bytes on) and ends at the difference's character
	// (1 byte back), 36 bytes of 40; the prompt's rest is cut within a 4-byte character, at 57
	// bytes of 60.
	pre := "x" + strings.Repeat("😀", 15)
	cut := ExcerptAt(pre+"é"+strings.Repeat("y", 70), pre+"è"+"xxx"+strings.Repeat("😀", 20), len(pre)+1)
	if cut == nil || !cut.BeforeCut || !cut.CachedCut || !cut.PromptCut || len(cut.Before) != 36 || len(cut.Prompt) != 57 {
		t.Errorf("cut: %+v (before %d bytes, prompt %d)", cut, len(cut.Before), len(cut.Prompt))
	}
}
