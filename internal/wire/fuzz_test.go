package wire

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"lab/chat"
)

// FuzzReaders feeds arbitrary bytes to the event and the JSON-line readers: they never panic,
// never give fn a piece longer than their bound, count what they gave, and fail, when they do,
// only with the bound's error (no transport error can come from a byte slice). The same bytes
// held in pieces (cut where cuts says) give the in-memory readers the events and lines the
// connection readers give without a bound, each with the index of a piece, in order.
func FuzzReaders(f *testing.F) {
	f.Add([]byte("event: a\r\ndata: {\"x\":1}\r\n\r\n: ping\ndata: [DONE]\n\n"), int64(64), []byte{3, 0, 9})
	f.Add([]byte("{\"a\":1}\n{\"b\":"), int64(8), []byte{7})
	f.Add([]byte("error: {}\ndata: 1\ndata: 2\n"), int64(3), []byte{1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte, max int64, cuts []byte) {
		pieces := cutPieces(b, cuts)
		var want, got []string
		_, _ = ReadEvents(bufio.NewReaderSize(bytes.NewReader(b), 16), int64(len(b))+1, func(name string, data []byte) error {
			want = append(want, name+"\x00"+string(data))
			return nil
		})
		last := 0
		n, _ := ReadEventsIn(pieces, func(name string, data []byte, at int) error {
			if at < last || at >= len(pieces) {
				t.Fatalf("event %d completed in piece %d after piece %d, of %d", len(got), at, last, len(pieces))
			}
			last = at
			got = append(got, name+"\x00"+string(data))
			return nil
		})
		if n != len(got) || strings.Join(got, "\x01") != strings.Join(want, "\x01") {
			t.Fatalf("in %d pieces: %d events %q; from a reader %q", len(pieces), n, got, want)
		}
		want, got, last = nil, nil, 0
		_, _ = ReadLines(bufio.NewReaderSize(bytes.NewReader(b), 16), int64(len(b))+1, func(line []byte) error {
			want = append(want, string(line))
			return nil
		})
		n, _ = ReadLinesIn(pieces, func(line []byte, at int) error {
			if at < last || at >= len(pieces) {
				t.Fatalf("line %d ended in piece %d after piece %d, of %d", len(got), at, last, len(pieces))
			}
			last = at
			got = append(got, string(line))
			return nil
		})
		if n != len(got) || strings.Join(got, "\x01") != strings.Join(want, "\x01") {
			t.Fatalf("in %d pieces: %d lines %q; from a reader %q", len(pieces), n, got, want)
		}

		if max <= 0 || max > 1<<20 {
			max = 1 << 10
		}
		calls := 0
		n, err := ReadEvents(bufio.NewReaderSize(bytes.NewReader(b), 16), max, func(name string, data []byte) error {
			calls++
			if int64(len(data)) > max {
				t.Fatalf("event data of %d bytes past the bound %d", len(data), max)
			}
			return nil
		})
		if n != calls || (err != nil && !errors.Is(err, chat.ErrWireTooLong)) {
			t.Fatalf("ReadEvents: %d events, %d calls, %v", n, calls, err)
		}
		calls = 0
		n, err = ReadLines(bufio.NewReaderSize(bytes.NewReader(b), 16), max, func(line []byte) error {
			calls++
			if int64(len(line)) > max || len(bytes.TrimSpace(line)) != len(line) || len(line) == 0 {
				t.Fatalf("line %q: past the bound %d, untrimmed or blank", line, max)
			}
			return nil
		})
		if n != calls || (err != nil && !errors.Is(err, chat.ErrWireTooLong)) {
			t.Fatalf("ReadLines: %d lines, %d calls, %v", n, calls, err)
		}
	})
}

// cutPieces cuts b into pieces of the lengths cuts gives in turn (0: an empty piece), the rest
// in one.
func cutPieces(b []byte, cuts []byte) [][]byte {
	var out [][]byte
	for _, c := range cuts {
		n := min(int(c), len(b))
		out = append(out, b[:n:n])
		b = b[n:]
	}
	return append(out, b)
}
