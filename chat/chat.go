// Package chat is the lab's leaf vocabulary: the messages, tool calls and requests a harness sends
// to a model server, the scripted reply a step stands for, and what a backend measured about one
// request. It imports only the standard library, so every other package of the lab can use it.
package chat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"time"
)

// Role is the author of a message, as the OpenAI and Ollama chat dialects name it.
type Role string

// The roles a message can have.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	// RoleDeveloper is the OpenAI Chat Completions and Responses APIs' developer message
	// (instructions from the application, which the model reads as a system message); the
	// capture's decoders keep it apart from RoleSystem so that it is named "developer N".
	RoleDeveloper Role = "developer"
)

// Message is one message of a conversation as a request carries it.
type Message struct {
	// Role is the message's author.
	Role Role
	// Content is the message's text: for a user message the person's words and any note after
	// them, for a tool message the result as inserted (spec 3.2.0 §1).
	Content string
	// Reasoning is the reasoning (thinking) text the assistant message came with, sent back only
	// where spec 3.2.0 §8 says (the current turn). Empty means the message carries none; a
	// backend must then send no reasoning field at all.
	Reasoning string
	// ToolCalls are the calls an assistant message made, in the order the model wrote them.
	ToolCalls []ToolCall
	// ToolCallID and ToolName tie a tool message to the call it answers.
	ToolCallID string
	ToolName   string
	// Thinking is the Anthropic Messages dialect's form of the reasoning an assistant message
	// came with: its thinking and redacted_thinking blocks, in the order the model gave them,
	// each with its signature. Spec 3.2.0 §8: in the current turn they go back unchanged and
	// first; earlier turns carry none. Reasoning holds the same thought as plain text for the
	// dialects that carry a string (OpenAI reasoning_content, Ollama thinking); a backend of one
	// dialect reads only its own form.
	Thinking []ThinkingBlock
	// Interjection marks a user-role message delivered at a step boundary while a turn runs:
	// words the person adds, a job's note or a team message that arrives during the turn. It
	// does not start a turn (spec 3.2.0 §8). The zero value (false) is an ordinary user message,
	// the person's or a machine message that starts a turn of its own; both start a turn.
	Interjection bool
	// Marks name the pieces of Content a harness practice wrote (a clock line, a counter, an
	// inserted reminder), for the re-read attribution: each is a practice's name and its exact
	// text, in the order they appear in Content. Backends do not send them.
	Marks []Mark
	// Summary marks the message that carries a compaction's summary (spec 3.2.0 §7). It starts
	// the history afresh: no message before it carries reasoning (§8).
	Summary bool
	// Item is set on a message that stands for one piece of a captured request the lab keeps
	// but does not read as text: the API's type of that piece (a Responses `web_search_call`
	// item, an `input_image` or `image_url` content part, an Anthropic `server_tool_use` or
	// `document` block, a type the lab does not know). Role is the role the piece came under,
	// and Content is "<type> sha256:<hex>" over the piece's JSON bytes, so that a change in it
	// is seen. "" is an ordinary message.
	Item string
}

// Mark is a piece of a message's Content that a harness practice wrote: Practice is its name as
// an arm file writes it ("clock", "counter", "insert"), Text the piece exactly as it appears.
// A Mark whose Text is "" names the whole message: the window practice marks the first message
// it kept after its cut, so that the request that cuts reads "window in message 2".
type Mark struct {
	Practice string
	Text     string
	// End says the practice wrote Text at the end of the message's text (before a session
	// note), not at its start: the attribution finds it there, never at an earlier occurrence
	// of the same text (a counter's bare "3" in a system prompt that mentions 3).
	End bool
}

// ThinkingBlock is one Anthropic thinking or redacted_thinking content block, kept exactly as
// the API returned it: the API checks the signature and refuses a block that was changed.
type ThinkingBlock struct {
	// Text is a thinking block's `thinking` text ("" for a redacted block).
	Text string
	// Signature is a thinking block's `signature`, as returned.
	Signature string
	// Redacted marks a redacted_thinking block; its content is Data.
	Redacted bool
	// Data is a redacted_thinking block's encrypted `data`, as returned.
	Data string
}

