package wire

import (
	"io"
)

// Body is a request body held as the pieces it is sent from, in order: its bytes are the pieces
// joined. A backend that keeps the encodings of a conversation's earlier messages from request
// to request builds the next body from them without copying them, not even the list of them
// ([Body.AppendList]); [PostBody] sends the pieces as they are. Neither a piece nor a list may
// change once it is in a Body; Bodies may share them. The zero value is no body at all (Post's
// nil).
type Body struct {
	lists [][][]byte
	n     int
}

// BodyOf is the Body of the bytes b (nil: no body).
func BodyOf(b []byte) Body {
	if b == nil {
		return Body{}
	}
	return Body{lists: [][][]byte{{b}}, n: len(b)}
}

// Append adds p at the body's end (p is kept, not copied).
func (b *Body) Append(p []byte) {
	b.lists = append(b.lists, [][]byte{p})
	b.n += len(p)
}

// AppendList adds the pieces ps, which hold n bytes together, at the body's end; ps is kept,
// not copied, and must not change afterwards.
func (b *Body) AppendList(ps [][]byte, n int) {
	if len(ps) == 0 {
		return
	}
	b.lists = append(b.lists, ps)
	b.n += n
}

// Len is the body's length in bytes.
func (b Body) Len() int { return b.n }

// None reports whether b is no body at all (the zero value).
func (b Body) None() bool { return b.lists == nil }

// Bytes returns the body's bytes in one slice (nil for no body): the one piece of a body of
// one, else a new slice.
func (b Body) Bytes() []byte {
	if b.lists == nil {
		return nil
	}
	if len(b.lists) == 1 && len(b.lists[0]) == 1 {
		return b.lists[0][0]
	}
	out := make([]byte, 0, b.n)
	for _, l := range b.lists {
		for _, p := range l {
			out = append(out, p...)
		}
	}
	return out
}

// Reader returns a reader of the body's bytes, from the first; each call a new one.
func (b Body) Reader() io.Reader { return &bodyReader{lists: b.lists} }

// bodyReader reads a Body's pieces in order: list i, piece j, from byte off.
type bodyReader struct {
	lists [][][]byte
	i, j  int
	off   int
}

func (r *bodyReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.lists) {
		l := r.lists[r.i]
		if r.j >= len(l) {
			r.i, r.j = r.i+1, 0
			continue
		}
		c := copy(p[n:], l[r.j][r.off:])
		n += c
		r.off += c
		if r.off == len(l[r.j]) {
			r.j, r.off = r.j+1, 0
		}
	}
	if n == 0 && r.i >= len(r.lists) {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes the rest of the body to w, piece by piece (io.Copy's path: no buffer between).
func (r *bodyReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for ; r.i < len(r.lists); r.i, r.j = r.i+1, 0 {
		for l := r.lists[r.i]; r.j < len(l); r.j, r.off = r.j+1, 0 {
			n, err := w.Write(l[r.j][r.off:])
			total += int64(n)
			if err != nil {
				r.off += n
				return total, err
			}
		}
	}
	return total, nil
}
