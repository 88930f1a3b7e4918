package llamacpp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"lab/chat"
)

// usage is the OpenAI-style usage object llama-server sends (server_task_result_cmpl_final in
// tools/server/server-task.cpp); every count is a pointer so that a missing one stays unknown.
type usage struct {
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    *int64 `json:"completion_tokens"`
	TotalTokens         *int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// timings is llama-server's `timings` object (result_timings::to_json): cache_n prompt tokens
// reused from the KV cache, prompt_n prefilled, prompt_ms the prefill time, predicted_n tokens
// generated in predicted_ms.
type timings struct {
	CacheN      *int64   `json:"cache_n"`
	PromptN     *int64   `json:"prompt_n"`
	PromptMS    *float64 `json:"prompt_ms"`
	PredictedN  *int64   `json:"predicted_n"`
	PredictedMS *float64 `json:"predicted_ms"`
}

// toolCallPart is one tool call of a message, or a fragment of one in a stream delta.
type toolCallPart struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// messagePart is a choice's `message` (whole answer) or `delta` (stream chunk).
type messagePart struct {
	Content          *string        `json:"content"`
	ReasoningContent *string        `json:"reasoning_content"`
	ToolCalls        []toolCallPart `json:"tool_calls"`
}

// chunk is one streamed chat.completion.chunk, or a whole chat.completion.
type chunk struct {
	Choices []struct {
		Delta        *messagePart `json:"delta"`
		Message      *messagePart `json:"message"`
		FinishReason *string      `json:"finish_reason"`
	} `json:"choices"`
	Usage          *usage          `json:"usage"`
	Timings        *timings        `json:"timings"`
	Error          json.RawMessage `json:"error"`
	PromptProgress json.RawMessage `json:"prompt_progress"`
}

// completion is what one chat request's answer said, streamed or whole.
type completion struct {
	// Content, Reasoning and ToolCalls are the generated message, put together from the deltas.
	Content, Reasoning string
	ToolCalls          []chat.ToolCall
	// FinishReason is the last finish_reason given ("" when none).
	FinishReason string
	// Usage and Timings are the last ones the answer carried; nil when none.
	Usage   *usage
	Timings *timings
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
	acc := newAccumulator()
	acc.count.Limit = limit
	acc.add(&ch)
	c := acc.result()
	if acc.count.Over() {
		return c, acc.count.Err(backendName, "")
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

// readStreamMax is [readStream] with a reply limit of limit bytes, as [readCompletionMax].
func readStreamMax(r io.Reader, limit int64, first func()) (*completion, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	acc := newAccumulator()
	acc.count.Limit = limit
	started, done, chunks := false, false, 0
	// take reads one line; last says the body ended after it without a newline.
	take := func(line []byte, last bool) (stop bool, err error) {
		field, value, ok := bytes.Cut(line, []byte(":"))
		if len(line) == 0 || len(field) == 0 || !ok {
			return false, nil // blank line, `:` comment (ping) or a line with no field
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "error":
			return true, streamError(value)
		case "data":
		default:
			return false, nil // event:, id:, retry:
		}
		if string(bytes.TrimSpace(value)) == "[DONE]" {
			done = true
			return true, nil
		}
		if last && !json.Valid(value) {
			return true, nil // the body ended inside this chunk: a cut stream
		}
		var ch chunk
		if err := json.Unmarshal(value, &ch); err != nil {
			return true, fmt.Errorf("stream chunk is not JSON: %v: %s", err, quote(value))
		}
		chunks++
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return true, streamError(ch.Error)
		}
		if len(ch.PromptProgress) > 0 && len(ch.Choices) == 0 && ch.Usage == nil && ch.Timings == nil {
			return false, nil // return_progress: prefill progress, not an answer
		}
		if !started {
			started = true
			first()
		}
		acc.add(&ch)
		if acc.count.Over() {
			// Stop reading: the caller closes the body, which drops the connection.
			return true, acc.count.Err(backendName, "")
		}
		return false, nil
	}
	for {
		line, rerr := chat.ReadLine(br, chat.WireLimit(limit))
		if errors.Is(rerr, chat.ErrWireTooLong) {
			return acc.result(), chat.ReplyTooLongError(backendName, "", limit)
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return acc.result(), rerr
		}
		last := rerr != nil && !bytes.HasSuffix(line, []byte("\n"))
		stop, err := take(bytes.TrimRight(line, "\r\n"), last)
		if err != nil {
			return acc.result(), err
		}
		if stop || rerr != nil {
			break
		}
	}
	c := acc.result()
	c.Done = done
	switch {
	case done && chunks == 0:
		return c, chat.CutError(backendName, "", "no chunk before data: [DONE]")
	case done:
	case chunks == 0:
		return c, chat.CutError(backendName, "", "no events")
	case c.FinishReason == "":
		return c, chat.CutError(backendName, "", "no data: [DONE] and no finish_reason")
	case c.Usage == nil:
		return c, chat.CutError(backendName, "", "no data: [DONE] and no usage after the finish_reason")
	}
	return c, nil
}

// accumulator puts a message together from stream deltas.
type accumulator struct {
	content, reasoning bytes.Buffer
	calls              map[int]*chat.ToolCall
	args               map[int]*bytes.Buffer
	// names are the calls' names as their fragments add up, set on the calls by result.
	names map[int]*strings.Builder
	order []int
	// count counts the reply's bytes against the request's limit.
	count   chat.ReplyCounter
	finish  string
	usage   *usage
	timings *timings
}

func newAccumulator() *accumulator {
	return &accumulator{calls: map[int]*chat.ToolCall{}, args: map[int]*bytes.Buffer{}, names: map[int]*strings.Builder{}}
}

func (a *accumulator) add(ch *chunk) {
	if ch.Usage != nil {
		a.usage = ch.Usage
	}
	if ch.Timings != nil {
		a.timings = ch.Timings
	}
	for _, c := range ch.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finish = *c.FinishReason
		}
		m := c.Delta
		if m == nil {
			m = c.Message
		}
		if m == nil {
			continue
		}
		if m.Content != nil {
			a.count.Add(len(*m.Content))
			a.content.WriteString(*m.Content)
		}
		if m.ReasoningContent != nil {
			a.count.Add(len(*m.ReasoningContent))
			a.reasoning.WriteString(*m.ReasoningContent)
		}
		for i, tc := range m.ToolCalls {
			idx := i
			if tc.Index != nil {
				idx = *tc.Index
			}
			call, ok := a.calls[idx]
			if !ok {
				call = &chat.ToolCall{}
				a.calls[idx], a.args[idx], a.names[idx] = call, &bytes.Buffer{}, &strings.Builder{}
				a.order = append(a.order, idx)
				if !a.count.AddPiece() {
					return // past the limit: the rest of the chunk is not held
				}
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			a.count.Add(len(tc.Function.Name) + len(tc.Function.Arguments))
			a.names[idx].WriteString(tc.Function.Name)
			a.args[idx].WriteString(tc.Function.Arguments)
		}
	}
}

func (a *accumulator) result() *completion {
	c := &completion{Content: a.content.String(), Reasoning: a.reasoning.String(), FinishReason: a.finish, Usage: a.usage, Timings: a.timings}
	sort.Ints(a.order)
	for _, idx := range a.order {
		call := *a.calls[idx]
		call.Name = a.names[idx].String()
		call.Arguments = json.RawMessage(a.args[idx].String())
		c.ToolCalls = append(c.ToolCalls, call)
	}
	return c
}
