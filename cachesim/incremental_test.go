package cachesim

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// wordTokenizer splits at spaces and at <|im_start|> (a special token), so that tokens depend on
// their neighbours within a piece: a wrong reuse boundary would show.
type wordTokenizer struct{ calls, bytes int }

func (w *wordTokenizer) Encode(s string) ([]int32, error) {
	w.calls++
	w.bytes += len(s)
	var out []int32
	cur := int32(0)
	flush := func() {
		if cur != 0 {
			out = append(out, cur)
			cur = 0
		}
	}
	for i := 0; i < len(s); {
		if len(s[i:]) >= len(turnMarker) && s[i:i+len(turnMarker)] == turnMarker {
			flush()
			out = append(out, -1)
			i += len(turnMarker)
			continue
		}
		if s[i] == ' ' {
			flush()
		} else {
			cur = cur*31 + int32(s[i])
		}
		i++
	}
	flush()
	return out, nil
}

func TestIncrementalEqualsWhole(t *testing.T) {
	texts := []string{
		"<|im_start|>system\nbe good<|im_end|>\n<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\n",
		"<|im_start|>system\nbe good<|im_end|>\n<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\nok then<|im_end|>",
		"<|im_start|>system\nbe good<|im_end|>\n<|im_start|>user\nhi there<|im_end|>\n<|im_start|>assistant\nok then<|im_end|>\n<|im_start|>user\nmore words here<|im_end|>\n<|im_start|>assistant\n",
		"<|im_start|>system\nbe bad<|im_end|>\n<|im_start|>user\nhi there<|im_end|>\n",
		"<|im_start|>sys",
		"",
		"no markers at all",
		"no markers at all, longer",
		"<|im_start|><|im_start|>x",
	}
	whole := &wordTokenizer{}
	inc := &Incremental{Tok: &wordTokenizer{}}
	for _, text := range texts {
		want, _ := whole.Encode(text)
		got, err := inc.Encode(text)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Incremental.Encode(%q) = %v; want %v", text, got, want)
		}
	}
}

// A step tokenizes what it appends: the bytes handed to the tokenizer for a prompt that extends
// the previous one are about the appended part, not the session.
func TestIncrementalCostsTheAppendedPart(t *testing.T) {
	tok := &wordTokenizer{}
	inc := &Incremental{Tok: tok}
	text := "<|im_start|>system\nrules<|im_end|>\n"
	for i := 0; i < 200; i++ {
		text += "<|im_start|>user\nsome words of the message<|im_end|>\n"
	}
	inc.Encode(text)
	before := tok.bytes
	inc.Encode(text + "<|im_start|>assistant\nreply<|im_end|>\n")
	if got := tok.bytes - before; got > 200 {
		t.Fatalf("tokenized %d bytes for a %d-byte session plus a 40-byte step; want about the step", got, len(text))
	}
}

// TestIncrementalHoldsLongPromptOnce: the tokens an Incremental returns are the ones it keeps
// for the next text, not a copy, so a prompt of a million tokens costs its 4 MB once (bytes the
// heap holds with both the Incremental and the result alive, after a collection).
func TestIncrementalHoldsLongPromptOnce(t *testing.T) {
	const n = 1 << 20
	text := turnMarker + strings.Repeat("w ", n)
	in := &Incremental{Tok: &wordTokenizer{}}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ids, err := in.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if len(ids) != n+1 {
		t.Fatalf("%d tokens; want %d", len(ids), n+1)
	}
	if limit := int64(4 * n * 3 / 2); held > limit {
		t.Errorf("%d bytes held for %d tokens (%.1f copies of 4 bytes a token); want at most %d (one copy)", held, len(ids), float64(held)/float64(4*len(ids)), limit)
	}
	runtime.KeepAlive(in)
	// A caller's append does not write into the Incremental's tokens.
	_ = append(ids, 7)
	again, err := in.Encode(text + turnMarker + "x")
	if err != nil || len(again) != n+3 || again[n+1] != -1 {
		t.Fatalf("the next text: %d tokens (err %v)", len(again), err)
	}
}

