package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"lab/chat"
	"lab/internal/wire"
)

// This file serves `lab proxy` (package capture): it reads requests another client sent and the
// answers the server gave them, with the same parsers and usage rules as [Client.Send].

// DecodeChatRequest is the inverse of the Chat Completions encoding ([EncodeMessagesWith],
// [EncodeTools]): it reads a request body's `messages` and `tools` into a chat.Request, every
// message where it stands.
//
//   - system messages become chat.RoleSystem, developer messages chat.RoleDeveloper, anywhere
//     in the list; a message of another role keeps it;
//   - a `content` array keeps its text parts ({"type": "text"|"input_text"|"output_text",
//     "text"}) and refusals joined; each other part (image_url, input_audio, file, a type the
//     lab does not know) follows the message as a message of its own ([chat.ItemMessage],
//     Item the part's type);
//   - an assistant message's reasoning comes from `reasoning_content` (llama-server, SGLang,
//     DeepSeek) or `reasoning` (vLLM, OpenRouter), its `tool_calls` become ToolCalls: a
//     function call with the `arguments` string as the JSON it holds, a custom tool call
//     ({"type": "custom", "custom": {"name", "input"}}) with its input as a JSON string; the
//     legacy `function_call` is one more call; its `audio` ({"id"}) an item "audio";
//   - a tool message keeps `tool_call_id` and `name`.
//
// Tools: function tools by their name, description and parameters; a custom tool by its name
// and description, its `format` as the parameters; a tool of another type by its type, its
// JSON as the parameters. Think is set from `chat_template_kwargs.enable_thinking`
// (llama-server, vLLM) or a `reasoning_effort` other than "none". A body that is not a JSON
// object with a `messages` array is an error naming the field.
func DecodeChatRequest(body []byte) (*chat.Request, error) {
	var b struct {
		Messages []struct {
			Role             string          `json:"role"`
			Content          json.RawMessage `json:"content"`
			Refusal          *string         `json:"refusal"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
				Custom struct {
					Name  string `json:"name"`
					Input string `json:"input"`
				} `json:"custom"`
			} `json:"tool_calls"`
			FunctionCall *struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function_call"`
			Audio      json.RawMessage `json:"audio"`
			ToolCallID string          `json:"tool_call_id"`
			Name       string          `json:"name"`
		} `json:"messages"`
		Tools              []json.RawMessage `json:"tools"`
		ChatTemplateKwargs struct {
			EnableThinking *bool `json:"enable_thinking"`
		} `json:"chat_template_kwargs"`
		ReasoningEffort string `json:"reasoning_effort"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("openai: chat request body: %w", err)
	}
	if b.Messages == nil {
		return nil, errors.New("openai: chat request body: no messages array")
	}
	req := &chat.Request{}
	for i, m := range b.Messages {
		text, others, err := contentParts(m.Content)
		if err != nil {
			return nil, fmt.Errorf("openai: messages[%d].content: %w", i, err)
		}
		if m.Refusal != nil && *m.Refusal != "" {
			text += *m.Refusal
		}
		msg := chat.Message{Role: chat.Role(m.Role), Content: text, ToolCallID: m.ToolCallID}
		if m.Role == "tool" || m.Role == "function" {
			msg.ToolName = m.Name
		}
		switch {
		case m.ReasoningContent != nil:
			msg.Reasoning = *m.ReasoningContent
		case m.Reasoning != nil:
			msg.Reasoning = *m.Reasoning
		}
		for _, tc := range m.ToolCalls {
			if tc.Type == "custom" {
				input, _ := json.Marshal(tc.Custom.Input)
				msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: input})
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
		}
		if fc := m.FunctionCall; fc != nil {
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{Name: fc.Name, Arguments: json.RawMessage(fc.Arguments)})
		}
		req.Messages = append(req.Messages, msg)
		for _, p := range others {
			req.Messages = append(req.Messages, chat.ItemMessage(msg.Role, p.typ, p.raw))
		}
		if a := bytes.TrimSpace(m.Audio); len(a) > 0 && string(a) != "null" {
			req.Messages = append(req.Messages, chat.ItemMessage(msg.Role, "audio", a))
		}
	}
	for i, raw := range b.Tools {
		t, err := decodeChatTool(raw)
		if err != nil {
			return nil, fmt.Errorf("openai: tools[%d]: %w", i, err)
		}
		req.Tools = append(req.Tools, t)
	}
	if k := b.ChatTemplateKwargs.EnableThinking; k != nil {
		req.Think = *k
	} else if b.ReasoningEffort != "" && b.ReasoningEffort != "none" {
		req.Think = true
	}
	return req, nil
}

// decodeChatTool reads one entry of a Chat Completions `tools` list: {"type": "function",
// "function": {…}}, {"type": "custom", "custom": {"name", "description", "format"}}, or a tool
// of another type, kept by its type with its JSON as the parameters.
func decodeChatTool(raw json.RawMessage) (chat.Tool, error) {
	var t struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
		Custom struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Format      json.RawMessage `json:"format"`
		} `json:"custom"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return chat.Tool{}, err
	}
	switch t.Type {
	case "", "function":
		return chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters}, nil
	case "custom":
		return chat.Tool{Name: t.Custom.Name, Description: t.Custom.Description, Parameters: t.Custom.Format}, nil
	}
	return chat.Tool{Name: t.Type, Parameters: bytes.TrimSpace(raw)}, nil
}

