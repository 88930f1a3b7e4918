package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"lab/chat"
	"lab/internal/wire"
)

// The assistant message fields reasoning text can be sent back in (EncodeOptions.ReasoningField).
const (
	// FieldReasoningContent is `reasoning_content`: llama-server, SGLang, DeepSeek.
	FieldReasoningContent = "reasoning_content"
	// FieldReasoning is `reasoning`: vLLM since the rename (vllm-project/vllm PR #27752; its
	// CustomChatCompletionMessageParam.reasoning), OpenRouter, Ollama's compat endpoint.
	FieldReasoning = "reasoning"
)

// EncodeOptions says how [EncodeMessagesWith] writes the reasoning of assistant messages.
// The zero value sends no reasoning at all.
type EncodeOptions struct {
	// ReasoningField names the assistant message field that carries chat.Message.Reasoning:
	// FieldReasoningContent, FieldReasoning, or "" to send none.
	ReasoningField string
	// ReasoningOnToolCalls writes ReasoningField on every assistant message that has tool
	// calls, "" when the message carries no reasoning. DeepSeek's thinking mode answers HTTP
	// 400 "The `reasoning_content` in the thinking mode must be passed back to the API" when a
	// tool-call turn lacks the field (https://api-docs.deepseek.com/guides/thinking_mode).
	ReasoningOnToolCalls bool
}

// EncodeMessages returns the Chat Completions `messages` array for msgs, in order, as JSON
// (HTML characters not escaped, no trailing newline):
//
//   - system and user messages: {"role", "content"};
//   - assistant messages: {"role", "content", "reasoning_content", "tool_calls"}, where
//     reasoning_content is the message's Reasoning (spec 3.2.0 §8: the reasoning it came with)
//     and is absent when Reasoning is empty — never an empty field — and tool_calls, absent when
//     there are none, are {"id", "type": "function", "function": {"name", "arguments"}} with the
//     arguments as a string holding the JSON the model wrote ("{}" when it wrote none);
//   - tool messages: {"role": "tool", "content", "tool_call_id"}.
//
// It sends what it is given: which messages carry reasoning is decided before, by
// hygiene.CurrentTurnReasoning. Anthropic thinking blocks (chat.Message Thinking) are not part
// of this dialect and are not sent. An unknown role, a tool message without ToolCallID or a
// tool call without ID or Name is an error.
//
// EncodeMessages is EncodeMessagesWith with ReasoningField FieldReasoningContent.
func EncodeMessages(msgs []chat.Message) ([]byte, error) {
	return EncodeMessagesWith(msgs, EncodeOptions{ReasoningField: FieldReasoningContent})
}

// EncodeMessagesWith is [EncodeMessages] with the reasoning written as o says: in the field
// o.ReasoningField (none when ""), and, with o.ReasoningOnToolCalls, present ("" when empty) on
// every assistant message with tool calls. Keys are written in the order role, content,
// reasoning, tool_calls, tool_call_id.
func EncodeMessagesWith(msgs []chat.Message, o EncodeOptions) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeMessage(&b, i, m, o); err != nil {
			return nil, err
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// AppendMessage appends to dst the element of [EncodeMessagesWith]'s array that message m is at
// index i (the index names it in errors only): the same bytes, without a separating comma. Its
// errors are EncodeMessagesWith's for that message.
func AppendMessage(dst []byte, i int, m chat.Message, o EncodeOptions) ([]byte, error) {
	b := bytes.NewBuffer(dst)
	if err := writeMessage(b, i, m, o); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeMessage writes message m, at index i of the array, as [EncodeMessagesWith] does.
func writeMessage(b *bytes.Buffer, i int, m chat.Message, o EncodeOptions) error {
	b.WriteString(`{"role":`)
	writeString(b, string(m.Role))
	// Content is always written, "" included: llama-server, vLLM and OpenAI accept an empty
	// string beside tool_calls, and a string keeps every message the same shape.
	b.WriteString(`,"content":`)
	writeString(b, m.Content)
	switch m.Role {
	case chat.RoleSystem, chat.RoleUser:
	case chat.RoleAssistant:
		if o.ReasoningField != "" && (m.Reasoning != "" || (o.ReasoningOnToolCalls && len(m.ToolCalls) > 0)) {
			b.WriteByte(',')
			writeString(b, o.ReasoningField)
			b.WriteByte(':')
			writeString(b, m.Reasoning)
		}
		if len(m.ToolCalls) > 0 {
			b.WriteString(`,"tool_calls":[`)
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return fmt.Errorf("openai: message %d: a tool call needs an id and a name", i)
				}
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"id":`)
				writeString(b, tc.ID)
				b.WriteString(`,"type":"function","function":{"name":`)
				writeString(b, tc.Name)
				b.WriteString(`,"arguments":`)
				writeString(b, arguments(tc.Arguments))
				b.WriteString(`}}`)
			}
			b.WriteByte(']')
		}
	case chat.RoleTool:
		if m.ToolCallID == "" {
			return fmt.Errorf("openai: message %d: a tool message needs the tool_call_id of the call it answers", i)
		}
		b.WriteString(`,"tool_call_id":`)
		writeString(b, m.ToolCallID)
	default:
		return fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)
	}
	b.WriteByte('}')
	return nil
}

// EncodeTools returns the Chat Completions `tools` array for tools, in order:
// [{"type": "function", "function": {"name", "description", "parameters"}}], the parameters
// compacted ({"type":"object","properties":{}} when empty), description absent when empty. A
// tool without a name or with parameters that are not JSON is an error.
func EncodeTools(tools []chat.Tool) ([]byte, error) {
	return encodeTools(tools, false)
}

// encodeTools writes the Chat Completions form, or with flat the Responses API form
// {"type": "function", "name", "description", "parameters", "strict": false} (the Responses API
// makes function tools strict unless told otherwise, and strict mode refuses ordinary schemas).
func encodeTools(tools []chat.Tool, flat bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("openai: tool %d: no name", i)
		}
		params := []byte(`{"type":"object","properties":{}}`)
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			var c bytes.Buffer
			if err := json.Compact(&c, t.Parameters); err != nil {
				return nil, fmt.Errorf("openai: tool %s parameters: %w", t.Name, err)
			}
			params = c.Bytes()
		}
		if i > 0 {
			b.WriteByte(',')
		}
		if flat {
			b.WriteString(`{"type":"function","name":`)
		} else {
			b.WriteString(`{"type":"function","function":{"name":`)
		}
		writeString(&b, t.Name)
		if t.Description != "" {
			b.WriteString(`,"description":`)
			writeString(&b, t.Description)
		}
		b.WriteString(`,"parameters":`)
		b.Write(params)
		if flat {
			b.WriteString(`,"strict":false}`)
		} else {
			b.WriteString(`}}`)
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// arguments is a tool call's arguments as the string the dialects carry: the JSON the model
// wrote, "{}" when it wrote none.
func arguments(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	return string(raw)
}

// writeString writes s as a JSON string, HTML characters not escaped ([wire.Marshal]).
func writeString(b *bytes.Buffer, s string) {
	b.Grow(len(s) + 2)
	b.Write(wire.AppendString(b.AvailableBuffer(), s))
}