// ToolCall is one function call an assistant message made.
type ToolCall struct {
	// ID is the call's id, unique in the session (for dialects that carry one).
	ID string
	// Name is the tool's name, as in the request's tool list.
	Name string
	// Arguments is a JSON object, its keys in the order the model wrote them.
	Arguments json.RawMessage
}

// Tool is one entry of a request's tool list: a function with a JSON Schema for its parameters.
type Tool struct {
	// Name is the function's name.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is a JSON Schema object, encoded as it is sent.
	Parameters json.RawMessage
	// Marks name the pieces of Description a harness practice wrote (the cwd practice's
	// working-directory line), for the re-read attribution, as [Message].Marks do for a
	// message's Content. Backends do not send them.
	Marks []Mark
}

// Request is one request to a model server: the whole conversation resent, system prompt first.
type Request struct {
	// Messages, the first of them the system prompt when there is one.
	Messages []Message
	// Tools is the tool list, in the order it is sent.
	Tools []Tool
	// Think asks a reasoning model to reason before it answers (Ollama `think`).
	Think bool
	// CacheBreakpoints says where a prompt-caching API that needs explicit markers (Anthropic
	// Messages `cache_control`) should place them: "system" (the end of the system prompt) and
	// "last-message" (the end of the last message), as the arm's measures make those parts
	// stable. nil leaves the placement to the backend's own default.
	CacheBreakpoints []string
	// Generate is the most tokens the model may generate for this request, reasoning included
	// (Ollama option num_predict, OpenAI max_completion_tokens): the live driver's request, which
	// the backend sends for a real generation and answers with [Result].Reply. 0 is the scripted
	// behaviour: the backend generates as little as it can and leaves the cache as if the model
	// had written the scripted reply.
	Generate int
	// MaxReplyBytes is the most bytes the answer's reply may hold: text, reasoning and tool
	// calls' names and arguments together, as decoded from the wire (lab run's
	// --max-reply-bytes). A backend that reads past it stops reading, closes the answer's body
	// and fails with [ReplyTooLongError]. 0 means [DefaultMaxReplyBytes]; see [Request.ReplyLimit].
	MaxReplyBytes int64
}

// Reply is what the model answered a request with. In scripted mode the scenario gives it and the
// backend leaves the server's KV cache as if the model had generated it.
type Reply struct {
	// Reasoning is what the model thought before it answered ("" for none).
	Reasoning string
	// Content is the visible text.
	Content string
	// ToolCalls are the calls it made, in order.
	ToolCalls []ToolCall
	// Thinking is the reasoning in the form a dialect must get back unchanged ([Message].Thinking):
	// Anthropic thinking and redacted_thinking blocks with their signatures, OpenAI Responses
	// encrypted reasoning items. nil where the dialect carries reasoning as plain text only.
	Thinking []ThinkingBlock
}

// ScriptGroup is a run of a scripted model's replies (backend/sim playing the model for the live
// driver's tests): the reply to one request whose last message is a user message, then the
// replies to the step requests that follow it.
type ScriptGroup struct {
	// AfterCompaction marks the group that answers the first request after a compaction (its
	// last message the summary, [Message].Summary) and the steps of the turn after it. A turn
	// cut short before it never sends that request: the group is then skipped.
	AfterCompaction bool
	// Replies are the group's replies, in order.
	Replies []Reply
}

// Source names where a figure came from, because a cached-token count from a response field, a
// server log and a simulation do not carry the same weight.
type Source string

// The sources a cached-token figure can have.
const (
	SourceUnknown    Source = ""
	SourceResponse   Source = "response"
	SourceServerLog  Source = "server_log"
	SourceTiming     Source = "timing"
	SourceSimulation Source = "simulation"
)

