package chat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
)

// StreamCut begins the Body of the *APIError (StatusCode 200) of an answer that ended before it
// was whole: a stream without its end marker (OpenAI-compatible `data: [DONE]` or a
// finish_reason with usage, Responses API response.completed, Anthropic message_stop, Ollama's
// done message), a stream with no event, an empty body. harness.Retryable retries such an
// error; `lab proxy` records it as the row's error.
const StreamCut = "stream cut"

// CutError returns the error of an answer that ended before it was whole: HTTP status 200 and
// Body "stream cut: " followed by what, which names what was missing ("no message_stop").
func CutError(backend, url, what string) *APIError {
	return &APIError{Backend: backend, URL: url, StatusCode: 200, Body: StreamCut + ": " + what}
}

// Unstreamed is the warning of an answer that came as one JSON document, not a stream (an
// unstreamed request's, or a server's that does not stream): its first byte comes after the
// whole generation, so its time to first token is unknown (null), not the time to that byte.
const Unstreamed = "unstreamed answer: time to first token unknown"

// AnswerForm is what an HTTP 200 answer's body is, as [SniffAnswer] tells it.
type AnswerForm int

// The forms of an answer.
const (
	// AnswerEvents is a server-sent event stream (text/event-stream): OpenAI-compatible,
	// Responses API and Anthropic streams.
	AnswerEvents AnswerForm = iota
	// AnswerJSON is one JSON document (application/json): an unstreamed answer.
	AnswerJSON
	// AnswerLines is a stream of JSON lines (application/x-ndjson): Ollama's streams.
	AnswerLines
	// AnswerEmpty is a body with nothing but white space.
	AnswerEmpty
	// AnswerOther is anything else (an HTML page, plain text): not a model API's answer.
	AnswerOther
)

// SniffAnswer returns the form of an HTTP 200 answer from its Content-Type header and head,
// the body's first bytes (up to a few dozen, leading white space skipped: [PeekAnswer]). The
// header decides (text/event-stream, application/json or any +json type, application/x-ndjson
// or application/jsonl) unless it is absent, text/plain or application/octet-stream: then the
// head does (`{` or `[` JSON; a server-sent event field such as `data:`, `event:` or a `:`
// comment an event stream). An empty head is AnswerEmpty and a head starting with `<` (an HTML
// or XML page, whatever its header says) AnswerOther.
func SniffAnswer(contentType string, head []byte) AnswerForm {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 {
		return AnswerEmpty
	}
	if head[0] == '<' {
		return AnswerOther
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "text/event-stream":
		return AnswerEvents
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return AnswerJSON
	case mt == "application/x-ndjson" || mt == "application/jsonl" || mt == "application/jsonlines":
		return AnswerLines
	case mt == "" || mt == "text/plain" || mt == "application/octet-stream":
		switch {
		case head[0] == '{' || head[0] == '[':
			return AnswerJSON
		case head[0] == ':':
			return AnswerEvents
		}
		for _, f := range []string{"data:", "event:", "id:", "retry:"} {
			if bytes.HasPrefix(head, []byte(f)) {
				return AnswerEvents
			}
		}
	}
	return AnswerOther
}

// PeekAnswer skips the white space that starts br and returns, without consuming them, the
// next bytes (up to 64; fewer when the body ends first): the head [SniffAnswer] reads. It
// blocks until they arrive, as reading the answer would; a read error other than the body's
// end is returned.
func PeekAnswer(br *bufio.Reader) ([]byte, error) {
	for {
		b, err := br.Peek(1)
		if len(b) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, nil
		}
		if b[0] != ' ' && b[0] != '\t' && b[0] != '\r' && b[0] != '\n' {
			break
		}
		_, _ = br.ReadByte()
	}
	head, err := br.Peek(64)
	if len(head) > 0 {
		return head, nil
	}
	return nil, err
}

// NotAnswerError returns the error of an HTTP 200 answer that is not the API's answer (form
// AnswerOther, or a form the API does not use): status 200 and a Body naming the Content-Type
// and quoting the head, such as `HTTP 200 with a text/html body, not the API's answer:
// "<!DOCTYPE html>…"`. An empty body gets [CutError]'s "HTTP 200 with an empty body".
// harness.Retryable does not retry it: a server that answers with a web page (a wrong base URL,
// a login portal) answers so again.
func NotAnswerError(backend, url, contentType string, head []byte) *APIError {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 {
		return CutError(backend, url, "HTTP 200 with an empty body")
	}
	kind := "a body of no Content-Type"
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt != "" {
		kind = "a " + mt + " body"
	} else if contentType != "" {
		kind = "a body of Content-Type " + strconv.Quote(contentType)
	}
	const limit = 60
	q := head
	more := ""
	if len(q) > limit {
		q, more = q[:limit], "…"
	}
	return &APIError{Backend: backend, URL: url, StatusCode: 200, Body: fmt.Sprintf("HTTP 200 with %s, not the API's answer: %s%s", kind, strconv.Quote(string(q)), more)}
}

// NotAnswerJSONError returns the error of an HTTP 200 JSON body that is not the answer the API
// gives (a gateway's {"detail": "Not Found"}, null): status 200 and a Body naming what was
// expected and quoting the body, such as `HTTP 200 with a JSON body that is not a message (no
// type "message", no content array), not the API's answer: "{\"detail\":…}"`. quoted is the
// body as the backend quotes it (its own cut to length).
func NotAnswerJSONError(backend, what, quoted string) *APIError {
	return &APIError{Backend: backend, StatusCode: 200, Body: "HTTP 200 with a JSON body that is not " + what + ", not the API's answer: " + quoted}
}

// DefaultMaxReplyBytes is the most one answer's reply may hold unless the user says otherwise
// (lab run's --max-reply-bytes), in bytes: 16 MiB of text, reasoning and tool calls' names and
// arguments together, some thirty times the longest reply a 128k-token generation writes. It
// bounds the memory one answer takes whatever a server sends.
const DefaultMaxReplyBytes = 16 << 20

// ReplyTooLong begins the Body of the *APIError (StatusCode 200) of an answer whose reply grew
// past the limit ([ReplyTooLongError]); such an answer is recorded as an error row, not retried.
const ReplyTooLong = "reply too long"

// ReplyTooLongError returns the error of an answer whose reply (text, reasoning and tool calls
// together) grew past limit bytes: HTTP status 200 and a Body naming the limit and the flag that
// sets it.
func ReplyTooLongError(backend, url string, limit int64) *APIError {
	return &APIError{Backend: backend, URL: url, StatusCode: 200, Body: fmt.Sprintf("%s: the reply grew past the limit of %d bytes (--max-reply-bytes)", ReplyTooLong, limit)}
}
