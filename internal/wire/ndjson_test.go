package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"lab/chat"
)

func readLines(r io.Reader, max int64) ([]string, error) {
	var got []string
	_, err := ReadLines(bufio.NewReaderSize(r, 16), max, func(l []byte) error {
		got = append(got, string(l))
		return nil
	})
	return got, err
}

func TestReadLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		want  []string
	}{
		{"split over reads", []string{`{"a"`, ":1}\n{\"b\"", ":2}\n"}, []string{`{"a":1}`, `{"b":2}`}},
		{"CRLF and blank lines", []string{"{\"a\":1}\r\n\r\n{\"b\":2}\r\n"}, []string{`{"a":1}`, `{"b":2}`}},
		{"one unterminated line", []string{`{"done":true}`}, []string{`{"done":true}`}},
		{"whole last line without newline", []string{"{\"a\":1}\n{\"b\":2}"}, []string{`{"a":1}`, `{"b":2}`}},
		{"cut inside the last line", []string{"{\"a\":1}\n{\"b\":"}, []string{`{"a":1}`}},
		{"one cut line is given whole", []string{`{"b":`}, []string{`{"b":`}},
	} {
		got, err := readLines(&chunks{parts: tc.parts}, 1<<10)
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := readLines(&chunks{parts: []string{strings.Repeat("x", 100) + "\n"}}, 50); !errors.Is(err, chat.ErrWireTooLong) {
		t.Errorf("long line: %v; want ErrWireTooLong", err)
	}
	got, err := readLines(&chunks{parts: []string{"{}\n{"}, err: errReset}, 1<<10)
	var re ReadError
	if !errors.As(err, &re) || len(got) != 1 {
		t.Errorf("reset: %q, %v; want one line and a ReadError", got, err)
	}
}

func TestDropCutLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\"a\":1}\n{\"b\":", "{\"a\":1}\n"},
		{"{\"a\":1}\n{\"b\":2}", "{\"a\":1}\n{\"b\":2}"},
		{"{\"b\":", "{\"b\":"},
	} {
		out, err := io.ReadAll(DropCutLine(&chunks{parts: []string{tc.in}}))
		if err != nil || string(out) != tc.want {
			t.Errorf("DropCutLine(%q) = %q, %v; want %q", tc.in, out, err, tc.want)
		}
	}
}

// The in-memory readers name the piece whose bytes completed each event and line: the piece
// with the newline of an event's blank line (CRLF split across pieces: the newline's piece),
// with a line's newline, or the last piece for what the body's end completed.
func TestReadersInPiecesNameThePiece(t *testing.T) {
	pieces := [][]byte{[]byte("data: {\"a\""), []byte(":1}\n\r"), []byte("\n: ping\n\ndata: {}\n"), nil, []byte("\n"), []byte("data: [DONE]\n"), {}}
	var got []string
	if _, err := ReadEventsIn(pieces, func(name string, data []byte, at int) error {
		got = append(got, fmt.Sprintf("%s@%d", data, at))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1}@2|{}@4|[DONE]@6`; strings.Join(got, "|") != want {
		t.Errorf("events %q; want %q", strings.Join(got, "|"), want)
	}
	got = nil
	lines := [][]byte{[]byte("{\"a\":1}\n{\"b\""), []byte(":2}"), []byte("\n{\"c\":3}\n"), []byte("{\"d\":")}
	if _, err := ReadLinesIn(lines, func(line []byte, at int) error {
		got = append(got, fmt.Sprintf("%s@%d", line, at))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1}@0|{"b":2}@2|{"c":3}@2`; strings.Join(got, "|") != want {
		t.Errorf("lines %q; want %q (the cut last line dropped)", strings.Join(got, "|"), want)
	}
}
