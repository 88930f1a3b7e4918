package capture

import (
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// decodeChunks returns an answer's chunks decompressed when the upstream compressed it
// (Content-Encoding gzip, x-gzip or deflate, RFC 9110 §8.4.1) although the proxy asked for
// identity: the client got the compressed bytes unchanged, the recorder parses the plain ones.
// Each decompressed piece keeps the arrival time of the compressed chunk whose bytes completed
// it, so the time to first token stays that of the chunk that carried the first content. Other
// encodings (br, zstd) are an error naming the encoding; a stream cut inside the compressed
// data returns what decompressed before the cut.
func decodeChunks(encoding string, chunks []chunk) ([]chunk, error) {
	switch encoding {
	case "", "identity":
		return chunks, nil
	case "gzip", "x-gzip", "deflate":
	default:
		return nil, fmt.Errorf("the answer is compressed (Content-Encoding %s), which the proxy cannot read", encoding)
	}
	src := &chunkReader{chunks: chunks}
	if src.empty() {
		return nil, nil
	}
	var zr io.Reader
	var err error
	if encoding == "deflate" {
		zr, err = zlib.NewReader(src)
	} else {
		var g *gzip.Reader
		if g, err = gzip.NewReader(src); err == nil {
			g.Multistream(true)
			zr = g
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the answer says Content-Encoding %s: %w", encoding, err)
	}
	var out []chunk
	buf := make([]byte, 32<<10)
	for {
		n, rerr := zr.Read(buf)
		if n > 0 {
			at := chunks[src.at()].at
			if len(out) > 0 && out[len(out)-1].at.Equal(at) {
				out[len(out)-1].data = append(out[len(out)-1].data, buf[:n]...)
			} else {
				out = append(out, chunk{data: append([]byte(nil), buf[:n]...), at: at})
			}
		}
		if errors.Is(rerr, io.EOF) {
			return out, nil
		}
		if rerr != nil {
			if errors.Is(rerr, io.ErrUnexpectedEOF) {
				return out, nil // cut: the row's error says so (the read error of the answer)
			}
			return nil, fmt.Errorf("the answer says Content-Encoding %s: %w", encoding, rerr)
		}
	}
}

// chunkReader reads chunks' bytes in order, one byte at a time when asked (an io.ByteReader, so
// that the decompressor reads no further than it needs and at() names the chunk whose bytes
// completed the output so far).
type chunkReader struct {
	chunks []chunk
	i, off int
	last   int
}

func (r *chunkReader) empty() bool {
	for _, c := range r.chunks {
		if len(c.data) > 0 {
			return false
		}
	}
	return true
}

// at is the index of the chunk that held the last byte read.
func (r *chunkReader) at() int { return r.last }

func (r *chunkReader) ReadByte() (byte, error) {
	for r.i < len(r.chunks) && r.off >= len(r.chunks[r.i].data) {
		r.i, r.off = r.i+1, 0
	}
	if r.i >= len(r.chunks) {
		return 0, io.EOF
	}
	b := r.chunks[r.i].data[r.off]
	r.off++
	r.last = r.i
	return b, nil
}

func (r *chunkReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		b, err := r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		p[n] = b
		n++
	}
	return n, nil
}
