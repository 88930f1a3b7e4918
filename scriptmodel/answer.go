// Package scriptmodel is the lab's scripted model as the coding agents see it: it writes a
// scripted reply (text, reasoning, tool calls) as the answer a model server gives, in the wire
// format of the API the agent spoke (OpenAI Chat Completions, OpenAI Responses, Anthropic
// Messages, Ollama /api/chat), streamed or whole as the request asked.
//
// Each format follows the API's own documentation and what the clients that read it require:
//
//   - Chat Completions ("Create chat completion", "The chat completion chunk object"):
//     `data:` events of chat.completion.chunk objects, no `event:` lines, ending in `data:
//     [DONE]`. The role comes in the first chunk, reasoning in `reasoning_content` (the field
//     llama-server, DeepSeek and Ollama's /v1 send), each tool call first with its index, id,
//     type and name and then its arguments in pieces, the way the AI SDK's
//     openai-compatible provider (opencode) and the openai SDKs (pi, Qwen Code) accumulate them.
//   - Responses ("Streaming events"): `event:` lines named as each event's type, and
//     sequence_number from 0. The openai-node ResponseStream builds its snapshot from
//     response.created's response (so its `output` is an empty array), pushes each
//     response.output_item.added item onto `output` (so items come with output_index 0, 1, …,
//     a message with an empty `content`, a function_call with empty `arguments`), pushes each
//     response.content_part.added part onto the message (an output_text part with empty
//     text), appends output_text and function_call_arguments deltas to the item at
//     output_index, and replaces the snapshot by response.completed's response. Codex
//     (codex-rs/codex-api/src/sse/responses.rs) needs response.output_item.done items it can
//     read as its ResponseItem (message: role and output_text content; reasoning: id and a
//     summary array; function_call: name, arguments as a string, call_id) and a
//     response.completed whose response has an `id` and a usage with input_tokens,
//     output_tokens and total_tokens (input_tokens_details, when present, with
//     cached_tokens); a stream without response.completed is an error to it.
//   - Anthropic Messages ("Streaming Messages"): `event:` lines named as each event's type.
//     The anthropic-sdk-typescript MessageStream takes message_start's message as its
//     snapshot (so it has `content: []` and a `usage` object), pushes each
//     content_block_start's block onto `content` (so indexes come 0, 1, …; a text block with
//     empty text, a thinking block with empty thinking and signature, a tool_use block with
//     `input: {}`), appends text_delta, thinking_delta and input_json_delta to the block at
//     the delta's index, sets the signature from signature_delta, and reads message_delta's
//     stop_reason and usage.output_tokens (so message_delta always has a usage object; the
//     scripted model's carries input_tokens as well, as the API's own does).
//   - Ollama /api/chat (docs/api.md, "Generate a chat completion"): NDJSON lines of
//     {model, created_at, message, done}, the last with done true, done_reason and the token
//     counts; tool calls come whole, with their arguments as a JSON object.
package scriptmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lab/capture"
	"lab/chat"
)

// API names the wire format of a request: lab/capture's API constants (capture.APIOpenAIChat and
// the others), so that a proxy's classification names the format to answer in.
type API string

// The APIs the scripted model answers.
const (
	// OpenAIChat is OpenAI Chat Completions, POST …/chat/completions.
	OpenAIChat API = API(capture.APIOpenAIChat)
	// OpenAIResponses is OpenAI's Responses API, POST …/responses.
	OpenAIResponses API = API(capture.APIOpenAIResponses)
	// Anthropic is the Anthropic Messages API, POST …/messages.
	Anthropic API = API(capture.APIAnthropic)
	// OllamaChat is Ollama's POST /api/chat.
	OllamaChat API = API(capture.APIOllamaChat)
)

