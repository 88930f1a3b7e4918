package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"lab/chat"
	"lab/internal/wire"
)

// message is one element of a Messages API `messages` array.
type message struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedBlock struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

// cacheControl is a block's `cache_control` breakpoint: {"type": "ephemeral"} (5 minutes) or
// {"type": "ephemeral", "ttl": "1h"}.
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type textBlock struct {
	Type         string        `json:"type"`
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type toolUseBlock struct {
	Type         string          `json:"type"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type toolResultBlock struct {
	Type         string        `json:"type"`
	ToolUseID    string        `json:"tool_use_id"`
	Content      string        `json:"content"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// System returns the request's top-level `system` text: the contents of the system messages at
// the start of msgs, joined by a blank line ("" when there are none). The Messages API carries
// the system prompt apart from `messages`.
func System(msgs []chat.Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role != chat.RoleSystem {
			break
		}
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, "\n\n")
}

// EncodeMessages returns the Messages API `messages` array for msgs as JSON (HTML characters
// not escaped, no trailing newline). The system messages at the start of msgs are left out (see
// [System]); a system message anywhere else is an error. Every message's content is an array of
// blocks:
//
//   - an assistant message: its thinking blocks first, unchanged and in order, each with its
//     signature ({"type": "thinking", "thinking", "signature"}; {"type": "redacted_thinking",
//     "data"}), then its text ({"type": "text", "text"}, absent when Content is empty), then its
//     tool calls ({"type": "tool_use", "id", "name", "input"}, input the JSON object the model
//     wrote, "{}" when none) — spec 3.2.0 §8 and the API's rule for tool use. Reasoning held
//     only as text (chat.Message Reasoning without Thinking) is not sent: the API accepts
//     thinking only with the signature it gave;
//   - a tool result: a user message with {"type": "tool_result", "tool_use_id", "content"};
//   - a user message: {"type": "text", "text"}.
//
// Consecutive user-side messages (tool results and user messages, an interjection say) go into
// one user message, their blocks in order, as the API requires all results of a step in the
// message after the calls. An assistant message with no block (a live answer that was empty, or
// cut at max_tokens inside its only thinking block, before the signature) is left out, as the
// API refuses empty content, and the user-side messages around it go into one. Which messages
// carry thinking is decided before, by hygiene.CurrentTurnReasoning. A user message with no
// block, a tool result without ToolCallID, a tool call without ID or Name, or an unknown role
// is an error.
func EncodeMessages(msgs []chat.Message) ([]byte, error) {
	out, err := encodeMessages(msgs)
	if err != nil {
		return nil, err
	}
	return marshal(out)
}

// encodeMessages builds the `messages` array EncodeMessages writes. Blocks are pointers, so a
// breakpoint can be set on one afterwards.
func encodeMessages(msgs []chat.Message) ([]message, error) {
	out := []message{}
	lead := true
	for i, m := range msgs {
		if m.Role == chat.RoleSystem {
			if !lead {
				return nil, fmt.Errorf("anthropic: message %d: a system message after the start", i)
			}
			continue
		}
		lead = false
		var blocks []any
		role := "user"
		switch m.Role {
		case chat.RoleAssistant:
			role = "assistant"
			for _, t := range m.Thinking {
				if t.Redacted {
					blocks = append(blocks, &redactedBlock{Type: "redacted_thinking", Data: t.Data})
				} else {
					blocks = append(blocks, &thinkingBlock{Type: "thinking", Thinking: t.Text, Signature: t.Signature})
				}
			}
			if m.Content != "" {
				blocks = append(blocks, &textBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("anthropic: message %d: a tool call needs an id and a name", i)
				}
				input := tc.Arguments
				if len(bytes.TrimSpace(input)) == 0 {
					input = json.RawMessage("{}")
				}
				blocks = append(blocks, &toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
		case chat.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("anthropic: message %d: a tool result needs the id of the call it answers", i)
			}
			blocks = append(blocks, &toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		case chat.RoleUser:
			if m.Content != "" {
				blocks = append(blocks, &textBlock{Type: "text", Text: m.Content})
			}
		default:
			return nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		if len(blocks) == 0 && role == "assistant" {
			// A live answer with nothing the API takes back: empty, or cut inside its only
			// thinking block before the signature. The API refuses empty content; the user-side
			// messages around it go into one.
			continue
		}
		if len(blocks) == 0 {
			return nil, fmt.Errorf("anthropic: message %d (%s) has nothing to send", i, m.Role)
		}
		if n := len(out); role == "user" && n > 0 && out[n-1].Role == "user" {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			continue
		}
		out = append(out, message{Role: role, Content: blocks})
	}
	return out, nil
}

// setBreakpoint puts cc on the last block of the last message that can carry one (text,
// tool_use, tool_result; the API refuses cache_control on thinking blocks). It reports whether
// it found one.
func setBreakpoint(msgs []message, cc *cacheControl) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := len(msgs[i].Content) - 1; j >= 0; j-- {
			switch b := msgs[i].Content[j].(type) {
			case *textBlock:
				b.CacheControl = cc
				return true
			case *toolUseBlock:
				b.CacheControl = cc
				return true
			case *toolResultBlock:
				b.CacheControl = cc
				return true
			}
		}
	}
	return false
}

// marshal encodes v as JSON with HTML characters not escaped and no trailing newline
// ([wire.Marshal]).
func marshal(v any) ([]byte, error) {
	b, err := wire.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	return b, nil
}
