package cachesim

import (
	"unicode/utf8"

	"lab/chat"
)

// Excerpt is a short view of where a prompt first differs from what the KV cache held: the bytes
// both share just before the difference, then what each has from there. The texts are cut at
// UTF-8 character boundaries, so each is valid UTF-8 wherever the inputs are.
type Excerpt struct {
	// Before is up to [ExcerptBefore] bytes both texts share, ending at the first difference.
	Before string `json:"before"`
	// Cached is up to [ExcerptAfter] bytes of what the cache held from the difference on
	// (the previous prompt and the generated reply); Prompt the same of the new prompt. One of
	// them is "" when the other text merely goes on (the cache held more, or the prompt adds
	// after all the cache held).
	Cached string `json:"cached"`
	Prompt string `json:"prompt"`
	// BeforeCut is true when shared text precedes Before (it starts after the texts' start);
	// CachedCut and PromptCut when the text goes on after Cached or Prompt. A reader marks the
	// cut ends from these, never from the lengths: a text may end short of the limits, and
	// a cut at a character boundary may fall a few bytes short of them.
	BeforeCut bool `json:"before_cut,omitempty"`
	CachedCut bool `json:"cached_cut,omitempty"`
	PromptCut bool `json:"prompt_cut,omitempty"`
}

// How much of each text an [Excerpt] shows, in bytes: before the first difference, and after it.
const (
	ExcerptBefore = 40
	ExcerptAfter  = 60
	// maxTagStart is how far back from the first difference an open tag may start for the
	// excerpt to start the difference there.
	maxTagStart = 24
)

// ExcerptAt returns the [Excerpt] of cached and prompt at byte at (their common prefix's length,
// [CommonPrefixBytes]); nil when at is past either text's end, as when both are equal.
func ExcerptAt(cached, prompt string, at int) *Excerpt {
	if at < 0 || at > len(cached) || at > len(prompt) || (at == len(cached) && at == len(prompt)) {
		return nil
	}
	from := at - min(at, ExcerptBefore)
	for from < at && !utf8.RuneStart(prompt[from]) {
		from++
	}
	// A character both texts begin the same way but end otherwise starts the difference.
	start := at
	for start > from && (continues(prompt, start) || continues(cached, start)) {
		start--
	}
	// A tag both texts begin the same way ("<t" of <think> and <tool_call>) starts the
	// difference too, so that each side shows its tag whole.
	start = from + chat.OpenTagStart(prompt[from:], start-from, maxTagStart)
	e := &Excerpt{Before: prompt[from:start], Cached: cut(cached[start:], ExcerptAfter), Prompt: cut(prompt[start:], ExcerptAfter)}
	e.BeforeCut = from > 0
	e.CachedCut = len(e.Cached) < len(cached)-start
	e.PromptCut = len(e.Prompt) < len(prompt)-start
	return e
}

// cut returns the first n bytes of s or fewer, ending at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// continues reports whether byte i of s continues a character begun before it.
func continues(s string, i int) bool { return i < len(s) && !utf8.RuneStart(s[i]) }