// otherPart is a content part that is not text: its type and JSON bytes.
type otherPart struct {
	typ string
	raw []byte
}

// contentText returns a message content's text: a string as it is, an array's text parts
// ({"type": "text"|"input_text"|"output_text", "text"}) and refusals joined, null as "".
func contentText(raw json.RawMessage) (string, error) {
	text, _, err := contentParts(raw)
	return text, err
}

// contentParts is contentText, also returning the array's other parts (images, audio, files,
// types the lab does not know), in order.
func contentParts(raw json.RawMessage) (string, []otherPart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	if raw[0] != '[' {
		// One object (a part not in an array) or another value: kept whole, by its type.
		var p struct {
			Type string `json:"type"`
		}
		if raw[0] == '{' {
			if err := json.Unmarshal(raw, &p); err != nil {
				return "", nil, err
			}
		} else if !json.Valid(raw) {
			return "", nil, errors.New("not JSON")
		}
		return "", []otherPart{{p.Type, raw}}, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, err
	}
	var b strings.Builder
	var others []otherPart
	for i, pr := range parts {
		var p struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		}
		if err := json.Unmarshal(pr, &p); err != nil {
			return "", nil, fmt.Errorf("part %d: %w", i, err)
		}
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		default:
			others = append(others, otherPart{p.Type, bytes.TrimSpace(pr)})
		}
	}
	return b.String(), others, nil
}

// DecodeResponsesRequest is the inverse of [EncodeInput]: it reads a Responses API body's
// `instructions`, `input` and `tools` into a chat.Request. `instructions` becomes the first
// message (system); an `input` string is one user message; input items become messages where
// they stand ([decodeItems]). Tools: function and custom tools by their name and description
// (a function's parameters, a custom tool's format), a tool of another type (web_search, mcp,
// file_search, …) by its type with its JSON as the parameters.
func DecodeResponsesRequest(body []byte) (*chat.Request, error) {
	var b struct {
		Instructions string            `json:"instructions"`
		Input        json.RawMessage   `json:"input"`
		Tools        []json.RawMessage `json:"tools"`
		Reasoning    *struct {
			Effort string `json:"effort"`
		} `json:"reasoning"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("openai: responses request body: %w", err)
	}
	req := &chat.Request{Think: b.Reasoning != nil && b.Reasoning.Effort != "none"}
	if b.Instructions != "" {
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: b.Instructions})
	}
	in := bytes.TrimSpace(b.Input)
	if len(in) > 0 && in[0] == '"' {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return nil, fmt.Errorf("openai: input: %w", err)
		}
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleUser, Content: s})
	} else if len(in) > 0 && string(in) != "null" {
		var items []json.RawMessage
		if err := json.Unmarshal(in, &items); err != nil {
			return nil, fmt.Errorf("openai: input: %w", err)
		}
		msgs, err := decodeItems(items, "input")
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, msgs...)
	}
	for i, raw := range b.Tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Format      json.RawMessage `json:"format"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("openai: tools[%d]: %w", i, err)
		}
		switch t.Type {
		case "", "function":
			req.Tools = append(req.Tools, chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		case "custom":
			req.Tools = append(req.Tools, chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.Format})
		default:
			req.Tools = append(req.Tools, chat.Tool{Name: t.Type, Parameters: bytes.TrimSpace(raw)})
		}
	}
	return req, nil
}

