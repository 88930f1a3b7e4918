package chat

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ReplyLimit returns the most bytes r's reply may hold: r.MaxReplyBytes, or
// [DefaultMaxReplyBytes] when it is 0 or negative (or r is nil).
func (r *Request) ReplyLimit() int64 {
	if r == nil || r.MaxReplyBytes <= 0 {
		return DefaultMaxReplyBytes
	}
	return r.MaxReplyBytes
}

// WireFraming is the room [WireLimit] gives one piece of an answer's wire form beside the reply
// it carries: JSON field names, usage, ids, signatures, in bytes.
const WireFraming = 1 << 20

// WireLimit returns the most bytes one piece of an answer's wire form (an unstreamed JSON
// answer, one server-sent event line, one JSON line of a stream) may take for a reply of at
// most limit bytes: 2 × limit + [WireFraming]. JSON escapes the reply's quotes, backslashes and
// newlines in two bytes each, so a reply within the limit fits; a piece longer than this
// cannot be read into memory whole, and its answer fails with [ReplyTooLongError]. A reply of
// mostly control characters or \u escapes may need more and is refused: the bound is on
// memory, which must not grow with what a server sends.
func WireLimit(limit int64) int64 {
	if limit <= 0 {
		limit = DefaultMaxReplyBytes
	}
	return 2*limit + WireFraming
}

// ErrWireTooLong is the error of [ReadLine] and [ReadAllMax] when a piece of an answer's wire
// form is longer than the bound given; a backend turns it into [ReplyTooLongError].
var ErrWireTooLong = errors.New("answer too long for its reply limit")

// ReadLine returns the bytes of br up to and including the next '\n' (or to the body's end),
// as bufio.Reader.ReadBytes does, but reads at most max bytes of one line: past them it stops
// and returns [ErrWireTooLong] (and the line so far dropped). Its memory is that of the line,
// in one copy; a transport error is returned as it is, with the bytes read before it.
func ReadLine(br *bufio.Reader, max int64) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		if int64(len(frag)) > max {
			return nil, ErrWireTooLong
		}
		return append([]byte(nil), frag...), err
	}
	var line bytes.Buffer
	for err == bufio.ErrBufferFull {
		if int64(line.Len()+len(frag)) > max {
			return nil, ErrWireTooLong
		}
		line.Write(frag)
		frag, err = br.ReadSlice('\n')
	}
	if int64(line.Len()+len(frag)) > max {
		return nil, ErrWireTooLong
	}
	line.Write(frag)
	return line.Bytes(), err
}

// ReadAllMax reads r to its end, at most max bytes: a body longer than max is not read past
// max + 1 bytes and gives [ErrWireTooLong]. A transport error is returned as it is.
func ReadAllMax(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return b, err
	}
	if int64(len(b)) > max {
		return nil, ErrWireTooLong
	}
	return b, nil
}

// ReplyCounter counts the bytes of a reply as a stream adds them, against a limit. The zero
// value has the default limit ([DefaultMaxReplyBytes]).
type ReplyCounter struct {
	// Limit is the most bytes the reply may hold; 0 means [DefaultMaxReplyBytes].
	Limit int64
	// N is the bytes counted so far.
	N int64
	// Pieces is the pieces of the reply counted so far ([ReplyCounter.AddPiece]).
	Pieces int64
}

// Add counts n more bytes of the reply and reports whether the reply is still within the limit.
func (c *ReplyCounter) Add(n int) bool {
	c.N += int64(n)
	return !c.Over()
}

// Over reports whether the reply counted so far is past the limit: its bytes, or [PieceCost]
// for each of its pieces, whichever is more.
func (c *ReplyCounter) Over() bool { return max(c.N, c.Pieces*PieceCost) > c.limit() }

func (c *ReplyCounter) limit() int64 {
	if c.Limit <= 0 {
		return DefaultMaxReplyBytes
	}
	return c.Limit
}

// Err returns the error of a reply past the counter's limit ([ReplyTooLongError]).
func (c *ReplyCounter) Err(backend, url string) *APIError {
	return ReplyTooLongError(backend, url, c.limit())
}

// ReplySize returns the bytes of r that a reply limit counts: its text, its reasoning (plain, and
// the thinking blocks' text, signatures and data) and its tool calls' names and arguments. A nil
// r is 0.
func ReplySize(r *Reply) int64 {
	if r == nil {
		return 0
	}
	n := len(r.Content) + len(r.Reasoning)
	for _, tc := range r.ToolCalls {
		n += len(tc.Name) + len(tc.Arguments)
	}
	for _, t := range r.Thinking {
		n += len(t.Text) + len(t.Signature) + len(t.Data)
	}
	return int64(n)
}
