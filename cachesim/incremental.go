package cachesim

import (
	"slices"
	"sort"
	"strings"
)

// TurnMarker is the special token that starts every message of a ChatML-style prompt (Qwen3's
// <|im_start|>). A tokenizer's pre-tokenizer always splits at a special token, so the tokens
// before one do not depend on the text after it.
const TurnMarker = "<|im_start|>"

// turnMarker is [TurnMarker], for this package's own use.
const turnMarker = TurnMarker

// PieceEnd returns the length in bytes of text's first piece: up to the first turn marker that
// does not start text, or all of text when there is none. Tokenizing text piece by piece gives
// exactly its tokens (see [TurnMarker]).
func PieceEnd(text string) int {
	skip := min(len(turnMarker), len(text))
	if i := strings.Index(text[skip:], turnMarker); i >= 0 {
		return i + skip
	}
	return len(text)
}

// Tokenizer turns text (special tokens written as their text, such as <|im_start|>) into the
// served model's token ids.
type Tokenizer interface {
	Encode(text string) ([]int32, error)
}

// Incremental tokenizes a session's prompts so that a step costs time for what it appends: it
// keeps the last few texts it tokenized (incrementalTexts) with the token index of each turn
// marker, and for a new text reuses the tokens of the remembered text that shares the most with
// it up to the last marker both share, tokenizing only the rest; a text it remembers costs a
// comparison. The result is exactly Tok.Encode(text), for a tokenizer whose pre-tokenizer splits
// at special tokens (every BPE tokenizer of a chat model does). A backend and the harness's
// [Attributor] may share one ([PromptTokenizer]): the prompt and cache text the backend
// tokenized are then found, not tokenized again. Not safe for concurrent use.
type Incremental struct {
	// Tok is the tokenizer it wraps.
	Tok Tokenizer
	// texts are the texts remembered, texts[newest] the last one tokenized; a text longer than
	// incrementalMaxBytes is remembered only while it is the last asked for.
	texts  [incrementalTexts]tokenized
	newest int
	// tail is the room the tokens after the shared marker are gathered in.
	tail []int32
}

// tokenized is a text an [Incremental] remembers: its tokens, the byte offsets of its turn
// markers (marks) and at[i], the index in ids of the token at marks[i]. ok is false for an empty
// place.
type tokenized struct {
	text  string
	ids   []int32
	marks []int
	at    []int
	ok    bool
	// arr is the array ids is a slice of.
	arr *tokenArray
}

// incrementalTexts is how many texts an Incremental remembers: a backend asks for the prompt
// and the cache text of each request, the attribution for the same two, and a window's
// renderings for a third.
const incrementalTexts = 4

// incrementalMaxBytes is the longest text an Incremental remembers once it is no longer the
// last: a turn holding a tool argument of megabytes is not held for the requests after.
const incrementalMaxBytes = 1 << 20

// PromptTokenizer is a [Tokenizer] (of pieces: reasoning, a turn) that also has the
// [Incremental] its owner tokenizes whole prompts with, such as the sim backend's: an
// [Attributor] whose Tok is one tokenizes prompts and cache texts with that Incremental, and so
// finds the texts the backend just tokenized instead of tokenizing them again. Prompts returns
// the same Incremental on every call; its Tok counts as the PromptTokenizer does.
type PromptTokenizer interface {
	Tokenizer
	Prompts() *Incremental
}

// Encode returns the tokens of text, reusing a remembered text's tokens up to the last turn
// marker the two texts share. The result is shared with the Incremental (it is never changed,
// and a later call builds a new slice): callers must not change it.
func (in *Incremental) Encode(text string) ([]int32, error) {
	t, err := in.encode(text)
	if err != nil {
		return nil, err
	}
	return t.ids, nil
}

// TurnMark is where a turn marker (<|im_start|>) starts in a text: its byte offset and the index
// of its token in the text's tokens (the number of tokens before it).
type TurnMark struct {
	Byte, Token int
}

// EncodeTurns is Encode that also returns where each turn marker of text starts, in order. The
// token index of a marker is exact: the tokens before a special token do not depend on the text
// after it. The tokens are shared as Encode's are.
func (in *Incremental) EncodeTurns(text string) ([]int32, []TurnMark, error) {
	t, err := in.encode(text)
	if err != nil {
		return nil, nil, err
	}
	turns := make([]TurnMark, len(t.marks))
	for i := range t.marks {
		turns[i] = TurnMark{Byte: t.marks[i], Token: t.at[i]}
	}
	return t.ids, turns, nil
}

// Count returns the number of tokens of text, len(Encode(text)), without remembering text or
// building its tokens: the tokens up to the last turn marker it shares with a remembered text
// are counted from that text, the rest piece by piece. A prefix of the last prompt (the prompt
// up to a segment's end) costs its last piece.
func (in *Incremental) Count(text string) (int, error) {
	base, k, exact := in.closest(text)
	if exact {
		return len(base.ids), nil
	}
	n, start := 0, 0
	if k >= 0 {
		n, start = base.at[k], base.marks[k]
	}
	for rest := text[start:]; len(rest) > 0; {
		end := PieceEnd(rest)
		piece, err := in.Tok.Encode(rest[:end])
		if err != nil {
			return 0, err
		}
		n += len(piece)
		rest = rest[end:]
	}
	return n, nil
}