// decodeItems turns Responses API items (a request's input) into messages, each where it
// stands; where names the array for errors.
//
//   - `message` items (or items with a role and no type) by their role: system as
//     chat.RoleSystem, developer as chat.RoleDeveloper, anywhere in the list; an assistant's
//     text joins the assistant message it follows; a content part that is not text
//     (input_image, input_file, input_audio, …) follows as an item of its own;
//   - `reasoning` items a Thinking block ([ReasoningBlock]; their summary text also the
//     Reasoning) of the assistant message that follows them; reasoning that no assistant item
//     follows is an assistant message of its own, where it stands;
//   - `function_call` and `custom_tool_call` items tool calls of the assistant message they
//     follow (a new one when the previous message is not an assistant's; a custom call's input
//     as a JSON string); `function_call_output` and `custom_tool_call_output` items tool
//     messages;
//   - any other item (web_search_call, file_search_call, computer_call, mcp_call,
//     item_reference, a type the lab does not know) an item message of its own
//     ([chat.ItemMessage]: its role, or assistant for an item without one).
func decodeItems(items []json.RawMessage, where string) ([]chat.Message, error) {
	var out []chat.Message
	var pending []chat.ThinkingBlock // reasoning items waiting for the assistant item they led to
	var pendingText []string
	assistant := func() *chat.Message {
		if n := len(out); n > 0 && out[n-1].Role == chat.RoleAssistant && out[n-1].Item == "" && pending == nil {
			return &out[n-1]
		}
		out = append(out, chat.Message{Role: chat.RoleAssistant, Thinking: pending, Reasoning: strings.Join(pendingText, "\n\n")})
		pending, pendingText = nil, nil
		return &out[len(out)-1]
	}
	// flush puts reasoning that no assistant item followed where it stands.
	flush := func() {
		if pending != nil {
			out = append(out, chat.Message{Role: chat.RoleAssistant, Thinking: pending, Reasoning: strings.Join(pendingText, "\n\n")})
			pending, pendingText = nil, nil
		}
	}
	for i, raw := range items {
		var it struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			Output    json.RawMessage `json:"output"`
			Summary   []struct {
				Text string `json:"text"`
			} `json:"summary"`
			Encrypted string `json:"encrypted_content"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("openai: %s[%d]: %w", where, i, err)
		}
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			text, others, err := contentParts(it.Content)
			if err != nil {
				return nil, fmt.Errorf("openai: %s[%d].content: %w", where, i, err)
			}
			role := chat.Role(it.Role)
			if role == chat.RoleAssistant {
				m := assistant()
				m.Content += text
			} else {
				flush()
				out = append(out, chat.Message{Role: role, Content: text})
			}
			for _, p := range others {
				out = append(out, chat.ItemMessage(role, p.typ, p.raw))
			}
		case "reasoning":
			var sum []string
			for _, s := range it.Summary {
				sum = append(sum, s.Text)
			}
			pending = append(pending, ReasoningBlock(it.ID, it.Encrypted, strings.Join(sum, "\n\n")))
			if len(sum) > 0 {
				pendingText = append(pendingText, strings.Join(sum, "\n\n"))
			}
		case "function_call":
			m := assistant()
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(it.Arguments)})
		case "custom_tool_call":
			m := assistant()
			input, _ := json.Marshal(it.Input)
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: it.CallID, Name: it.Name, Arguments: input})
		case "function_call_output", "custom_tool_call_output":
			flush()
			text, others, err := contentParts(it.Output)
			if err != nil {
				return nil, fmt.Errorf("openai: %s[%d].output: %w", where, i, err)
			}
			out = append(out, chat.Message{Role: chat.RoleTool, Content: text, ToolCallID: it.CallID})
			for _, p := range others {
				out = append(out, chat.ItemMessage(chat.RoleTool, p.typ, p.raw))
			}
		default:
			flush()
			role := chat.Role(it.Role)
			if role == "" {
				role = chat.RoleAssistant
			}
			out = append(out, chat.ItemMessage(role, it.Type, bytes.TrimSpace(raw)))
		}
	}
	flush()
	return out, nil
}

// ChatCapture reads one Chat Completions answer another client received: the data of each
// server-sent event ([ChatCapture.Chunk]) or an unstreamed body ([ChatCapture.Whole]). Its
// figures follow [Client.Send]'s rules for the generic profile (llama-server's timings.cache_n
// and prompt_n where the answer carries them, else usage.prompt_tokens_details.cached_tokens),
// or DeepSeek's when the usage carries prompt_cache_hit_tokens. backend/llamacpp reads its own
// answers with it too: llama-server's figures have one reader. The zero value is ready to use;
// not safe for concurrent use.
type ChatCapture struct {
	usage  *usageCounts
	tim    *Timings
	done   bool
	whole  bool
	chunks int
	gen    generation
}

// captureChunk is a chunk as the capture reads it: chunk's fields, an error object and
// llama-server's prefill progress.
type captureChunk struct {
	chunk
	Error json.RawMessage `json:"error"`
	// PromptProgress is llama-server's prefill progress (`prompt_progress`: total, cache,
	// processed, time_ms; sent with return_progress): a chunk with it and no choices, usage or
	// timings is progress, not part of the answer.
	PromptProgress json.RawMessage `json:"prompt_progress"`
}

// progress reports whether ck is only llama-server's prefill progress.
func (ck *captureChunk) progress() bool {
	return len(ck.PromptProgress) > 0 && string(ck.PromptProgress) != "null" && len(ck.Choices) == 0 && ck.Usage == nil && ck.Timings == nil
}

// Chunk takes the data of one server-sent event of a Chat Completions stream ("[DONE]"
// included) and reports whether it carried generated content, reasoning or a tool call (the
// first such chunk is the time to first token). A chunk that is not JSON is an error; an error
// object in the stream (`{"error": …}`) is returned as a *chat.APIError with the server's message.
// llama-server's prefill progress chunks (`prompt_progress` alone) are skipped: they are not
// counted ([ChatCapture.Chunks]) and carry nothing of the answer.
func (c *ChatCapture) Chunk(data []byte) (content bool, err error) {
	_, content, err = c.chunk(data)
	return content, err
}

// chunk is Chunk, also reporting whether the chunk had a choice.
func (c *ChatCapture) chunk(data []byte) (choices, content bool, err error) {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		c.done = true
		return false, false, nil
	}
	var ck captureChunk
	if err := json.Unmarshal(data, &ck); err != nil {
		return false, false, fmt.Errorf("stream chunk %d is not JSON: %w", c.chunks+1, err)
	}
	if ck.progress() {
		return false, false, nil
	}
	c.chunks++
	if len(ck.Error) > 0 && string(ck.Error) != "null" {
		return false, false, &chat.APIError{Backend: "openai", Body: "error in the stream: " + errorText(ck.Error)}
	}
	c.take(&ck.chunk)
	for _, ch := range ck.Choices {
		if ch.Delta.first() {
			content = true
		}
	}
	return len(ck.Choices) > 0, content, nil
}

// End reports whether the answer was whole: nil for an unstreamed body, a stream that ended with
// `data: [DONE]`, or one that ended after a finish_reason and its usage (servers that omit
// [DONE]); else a *chat.APIError ([chat.CutError], URL empty) naming what the stream lacked:
// "no data: [DONE] and no finish_reason", "no data: [DONE] and no usage after the
// finish_reason", or, for a stream that had no chunk at all, "no events" ("no chunk before
// data: [DONE]" when [DONE] came alone: a stream of zero chunks is not an answer).
func (c *ChatCapture) End() error {
	switch {
	case c.whole:
		return nil
	case c.chunks == 0 && c.done:
		return chat.CutError("openai", "", "no chunk before data: [DONE]")
	case c.done:
		return nil
	case c.chunks == 0:
		return chat.CutError("openai", "", "no events")
	case c.gen.finish == "":
		return chat.CutError("openai", "", "no data: [DONE] and no finish_reason")
	case c.usage == nil:
		return chat.CutError("openai", "", "no data: [DONE] and no usage after the finish_reason")
	}
	return nil
}

// Whole takes an unstreamed chat.completion body. An error object ({"error": …}) is a
// *chat.APIError with the server's message; a JSON body without a `choices` array (null, a
// proxy's {"detail": "Not Found"}) is not the API's answer: a *chat.APIError with status 200
// quoting it, which the harness does not retry.
func (c *ChatCapture) Whole(body []byte) error {
	var ck captureChunk
	if err := json.Unmarshal(body, &ck); err != nil {
		return fmt.Errorf("the answer is not a chat.completion: %w", err)
	}
	if len(ck.Error) > 0 && string(ck.Error) != "null" {
		return &chat.APIError{Backend: "openai", Body: errorText(ck.Error)}
	}
	if !hasArray(body, "choices") {
		return notAnswer(body, "a chat.completion (no choices array)")
	}
	c.whole, c.done = true, true
	c.take(&ck.chunk)
	return nil
}

// take reads one chunk's figures and, with the client's own [generation], what the model wrote.
func (c *ChatCapture) take(ck *chunk) {
	if ck.Usage != nil {
		c.usage = ck.Usage
	}
	if ck.Timings != nil {
		c.tim = ck.Timings
	}
	c.gen.add(ck)
}

// Reply returns the generated message as far as it came, as [Client.Send] reads it: tool calls
// in index order, those a cut left without whole arguments or a name dropped.
func (c *ChatCapture) Reply() *chat.Reply {
	return c.gen.reply(&chat.Result{})
}

// SetReplyLimit sets the most bytes the reply may hold (text, reasoning, tool calls' names and
// arguments; 0 is [chat.DefaultMaxReplyBytes]), for [ChatCapture.ReplyOver].
func (c *ChatCapture) SetReplyLimit(limit int64) { c.gen.count.Limit = limit }

// ReplyOver returns the reply limit's error ([chat.ReplyTooLongError], for backend) once the
// chunks taken hold more of the reply than the limit, else nil: the caller then stops reading.
func (c *ChatCapture) ReplyOver(backend string) *chat.APIError {
	if c.gen.count.Over() {
		return c.gen.count.Err(backend, "")
	}
	return nil
}

// Timings returns llama-server's `timings` the answer carried last, nil when none.
func (c *ChatCapture) Timings() *Timings { return c.tim }

// Chunks returns the number of chunks taken: JSON chunks of the answer, `data: [DONE]` and
// prefill progress not counted.
func (c *ChatCapture) Chunks() int { return c.chunks }

// FinishReason returns the last finish_reason of the first choice ("" when none came).
func (c *ChatCapture) FinishReason() string { return c.gen.finish }

// ReplyTo is [ChatCapture.Reply] with its warnings (a tool call the token limit cut inside its
// arguments, a call with no name: both dropped) added to res.
func (c *ChatCapture) ReplyTo(res *chat.Result) *chat.Reply { return c.gen.reply(res) }

// Result returns the figures: PromptTokens, CachedTokens (source "response"),
// CompletionTokens, Prefill (llama-server's timings.prompt_ms) and Usage with the wire field of
// each count, with warnings for an answer without usage or a whole stream without `data:
// [DONE]` ([ChatCapture.End] says whether the answer was whole). TTFT and Total are the
// caller's (it saw the bytes arrive).
func (c *ChatCapture) Result() *chat.Result {
	p, _ := ProfileByName("generic")
	if c.usage != nil && (c.usage.PromptCacheHitTokens != nil || c.usage.PromptCacheMissTokens != nil) {
		p, _ = ProfileByName("deepseek")
	}
	res := &chat.Result{}
	fillUsage(res, c.usage, c.tim, p, nil)
	if !c.done && c.End() == nil {
		res.Warnings = append(res.Warnings, "the stream ended without data: [DONE] after its finish_reason and usage: taken as whole")
	}
	return res
}

// errorText returns an error object's message ({"message", "type", "code"}), or the raw JSON.
func errorText(raw json.RawMessage) string {
	if m, ok := errorObjectMessage(raw); ok {
		return m
	}
	return quote(raw)
}

// errorObjectMessage is [wire.ErrorObjectMessage].
func errorObjectMessage(raw json.RawMessage) (string, bool) { return wire.ErrorObjectMessage(raw) }

// ErrorMessage returns the message of an error answer's body ([wire.ErrorMessage]): its `error`
// object's type and message ({"error": {"type", "message"}}: OpenAI, Anthropic, llama-server,
// vLLM) or its string error ({"error": "…"}: Ollama); any other body quoted, cut to 500 bytes.
func ErrorMessage(body []byte) string { return wire.ErrorMessage(body) }

// ResponsesCapture reads one Responses API answer: its stream events
// ([ResponsesCapture.Event]) or an unstreamed response object ([ResponsesCapture.Whole]). It is
// the accumulator [Client.Send] reads its own answers with: usage from response.completed (or
// response.incomplete), an `error` or response.failed event an error, the output items put
// together from their deltas. The zero value is ready to use; not safe for concurrent use.
type ResponsesCapture struct {
	usage  *responseUsage
	final  bool
	events int
	whole  bool
	out    output
	// warnings are the answer's own notes (a response incomplete for another reason than
	// max_output_tokens), for the Result.
	warnings []string
}

// Event takes the data of one server-sent event of a Responses stream and reports whether it
// carried generated text, reasoning or tool-call arguments (the first such event is the time
// to first token). An `error` or `response.failed` event is a *chat.APIError.
func (c *ResponsesCapture) Event(data []byte) (content bool, err error) {
	return c.event(data, nil)
}

// event is Event; stop, when not nil, is asked after the event's output was added and before
// its error is returned, and ends reading with its error (the run's reply limit).
func (c *ResponsesCapture) event(data []byte, stop func() error) (content bool, err error) {
	var ev responseEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return false, fmt.Errorf("stream event %d is not JSON: %w", c.events+1, err)
	}
	c.events++
	return firstToken(ev.Type) && ev.Delta != "", c.take(&ev, stop)
}

// Whole takes an unstreamed response object; its status says which final event it stands for
// (failed, or an error object: an error; incomplete). An error object or a failed status is a
// *chat.APIError with the server's message; a JSON body without an `output` array is not the
// API's answer (a *chat.APIError with status 200 quoting it).
func (c *ResponsesCapture) Whole(body []byte) error { return c.wholeBody(body, nil, nil) }

// wholeBody is Whole, with stop as in [ResponsesCapture.event]; read, when not nil, is called
// once the body was found to be a response object.
func (c *ResponsesCapture) wholeBody(body []byte, stop func() error, read func()) error {
	c.whole = true
	ev := responseEvent{Type: "response.completed"}
	if err := json.Unmarshal(body, &ev.Response); err != nil {
		return fmt.Errorf("the answer is not a response object: %s", quote(body))
	}
	if ev.Response == nil {
		return notAnswer(body, "a response object (no output array)")
	}
	if r := ev.Response; r.Status != "failed" && (r.Error == nil || r.Error.Code == "" && r.Error.Message == "") && !hasArray(body, "output") {
		return notAnswer(body, "a response object (no output array)")
	}
	switch r := ev.Response; {
	case r.Status == "failed" || (r.Error != nil && (r.Error.Code != "" || r.Error.Message != "")):
		ev.Type = "response.failed"
	case r.Status == "incomplete":
		ev.Type = "response.incomplete"
	}
	if read != nil {
		read()
	}
	return c.take(&ev, stop)
}

// take adds one event's output, then reads what it says of the answer's end.
func (c *ResponsesCapture) take(ev *responseEvent, stop func() error) error {
	c.out.add(ev)
	if stop != nil {
		if err := stop(); err != nil {
			return err
		}
	}
	switch ev.Type {
	case "error":
		return &chat.APIError{Backend: "openai", Body: joinNonEmpty(ev.Code, ev.Message)}
	case "response.failed":
		msg := "response.failed"
		if ev.Response != nil && ev.Response.Error != nil {
			msg = joinNonEmpty(ev.Response.Error.Code, ev.Response.Error.Message)
		}
		return &chat.APIError{Backend: "openai", Body: msg}
	case "response.completed", "response.incomplete":
		c.final = true
		if ev.Response != nil {
			c.usage = ev.Response.Usage
			// Incomplete because of max_output_tokens is the expected end of a measuring
			// request; any other reason is worth a note.
			if d := ev.Response.IncompleteDetails; ev.Type == "response.incomplete" && d != nil && d.Reason != "max_output_tokens" {
				c.warnings = append(c.warnings, "response incomplete: "+d.Reason)
			}
		}
	}
	return nil
}

// Reply returns the generated output as [Client.Send] reads it, in output order: reasoning
// (encrypted reasoning items as [ReasoningBlock]s), text and function calls, a call the token
// limit cut inside its arguments dropped.
func (c *ResponsesCapture) Reply() *chat.Reply { return c.out.reply(&chat.Result{}) }

// End reports whether the answer was whole: nil for an unstreamed response object or a stream
// that ended with response.completed or response.incomplete (response.failed is an error of
// its own, from Event); else a *chat.APIError ([chat.CutError], URL empty): "no events" for a
// stream with none, "no response.completed, response.incomplete or response.failed".
func (c *ResponsesCapture) End() error {
	switch {
	case c.final:
		return nil
	case c.events == 0 && !c.whole:
		return chat.CutError("openai", "", "no events")
	}
	return chat.CutError("openai", "", "no response.completed, response.incomplete or response.failed")
}

// Result returns the figures as [Client.Send] reads them from the Responses API's usage:
// PromptTokens = input_tokens, CachedTokens = input_tokens_details.cached_tokens, cache writes,
// CompletionTokens = output_tokens, reasoning tokens; warnings for a stream without its final
// event or usage, and the answer's own (a response incomplete for another reason than
// max_output_tokens).
func (c *ResponsesCapture) Result() *chat.Result {
	res := &chat.Result{Warnings: append([]string(nil), c.warnings...)}
	if !c.final {
		res.Warnings = append(res.Warnings, "the stream ended without response.completed: token counts unknown")
		return res
	}
	c.fill(res)
	return res
}

// fill sets res's figures from the final event's usage (a warning when it had none).
func (c *ResponsesCapture) fill(res *chat.Result) {
	if c.usage == nil {
		res.Warnings = append(res.Warnings, "the response carried no usage: token counts unknown")
		return
	}
	setUsage(res, c.usage.normalise())
}

// hasArray reports whether body is a JSON object whose field key is an array.
func hasArray(body []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	v := bytes.TrimSpace(m[key])
	return len(v) > 0 && v[0] == '['
}

// notAnswer is the error of an HTTP 200 JSON body that is not the answer the API gives (what
// names the answer expected): status 200 and the body quoted, cut to 500 bytes.
func notAnswer(body []byte, what string) *chat.APIError {
	return chat.NotAnswerJSONError("openai", what, quote(bytes.TrimSpace(body)))
}
