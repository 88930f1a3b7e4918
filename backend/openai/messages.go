// Package openai holds the lab's encoding of the OpenAI Chat Completions dialect (llama-server,
// vLLM, SGLang, DeepSeek, OpenRouter and OpenAI itself speak it). So far only the request's
// `messages` array ([EncodeMessages]); the backend comes later.
package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"lab/chat"
)

// message is one element of a Chat Completions `messages` array. Field order is the order the
// keys are written in.
type message struct {
	Role string `json:"role"`
	// Content is always written, "" included: llama-server, vLLM and OpenAI accept an empty
	// string beside tool_calls, and a string keeps every message the same shape.
	Content          string     `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function function `json:"function"`
}

type function struct {
	Name string `json:"name"`
	// Arguments is the JSON object as a string, the bytes the model wrote.
	Arguments string `json:"arguments"`
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
func EncodeMessages(msgs []chat.Message) ([]byte, error) {
	out := make([]message, 0, len(msgs))
	for i, m := range msgs {
		om := message{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case chat.RoleSystem, chat.RoleUser:
		case chat.RoleAssistant:
			om.ReasoningContent = m.Reasoning
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("openai: message %d: a tool call needs an id and a name", i)
				}
				args := string(tc.Arguments)
				if len(bytes.TrimSpace(tc.Arguments)) == 0 {
					args = "{}"
				}
				om.ToolCalls = append(om.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: function{Name: tc.Name, Arguments: args}})
			}
		case chat.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("openai: message %d: a tool message needs the tool_call_id of the call it answers", i)
			}
			om.ToolCallID = m.ToolCallID
		default:
			return nil, fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)
		}
		out = append(out, om)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