// Answer is one scripted reply as an API carries it.
type Answer struct {
	// Model is echoed as the answer's model.
	Model string
	// Reply is what the model answers: Content, Reasoning and ToolCalls (each with its ID, its
	// Name and its Arguments, a JSON object; "" arguments are {}). Reply.Thinking is not sent:
	// every API's form of the reasoning is made from Reasoning. nil is an empty reply.
	Reply *chat.Reply
	// PromptTokens and CompletionTokens are the usage figures to report, in tokens: the whole
	// prompt (the server's prompt_eval_count, no part of it reported as cached) and the tokens
	// generated.
	PromptTokens, CompletionTokens int64
	// ID is the answer's id seed, deterministic: the answer's ids (chatcmpl-…, resp_…, msg_…,
	// rs_…, fc_…) and the generated tool call ids are made from it. Characters other than
	// ASCII letters, digits, '_' and '-' are written as '_'; "" is "0".
	ID string
}

// pieceBytes is the most bytes one streamed delta of text, reasoning or tool call arguments
// carries: a reply streams in several events, as a model server's does.
const pieceBytes = 32

// call is one tool call as written: its id (the caller's, or one made in the API's style), name
// and arguments (compact JSON, the order of the keys kept).
type call struct {
	given, name, args string
}

// answer is an Answer checked and made ready to write.
type answer struct {
	model, id          string
	content, reasoning string
	calls              []call
	prompt, completion int64
	created            time.Time
}

// callID returns tool call i's id: the caller's, else prefix, the seed and i ("call_s_0").
func (a *answer) callID(i int, prefix string) string {
	if a.calls[i].given != "" {
		return a.calls[i].given
	}
	return prefix + a.id + "_" + strconv.Itoa(i)
}

// prepare checks a: every tool call needs a name and arguments that are a JSON object, the
// token counts may not be negative. Errors name the field.
func prepare(a Answer) (*answer, error) {
	if a.PromptTokens < 0 || a.CompletionTokens < 0 {
		return nil, fmt.Errorf("scriptmodel: answer %q: negative token count (PromptTokens %d, CompletionTokens %d)", a.ID, a.PromptTokens, a.CompletionTokens)
	}
	out := &answer{model: a.Model, id: seed(a.ID), prompt: a.PromptTokens, completion: a.CompletionTokens, created: time.Now().UTC()}
	r := a.Reply
	if r == nil {
		r = &chat.Reply{}
	}
	out.content, out.reasoning = r.Content, r.Reasoning
	for i, tc := range r.ToolCalls {
		if tc.Name == "" {
			return nil, fmt.Errorf("scriptmodel: answer %q: Reply.ToolCalls[%d] has no Name", a.ID, i)
		}
		raw := bytes.TrimSpace(tc.Arguments)
		if len(raw) == 0 {
			raw = []byte("{}")
		}
		var b bytes.Buffer
		if raw[0] != '{' || json.Compact(&b, raw) != nil {
			return nil, fmt.Errorf("scriptmodel: answer %q: Reply.ToolCalls[%d] (%s): Arguments are not a JSON object: %.80q", a.ID, i, tc.Name, raw)
		}
		out.calls = append(out.calls, call{given: tc.ID, name: tc.Name, args: b.String()})
	}
	return out, nil
}

