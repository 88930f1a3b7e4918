package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"lab/chat"
)

// ReadLines reads a stream of JSON lines (application/x-ndjson, as Ollama streams): fn gets
// each line that is not blank, its line end (LF or CRLF) and surrounding white space trimmed;
// reading stops at the first error fn returns, which ReadLines returns as it is. A last line
// the body's end cut short (no newline, not whole JSON) after at least one whole line is not
// given to fn: the stream is then seen as cut by its missing end marker, not as a malformed
// line; a body of one unterminated line (an unstreamed answer) is given whole. A transport
// error is a [ReadError]; a line longer than max bytes is not read whole and stops reading
// with [chat.ErrWireTooLong]. It returns the number of lines given to fn.
func ReadLines(br *bufio.Reader, max int64, fn func(line []byte) error) (int, error) {
	return splitLines(&readerLines{br: br, max: max}, func(line []byte, _ int) error { return fn(line) })
}

// ReadLinesIn reads JSON lines held in memory in pieces (the body's bytes in order, as a proxy
// kept them as they arrived) by the rules of [ReadLines], without a bound: fn also gets the
// index in pieces of the piece that held the line's newline (the last piece for the body's last
// line). The line fn gets may point into the pieces, which are never written to; fn must not
// write to it. Only a line that spans pieces is copied. It returns the number of lines given to
// fn and the first error fn returned.
func ReadLinesIn(pieces [][]byte, fn func(line []byte, piece int) error) (int, error) {
	return splitLines(&pieceLines{pieces: pieces}, fn)
}

// splitLines is [ReadLines] over any line source, fn getting where each line ended.
func splitLines(src lineSource, fn func(line []byte, at int) error) (int, error) {
	n, whole := 0, false
	for {
		line, at, err := src.next()
		if errors.Is(err, chat.ErrWireTooLong) {
			return n, err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return n, ReadError{err}
		}
		cut := err != nil && !bytes.HasSuffix(line, []byte("\n"))
		if t := bytes.TrimSpace(line); len(t) > 0 && !(cut && whole && !json.Valid(t)) {
			n++
			if ferr := fn(t, at); ferr != nil {
				return n, ferr
			}
		}
		if err != nil {
			return n, nil
		}
		whole = true
	}
}

// DropCutLine returns r's JSON lines passed on, except a last line that the body's end cut
// short (no newline, not whole JSON) after at least one whole line: the same rule as
// [ReadLines], for a body read by another library's line reader. A body of one unterminated
// line passes as it is.
func DropCutLine(r io.Reader) io.Reader { return &cutLine{r: r} }

type cutLine struct {
	r     io.Reader
	tail  []byte // the bytes after the last newline read so far
	out   []byte // bytes ready to be read
	lines bool   // a whole line was passed on
	err   error  // the underlying reader's error, returned once out is drained
}

// Read implements io.Reader.
func (c *cutLine) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		buf := make([]byte, 32<<10)
		n, err := c.r.Read(buf)
		data := append(c.tail, buf[:n]...)
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			c.out, c.tail, c.lines = data[:i+1], append([]byte(nil), data[i+1:]...), true
		} else {
			c.tail = data
		}
		if err != nil {
			if t := bytes.TrimSpace(c.tail); len(t) > 0 && (!c.lines || json.Valid(t)) {
				c.out = append(c.out, c.tail...)
			}
			c.tail, c.err = nil, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}
