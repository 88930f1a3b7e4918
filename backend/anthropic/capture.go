package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"lab/chat"
)

// This file serves `lab proxy` (package capture): it reads requests another client sent to the
// Messages API and the answers it got, with the same stream accumulator and usage rules as
// [Client.Send].

// DecodeRequest is the inverse of the request encoding ([System], [EncodeMessages]): it reads a
// Messages API body's `system`, `messages` and `tools` into a chat.Request.
//
//   - `system` (a string, or text blocks joined) becomes the first message, chat.RoleSystem;
//   - an assistant message's thinking and redacted_thinking blocks become Thinking (and their
//     text, joined by a blank line, Reasoning), its text blocks Content, its tool_use blocks
//     ToolCalls with `input` as the arguments;
//   - a user message's tool_result blocks each become a chat.RoleTool message (its content a
//     string, or text blocks joined), and its text blocks one user message, in block order;
//   - a message of another role is read as a user message is, keeping its role: Claude Code
//     sends a `role: "system"` message inside `messages`, which becomes chat.RoleSystem where
//     it stands ("system N");
//   - every other block (image, document, search_result, server_tool_use,
//     web_search_tool_result, mcp_tool_use, a type the lab does not know, and the non-text
//     blocks of a tool_result's content) becomes a message of its own ([chat.ItemMessage],
//     Item the block's type): in block order in a user message, after the assistant message
//     it came in;
//   - a tool of a type other than "custom" (web_search_20250305, bash_20250124, …) keeps its
//     JSON as its parameters.
//
// The `cache_control` markers are listed in CacheBreakpoints as [AtTools], [AtSystem] and
// [AtMessage] of the marked message's index in the decoded Messages ("message N"). Think is set when `thinking.type` is
// "enabled" or "adaptive". A body that is not a Messages request is an error naming the field.
func DecodeRequest(body []byte) (*chat.Request, error) {
	var b struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Type         string          `json:"type"`
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
		} `json:"tools"`
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("anthropic: request body: %w", err)
	}
	if b.Messages == nil {
		return nil, fmt.Errorf("anthropic: request body: no messages array")
	}
	var rawTools struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &rawTools); err != nil {
		return nil, fmt.Errorf("anthropic: request body: tools: %w", err)
	}
	req := &chat.Request{Think: b.Thinking != nil && (b.Thinking.Type == "enabled" || b.Thinking.Type == "adaptive")}
	for i, t := range b.Tools {
		params := t.InputSchema
		if t.Type != "" && t.Type != "custom" {
			// A server or client tool of Anthropic's (web_search_20250305, bash_20250124,
			// text_editor_…): no schema, its JSON is what the model is told.
			params = bytes.TrimSpace(rawTools.Tools[i])
		}
		req.Tools = append(req.Tools, chat.Tool{Name: t.Name, Description: t.Description, Parameters: params})
		if len(t.CacheControl) > 0 && string(t.CacheControl) != "null" && !contains(req.CacheBreakpoints, AtTools) {
			req.CacheBreakpoints = append(req.CacheBreakpoints, AtTools)
		}
	}
	if sys := bytes.TrimSpace(b.System); len(sys) > 0 && string(sys) != "null" {
		blocks, err := decodeBlocks(sys)
		if err != nil {
			return nil, fmt.Errorf("anthropic: system: %w", err)
		}
		var text []string
		marked := false
		for _, bl := range blocks {
			text = append(text, bl.Text)
			marked = marked || bl.marked()
		}
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: strings.Join(text, "\n\n")})
		if marked {
			req.CacheBreakpoints = append(req.CacheBreakpoints, AtSystem)
		}
	}
	for i, m := range b.Messages {
		blocks, err := decodeBlocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("anthropic: messages[%d].content: %w", i, err)
		}
		marked := false
		markAt := -1 // the decoded message holding the last marked block, when not the last one
		switch m.Role {
		case "assistant":
			msg := chat.Message{Role: chat.RoleAssistant}
			var reasoning []string
			var items []chat.Message
			at := len(req.Messages)
			for _, bl := range blocks {
				marked = marked || bl.marked()
				switch bl.Type {
				case "thinking":
					msg.Thinking = append(msg.Thinking, chat.ThinkingBlock{Text: bl.Thinking, Signature: bl.Signature})
					reasoning = append(reasoning, bl.Thinking)
				case "redacted_thinking":
					msg.Thinking = append(msg.Thinking, chat.ThinkingBlock{Redacted: true, Data: bl.Data})
				case "text":
					msg.Content += bl.Text
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: bl.ID, Name: bl.Name, Arguments: bl.Input})
				default:
					items = append(items, chat.ItemMessage(chat.RoleAssistant, bl.Type, bl.raw))
					if bl.marked() {
						markAt = at + len(items)
					}
					continue
				}
				if bl.marked() {
					markAt = at
				}
			}
			msg.Reasoning = strings.Join(reasoning, "\n\n")
			req.Messages = append(req.Messages, msg)
			req.Messages = append(req.Messages, items...)
		default:
			// user, and any other role where it stands: Claude Code sends a "system" message
			// inside messages.
			role := chat.Role(m.Role)
			var text []string
			flush := func() {
				if text != nil {
					req.Messages = append(req.Messages, chat.Message{Role: role, Content: strings.Join(text, "\n\n")})
					text = nil
				}
			}
			for _, bl := range blocks {
				marked = marked || bl.marked()
				switch bl.Type {
				case "text":
					text = append(text, bl.Text)
				case "tool_result":
					flush()
					content, others, err := resultContent(bl.Content)
					if err != nil {
						return nil, fmt.Errorf("anthropic: messages[%d] tool_result %s: %w", i, bl.ToolUseID, err)
					}
					req.Messages = append(req.Messages, chat.Message{Role: chat.RoleTool, Content: content, ToolCallID: bl.ToolUseID})
					for _, o := range others {
						req.Messages = append(req.Messages, chat.ItemMessage(chat.RoleTool, o.Type, o.raw))
					}
				default:
					flush()
					req.Messages = append(req.Messages, chat.ItemMessage(role, bl.Type, bl.raw))
				}
			}
			flush()
		}
		if marked {
			if markAt < 0 {
				markAt = len(req.Messages) - 1
			}
			req.CacheBreakpoints = append(req.CacheBreakpoints, AtMessage(markAt))
		}
	}
	return req, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// atMessage is the word before the index in [AtMessage]'s places.