// Result is what a backend measured about one request.
type Result struct {
	// PromptTokens is the whole prompt in the served model's tokens, cached part included
	// (Ollama prompt_eval_count in v0.17.4; OpenAI usage.prompt_tokens).
	PromptTokens int64
	// CachedTokens is the number of prompt tokens the server reused from its KV cache, nil when
	// the server did not say. Never 0 for unknown.
	CachedTokens *int64
	// CachedSource says where CachedTokens came from.
	CachedSource Source
	// CompletionTokens is the number of tokens the server generated for the request.
	CompletionTokens int64
	// TTFT is the time from sending the request to the first streamed byte of the answer.
	TTFT time.Duration
	// Prefill is the server's time to process the uncached part of the prompt (Ollama
	// prompt_eval_duration).
	Prefill time.Duration
	// Total is the wall time from sending the request to the end of the answer.
	Total time.Duration
	// Load is the server's model load time for this request (Ollama load_duration); large after a
	// reload, which drops the KV cache.
	Load time.Duration
	// LoadReported is true when the server reported Load (Ollama's done message always carries
	// load_duration), so that a 0 is a measured 0; false for servers that do not say.
	LoadReported bool
	// RequestBytes is the size of the request body sent, in bytes.
	RequestBytes int64
	// Rendered is the prompt text the server built from the request (its chat template applied),
	// when the backend can get it; empty otherwise.
	Rendered string
	// CacheText is the text the server's KV cache holds after the request and the generation
	// emulation: Rendered followed by the reply as the model would have written it. Empty when
	// unknown.
	CacheText string
	// CacheWrites are the prompt positions, in tokens (0 < p ≤ PromptTokens), whose prefixes the
	// server's cache wrote for later requests, where the cache keeps prefixes at the places a
	// request marks instead of the whole sequence: the sim's anthropic model's `cache_control`
	// breakpoints of at least its minimum cacheable prefix (backends.md §6). Empty (not nil):
	// nothing written. nil where the cache holds CacheText (a server's slot).
	CacheWrites []int
	// Body is the request body sent, as JSON, for --save-requests.
	Body json.RawMessage
	// Usage is the provider's token accounting, normalised; nil when the backend has none (the
	// figures above are then the only ones).
	Usage *Usage
	// CostUSD is the request's price in US dollars from a pricing table, nil when unknown or not
	// applicable (local servers).
	CostUSD *float64
	// Warnings are problems with this request's figures that do not invalidate it (a server log
	// line that could not be matched, say).
	Warnings []string
	// Reply is what the model generated for a request with Generate > 0: its reasoning (Ollama
	// message.thinking, OpenAI reasoning_content), its text and its tool calls, as the server
	// parsed them from the stream; nil for a scripted request (Generate 0). A generation cut off
	// at the token limit gives what was parsed before the cut.
	Reply *Reply
}

// APIError is a server's refusal or failure, with the address so a user knows which server.
type APIError struct {
	// Backend names the protocol ("ollama").
	Backend string
	// URL is the server's address.
	URL string
	// StatusCode is the HTTP status, 0 when no answer arrived (connection refused, say).
	StatusCode int
	// Body is the server's error message, or the transport error's.
	Body string
	// RetryAfter is how long the server asked the client to wait before trying again, from its
	// Retry-After header (RFC 9110 §10.2.3: delay-seconds or an HTTP-date), usually with HTTP
	// 429 or 503; 0 when it gave none.
	RetryAfter time.Duration
}

// Error implements error.
// The address is named with its password redacted ([RedactedURL]).
func (e *APIError) Error() string {
	u := RedactedURL(e.URL)
	if e.StatusCode == 0 {
		return fmt.Sprintf("%s at %s: %s", e.Backend, u, e.Body)
	}
	return fmt.Sprintf("%s at %s: HTTP %d: %s", e.Backend, u, e.StatusCode, e.Body)
}

