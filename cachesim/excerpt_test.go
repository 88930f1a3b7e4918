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
	if want := (strings.Repeat("a", 50) + "<t")[52-ExcerptBefore:]; e.Before != want {
		t.Errorf("Before %q, want %q", e.Before, want)
	}
	if e.Cached != "hink>\nplan\n</think>\n\n<tool_call>" || e.Prompt != "ool_call>" {
		t.Errorf("Cached %q Prompt %q", e.Cached, e.Prompt)
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
