package llamacpp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"lab/backend/openai"
	"lab/chat"
	"lab/internal/wire"
)

// chunk is llama-server's own part of one streamed chat.completion.chunk, or of a whole
// chat.completion, read before the OpenAI decoding ([openai.ChatCapture]) takes the chunk: its
// error object, which this package names as llama-server's. The message, the usage and the
// timings are the OpenAI decoding's: llama-server's figures have one reader.
type chunk struct {
	Error json.RawMessage `json:"error"`
}

// completion is what one chat request's answer said, streamed or whole.
type completion struct {
	// Content, Reasoning and ToolCalls are the generated message, put together from the deltas
	// by the OpenAI decoding: tool calls in index order, those a cut at max_tokens left without
	// whole arguments, or without a name, dropped (replyWarnings say so).
	Content, Reasoning string
	ToolCalls          []chat.ToolCall
	// replyWarnings are the warnings of the message's assembly, for the live request's Result.
	replyWarnings []string
	// FinishReason is the last finish_reason given ("" when none).
	FinishReason string
	// figures are the answer's figures as [openai.ChatCapture.Result] reads them (llama-server's
	// timings first, its usage otherwise); timings reports that the answer carried timings.
	figures *chat.Result
	timings bool
	// Done reports that a stream ended with `data: [DONE]` (always true for a whole answer).
	Done bool
	// Unstreamed reports that the answer was one chat.completion JSON, not a stream: it has no
	// time to first token (its first byte comes after the whole generation).
	Unstreamed bool
}

// streamError turns an error object of a stream into a *chat.APIError (URL set by the caller).
func streamError(raw []byte) *chat.APIError {
	var eb errorBody
	msg := quote(raw)
	if json.Unmarshal(raw, &eb) == nil && eb.Message != "" {
		msg = eb.Message
		if eb.Type != "" {
			msg += " (" + eb.Type + ")"
		}
	}
	return &chat.APIError{Backend: backendName, StatusCode: eb.Code, Body: "error in the stream: " + msg}
}

// readCompletion reads a /v1/chat/completions answer by its form ([chat.SniffAnswer] of its
// Content-Type and first bytes): a server-sent event stream (`data:` chunks, `data: [DONE]`,
// `:` pings; an error as `error: {…}` in older builds or `data: {"error": {…}}` in newer ones,
// both a *chat.APIError) or, when the server answered with application/json, a whole
// chat.completion (one without a choices array is not the API's answer: a *chat.APIError with
// status 200). Anything else (an HTML page, an empty body) is a *chat.APIError
// ([chat.NotAnswerError]; URL set by the caller). first is called once, when the first chunk
// that is not prefill progress arrives; never for a whole chat.completion, which has no time to
// first token. The reply is held to the default limit ([readCompletionMax]).
func readCompletion(resp *http.Response, first func()) (*completion, error) {
	return readCompletionMax(resp, chat.DefaultMaxReplyBytes, first)
}

// readCompletionMax is [readCompletion] with a reply limit of limit bytes (text, reasoning, tool
// calls' names and arguments; each tool call at least [chat.PieceCost]): a stream whose reply
// grows past it is read no further, and a line or a JSON answer longer than [chat.WireLimit] of
// it is not read whole; both fail with
// [chat.ReplyTooLongError] (URL set by the caller), the message as far as it came returned.
func readCompletionMax(resp *http.Response, limit int64, first func()) (*completion, error) {
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head, err := chat.PeekAnswer(br)
	if err != nil {
		return nil, err
	}
	ctype := resp.Header.Get("Content-Type")
	switch chat.SniffAnswer(ctype, head) {
	case chat.AnswerEvents:
		return readStreamMax(br, limit, first)
	case chat.AnswerJSON:
	default:
		return nil, chat.NotAnswerError(backendName, "", ctype, head)
	}
	b, err := chat.ReadAllMax(br, chat.WireLimit(limit))
	if errors.Is(err, chat.ErrWireTooLong) {
		return nil, chat.ReplyTooLongError(backendName, "", limit)
	}
	if err != nil {
		return nil, err
	}
	var ch chunk
	if err := json.Unmarshal(b, &ch); err != nil {
		return nil, fmt.Errorf("the answer is not a chat.completion: %v: %s", err, quote(b))
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return nil, streamError(ch.Error)
	}
	var shape struct {
		Choices json.RawMessage `json:"choices"`
	}
	if json.Unmarshal(b, &shape) != nil || !bytes.HasPrefix(bytes.TrimSpace(shape.Choices), []byte("[")) {
		// A gateway's own JSON ({"detail": "Not Found"}), null: its figures are not the answer's.
		return nil, chat.NotAnswerJSONError(backendName, "a chat.completion (no choices array)", quote(bytes.TrimSpace(b)))
	}
	acc := newAccumulator(limit)
	if err := acc.gen.Whole(b); err != nil {
		return acc.result(), ownError(err)
	}
	c := acc.result()
	if err := acc.over(); err != nil {
		return c, err
	}
	c.Done, c.Unstreamed = true, true
	return c, nil
}