// Usage is one request's token accounting normalised over the providers: every count
// is in tokens of the served model, nil when the server did not say (unknown is never 0), and
// Fields names the wire field each count came from, keyed by the figure's [UsageField] (for
// example Fields[UsageCachedRead] = "usage.prompt_tokens_details.cached_tokens").
//
// The providers split the prompt differently: OpenAI's prompt_tokens includes cached tokens,
// Anthropic's input_tokens excludes both cache reads and cache writes, DeepSeek reports
// prompt_cache_hit_tokens and prompt_cache_miss_tokens. A backend fills Prompt as the whole
// prompt (cached part included) in every case, so Prompt = CachedRead + CacheWrite + Uncached
// where all three are known.
type Usage struct {
	// Prompt is the whole prompt, cached part included.
	Prompt *int64
	// CachedRead is the part of the prompt read from the prompt cache (OpenAI
	// prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens, llama.cpp
	// timings.cache_n, DeepSeek prompt_cache_hit_tokens).
	CachedRead *int64
	// CacheWrite is the part of the prompt written to the cache and billed as a cache write
	// (Anthropic cache_creation_input_tokens); CacheWrite5m and CacheWrite1h split it by
	// lifetime where the provider says (Anthropic cache_creation.ephemeral_5m_input_tokens and
	// ephemeral_1h_input_tokens).
	CacheWrite   *int64
	CacheWrite5m *int64
	CacheWrite1h *int64
	// Uncached is the part of the prompt processed afresh and not written to a cache (Anthropic
	// input_tokens, DeepSeek prompt_cache_miss_tokens, llama.cpp timings.prompt_n).
	Uncached *int64
	// Generated is the number of tokens generated, reasoning included (OpenAI
	// completion_tokens, Anthropic output_tokens, llama.cpp timings.predicted_n).
	Generated *int64
	// ReasoningGenerated is the part of Generated that is reasoning (OpenAI
	// completion_tokens_details.reasoning_tokens).
	ReasoningGenerated *int64
	// Fields maps a figure ([UsagePrompt], [UsageCachedRead], ...) to the wire field its count
	// came from. Counts that are nil have no entry. As JSON it is an object keyed by the
	// figures' names ([UsageField.MarshalText]), sorted.
	Fields map[UsageField]string
}

// CacheFillError is a failure after a request was measured: the step that leaves the server's
// cache as the generation would have (the scripted reply's emulation) failed. Sending the request
// again would measure a cache the first attempt warmed, so it is never retried: the harness keeps
// the measured result with a warning.
type CacheFillError struct{ Err error }