const atMessage = "message "

// AtMessage is the breakpoint place on message i, its 0-based index in chat.Request.Messages:
// "message N" (the text the results' divergence_segment column gives the same message), as
// [DecodeRequest] lists a captured request's markers in CacheBreakpoints. It is not a place
// [ParseBreakpoints] accepts: the client places its markers by [AtTools], [AtSystem] and
// [AtLastMessage].
func AtMessage(i int) string { return atMessage + strconv.Itoa(i) }

// MessageAt returns the message index an [AtMessage] place names; ok is false for any other
// place (a place of another kind, a negative or non-canonical index such as "message 01").
func MessageAt(place string) (i int, ok bool) {
	n, found := strings.CutPrefix(place, atMessage)
	if !found {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || strconv.Itoa(i) != n {
		return 0, false
	}
	return i, true
}

// captureBlock is a content block of a request as the decoder reads it, with its JSON bytes.
type captureBlock struct {
	wireBlock
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
	raw          []byte
}

func (b *captureBlock) marked() bool {
	return len(b.CacheControl) > 0 && string(b.CacheControl) != "null"
}

// decodeBlocks reads a content that is a string (one text block), an array of blocks, or one
// block object.
func decodeBlocks(raw json.RawMessage) ([]captureBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []captureBlock{{wireBlock: wireBlock{Type: "text", Text: s}, raw: raw}}, nil
	}
	var raws []json.RawMessage
	if raw[0] == '{' {
		raws = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, err
	}
	blocks := make([]captureBlock, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &blocks[i]); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		blocks[i].raw = bytes.TrimSpace(r)
	}
	return blocks, nil
}

