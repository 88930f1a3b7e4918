package anthropic

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"lab/chat"
	"lab/internal/wire"
)

// event is one server-sent event of a Messages stream: its `event:` name and its `data:` JSON,
// whose "type" field names the event (message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta, message_stop, ping, error).
type event struct {
	name string
	typ  string
	data []byte
}

// content reports whether the event carries the answer's content: the first such event is the
// time to first token.
func (e event) content() bool {
	return e.typ == "content_block_start" || e.typ == "content_block_delta"
}

// readEvents reads server-sent events from r (lines "event: NAME" and "data: JSON", a blank line
// ending each event, lines starting with ":" ignored) and calls fn for each, stopping at the
// first error fn returns. An event the body's end cut before its blank line is dispatched only
// when its data is whole JSON: a stream cut inside an event is then seen as cut by its missing
// message_stop, not as a malformed event. The wire bound is that of the default reply limit
// ([readEventsMax]).
func readEvents(r io.Reader, fn func(event) error) error {
	return readEventsMax(r, chat.WireLimit(chat.DefaultMaxReplyBytes), fn)
}

// readEventsMax is [readEvents] with a bound on one line, and on one event's data, of max
// bytes: past it reading stops with [chat.ErrWireTooLong], the line not read whole. The events
// are read by the wire layer's reader ([wire.ReadEvents]); each event's data must be JSON, its
// `type` the event's type (else its name). A transport failure is returned as it is (not as a
// [wire.ReadError]).
func readEventsMax(r io.Reader, max int64, fn func(event) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	_, err := wire.ReadEvents(br, max, func(name string, data []byte) error {
		ev, err := decodeEvent(name, data)
		if err != nil {
			return err
		}
		return fn(ev)
	})
	var re wire.ReadError
	if errors.As(err, &re) {
		return re.Err
	}
	return err
}

// decodeEvent reads one server-sent event (its name and data): its data must be JSON, its
// `type` the event's type (else its name).
func decodeEvent(name string, data []byte) (event, error) {
	ev := event{name: name, data: data}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return ev, fmt.Errorf("event %q: data is not JSON: %s", name, quote(data))
	}
	ev.typ = t.Type
	if ev.typ == "" {
		ev.typ = name
	}
	return ev, nil
}

// streamError is an `error` event in a stream: the server failed after the HTTP 200.
type streamError struct{ msg string }

func (e *streamError) Error() string { return e.msg }

// wireUsage is the API's usage object; a field absent or null stays nil (unknown).
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m *int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens *int64 `json:"output_tokens"`
}

// wireBlock is a content block as content_block_start or a whole response gives it.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// size returns the bytes of the reply a block holds as it starts (or whole, in an unstreamed
// message): text, thinking, signature, redacted data, tool name and input.
func (b wireBlock) size() int {
	return len(b.Text) + len(b.Thinking) + len(b.Signature) + len(b.Data) + len(b.Name) + len(b.Input)
}

type wireDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

// usageField is one usage count and the wire field it came from.
type usageField struct {
	v   *int64
	src string
}

// block is one content block being assembled.
type block struct {
	wireBlock
	json    strings.Builder
	partial bool
	// text, thinking and signature collect the deltas after wireBlock's own start values:
	// appending to a builder keeps a long answer of many deltas linear in its size (adding to
	// a string copies it whole each time).
	text, thinking, signature strings.Builder
}

// fullText, fullThinking and fullSignature return the block's value: its start value and every
// delta after it.
func (b *block) fullText() string      { return b.Text + b.text.String() }
func (b *block) fullThinking() string  { return b.Thinking + b.thinking.String() }
func (b *block) fullSignature() string { return b.Signature + b.signature.String() }

// accumulator assembles a Messages answer from its events (or from one whole response).
type accumulator struct {
	started bool
	// stopped is set by message_stop, the end of a whole stream; events counts the events.
	stopped    bool
	events     int
	id         string
	stopReason string
	blocks     map[int]*block
	// count counts the reply's bytes (text, thinking and its signatures, tool names and input
	// JSON) against the request's reply limit.
	count chat.ReplyCounter

	input, cacheRead, cacheWrite, write5m, write1h, output usageField
}

func (a *accumulator) usage(u *wireUsage, prefix string) {
	if u == nil {
		return
	}
	set := func(dst *usageField, v *int64, name string) {
		if v != nil {
			*dst = usageField{v: v, src: prefix + "." + name}
		}
	}
	set(&a.input, u.InputTokens, "input_tokens")
	set(&a.cacheRead, u.CacheReadInputTokens, "cache_read_input_tokens")
	set(&a.cacheWrite, u.CacheCreationInputTokens, "cache_creation_input_tokens")
	if u.CacheCreation != nil {
		set(&a.write5m, u.CacheCreation.Ephemeral5m, "cache_creation.ephemeral_5m_input_tokens")
		set(&a.write1h, u.CacheCreation.Ephemeral1h, "cache_creation.ephemeral_1h_input_tokens")
	}
	set(&a.output, u.OutputTokens, "output_tokens")
}

func (a *accumulator) block(i int) *block {
	if a.blocks == nil {
		a.blocks = map[int]*block{}
	}
	b, ok := a.blocks[i]
	if !ok {
		b = &block{}
		a.blocks[i] = b
		a.count.AddPiece()
	}
	return b
}

