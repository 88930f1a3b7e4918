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
// keeps the last text it tokenized with the token index of each turn marker, and for a new text
// reuses the tokens up to the last marker both texts share, tokenizing only the rest. The result
// is exactly Tok.Encode(text), for a tokenizer whose pre-tokenizer splits at special tokens (every
// BPE tokenizer of a chat model does). Not safe for concurrent use.
type Incremental struct {
	// Tok is the tokenizer it wraps.
	Tok Tokenizer
	// last is the last text tokenized, ids its tokens, marks the byte offsets of the turn
	// markers in last and at[i] the index in ids of the token at marks[i].
	last  string
	ids   []int32
	marks []int
	at    []int
}

// Encode returns the tokens of text, reusing the previous text's tokens up to the last turn
// marker the two texts share. The result is shared with the Incremental (it is never changed,
// and a later call builds a new slice): callers must not change it.
func (in *Incremental) Encode(text string) ([]int32, error) {
	ids, _, err := in.EncodeTurns(text)
	return ids, err
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
	common := CommonPrefixBytes(text, in.last)
	// The last marker that starts at or before the common prefix's end and lies wholly in it.
	k := sort.SearchInts(in.marks, common+1) - 1
	for k >= 0 && in.marks[k]+len(turnMarker) > common {
		k--
	}
	var ids []int32
	var marks, at []int
	start := 0
	if k >= 0 {
		start = in.marks[k]
		ids = append(ids, in.ids[:in.at[k]]...)
		marks = append(marks, in.marks[:k]...)
		at = append(at, in.at[:k]...)
	}
	// Tokenize the rest piece by piece, each piece starting at a turn marker, to record them.
	rest := text[start:]
	for len(rest) > 0 {
		end := PieceEnd(rest)
		if strings.HasPrefix(rest, turnMarker) {
			marks = append(marks, start)
			at = append(at, len(ids))
		}
		piece, err := in.Tok.Encode(rest[:end])
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, piece...)
		start += end
		rest = rest[end:]
	}
	in.last, in.ids, in.marks, in.at = text, ids, marks, at
	turns := make([]TurnMark, len(marks))
	for i := range marks {
		turns[i] = TurnMark{Byte: marks[i], Token: at[i]}
	}
	// Shared, not copied: a prompt of millions of tokens is held once. Its capacity is clipped so
	// that a caller's append cannot write into a later call's tokens.
	return slices.Clip(ids), turns, nil
}