// resultText returns a tool_result's content: a string, or its text blocks joined.
func resultText(raw json.RawMessage) (string, error) {
	text, _, err := resultContent(raw)
	return text, err
}

// resultContent is resultText, also returning the content's other blocks (images, documents,
// search results, types the lab does not know), in order.
func resultContent(raw json.RawMessage) (string, []captureBlock, error) {
	blocks, err := decodeBlocks(raw)
	if err != nil {
		return "", nil, err
	}
	var text []string
	var others []captureBlock
	for _, b := range blocks {
		if b.Type == "text" {
			text = append(text, b.Text)
		} else {
			others = append(others, b)
		}
	}
	return strings.Join(text, "\n\n"), others, nil
}

// Capture reads one Messages API answer: the events of its stream ([Capture.Event]) or an
// unstreamed message ([Capture.Whole]). It is the accumulator [Client.Send] reads its own
// answers with. The zero value is ready to use; not safe for concurrent use.
type Capture struct {
	acc   accumulator
	whole bool
}

// Event takes one server-sent event (its `event:` name and its `data:`) and reports whether it
// carried the answer's content (a content block's start or delta: the first is the time to
// first token). An `error` event is returned as a *chat.APIError with the server's message;
// data that is not JSON is an error.
func (c *Capture) Event(name string, data []byte) (content bool, err error) {
	ev, err := decodeEvent(name, data)
	if err != nil {
		return false, err
	}
	if err := c.take(ev); err != nil {
		if se, ok := err.(*streamError); ok {
			return false, &chat.APIError{Backend: "anthropic", Body: "error event in the stream: " + se.msg}
		}
		return false, err
	}
	return ev.content(), nil
}

// take adds one decoded event to the answer; an `error` event is a *streamError.
func (c *Capture) take(ev event) error {
	return c.acc.add(ev)
}

// Whole takes an unstreamed message body; an error body ({"type": "error", "error": {…}}) is
// returned as a *chat.APIError with the server's message.
func (c *Capture) Whole(body []byte) error {
	err := c.wholeBody(body)
	if se, ok := err.(*streamError); ok {
		return &chat.APIError{Backend: "anthropic", Body: se.msg}
	}
	return err
}

// wholeBody is Whole, an error body a *streamError.
func (c *Capture) wholeBody(body []byte) error {
	c.whole = true
	return c.acc.whole(body)
}

// End reports whether the answer was whole: nil for a whole message or a stream that ended
// with message_stop; else a *chat.APIError ([chat.CutError], URL empty): "no events" for a
// stream with none, "no message_stop" (a stream cut after message_start, whose usage would
// otherwise look like the whole answer's).
func (c *Capture) End() error { return c.acc.end() }

// Reply returns the generated message as far as it came: thinking blocks (with their
// signatures), reasoning text, text and tool calls.
func (c *Capture) Reply() *chat.Reply {
	m := c.acc.response().Message
	return &chat.Reply{Reasoning: m.Reasoning, Content: m.Content, ToolCalls: m.ToolCalls, Thinking: m.Thinking}
}

// Result returns the figures as [Client.Send] reads them: PromptTokens = input_tokens +
// cache_read_input_tokens + cache_creation_input_tokens (those the server sends; see the
// package documentation), CachedTokens = cache_read_input_tokens
// (source "response"), the cache writes with their 5-minute and 1-hour split, CompletionTokens =
// output_tokens, and Usage with the wire field of each count. TTFT and Total are the caller's.
// Of a cut stream ([Capture.End]) the prompt's counts, which message_start gave, are kept; its
// output_tokens (the count when the message started, not what was generated) is not: the
// completion tokens stay unknown.
func (c *Capture) Result() *chat.Result {
	res := &chat.Result{}
	acc := c.acc
	if acc.end() != nil && strings.HasPrefix(acc.output.src, "message_start.") {
		acc.output = usageField{}
	}
	fill(res, &acc, !c.whole)
	return res
}
