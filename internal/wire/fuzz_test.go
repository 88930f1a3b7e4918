package wire

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

	"lab/chat"
)

// FuzzReaders feeds arbitrary bytes to the event and the JSON-line readers: they never panic,
// never give fn a piece longer than their bound, count what they gave, and fail, when they do,
// only with the bound's error (no transport error can come from a byte slice).
func FuzzReaders(f *testing.F) {
	f.Add([]byte("event: a\r\ndata: {\"x\":1}\r\n\r\n: ping\ndata: [DONE]\n\n"), int64(64))
	f.Add([]byte("{\"a\":1}\n{\"b\":"), int64(8))
	f.Add([]byte("error: {}\ndata: 1\ndata: 2\n"), int64(3))
	f.Fuzz(func(t *testing.T, b []byte, max int64) {
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
