package openai

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"lab/chat"
	"lab/internal/wire"
)

// readAnswer reads the 2xx answer to a streamed request (its body e.answer, taken by post),
// by its form ([chat.SniffAnswer] of its Content-Type and first bytes): a server-sent event
// stream, each event given to event ([wire.ReadEvents]), or one JSON document (a server that does
// not stream), read whole and given to whole. Anything else is a *chat.APIError
// ([chat.NotAnswerError]: an HTML page, an empty body). It returns the number of events and
// the first error: event's or whole's as they returned it, a [wire.ReadError] for the transport's,
// [chat.ErrWireTooLong] for a line, an event or a JSON answer longer than e.wire
// ([chat.WireLimit] of the request's reply limit), which is not read past it.
func (c *Client) readAnswer(e *exchange, event func(name string, data []byte) error, whole func([]byte) error) (int, error) {
	if e.answer == nil {
		return 0, errors.New("no answer body")
	}
	br := bufio.NewReaderSize(e.answer, 64<<10)
	head, err := chat.PeekAnswer(br)
	if err != nil {
		return 0, wire.ReadError{Err: err}
	}
	switch chat.SniffAnswer(e.answerType, head) {
	case chat.AnswerEvents:
		return wire.ReadEvents(br, e.wire(), event)
	case chat.AnswerJSON:
		b, err := chat.ReadAllMax(br, e.wire())
		if errors.Is(err, chat.ErrWireTooLong) {
			return 0, err
		}
		if err != nil {
			return 0, wire.ReadError{Err: err}
		}
		return 0, whole(b)
	}
	return 0, chat.NotAnswerError("openai", c.base.Redacted(), e.answerType, head)
}

// answerError turns a failure to read an answer into the error Send returns: a canceled or
// timed-out context as it is; a *chat.APIError (an error the server put in its stream, a cut
// stream, a body that is not the API's answer) with the server's URL and the key redacted; a
// transport failure ([wire.ReadError]) with no HTTP status, as harness.Retryable expects of one; any
// other (a chunk that is not JSON) with the answer's status. A piece of the answer too long to
// read ([chat.ErrWireTooLong]) is the reply limit's [chat.ReplyTooLongError].
func (c *Client) answerError(err error, e *exchange) error {
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
	var re wire.ReadError
	if errors.As(err, &re) {
		return c.apiError(err, 0)
	}
	return c.apiError(fmt.Errorf("%w", err), e.status)
}
