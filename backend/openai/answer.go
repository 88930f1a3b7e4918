package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"lab/chat"
)

// readError is a transport failure while reading an answer's body (a connection reset, an
// unexpected EOF): recorded with no HTTP status, so that harness.Retryable retries it.
type readError struct{ err error }

func (e readError) Error() string { return "read stream: " + e.err.Error() }
func (e readError) Unwrap() error { return e.err }

// readEvents reads a server-sent event stream (https://html.spec.whatwg.org/multipage/
// server-sent-events.html, "Interpreting an event stream"): `event:` and `data:` lines, a blank
// line ending each event, `:` comments (pings) skipped, and llama-server's older `error: {…}`
// line as an event named "error". fn gets each event's name and data (its data lines joined by
// "\n"); reading stops at the first error fn returns, which readEvents returns as it is. An
// event the body's end cut before its blank line is given to fn only when its data is whole
// (JSON or [DONE]): a stream cut inside an event is then seen as cut by its missing end marker,
// not as a malformed chunk. A transport error is a readError. One line, or one event's data,
// longer than max bytes is not read whole: reading stops with [chat.ErrWireTooLong]. It
// returns the number of events.
func readEvents(br *bufio.Reader, max int64, fn func(name string, data []byte) error) (int, error) {
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
			return n, readError{err}
		}
		if d := bytes.TrimSpace(bytes.Join(data, []byte("\n"))); data != nil && !json.Valid(d) && string(d) != "[DONE]" {
			return n, nil // cut inside its last event
		}
		return n, dispatch()
	}
}

// readAnswer reads the 2xx answer to a streamed request, whose body the doer took (e.answer),
// by its form ([chat.SniffAnswer] of its Content-Type and first bytes): a server-sent event
// stream, each event given to event ([readEvents]), or one JSON document (a server that does
// not stream), read whole and given to whole. Anything else is a *chat.APIError
// ([chat.NotAnswerError]: an HTML page, an empty body). It returns the number of events and
// the first error: event's or whole's as they returned it, a readError for the transport's,
// [chat.ErrWireTooLong] for a line, an event or a JSON answer longer than e.wire
// ([chat.WireLimit] of the request's reply limit), which is not read past it.
func (c *Client) readAnswer(e *edit, event func(name string, data []byte) error, whole func([]byte) error) (int, error) {
	if e.answer == nil {
		return 0, errors.New("no answer body")
	}
	br := bufio.NewReaderSize(e.answer, 64<<10)
	head, err := chat.PeekAnswer(br)
	if err != nil {
		return 0, readError{err}
	}
	switch chat.SniffAnswer(e.answerType, head) {
	case chat.AnswerEvents:
		return readEvents(br, e.wire(), event)
	case chat.AnswerJSON:
		b, err := chat.ReadAllMax(br, e.wire())
		if errors.Is(err, chat.ErrWireTooLong) {
			return 0, err
		}
		if err != nil {
			return 0, readError{err}
		}
		return 0, whole(b)
	}
	return 0, chat.NotAnswerError("openai", c.base.Redacted(), e.answerType, head)
}

// answerError turns a failure to read an answer into the error Send returns: a canceled or
// timed-out context as it is; a *chat.APIError (an error the server put in its stream, a cut
// stream, a body that is not the API's answer) with the server's URL and the key redacted; a
// transport failure (readError) with no HTTP status, as harness.Retryable expects of one; any
// other (a chunk that is not JSON) with the answer's status. A piece of the answer too long to
// read ([chat.ErrWireTooLong]) is the reply limit's [chat.ReplyTooLongError].
func (c *Client) answerError(err error, e *edit) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, chat.ErrWireTooLong) {
		return chat.ReplyTooLongError("openai", c.base.Redacted(), e.limit)
	}
	var ae *chat.APIError
	if errors.As(err, &ae) {
		cp := *ae
		cp.URL, cp.Body = c.base.Redacted(), c.redact(cp.Body)
		return &cp
	}
	var re readError
	if errors.As(err, &re) {
		return c.apiError(err, 0)
	}
	return c.apiError(fmt.Errorf("%w", err), e.status)
}