// add takes one stream event. message_delta's usage is cumulative and wins over
// message_start's for every field it carries.
func (a *accumulator) add(ev event) error {
	a.events++
	switch ev.typ {
	case "message_stop":
		a.stopped = true
	case "message_start":
		var m struct {
			Message struct {
				ID    string     `json:"id"`
				Usage *wireUsage `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal(ev.data, &m); err != nil {
			return fmt.Errorf("message_start: %w", err)
		}
		a.started = true
		a.id = m.Message.ID
		a.usage(m.Message.Usage, "message_start.message.usage")
	case "content_block_start":
		var m struct {
			Index        int       `json:"index"`
			ContentBlock wireBlock `json:"content_block"`
		}
		if err := json.Unmarshal(ev.data, &m); err != nil {
			return fmt.Errorf("content_block_start: %w", err)
		}
		a.block(m.Index).wireBlock = m.ContentBlock
		a.count.Add(m.ContentBlock.size())
	case "content_block_delta":
		var m struct {
			Index int       `json:"index"`
			Delta wireDelta `json:"delta"`
		}
		if err := json.Unmarshal(ev.data, &m); err != nil {
			return fmt.Errorf("content_block_delta: %w", err)
		}
		b := a.block(m.Index)
		a.count.Add(len(m.Delta.Text) + len(m.Delta.Thinking) + len(m.Delta.Signature) + len(m.Delta.PartialJSON))
		switch m.Delta.Type {
		case "text_delta":
			b.text.WriteString(m.Delta.Text)
		case "thinking_delta":
			b.thinking.WriteString(m.Delta.Thinking)
		case "signature_delta":
			b.signature.WriteString(m.Delta.Signature)
		case "input_json_delta":
			if !b.partial && b.Type == "tool_use" {
				// The input comes in deltas: the start's input (the API's "input": {}
				// placeholder) is not the call's arguments, and was counted.
				a.count.Add(-len(b.Input))
			}
			b.json.WriteString(m.Delta.PartialJSON)
			b.partial = true
		}
	case "message_delta":
		var m struct {
			Delta wireDelta  `json:"delta"`
			Usage *wireUsage `json:"usage"`
		}
		if err := json.Unmarshal(ev.data, &m); err != nil {
			return fmt.Errorf("message_delta: %w", err)
		}
		if m.Delta.StopReason != "" {
			a.stopReason = m.Delta.StopReason
		}
		a.usage(m.Usage, "message_delta.usage")
	case "error":
		var m struct {
			Error apiErr `json:"error"`
		}
		if err := json.Unmarshal(ev.data, &m); err != nil || (m.Error.Type == "" && m.Error.Message == "") {
			return &streamError{msg: quote(ev.data)}
		}
		return &streamError{msg: m.Error.String()}
	}
	return nil
}

// whole takes a non-streamed response body: a message, or an error body ({"type": "error"}: a
// *streamError). A JSON body that is neither (no type "message" and no content array) is a
// *chat.APIError with status 200 quoting it: not the API's answer.
func (a *accumulator) whole(b []byte) error {
	var m struct {
		Type       string      `json:"type"`
		Error      *apiErr     `json:"error"`
		ID         string      `json:"id"`
		Content    []wireBlock `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      *wireUsage  `json:"usage"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("the response is not a message: %s", quote(b))
	}
	if m.Type == "error" || m.Error != nil {
		if m.Error == nil {
			return &streamError{msg: quote(b)}
		}
		return &streamError{msg: m.Error.String()}
	}
	if m.Type != "message" && m.Content == nil {
		// Not a message (a proxy's {"detail": "Not Found"}, null): its figures are not the
		// answer's.
		return chat.NotAnswerJSONError("anthropic", `a message (no type "message", no content array)`, quote(bytes.TrimSpace(b)))
	}
	a.started, a.stopped = true, true
	a.id, a.stopReason = m.ID, m.StopReason
	for i, c := range m.Content {
		a.block(i).wireBlock = c
		a.count.Add(c.size())
	}
	a.usage(m.Usage, "usage")
	return nil
}

// end returns nil when the answer was whole (message_start … message_stop, or a whole
// message), else the chat.CutError (URL empty) naming what the stream lacked: "no events" for a
// stream with none, "no message_start" for a stream whose message_stop came without the
// message (and the prompt's usage) it ends, "no message_stop".
func (a *accumulator) end() error {
	switch {
	case a.stopped && !a.started:
		return chat.CutError("anthropic", "", "no message_start")
	case a.stopped:
		return nil
	case a.events == 0:
		return chat.CutError("anthropic", "", "no events")
	}
	return chat.CutError("anthropic", "", "no message_stop")
}

// response returns the assembled answer, its blocks in index order.
func (a *accumulator) response() *Response {
	r := &Response{ID: a.id, StopReason: a.stopReason, Message: chat.Message{Role: chat.RoleAssistant}}
	idx := make([]int, 0, len(a.blocks))
	for i := range a.blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var reasoning, text []string
	for _, i := range idx {
		b := a.blocks[i]
		switch b.Type {
		case "thinking":
			r.Message.Thinking = append(r.Message.Thinking, chat.ThinkingBlock{Text: b.fullThinking(), Signature: b.fullSignature()})
			reasoning = append(reasoning, b.fullThinking())
		case "redacted_thinking":
			r.Message.Thinking = append(r.Message.Thinking, chat.ThinkingBlock{Redacted: true, Data: b.Data})
		case "text":
			text = append(text, b.fullText())
		case "tool_use":
			args := json.RawMessage(b.Input)
			if b.partial {
				args = json.RawMessage(b.json.String())
			}
			if len(strings.TrimSpace(string(args))) == 0 {
				args = json.RawMessage("{}")
			}
			r.Message.ToolCalls = append(r.Message.ToolCalls, chat.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	r.Message.Reasoning = strings.Join(reasoning, "\n\n")
	r.Message.Content = strings.Join(text, "")
	return r
}

// apiErr is the API's error object ({"type", "message"}), in an error body or event.
type apiErr struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// String returns "type: message", or the message when there is no type.
func (e *apiErr) String() string {
	if e.Type == "" {
		return e.Message
	}
	return e.Type + ": " + e.Message
}
