package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"

	"lab"
	"lab/backend/anthropic"
	"lab/backend/ollama"
	"lab/backend/openai"
	"lab/chat"
	"lab/hygiene"
)

// reasonInput is a reasoning.json case's input (spec 3.2.0 §8): a stored history and the
// dialect its next request is encoded in. Every measure is as the spec sets it (hygiene.Spec).
type reasonInput struct {
	// Dialect is "openai" (Chat Completions `messages`), "anthropic" (Messages API `messages`,
	// the system prompt apart) or "ollama" (/api/chat `messages`).
	Dialect string `json:"dialect"`
	// Model names the served model; its inline reasoning tags are quirks.json's for it
	// (hygiene.Quirks.InlineTags), the default tags when it is absent.
	Model string `json:"model"`
	// History is the session's stored history, in order.
	History []reasonMessage `json:"history"`
}

// reasonMessage is one stored message. Absent fields are empty.
type reasonMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Reasoning is the reasoning the message came with as text (OpenAI, Ollama).
	Reasoning string `json:"reasoning"`
	// Thinking are the Anthropic blocks the message came with, as the API returned them.
	Thinking   []reasonThinking `json:"thinking"`
	ToolCalls  []reasonToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
	ToolName   string           `json:"tool_name"`
	// Interjection marks a message delivered at a step boundary while a turn runs.
	Interjection bool `json:"interjection"`
	// Summary marks a compaction's summary.
	Summary bool `json:"summary"`
}

// reasonThinking is {"type": "thinking", "thinking", "signature"} or
// {"type": "redacted_thinking", "data"}.
type reasonThinking struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
}

// reasonToolCall is {"id", "name", "arguments": JSON object}. The model is taken to have written
// the arguments compact, keys in the case's order: the OpenAI dialect sends exactly those bytes
// as the arguments string.
type reasonToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// reasonWant is a reasoning.json case's expected request part: "messages", the exact array the
// request carries (compared as JSON: key order and spacing aside, every key and value, an empty
// one included), and for the anthropic dialect "system", the top-level system text ("" when
// absent).
type reasonWant struct {
	Messages json.RawMessage `json:"messages"`
	System   *string         `json:"system"`
}

// checkReasoning runs one reasoning.json case: it turns the history into the messages a request
// carries (hygiene.CurrentTurnReasoningWith, with quirks.json's tags for the model), encodes them
// in the case's dialect and compares them with the case's want, naming the first differing line
// of the two pretty-printed (sorted-key) JSON texts.
func checkReasoning(c Case) error {
	var in reasonInput
	var want reasonWant
	if err := decodeCase(c, &in, &want); err != nil {
		return err
	}
	if want.Messages == nil {
		return fmt.Errorf("want: no messages")
	}
	if want.System != nil && in.Dialect != "anthropic" {
		return fmt.Errorf("want: system is for the anthropic dialect only")
	}
	history, err := reasonHistory(in.History)
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	q, err := hygiene.ParseQuirks(lab.QuirksJSON)
	if err != nil {
		return err
	}
	msgs := hygiene.CurrentTurnReasoningWith(history, hygiene.Spec(), q.InlineTags(in.Model))
	var got []byte
	switch in.Dialect {
	case "openai":
		got, err = openai.EncodeMessages(msgs)
	case "anthropic":
		got, err = anthropic.EncodeMessages(msgs)
		if err == nil {
			ws := ""
			if want.System != nil {
				ws = *want.System
			}
			if e := diffText("system", ws, anthropic.System(msgs)); e != nil {
				return e
			}
		}
	case "ollama":
		var cl *ollama.Client
		if cl, err = ollama.New("http://127.0.0.1:11434", in.Model); err == nil {
			r, e := cl.ChatRequest(&chat.Request{Messages: msgs})
			if err = e; err == nil {
				got, err = json.Marshal(r.Messages)
			}
		}
	default:
		return fmt.Errorf("input: dialect %q: want openai, anthropic or ollama", in.Dialect)
	}
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	w, err := prettyJSON(want.Messages)
	if err != nil {
		return fmt.Errorf("want: messages: %w", err)
	}
	g, err := prettyJSON(got)
	if err != nil {
		return fmt.Errorf("encoded messages: %w", err)
	}
	return diffText("messages", w, g)
}

// reasonHistory converts a case's history to chat messages.
func reasonHistory(in []reasonMessage) ([]chat.Message, error) {
	out := make([]chat.Message, 0, len(in))
	for i, m := range in {
		switch chat.Role(m.Role) {
		case chat.RoleSystem, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		default:
			return nil, fmt.Errorf("history[%d]: role %q", i, m.Role)
		}
		cm := chat.Message{Role: chat.Role(m.Role), Content: m.Content, Reasoning: m.Reasoning,
			ToolCallID: m.ToolCallID, ToolName: m.ToolName, Interjection: m.Interjection, Summary: m.Summary}
		for j, t := range m.Thinking {
			switch t.Type {
			case "thinking":
				if t.Data != "" {
					return nil, fmt.Errorf("history[%d].thinking[%d]: data on a thinking block", i, j)
				}
				cm.Thinking = append(cm.Thinking, chat.ThinkingBlock{Text: t.Thinking, Signature: t.Signature})
			case "redacted_thinking":
				if t.Thinking != "" || t.Signature != "" {
					return nil, fmt.Errorf("history[%d].thinking[%d]: thinking or signature on a redacted block", i, j)
				}
				cm.Thinking = append(cm.Thinking, chat.ThinkingBlock{Redacted: true, Data: t.Data})
			default:
				return nil, fmt.Errorf("history[%d].thinking[%d]: type %q", i, j, t.Type)
			}
		}
		for j, tc := range m.ToolCalls {
			var args json.RawMessage
			if len(tc.Arguments) > 0 {
				var b bytes.Buffer
				if err := json.Compact(&b, tc.Arguments); err != nil {
					return nil, fmt.Errorf("history[%d].tool_calls[%d].arguments: %w", i, j, err)
				}
				args = b.Bytes()
			}
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
		}
		out = append(out, cm)
	}
	return out, nil
}

// prettyJSON re-encodes a JSON value indented, object keys sorted, numbers as written.
func prettyJSON(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return b.String(), nil
}