// Error implements error.
func (e *CacheFillError) Error() string {
	return "fill the cache after the measured request: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *CacheFillError) Unwrap() error { return e.Err }

// MeasureThenFill is the Send of a backend whose measured request and cache fill are two steps
// (Ollama's and llama-server's): measure sends req and reads the server's figures, then fill
// leaves the server's cache as the generation of reply would have. An error of measure comes as
// it is, with its result; a failed fill is a *[CacheFillError] with the measured result.
func MeasureThenFill(ctx context.Context, req *Request, reply *Reply,
	measure func(context.Context, *Request, *Reply) (*Result, error),
	fill func(context.Context, *Request, *Reply, *Result) error) (*Result, error) {
	res, err := measure(ctx, req, reply)
	if err != nil {
		return res, err
	}
	if err := fill(ctx, req, reply, res); err != nil {
		return res, &CacheFillError{Err: err}
	}
	return res, nil
}

// UsageField names one figure of [Usage]. Its String is the Usage field's Go name ("Prompt",
// "CachedRead", ...), the key of the figure's wire field in the results' usage_fields column
// (metrics.Sample.UsageFields, JSON keyed by these names). A value outside the constants below
// (only a conversion can make one) names no figure: [UsageField.Valid] is false, [Usage.Set]
// records nothing for it and [UsageField.MarshalText] refuses it.
type UsageField uint8

// The figures of [Usage], in the order of its fields.
const (
	UsagePrompt UsageField = iota
	UsageCachedRead
	UsageCacheWrite
	UsageCacheWrite5m
	UsageCacheWrite1h
	UsageUncached
	UsageGenerated
	UsageReasoningGenerated
	numUsageFields
)

var usageFieldNames = [numUsageFields]string{
	UsagePrompt:             "Prompt",
	UsageCachedRead:         "CachedRead",
	UsageCacheWrite:         "CacheWrite",
	UsageCacheWrite5m:       "CacheWrite5m",
	UsageCacheWrite1h:       "CacheWrite1h",
	UsageUncached:           "Uncached",
	UsageGenerated:          "Generated",
	UsageReasoningGenerated: "ReasoningGenerated",
}

// UsageFields returns every [UsageField], in the order of [Usage]'s fields.
func UsageFields() []UsageField {
	out := make([]UsageField, numUsageFields)
	for i := range out {
		out[i] = UsageField(i)
	}
	return out
}

// Valid reports whether f is one of the UsageField constants.
func (f UsageField) Valid() bool { return f < numUsageFields }

// String returns the Usage field's name ("CachedRead"), or "UsageField(N)" for a value that
// is not [UsageField.Valid].
func (f UsageField) String() string {
	if !f.Valid() {
		return "UsageField(" + strconv.Itoa(int(f)) + ")"
	}
	return usageFieldNames[f]
}

// MarshalText implements encoding.TextMarshaler with [UsageField.String], so [Usage].Fields
// encodes as a JSON object keyed by the field names; an invalid value is an error.
func (f UsageField) MarshalText() ([]byte, error) {
	if !f.Valid() {
		return nil, fmt.Errorf("chat: %s is not a usage field", f)
	}
	return []byte(usageFieldNames[f]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with [ParseUsageField].
func (f *UsageField) UnmarshalText(b []byte) error {
	v, err := ParseUsageField(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ParseUsageField returns the UsageField whose String is name (the Usage field's name, case
// sensitive); an unknown name is an error quoting it.
func ParseUsageField(name string) (UsageField, error) {
	for f, n := range usageFieldNames {
		if n == name {
			return UsageField(f), nil
		}
	}
	return 0, fmt.Errorf("chat: unknown usage field %q", name)
}

// figure returns the address of the Usage field f names, nil when f is not valid.
func (u *Usage) figure(f UsageField) **int64 {
	switch f {
	case UsagePrompt:
		return &u.Prompt
	case UsageCachedRead:
		return &u.CachedRead
	case UsageCacheWrite:
		return &u.CacheWrite
	case UsageCacheWrite5m:
		return &u.CacheWrite5m
	case UsageCacheWrite1h:
		return &u.CacheWrite1h
	case UsageUncached:
		return &u.Uncached
	case UsageGenerated:
		return &u.Generated
	case UsageReasoningGenerated:
		return &u.ReasoningGenerated
	}
	return nil
}

// Get returns the figure f names (nil when unknown or when f is not valid).
func (u *Usage) Get(f UsageField) *int64 {
	if p := u.figure(f); p != nil {
		return *p
	}
	return nil
}

// Set records v as the figure f names and wire as the wire field it came from in Fields. A nil
// v, or a figure already set, is left as it is: the first source given wins, so a backend lists
// a figure's sources by preference. An f that is not valid names no figure: nothing is recorded
// (the figure stays unknown).
func (u *Usage) Set(f UsageField, wire string, v *int64) {
	dst := u.figure(f)
	if dst == nil || v == nil || *dst != nil {
		return
	}
	x := *v
	*dst = &x
	if u.Fields == nil {
		u.Fields = map[UsageField]string{}
	}
	u.Fields[f] = wire
}

// Without returns a copy of u in which the figures fs name are unknown (nil, and gone from
// Fields); u itself is unchanged (the copy has its own Fields map). A nil u gives nil.
func (u *Usage) Without(fs ...UsageField) *Usage {
	if u == nil {
		return nil
	}
	cp := *u
	cp.Fields = maps.Clone(u.Fields)
	for _, f := range fs {
		if p := cp.figure(f); p != nil {
			*p = nil
			delete(cp.Fields, f)
		}
	}
	return &cp
}

// ItemMessage returns the message that stands for a piece of a captured request the lab keeps
// but does not read as text (see [Message].Item): typ is the API's type of the piece ("" is
// written "unknown"), raw its JSON bytes as the client sent them; Content is "<type>
// sha256:<64 hex digits>" of raw.
func ItemMessage(role Role, typ string, raw []byte) Message {
	if typ == "" {
		typ = "unknown"
	}
	sum := sha256.Sum256(raw)
	return Message{Role: role, Item: typ, Content: typ + " sha256:" + hex.EncodeToString(sum[:])}
}

// The answer headers by which the lab's scripted model (lab/scriptmodel) tells a lab proxy in
// front of it what a reply was: [ScriptedStepHeader] "turn=T step=S intent=KIND" (1-based; "side"
// for a request answered outside the script, such as a title request), and one
// [ScriptedSkippedHeader] per intent of the script skipped just before it, with why
// ("turn=T step=S read greet.go: no tool ...").
const (
	ScriptedStepHeader    = "Lab-Scripted-Step"
	ScriptedSkippedHeader = "Lab-Scripted-Skipped"
)
