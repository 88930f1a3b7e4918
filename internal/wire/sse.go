package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"lab/chat"
)

// ReadEvents reads a server-sent event stream (https://html.spec.whatwg.org/multipage/
// server-sent-events.html, "Interpreting an event stream"): `event:` and `data:` lines (one
// space after the colon dropped), LF or CRLF line ends, a blank line ending each event, `:`
// comments (pings) and other fields (id:, retry:) skipped, and llama-server's older
// `error: {…}` line as an event named "error". fn gets each event's name and data (its data
// lines joined by "\n"); reading stops at the first error fn returns, which ReadEvents returns
// as it is. An event the body's end cut before its blank line is given to fn only when its
// data is whole (JSON or [DONE]): a stream cut inside an event is then seen as cut by its
// missing end marker, not as a malformed event. A transport error is a [ReadError]. One line,
// or one event's data, longer than max bytes is not read whole: reading stops with
// [chat.ErrWireTooLong]. It returns the number of events given to fn.
func ReadEvents(br *bufio.Reader, max int64, fn func(name string, data []byte) error) (int, error) {
	var name string
	var data [][]byte
	var size int64 // the bytes of data
	n := 0
	dispatch := func() error {
		if data == nil {
			name = ""
			return nil
		}
		nm, d := name, bytes.Join(data, []byte("\n"))
		name, data, size = "", nil, 0
		n++
		return fn(nm, d)
	}
	for {
		line, err := chat.ReadLine(br, max)
		if errors.Is(err, chat.ErrWireTooLong) {
			return n, err
		}
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if derr := dispatch(); derr != nil {
					return n, derr
				}
			case line[0] == ':':
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				value = bytes.TrimPrefix(value, []byte(" "))
				switch string(field) {
				case "event":
					name = string(value)
				case "data":
					data = append(data, value)
					size += int64(len(value)) + 1
				case "error":
					name = "error"
					data = append(data, value)
					size += int64(len(value)) + 1
				}
				if size > max {
					return n, chat.ErrWireTooLong
				}
			}
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) {
			return n, ReadError{err}
		}
		if d := bytes.TrimSpace(bytes.Join(data, []byte("\n"))); data != nil && !json.Valid(d) && string(d) != "[DONE]" {
			return n, nil // cut inside its last event
		}
		return n, dispatch()
	}
}
