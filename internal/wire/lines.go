package wire

import (
	"bufio"
	"bytes"
	"io"

	"lab/chat"
)

// lineSource gives a body's lines to the event and JSON-line readers, one at a time: the
// readers' rules are written once ([splitEvents], [splitLines]) over the two places a body comes
// from, a connection being read ([readerLines]) and an answer held in memory in pieces
// ([pieceLines]).
type lineSource interface {
	// next returns the next line, its newline included (the last line may lack one), the index
	// of the piece that held its last byte (the last piece for the body's last line; 0 for a
	// reader), and io.EOF with the body's last line (empty when the body ended with a newline).
	// A line past the source's bound is [chat.ErrWireTooLong]; a transport error is returned as
	// it is.
	next() (line []byte, at int, err error)
}

// readerLines reads lines from a connection, each at most max bytes ([chat.ReadLine]: every
// line is a copy of its own).
type readerLines struct {
	br  *bufio.Reader
	max int64
}

func (r *readerLines) next() ([]byte, int, error) {
	line, err := chat.ReadLine(r.br, r.max)
	return line, 0, err
}

// pieceLines reads the lines of a body held in memory as pieces (its bytes in order, as a
// proxy kept them as they arrived). A line within one piece is returned in place (the pieces
// are never written to); a line that spans pieces is copied once, into a buffer of its length.
type pieceLines struct {
	pieces [][]byte
	i, off int // the next byte: pieces[i][off]
}

func (s *pieceLines) next() ([]byte, int, error) {
	var line []byte
	spanning := false
	for ; s.i < len(s.pieces); s.i, s.off = s.i+1, 0 {
		rest := s.pieces[s.i][s.off:]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			at := s.i
			if s.off += j + 1; s.off == len(s.pieces[s.i]) {
				s.i, s.off = s.i+1, 0
			}
			if !spanning {
				return rest[:j+1], at, nil
			}
			return append(line, rest[:j+1]...), at, nil
		}
		if len(rest) > 0 {
			if !spanning {
				line, spanning = make([]byte, 0, s.lineLen(rest)), true
			}
			line = append(line, rest...)
		}
	}
	return line, len(s.pieces) - 1, io.EOF
}

// lineLen returns the length of the line that begins with rest (the end of pieces[i], which
// holds no newline) and ends with the next newline in the pieces after it, or at their end.
func (s *pieceLines) lineLen(rest []byte) int {
	n := len(rest)
	for _, p := range s.pieces[s.i+1:] {
		if j := bytes.IndexByte(p, '\n'); j >= 0 {
			return n + j + 1
		}
		n += len(p)
	}
	return n
}