// seed returns id with every character but ASCII letters, digits, '_' and '-' as '_' ("0" for
// ""): the ids made from it are what the APIs' own ids look like (Anthropic's tool_use ids
// match ^[a-zA-Z0-9_-]+$).
func seed(id string) string {
	if id == "" {
		return "0"
	}
	var b strings.Builder
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// WriteAnswer writes a as the answer to a request of api, HTTP 200: streamed when stream is
// true (server-sent events, text/event-stream, for the OpenAI and Anthropic APIs; JSON lines,
// application/x-ndjson, for Ollama), one JSON document (application/json) otherwise. A stream
// is flushed after every event. Before anything is written, an unknown api or a bad Answer
// ([Answer]'s rules: a tool call without a name or with arguments that are not a JSON object,
// a negative token count) is an error naming it; after, the errors are the writer's (the first
// failed write or flush; a writer that cannot flush is not an error).
func WriteAnswer(w http.ResponseWriter, api API, stream bool, a Answer) error {
	switch api {
	case OpenAIChat, OpenAIResponses, Anthropic, OllamaChat:
	default:
		return fmt.Errorf("scriptmodel: unknown API %q", api)
	}
	ans, err := prepare(a)
	if err != nil {
		return err
	}
	h := w.Header()
	switch {
	case !stream:
		h.Set("Content-Type", "application/json")
	case api == OllamaChat:
		h.Set("Content-Type", "application/x-ndjson")
	default:
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(http.StatusOK)
	s := &sink{w: w, rc: http.NewResponseController(w)}
	switch api {
	case OpenAIChat:
		if stream {
			ans.chatStream(s)
		} else {
			s.whole(ans.chatWhole())
		}
	case OpenAIResponses:
		if stream {
			ans.responsesStream(s)
		} else {
			s.whole(ans.responsesWhole())
		}
	case Anthropic:
		if stream {
			ans.anthropicStream(s)
		} else {
			s.whole(ans.anthropicWhole())
		}
	case OllamaChat:
		if stream {
			ans.ollamaStream(s)
		} else {
			s.whole(ans.ollamaWhole())
		}
	}
	return s.err
}

// WriteError writes an error answer with HTTP status and message msg in api's own error shape
// (application/json):
//
//   - OpenAI Chat Completions and Responses ("Error codes"): {"error": {"message", "type",
//     "param": null, "code"}}, type "server_error" for a 5xx status, else
//     "invalid_request_error"; code "rate_limit_exceeded" for 429, else null;
//   - Anthropic ("Errors"): {"type": "error", "error": {"type", "message"}}, the type the
//     status stands for (invalid_request_error 400, authentication_error 401,
//     permission_error 403, not_found_error 404, request_too_large 413, rate_limit_error 429,
//     overloaded_error 529, api_error otherwise);
//   - Ollama: {"error": msg}.
//
// An unknown api gets the OpenAI shape. A failed write is not reported: the answer is an error
// already.
func WriteError(w http.ResponseWriter, api API, status int, msg string) {
	var body obj
	switch api {
	case Anthropic:
		body = obj{{"type", "error"}, {"error", obj{{"type", anthropicErrorType(status)}, {"message", msg}}}}
	case OllamaChat:
		body = obj{{"error", msg}}
	default:
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "server_error"
		}
		var code any
		if status == http.StatusTooManyRequests {
			code = "rate_limit_exceeded"
		}
		body = obj{{"error", obj{{"message", msg}, {"type", typ}, {"param", nil}, {"code", code}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := marshal(body)
	_, _ = w.Write(append(b, '\n'))
}

// anthropicErrorType returns the Anthropic error type an HTTP status stands for ("Errors").
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// sink writes an answer's events, flushing after each; the first error sticks and stops
// writing.
type sink struct {
	w   io.Writer
	rc  *http.ResponseController
	err error
}

func (s *sink) write(b []byte) {
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
}

// event writes one server-sent event: an `event:` line when name is not "", the `data:` line
// of v's JSON, a blank line.
func (s *sink) event(name string, v any) {
	b, err := marshal(v)
	if err != nil {
		s.err = err
		return
	}
	var buf bytes.Buffer
	if name != "" {
		buf.WriteString("event: " + name + "\n")
	}
	buf.WriteString("data: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	s.write(buf.Bytes())
}

// line writes v's JSON as one line (NDJSON).
func (s *sink) line(v any) {
	b, err := marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.write(append(b, '\n'))
}

// whole writes an unstreamed answer: v's JSON and a newline.
func (s *sink) whole(v any) { s.line(v) }

// kv is one field of an [obj].
type kv struct {
	k string
	v any
}

// obj is a JSON object whose fields are written in order (the order the APIs' documentation
// gives them in, "type" first where there is one).
type obj []kv

// MarshalJSON writes the object's fields in order, HTML characters not escaped.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal returns v's JSON without HTML escaping and without a trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// pieces cuts s into pieces of at most pieceBytes bytes, at character boundaries (none for "").
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(len(s), pieceBytes)
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // not reached with valid UTF-8; keeps a bad byte run from looping
			n = min(len(s), pieceBytes)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// empty is an empty JSON array.
var empty = []any{}

// --- OpenAI Chat Completions ---

// chatFinish is the finish_reason: "tool_calls" when the reply calls tools, else "stop".
func (a *answer) chatFinish() string {
	if len(a.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (a *answer) chatUsage() obj {
	return obj{{"prompt_tokens", a.prompt}, {"completion_tokens", a.completion}, {"total_tokens", a.prompt + a.completion}}
}

// chatStream writes the chat.completion.chunk events: the role, the reasoning
// (reasoning_content) and text in pieces, each tool call (its index, id, type and name, then its
// arguments in pieces), a chunk with the finish_reason, a chunk with the usage and no choices
// (the form stream_options.include_usage asks for), and data: [DONE].
func (a *answer) chatStream(s *sink) {
	id := "chatcmpl-" + a.id
	created := a.created.Unix()
	chunk := func(delta obj, finish any) {
		s.event("", obj{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", a.model},
			{"choices", []any{obj{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}})
	}
	chunk(obj{{"role", "assistant"}, {"content", ""}}, nil)
	for _, p := range pieces(a.reasoning) {
		chunk(obj{{"reasoning_content", p}}, nil)
	}
	for _, p := range pieces(a.content) {
		chunk(obj{{"content", p}}, nil)
	}
	for i, c := range a.calls {
		chunk(obj{{"tool_calls", []any{obj{{"index", i}, {"id", a.callID(i, "call_")}, {"type", "function"},
			{"function", obj{{"name", c.name}, {"arguments", ""}}}}}}}, nil)
		for _, p := range pieces(c.args) {
			chunk(obj{{"tool_calls", []any{obj{{"index", i}, {"function", obj{{"arguments", p}}}}}}}, nil)
		}
	}
	chunk(obj{}, a.chatFinish())
	s.event("", obj{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", a.model},
		{"choices", empty}, {"usage", a.chatUsage()}})
	s.write([]byte("data: [DONE]\n\n"))
}

// chatWhole returns the chat.completion object: one choice whose message has the text (null
// when empty and the reply calls tools), reasoning_content when there is reasoning, and the tool
// calls with their arguments as a JSON string.
func (a *answer) chatWhole() obj {
	var content any = a.content
	if a.content == "" && len(a.calls) > 0 {
		content = nil
	}
	msg := obj{{"role", "assistant"}, {"content", content}}
	if a.reasoning != "" {
		msg = append(msg, kv{"reasoning_content", a.reasoning})
	}
	if len(a.calls) > 0 {
		calls := make([]any, len(a.calls))
		for i, c := range a.calls {
			calls[i] = obj{{"id", a.callID(i, "call_")}, {"type", "function"}, {"function", obj{{"name", c.name}, {"arguments", c.args}}}}
		}
		msg = append(msg, kv{"tool_calls", calls})
	}
	return obj{{"id", "chatcmpl-" + a.id}, {"object", "chat.completion"}, {"created", a.created.Unix()}, {"model", a.model},
		{"choices", []any{obj{{"index", 0}, {"message", msg}, {"finish_reason", a.chatFinish()}}}}, {"usage", a.chatUsage()}}
}

// --- OpenAI Responses ---

// responsesItems returns the output items, done, in order: a reasoning item (its summary the
// reasoning) when there is reasoning, a message when there is text, a function_call per tool
// call (id fc_…, call_id the tool call's id).
func (a *answer) responsesItems() []obj {
	var items []obj
	if a.reasoning != "" {
		items = append(items, obj{{"id", "rs_" + a.id}, {"type", "reasoning"},
			{"summary", []any{obj{{"type", "summary_text"}, {"text", a.reasoning}}}}})
	}
	if a.content != "" {
		items = append(items, obj{{"id", "msg_" + a.id}, {"type", "message"}, {"status", "completed"}, {"role", "assistant"},
			{"content", []any{outputText(a.content)}}})
	}
	for i, c := range a.calls {
		items = append(items, a.functionCall(i, "completed", c.args))
	}
	return items
}

// functionCall returns tool call i as a function_call item with status and arguments args.
func (a *answer) functionCall(i int, status, args string) obj {
	return obj{{"id", "fc_" + a.id + "_" + strconv.Itoa(i)}, {"type", "function_call"}, {"status", status},
		{"arguments", args}, {"call_id", a.callID(i, "call_")}, {"name", a.calls[i].name}}
}

// outputText returns a message's output_text content part.
func outputText(text string) obj {
	return obj{{"type", "output_text"}, {"annotations", empty}, {"text", text}}
}

// response returns the response object with status, output and usage (null for nil).
func (a *answer) response(status string, output []obj, usage any) obj {
	out := make([]any, len(output))
	for i, it := range output {
		out[i] = it
	}
	return obj{{"id", "resp_" + a.id}, {"object", "response"}, {"created_at", a.created.Unix()}, {"status", status},
		{"error", nil}, {"incomplete_details", nil}, {"model", a.model}, {"output", out}, {"usage", usage}}
}

// responsesUsage is the usage Codex reads: input_tokens (none of them cached), output_tokens,
// total_tokens.
func (a *answer) responsesUsage() obj {
	return obj{{"input_tokens", a.prompt}, {"input_tokens_details", obj{{"cached_tokens", 0}}},
		{"output_tokens", a.completion}, {"total_tokens", a.prompt + a.completion}}
}

// responsesStream writes the Responses stream: response.created and response.in_progress (an
// empty output), then per output item its response.output_item.added (the item empty), its
// parts and deltas (reasoning: reasoning_summary_part.added, reasoning_summary_text.delta and
// .done, reasoning_summary_part.done; message: content_part.added, output_text.delta and .done,
// content_part.done; function_call: function_call_arguments.delta and .done) and its
// response.output_item.done (the item whole), then response.completed with the whole output
// and the usage.
func (a *answer) responsesStream(s *sink) {
	seq := 0
	ev := func(typ string, fields ...kv) {
		o := append(obj{{"type", typ}}, fields...)
		s.event(typ, append(o, kv{"sequence_number", seq}))
		seq++
	}
	ev("response.created", kv{"response", a.response("in_progress", nil, nil)})
	ev("response.in_progress", kv{"response", a.response("in_progress", nil, nil)})
	done := a.responsesItems()
	at := 0
	item := func(added obj, body func(id string, at kv)) {
		idx := kv{"output_index", at}
		ev("response.output_item.added", idx, kv{"item", added})
		body(added[0].v.(string), idx)
		ev("response.output_item.done", idx, kv{"item", done[at]})
		at++
	}
	if a.reasoning != "" {
		item(obj{{"id", "rs_" + a.id}, {"type", "reasoning"}, {"summary", empty}}, func(id string, idx kv) {
			sum := kv{"summary_index", 0}
			ev("response.reasoning_summary_part.added", kv{"item_id", id}, idx, sum, kv{"part", obj{{"type", "summary_text"}, {"text", ""}}})
			for _, p := range pieces(a.reasoning) {
				ev("response.reasoning_summary_text.delta", kv{"item_id", id}, idx, sum, kv{"delta", p})
			}
			ev("response.reasoning_summary_text.done", kv{"item_id", id}, idx, sum, kv{"text", a.reasoning})
			ev("response.reasoning_summary_part.done", kv{"item_id", id}, idx, sum, kv{"part", obj{{"type", "summary_text"}, {"text", a.reasoning}}})
		})
	}
	if a.content != "" {
		item(obj{{"id", "msg_" + a.id}, {"type", "message"}, {"status", "in_progress"}, {"role", "assistant"}, {"content", empty}}, func(id string, idx kv) {
			part := kv{"content_index", 0}
			ev("response.content_part.added", kv{"item_id", id}, idx, part, kv{"part", outputText("")})
			for _, p := range pieces(a.content) {
				ev("response.output_text.delta", kv{"item_id", id}, idx, part, kv{"delta", p}, kv{"logprobs", empty})
			}
			ev("response.output_text.done", kv{"item_id", id}, idx, part, kv{"text", a.content}, kv{"logprobs", empty})
			ev("response.content_part.done", kv{"item_id", id}, idx, part, kv{"part", outputText(a.content)})
		})
	}
	for i, c := range a.calls {
		item(a.functionCall(i, "in_progress", ""), func(id string, idx kv) {
			for _, p := range pieces(c.args) {
				ev("response.function_call_arguments.delta", kv{"item_id", id}, idx, kv{"delta", p})
			}
			ev("response.function_call_arguments.done", kv{"item_id", id}, idx, kv{"name", c.name}, kv{"arguments", c.args})
		})
	}
	ev("response.completed", kv{"response", a.response("completed", done, a.responsesUsage())})
}

// responsesWhole returns the response object, completed.
func (a *answer) responsesWhole() obj {
	return a.response("completed", a.responsesItems(), a.responsesUsage())
}

// --- Anthropic Messages ---

// anthropicStop is the stop_reason: "tool_use" when the reply calls tools, else "end_turn".
func (a *answer) anthropicStop() string {
	if len(a.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// signature is the thinking block's signature: the API's is opaque (it checks it when the
// block comes back); the scripted model's is made from the seed.
func (a *answer) signature() string { return "sig_" + a.id }

// anthropicUsage is the usage with output_tokens out: input_tokens the whole prompt, no cache
// read or write.
func (a *answer) anthropicUsage(out int64) obj {
	return obj{{"input_tokens", a.prompt}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0}, {"output_tokens", out}}
}

// anthropicMessage returns the message object with content and usage.
func (a *answer) anthropicMessage(content []any, stop any, usage obj) obj {
	return obj{{"id", "msg_" + a.id}, {"type", "message"}, {"role", "assistant"}, {"model", a.model}, {"content", content},
		{"stop_reason", stop}, {"stop_sequence", nil}, {"usage", usage}}
}

// anthropicStream writes the Messages stream: message_start (an empty content, the prompt's
// usage), per content block (thinking when there is reasoning, text when there is text, a
// tool_use per tool call) content_block_start, its deltas (thinking_delta then one
// signature_delta; text_delta; input_json_delta) and content_block_stop, then message_delta
// with the stop_reason and the whole usage (input_tokens and output_tokens), and message_stop.
func (a *answer) anthropicStream(s *sink) {
	ev := func(typ string, fields ...kv) { s.event(typ, append(obj{{"type", typ}}, fields...)) }
	ev("message_start", kv{"message", a.anthropicMessage(empty, nil, a.anthropicUsage(0))})
	idx := 0
	block := func(start obj, deltas func(idx kv)) {
		i := kv{"index", idx}
		ev("content_block_start", i, kv{"content_block", start})
		deltas(i)
		ev("content_block_stop", i)
		idx++
	}
	if a.reasoning != "" {
		block(obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, func(i kv) {
			for _, p := range pieces(a.reasoning) {
				ev("content_block_delta", i, kv{"delta", obj{{"type", "thinking_delta"}, {"thinking", p}}})
			}
			ev("content_block_delta", i, kv{"delta", obj{{"type", "signature_delta"}, {"signature", a.signature()}}})
		})
	}
	if a.content != "" {
		block(obj{{"type", "text"}, {"text", ""}}, func(i kv) {
			for _, p := range pieces(a.content) {
				ev("content_block_delta", i, kv{"delta", obj{{"type", "text_delta"}, {"text", p}}})
			}
		})
	}
	for n, c := range a.calls {
		block(obj{{"type", "tool_use"}, {"id", a.callID(n, "toolu_")}, {"name", c.name}, {"input", obj{}}}, func(i kv) {
			for _, p := range pieces(c.args) {
				ev("content_block_delta", i, kv{"delta", obj{{"type", "input_json_delta"}, {"partial_json", p}}})
			}
		})
	}
	// message_delta's usage is the whole count, as the API's own is: the prompt's input_tokens
	// too, which a reader of Ollama's stream takes only from here (message_start's is Ollama's
	// estimate).
	ev("message_delta", kv{"delta", obj{{"stop_reason", a.anthropicStop()}, {"stop_sequence", nil}}}, kv{"usage", a.anthropicUsage(a.completion)})
	ev("message_stop")
}

// anthropicWhole returns the message object: its thinking, text and tool_use blocks, the
// stop_reason and the usage.
func (a *answer) anthropicWhole() obj {
	var content []any
	if a.reasoning != "" {
		content = append(content, obj{{"type", "thinking"}, {"thinking", a.reasoning}, {"signature", a.signature()}})
	}
	if a.content != "" {
		content = append(content, obj{{"type", "text"}, {"text", a.content}})
	}
	for i, c := range a.calls {
		content = append(content, obj{{"type", "tool_use"}, {"id", a.callID(i, "toolu_")}, {"name", c.name}, {"input", json.RawMessage(c.args)}})
	}
	if content == nil {
		content = empty
	}
	return a.anthropicMessage(content, a.anthropicStop(), a.anthropicUsage(a.completion))
}

// --- Ollama /api/chat ---

// ollamaCalls returns the tool calls as Ollama writes them: {id, function: {index, name,
// arguments}}, the arguments a JSON object.
func (a *answer) ollamaCalls() []any {
	calls := make([]any, len(a.calls))
	for i, c := range a.calls {
		calls[i] = obj{{"id", a.callID(i, "call_")}, {"function", obj{{"index", i}, {"name", c.name}, {"arguments", json.RawMessage(c.args)}}}}
	}
	return calls
}

// ollamaLine returns one answer line: model, created_at, message and done, and the done line's
// done_reason and token counts (prompt_eval_count, eval_count) when done.
func (a *answer) ollamaLine(msg obj, done bool) obj {
	l := obj{{"model", a.model}, {"created_at", a.created.Format(time.RFC3339Nano)}, {"message", msg}, {"done", done}}
	if done {
		l = append(l, kv{"done_reason", "stop"}, kv{"prompt_eval_count", a.prompt}, kv{"eval_count", a.completion})
	}
	return l
}

// ollamaStream writes the NDJSON lines: a line per piece of thinking, a line per piece of
// text, one line with every tool call (Ollama sends a model's calls whole), then the done line.
func (a *answer) ollamaStream(s *sink) {
	for _, p := range pieces(a.reasoning) {
		s.line(a.ollamaLine(obj{{"role", "assistant"}, {"content", ""}, {"thinking", p}}, false))
	}
	for _, p := range pieces(a.content) {
		s.line(a.ollamaLine(obj{{"role", "assistant"}, {"content", p}}, false))
	}
	if len(a.calls) > 0 {
		s.line(a.ollamaLine(obj{{"role", "assistant"}, {"content", ""}, {"tool_calls", a.ollamaCalls()}}, false))
	}
	s.line(a.ollamaLine(obj{{"role", "assistant"}, {"content", ""}}, true))
}

// ollamaWhole returns the unstreamed answer: one done line whose message has the text, the
// thinking and the tool calls.
func (a *answer) ollamaWhole() obj {
	msg := obj{{"role", "assistant"}, {"content", a.content}}
	if a.reasoning != "" {
		msg = append(msg, kv{"thinking", a.reasoning})
	}
	if len(a.calls) > 0 {
		msg = append(msg, kv{"tool_calls", a.ollamaCalls()})
	}
	return a.ollamaLine(msg, true)
}