// Count is len(Encode) for any text, a prefix of the last one ending inside a turn included, and
// changes nothing: the next Encode still reuses the last text's tokens.
func TestIncrementalCountEqualsEncode(t *testing.T) {
	text := "<|im_start|>system\nbe good<|im_end|>\n<|im_start|>user\nhi there you<|im_end|>\n<|im_start|>assistant\nok then<|im_end|>\n"
	whole := &wordTokenizer{}
	inc := &Incremental{Tok: &wordTokenizer{}}
	if _, err := inc.Encode(text); err != nil {
		t.Fatal(err)
	}
	for end := 0; end <= len(text); end++ {
		want, _ := whole.Encode(text[:end])
		got, err := inc.Count(text[:end])
		if err != nil || got != len(want) {
			t.Fatalf("Count(text[:%d]) = %d, %v; want %d", end, got, err, len(want))
		}
	}
	for _, other := range []string{"", "no markers", "<|im_start|>system\nbe bad", text + "<|im_start|>user\nmore"} {
		want, _ := whole.Encode(other)
		if got, err := inc.Count(other); err != nil || got != len(want) {
			t.Errorf("Count(%q) = %d, %v; want %d", other, got, err, len(want))
		}
	}
	tok := inc.Tok.(*wordTokenizer)
	before := tok.bytes
	if _, err := inc.Encode(text + "<|im_start|>user\nnext<|im_end|>\n"); err != nil {
		t.Fatal(err)
	}
	// The step and the last turn, which the step's marker ends (its tokens may merge across its
	// end), not the session.
	if got := tok.bytes - before; got > 80 {
		t.Errorf("after Count, the next step tokenized %d bytes; want the step's 30 and the last turn's 42", got)
	}
}

// Texts asked for in turn (a prompt, then the prompt and its reply, then the next prompt) are
// each found again without tokenizing, and each is exact whichever remembered text it starts
// from.
func TestIncrementalRemembersSeveralTexts(t *testing.T) {
	prompt := "<|im_start|>system\nrules<|im_end|>\n<|im_start|>user\nask<|im_end|>\n<|im_start|>assistant\n"
	cache := prompt + "the reply words<|im_end|>"
	next := prompt + "the reply<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n"
	whole := &wordTokenizer{}
	tok := &wordTokenizer{}
	inc := &Incremental{Tok: tok}
	for _, text := range []string{prompt, cache, next, prompt, cache, next, cache} {
		want, _ := whole.Encode(text)
		got, err := inc.Encode(text)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v; want %v", text, got, want)
		}
	}
	calls := tok.calls
	for _, text := range []string{prompt, cache, next} {
		if _, err := inc.Encode(text); err != nil {
			t.Fatal(err)
		}
	}
	if tok.calls != calls {
		t.Errorf("texts remembered were tokenized again: %d calls", tok.calls-calls)
	}
	// A long text is forgotten once another follows it.
	long := turnMarker + strings.Repeat("w ", incrementalMaxBytes)
	inc.Encode(long)
	inc.Encode(prompt)
	for _, r := range inc.texts {
		if len(r.text) > incrementalMaxBytes {
			t.Fatalf("a text of %d bytes is still held after the next", len(r.text))
		}
	}
}

// A text asked for again is found even when a newer text it is a prefix of (its prompt, then
// the prompt and the reply) was asked for after it: it is not tokenized again.
func TestIncrementalFindsAPrefixAskedBefore(t *testing.T) {
	prompt := "<|im_start|>system\nrules<|im_end|>\n<|im_start|>user\nask<|im_end|>\n<|im_start|>assistant\n"
	tok := &wordTokenizer{}
	inc := &Incremental{Tok: tok}
	first, _ := inc.Encode(prompt)
	inc.Encode(prompt + "the reply<|im_end|>")
	calls := tok.calls
	again, _ := inc.Encode(prompt)
	if tok.calls != calls || &again[0] != &first[0] {
		t.Errorf("the prompt was tokenized again (%d calls) or copied", tok.calls-calls)
	}
}

// The prompt and its reply, asked for after the prompt, are one array: the reply's tokens are
// written after the prompt's, whose slice is unchanged; a text that then departs from both
// inside the reply gets an array of its own, and neither earlier slice changes.
func TestIncrementalExtendsInPlace(t *testing.T) {
	prompt := "<|im_start|>system\nrules<|im_end|>\n<|im_start|>user\nask<|im_end|>\n<|im_start|>assistant "
	whole := &wordTokenizer{}
	inc := &Incremental{Tok: &wordTokenizer{}}
	p, _ := inc.Encode(prompt)
	keep := slices.Clone(p)
	c, _ := inc.Encode(prompt + "the reply<|im_end|>")
	if &c[0] != &p[0] {
		t.Errorf("the prompt and its reply were copied into a new array")
	}
	n, _ := inc.Encode(prompt + "another answer<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n")
	wantC, _ := whole.Encode(prompt + "the reply<|im_end|>")
	wantN, _ := whole.Encode(prompt + "another answer<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n")
	if !slices.Equal(p, keep) || !slices.Equal(c, wantC) || !slices.Equal(n, wantN) {
		t.Errorf("tokens changed: prompt %v (want %v), reply %v (want %v), next %v (want %v)", p, keep, c, wantC, n, wantN)
	}
}