// closest returns the remembered text that shares the most tokens with text up to a turn
// marker, and k, the index of the last of its markers that lies wholly within the common
// prefix (-1: none); exact is true when it is text itself. The newest texts are looked at
// first, and one that text is a prefix of (none can share more) or that is a prefix of text
// ends the search. Which one it returns changes the cost of a text, never its tokens.
func (in *Incremental) closest(text string) (base *tokenized, k int, exact bool) {
	k = -1
	for i := range in.texts {
		if t := &in.texts[i]; t.ok && len(t.text) == len(text) && t.text == text {
			return t, len(t.marks) - 1, true
		}
	}
	for i := range in.texts {
		t := &in.texts[(in.newest-i+incrementalTexts)%incrementalTexts]
		if !t.ok {
			continue
		}
		prefix := strings.HasPrefix(t.text, text)
		common := len(text)
		if !prefix {
			common = CommonPrefixBytes(text, t.text)
		}
		// The last marker that starts at or before the common prefix's end and lies wholly in it.
		j := sort.SearchInts(t.marks, common+1) - 1
		for j >= 0 && t.marks[j]+len(turnMarker) > common {
			j--
		}
		if j >= 0 && (base == nil || k < 0 || t.at[j] > base.at[k]) {
			base, k = t, j
		}
		if prefix || common == len(t.text) {
			// text is a prefix of this text (none can share more), or this text of text (the
			// prompt its cache text or the next step extends): taken without looking further.
			break
		}
	}
	return base, k, false
}

// encode tokenizes text (see Encode) and remembers it as the newest text.
//
// Its tokens start with the closest remembered text's up to the shared marker, then the rest's.
// When the rest's first tokens are the ones that text already has there, the rest is written
// into that text's array after its last token any returned slice covers ([tokenArray]), so that
// a text extending the last one (a prompt and its reply after the prompt) costs no copy of the
// session; otherwise the tokens go to a new array, with room for such an extension.
func (in *Incremental) encode(text string) (*tokenized, error) {
	base, k, exact := in.closest(text)
	if exact {
		in.forgetLong(base)
		return base, nil
	}
	var t tokenized
	start, shared := 0, 0
	if k >= 0 {
		start, shared = base.marks[k], base.at[k]
		t.marks = append(t.marks, base.marks[:k]...)
		t.at = append(t.at, base.at[:k]...)
	}
	// Tokenize the rest piece by piece, each piece starting at a turn marker, to record them: into
	// the room kept for it, or for a text longer than incrementalMaxBytes (whose tokens are not
	// written into another text's array) straight after the shared tokens, so that its tokens
	// are not held twice.
	tail := in.tail[:0]
	long := len(text) > incrementalMaxBytes
	if long {
		tail = nil
		if k >= 0 {
			tail = append(tail, base.ids[:shared]...)
		}
	}
	offset := shared
	if long {
		offset = 0
	}
	rest := text[start:]
	for len(rest) > 0 {
		end := PieceEnd(rest)
		if strings.HasPrefix(rest, turnMarker) {
			t.marks = append(t.marks, start)
			t.at = append(t.at, offset+len(tail))
		}
		piece, err := in.Tok.Encode(rest[:end])
		if err != nil {
			return nil, err
		}
		tail = append(tail, piece...)
		start += end
		rest = rest[end:]
	}
	var arr *tokenArray
	total := offset + len(tail)
	if long {
		arr = &tokenArray{ids: tail}
	} else {
		in.tail = tail[:0]
		if cap(tail) > incrementalMaxBytes/4 {
			in.tail = nil // the room of a huge text's tokens is not kept for the next text
		}
		if base != nil && k >= 0 {
			arr = base.arr.extend(shared, tail)
		}
	}
	if arr == nil {
		ids := make([]int32, total, total+total/4+64)
		if k >= 0 {
			copy(ids, base.ids[:shared])
		}
		copy(ids[shared:], tail)
		arr = &tokenArray{ids: ids}
	}
	// Shared, not copied: a prompt of millions of tokens is held once. Its capacity is clipped so
	// that a caller's append cannot write into a later call's tokens.
	t.text, t.ids, t.arr, t.ok = text, arr.ids[:total:total], arr, true
	in.newest = (in.newest + 1) % incrementalTexts
	in.texts[in.newest] = t
	in.forgetLong(&in.texts[in.newest])
	return &in.texts[in.newest], nil
}

// tokenArray is the array that remembered texts' tokens are slices of: ids[:len(ids)] are
// tokens some returned slice covers, never written again; the room after them (up to
// cap(ids)) is free.
type tokenArray struct {
	ids []int32
}

// extend returns the array holding the tokens ids[:shared] followed by tail when a's are those
// up to its last written token (tail's first tokens are the ones a holds after shared) and the
// rest fits in its free room, written there; nil otherwise.
func (a *tokenArray) extend(shared int, tail []int32) *tokenArray {
	if a == nil || shared > len(a.ids) {
		return nil
	}
	total := shared + len(tail)
	written := min(len(a.ids), total)
	if !slices.Equal(a.ids[shared:written], tail[:written-shared]) {
		return nil
	}
	if total > len(a.ids) {
		if total > cap(a.ids) {
			return nil
		}
		n := len(a.ids)
		a.ids = a.ids[:total]
		copy(a.ids[n:], tail[n-shared:])
	}
	return a
}

// forgetLong forgets every text longer than incrementalMaxBytes but last, the text just asked
// for.
func (in *Incremental) forgetLong(last *tokenized) {
	for i := range in.texts {
		if t := &in.texts[i]; t != last && len(t.text) > incrementalMaxBytes {
			*t = tokenized{}
		}
	}
}