// readStream reads a chat completion event stream; see readCompletion. A stream is whole when it
// ends with `data: [DONE]`, or, as the OpenAI backend takes it, after a finish_reason and its
// usage; else it is a *chat.APIError ([chat.CutError]: "no data: [DONE] and no finish_reason",
// "no data: [DONE] and no usage after the finish_reason", "no events", "no chunk before data:
// [DONE]"), also when the body ends
// inside a chunk. With an error it returns the message as far as it came (for a live request's
// Reply), Done false. The reply is held to the default limit ([readStreamMax]).
func readStream(r io.Reader, first func()) (*completion, error) {
	return readStreamMax(r, chat.DefaultMaxReplyBytes, first)
}

// readStreamMax is [readStream] with a reply limit of limit bytes, as [readCompletionMax]. The
// events are read by the wire layer's server-sent event reader ([wire.ReadEvents]); each
// event's data is one chunk, llama-server's older `error:` line an error event.
func readStreamMax(r io.Reader, limit int64, first func()) (*completion, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	acc := newAccumulator(limit)
	started, done := false, false
	_, err := wire.ReadEvents(br, chat.WireLimit(limit), func(name string, value []byte) error {
		if name == "error" {
			return streamError(value)
		}
		if string(bytes.TrimSpace(value)) == "[DONE]" {
			done = true
			_, _ = acc.gen.Chunk(value)
			return errDone
		}
		var ch chunk
		if err := json.Unmarshal(value, &ch); err != nil {
			return fmt.Errorf("stream chunk is not JSON: %v: %s", err, quote(value))
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return streamError(ch.Error)
		}
		n := acc.gen.Chunks()
		if _, err := acc.gen.Chunk(value); err != nil {
			return ownError(err)
		}
		// A chunk the decoding did not count is llama-server's prefill progress
		// (return_progress), not the answer's first chunk.
		if !started && acc.gen.Chunks() > n {
			started = true
			first()
		}
		// Past the reply limit: stop reading; the caller closes the body, which drops the
		// connection.
		return acc.over()
	})
	var re wire.ReadError
	switch {
	case errors.Is(err, errDone):
	case errors.Is(err, chat.ErrWireTooLong):
		return acc.result(), chat.ReplyTooLongError(backendName, "", limit)
	case errors.As(err, &re):
		return acc.result(), re.Err
	case err != nil:
		return acc.result(), err
	}
	c := acc.result()
	c.Done = done
	// Whole as the OpenAI decoding says: data: [DONE] after a chunk, or a finish_reason and its
	// usage ([openai.ChatCapture.End]).
	if err := acc.gen.End(); err != nil {
		return c, ownError(err)
	}
	return c, nil
}

// ownError names this package as the backend of a *chat.APIError the OpenAI decoding returned.
func ownError(err error) error {
	var ae *chat.APIError
	if errors.As(err, &ae) {
		ae.Backend = backendName
	}
	return err
}

// errDone stops reading a stream at its `data: [DONE]`.
var errDone = errors.New("data: [DONE]")

// accumulator puts a message and its figures together from the chunks, by the OpenAI decoding
// ([openai.ChatCapture], the reply limit counted there).
type accumulator struct {
	gen openai.ChatCapture
}

func newAccumulator(limit int64) *accumulator {
	a := &accumulator{}
	a.gen.SetReplyLimit(limit)
	return a
}

// over returns the reply limit's error once the reply is past it, else nil.
func (a *accumulator) over() error {
	if err := a.gen.ReplyOver(backendName); err != nil {
		return err
	}
	return nil
}

func (a *accumulator) result() *completion {
	var res chat.Result
	r := a.gen.ReplyTo(&res)
	return &completion{Content: r.Content, Reasoning: r.Reasoning, ToolCalls: r.ToolCalls, replyWarnings: res.Warnings,
		FinishReason: a.gen.FinishReason(), figures: a.gen.Result(), timings: a.gen.Timings() != nil}
}
