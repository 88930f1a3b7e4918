package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	ollamaanthropic "github.com/ollama/ollama/anthropic"
	"github.com/ollama/ollama/api"
	ollamaopenai "github.com/ollama/ollama/openai"

	"lab/chat"
)

// This file serves `lab proxy` (package capture): it reads /api/chat and /api/generate requests
// another client sent to an Ollama server and the answers it got.

// DecodeChatRequest is the inverse of [Client.ChatRequest]: it reads an /api/chat body into a
// chat.Request (messages with `thinking` as Reasoning, tool calls with their arguments in the
// order written, tool messages with tool_name and tool_call_id; the tool list; `think`). Every
// message keeps its role where it stands; each of a message's `images` follows it as a message
// of its own ([chat.ItemMessage], Item "image", hashed over the image's bytes). Errors name the
// body's problem.
func DecodeChatRequest(body []byte) (*chat.Request, error) {
	var r api.ChatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("ollama: /api/chat body: %w", err)
	}
	req := &chat.Request{}
	if r.Think != nil {
		req.Think = r.Think.Bool()
	}
	for _, m := range r.Messages {
		msg := chat.Message{Role: chat.Role(m.Role), Content: m.Content, Reasoning: m.Thinking, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			args, err := json.Marshal(tc.Function.Arguments)
			if err != nil {
				return nil, fmt.Errorf("ollama: tool call %s arguments: %w", tc.Function.Name, err)
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		req.Messages = append(req.Messages, msg)
		for _, img := range m.Images {
			req.Messages = append(req.Messages, chat.ItemMessage(msg.Role, "image", img))
		}
	}
	for _, t := range r.Tools {
		params, err := json.Marshal(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("ollama: tool %s parameters: %w", t.Function.Name, err)
		}
		req.Tools = append(req.Tools, chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return req, nil
}

// DecodeGenerateRequest reads an /api/generate body into a chat.Request: `system` (when given)
// as the system message and `prompt` as one user message; raw reports `raw: true` (the prompt is
// sent to the model as it is, no template) and numPredict the `options.num_predict` (0 when
// absent).
func DecodeGenerateRequest(body []byte) (req *chat.Request, raw bool, numPredict int, err error) {
	var r struct {
		Prompt  string          `json:"prompt"`
		System  string          `json:"system"`
		Raw     bool            `json:"raw"`
		Think   *api.ThinkValue `json:"think"`
		Options map[string]any  `json:"options"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, false, 0, fmt.Errorf("ollama: /api/generate body: %w", err)
	}
	req = &chat.Request{}
	if r.Think != nil {
		req.Think = r.Think.Bool()
	}
	if r.System != "" {
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: r.System})
	}
	req.Messages = append(req.Messages, chat.Message{Role: chat.RoleUser, Content: r.Prompt})
	if v, ok := r.Options["num_predict"].(float64); ok {
		numPredict = int(v)
	}
	return req, r.Raw, numPredict, nil
}

// Capture reads one /api/chat or /api/generate answer another client received: each line of its
// NDJSON stream, or the one object of an unstreamed answer ([Capture.Line] either way). The
// zero value is ready to use; not safe for concurrent use.
type Capture struct {
	final              *captureLine
	reasoning, content strings.Builder
	calls              []chat.ToolCall
	lines              int
	// count counts the reply's bytes (thinking, text, tool calls' names and arguments) and
	// its tool calls against a reply limit (0: the default), for [Client.Send], which stops
	// reading past it.
	count chat.ReplyCounter
}

// captureLine is one answer line: api.ChatResponse's and api.GenerateResponse's fields, the
// error of a failed stream, and prompt_eval_cached_count, which newer servers report (Ollama PR
// #17943, after v0.17.4; absent means unknown).
type captureLine struct {
	Message  api.Message `json:"message"`
	Response string      `json:"response"`
	Thinking string      `json:"thinking"`
	Done     bool        `json:"done"`
	Error    string      `json:"error"`
	api.Metrics
	PromptEvalCachedCount *int64 `json:"prompt_eval_cached_count"`
}

// Line takes one line of the answer and reports whether it carried generated text, thinking or
// a tool call (the first such line is the time to first token). A line that is not JSON is an
// error naming its number; an error line ({"error": "…"}) is a *chat.APIError.
func (c *Capture) Line(data []byte) (content bool, err error) {
	var l captureLine
	if err := json.Unmarshal(data, &l); err != nil {
		return false, fmt.Errorf("answer line %d is not JSON: %w", c.lines+1, err)
	}
	return c.take(&l)
}

// take adds one decoded line to the answer.
func (c *Capture) take(l *captureLine) (content bool, err error) {
	c.lines++
	if l.Error != "" {
		return false, &chat.APIError{Backend: "ollama", Body: l.Error}
	}
	c.count.Add(len(l.Message.Thinking) + len(l.Thinking) + len(l.Message.Content) + len(l.Response))
	c.reasoning.WriteString(l.Message.Thinking)
	c.reasoning.WriteString(l.Thinking)
	c.content.WriteString(l.Message.Content)
	c.content.WriteString(l.Response)
	for _, tc := range l.Message.ToolCalls {
		args, err := json.Marshal(tc.Function.Arguments)
		if err != nil {
			return false, fmt.Errorf("answer line %d: tool call %s arguments: %w", c.lines, tc.Function.Name, err)
		}
		c.count.Add(len(tc.Function.Name) + len(args))
		c.count.AddPiece()
		c.calls = append(c.calls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	if l.Done {
		c.final = l
	}
	return l.Message.Content != "" || l.Message.Thinking != "" || l.Response != "" || l.Thinking != "" || len(l.Message.ToolCalls) > 0, nil
}

// End reports whether the answer was whole: nil once its done line came; else a
// *chat.APIError ([chat.CutError], URL empty): "no events" for an answer with no line, "no
// done message".
func (c *Capture) End() error {
	switch {
	case c.final != nil:
		return nil
	case c.lines == 0:
		return chat.CutError("ollama", "", "no events")
	}
	return chat.CutError("ollama", "", "no done message")
}

// Reply returns what the model generated, as far as it came.
func (c *Capture) Reply() *chat.Reply {
	return &chat.Reply{Reasoning: c.reasoning.String(), Content: c.content.String(), ToolCalls: c.calls}
}

// Result returns the figures as [Client.Send] reads them from the done line: PromptTokens =
// prompt_eval_count (the whole prompt, cached part included, in v0.17.4; unknown, Usage.Prompt
// nil and PromptTokens 0, with a warning, when the done line has none), CompletionTokens =
// eval_count, Prefill = prompt_eval_duration, Load = load_duration, and CachedTokens from
// prompt_eval_cached_count where the server sends it (source "response"; v0.17.4 does not, and
// the count stays unknown). Usage names the wire fields. An answer without its done line gives
// only a warning; TTFT and Total are the caller's.
func (c *Capture) Result() *chat.Result {
	res := &chat.Result{}
	l := c.final
	if l == nil {
		res.Warnings = append(res.Warnings, "the answer stream ended before its done message: token counts unknown")
		return res
	}
	u := &chat.Usage{Fields: map[chat.UsageField]string{}}
	prompt, gen := int64(l.PromptEvalCount), int64(l.EvalCount)
	if prompt > 0 {
		u.Set(chat.UsagePrompt, "prompt_eval_count", &prompt)
	} else {
		prompt = 0
		res.Warnings = append(res.Warnings, noPromptCount)
	}
	u.Set(chat.UsageGenerated, "eval_count", &gen)
	u.Set(chat.UsageCachedRead, "prompt_eval_cached_count", l.PromptEvalCachedCount)
	res.Usage = u
	res.PromptTokens, res.CompletionTokens = prompt, gen
	res.Prefill, res.Load, res.LoadReported = l.PromptEvalDuration, l.LoadDuration, true
	if l.PromptEvalCachedCount != nil {
		v := *l.PromptEvalCachedCount
		res.CachedTokens, res.CachedSource = &v, chat.SourceResponse
	}
	return res
}

// The API names [CompatibleChatRequest] converts, as Ollama serves them: POST
// /v1/chat/completions, /v1/responses and /v1/messages.
const (
	CompatibleOpenAIChat      = "openai-chat"
	CompatibleOpenAIResponses = "openai-responses"
	CompatibleAnthropic       = "anthropic"
)

// CompatibleChatRequest converts the body of a request to one of Ollama's OpenAI- and
// Anthropic-compatible endpoints (apiName one of [CompatibleOpenAIChat], [CompatibleOpenAIResponses],
// [CompatibleAnthropic]) into the /api/chat request Ollama itself makes of it, with Ollama
// v0.17.4's own conversion: openai.FromChatRequest (its ChatMiddleware),
// openai.FromResponsesRequest (ResponsesMiddleware, with `stream` as the body gives it) and
// anthropic.FromMessagesRequest (AnthropicMessagesMiddleware). The body is decoded into the
// module's own request type, as the middleware does. The request's Think is left as converted:
// the Anthropic middleware's relaxing of `think` for a model without thinking happens in
// Ollama's handler, not in the conversion. Errors name the API and the body's problem.
func CompatibleChatRequest(apiName string, body []byte) (*api.ChatRequest, error) {
	switch apiName {
	case CompatibleOpenAIChat:
		var r ollamaopenai.ChatCompletionRequest
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("ollama: /v1/chat/completions body: %w", err)
		}
		c, err := ollamaopenai.FromChatRequest(r)
		if err != nil {
			return nil, fmt.Errorf("ollama: /v1/chat/completions conversion: %w", err)
		}
		return c, nil
	case CompatibleOpenAIResponses:
		var r ollamaopenai.ResponsesRequest
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("ollama: /v1/responses body: %w", err)
		}
		c, err := ollamaopenai.FromResponsesRequest(r)
		if err != nil {
			return nil, fmt.Errorf("ollama: /v1/responses conversion: %w", err)
		}
		stream := r.Stream != nil && *r.Stream
		c.Stream = &stream
		return c, nil
	case CompatibleAnthropic:
		var r ollamaanthropic.MessagesRequest
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("ollama: /v1/messages body: %w", err)
		}
		c, err := ollamaanthropic.FromMessagesRequest(r)
		if err != nil {
			return nil, fmt.Errorf("ollama: /v1/messages conversion: %w", err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("ollama: no conversion of API %q to /api/chat", apiName)
}

// RenderRequest returns the /api/chat body that asks Ollama for its rendering of req
// (`_debug_render_only` true, `stream` false): the answer's _debug_info.rendered_template is
// the prompt the model would be given.
func RenderRequest(req *api.ChatRequest) ([]byte, error) {
	r := *req
	r.DebugRenderOnly = true
	stream := false
	r.Stream = &stream
	b, err := json.Marshal(&r)
	if err != nil {
		return nil, fmt.Errorf("ollama: render request: %w", err)
	}
	return b, nil
}

// OrderAnthropicArguments sets the arguments of each tool call that [CompatibleChatRequest]
// converted from an Anthropic Messages body in the order the body's tool_use input gives them.
// Ollama v0.17.4's own conversion builds them from a Go map (anthropic.mapToArgs), so their
// order, and so the rendering, changes from one conversion to the next; a server of the lab's
// own that converts with this order (the scripted model) renders the same request the same
// way every time. Calls are matched by their id; a call whose id the body does not hold, or
// whose input is not a JSON object, keeps the order it has. The error is for a body that is not
// a Messages request.
func OrderAnthropicArguments(c *api.ChatRequest, body []byte) error {
	var r struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("ollama: /v1/messages body: %w", err)
	}
	order := map[string][]string{}
	for _, m := range r.Messages {
		var blocks []struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a string content holds no tool_use
		}
		for _, b := range blocks {
			if b.Type == "tool_use" && b.ID != "" {
				if keys, ok := objectKeys(b.Input); ok {
					order[b.ID] = keys
				}
			}
		}
	}
	for i := range c.Messages {
		for j := range c.Messages[i].ToolCalls {
			tc := &c.Messages[i].ToolCalls[j]
			keys, ok := order[tc.ID]
			if !ok || len(keys) != tc.Function.Arguments.Len() {
				continue
			}
			args := api.NewToolCallFunctionArguments()
			for _, k := range keys {
				v, _ := tc.Function.Arguments.Get(k)
				args.Set(k, v)
			}
			tc.Function.Arguments = args
		}
	}
	return nil
}

// objectKeys returns the keys of a JSON object in the order written; ok is false for anything
// but an object.
func objectKeys(raw json.RawMessage) (keys []string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, false
		}
	}
	return keys, true
}
