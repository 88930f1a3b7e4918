package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"

	"lab/chat"
)

// ReadEvents reads a server-sent event stream (https://html.spec.whatwg.org/multipage/
// server-sent-events.html, "Interpreting an event stream"): `event:` and `data:` lines (one
// space after the colon dropped), LF or CRLF line ends, a blank line ending each event, `:`
// comments (pings) and other fields (id:, retry:) skipped, and llama-server's older
// `error: {…}` line as an event named "error". fn gets each event's name and data (its data
// lines joined by "\n"; fn may keep it); reading stops at the first error fn returns, which
// ReadEvents returns as it is. An event the body's end cut before its blank line is given to fn
// only when its data is whole (JSON or [DONE]): a stream cut inside an event is then seen as cut
// by its missing end marker, not as a malformed event. A transport error is a [ReadError]. One
// line, or one event's data, longer than max bytes is not read whole: reading stops with
// [chat.ErrWireTooLong]. It returns the number of events given to fn.
func ReadEvents(br *bufio.Reader, max int64, fn func(name string, data []byte) error) (int, error) {
	return splitEvents(&readerLines{br: br, max: max}, max, func(name string, data []byte, _ int) error {
		return fn(name, data)
	})
}

// ReadEventsIn reads a server-sent event stream held in memory in pieces (the body's bytes in
// order, as a proxy kept them as they arrived) by the rules of [ReadEvents], without a bound:
// fn also gets the index in pieces of the piece whose bytes completed the event (the one that
// held the newline of its blank line; the last piece for an event the body's end completed),
// the time its bytes arrived being the event's. The data fn gets may point into the pieces,
// which are never written to; fn must not write to it. Time and memory are linear in the body:
// only a line that spans pieces, and an event of several data lines, is copied. It returns the
// number of events given to fn and the first error fn returned.
func ReadEventsIn(pieces [][]byte, fn func(name string, data []byte, piece int) error) (int, error) {
	return splitEvents(&pieceLines{pieces: pieces}, math.MaxInt64, fn)
}

// splitEvents is [ReadEvents] over any line source, fn getting where each event was completed.
func splitEvents(src lineSource, max int64, fn func(name string, data []byte, at int) error) (int, error) {
	var name string
	var data [][]byte // the event's data lines, each a piece of its line
	var size int64    // the bytes of data
	n := 0
	eventData := func() []byte {
		if len(data) == 1 {
			return data[0]
		}
		return bytes.Join(data, []byte("\n"))
	}
	dispatch := func(at int) error {
		if len(data) == 0 {
			name = ""
			return nil
		}
		nm, d := name, eventData()
		name, data, size = "", data[:0], 0
		n++
		return fn(nm, d, at)
	}
	for {
		line, at, err := src.next()
		if errors.Is(err, chat.ErrWireTooLong) {
			return n, err
		}
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if derr := dispatch(at); derr != nil {
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
		if d := bytes.TrimSpace(eventData()); len(data) > 0 && !json.Valid(d) && string(d) != "[DONE]" {
			return n, nil // cut inside its last event
		}
		return n, dispatch(at)
	}
}
