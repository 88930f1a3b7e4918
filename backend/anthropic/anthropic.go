package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"lab/chat"
	"lab/internal/wire"
)

// APIVersion is the anthropic-version header the client sends.
const APIVersion = "2023-06-01"

// DefaultBaseURL is the Messages API's address.
const DefaultBaseURL = "https://api.anthropic.com"

// KeyEnv is the environment variable the API key is read from when no key file is named.
const KeyEnv = "ANTHROPIC_API_KEY"

// MinThinkingBudget is the smallest thinking budget_tokens the API accepts; the client asks for
// it, with max_tokens one more, when a request asks to think.
const MinThinkingBudget = 1024

// Where a prompt-cache breakpoint goes ([Breakpoint].At).
const (
	// AtTools marks the last tool of the tool list: the tool list is cached.
	AtTools = "tools"
	// AtSystem marks the system prompt's block: tools and system prompt are cached.
	AtSystem = "system"
	// AtLastMessage marks the last block of the last message (the newest user text or tool
	// result) that can carry a marker: the whole prompt is cached for the next request.
	AtLastMessage = "last-message"
)

// The lifetimes a breakpoint can have ([Breakpoint].TTL), as the API names them.
const (
	TTL5m = "5m"
	TTL1h = "1h"
)

// Breakpoint is one `cache_control` marker the client places in every request.
type Breakpoint struct {
	// At is where it goes: AtTools, AtSystem or AtLastMessage.
	At string
	// TTL is the cache entry's lifetime: TTL5m (the API's default, sent as
	// {"type": "ephemeral"}) or TTL1h (sent as {"type": "ephemeral", "ttl": "1h"}). "" means 5m.
	TTL string
}

// DefaultBreakpoints is the client's default placement: the end of the system prompt and the
// last message, both 5 minutes.
func DefaultBreakpoints() []Breakpoint {
	return []Breakpoint{{At: AtSystem, TTL: TTL5m}, {At: AtLastMessage, TTL: TTL5m}}
}

// ParseBreakpoints reads a comma-separated list such as "tools,system:1h,last-message" (a place,
// optionally ":" and a lifetime) for a command-line flag. "" and "none" give an empty list (no
// caching); the result is checked as [New] checks Options.Breakpoints.
func ParseBreakpoints(s string) ([]Breakpoint, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return []Breakpoint{}, nil
	}
	var out []Breakpoint
	for _, f := range strings.Split(s, ",") {
		at, ttl, _ := strings.Cut(strings.TrimSpace(f), ":")
		out = append(out, Breakpoint{At: at, TTL: ttl})
	}
	if err := checkBreakpoints(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkBreakpoints refuses more than four breakpoints (the API answers a fifth with 400), an
// unknown place or lifetime, a place named twice, and a 1-hour entry after a 5-minute one in
// prompt order (tools, system, messages): the API requires longer-lived entries first.
func checkBreakpoints(bps []Breakpoint) error {
	if len(bps) > 4 {
		return fmt.Errorf("anthropic: %d cache breakpoints: the API allows at most 4", len(bps))
	}
	order := map[string]int{AtTools: 0, AtSystem: 1, AtLastMessage: 2}
	seen := map[string]bool{}
	ttlAt := map[int]string{}
	for _, b := range bps {
		pos, ok := order[b.At]
		if !ok {
			return fmt.Errorf("anthropic: cache breakpoint %q: want %s, %s or %s", b.At, AtTools, AtSystem, AtLastMessage)
		}
		if seen[b.At] {
			return fmt.Errorf("anthropic: cache breakpoint %q named twice", b.At)
		}
		seen[b.At] = true
		switch b.TTL {
		case "", TTL5m, TTL1h:
		default:
			return fmt.Errorf("anthropic: cache breakpoint %s: ttl %q: want %s or %s", b.At, b.TTL, TTL5m, TTL1h)
		}
		ttlAt[pos] = b.TTL
	}
	short := ""
	for pos := 0; pos < 3; pos++ {
		ttl, ok := ttlAt[pos]
		if !ok {
			continue
		}
		if ttl == TTL1h && short != "" {
			return fmt.Errorf("anthropic: cache breakpoint %s has ttl 1h after the 5m breakpoint %s: longer-lived entries must come first", atOf(pos), short)
		}
		if ttl != TTL1h && short == "" {
			short = atOf(pos)
		}
	}
	return nil
}

func atOf(pos int) string { return [...]string{AtTools, AtSystem, AtLastMessage}[pos] }

// Options configures a [Client].
type Options struct {
	// BaseURL is the server's address (default DefaultBaseURL); the client posts to
	// BaseURL + "/v1/messages". It must be an http or https URL.
	BaseURL string
	// Model is the model id sent as `model` (required), such as "claude-opus-4-5".
	Model string
	// KeyFile names a file holding the API key (surrounding white space ignored). Empty: the key
	// is read from the environment variable ANTHROPIC_API_KEY.
	KeyFile string
	// Breakpoints are the prompt-cache markers placed in every request, whatever the request
	// asks. nil means the request's own placement (chat.Request.CacheBreakpoints, which the
	// harness sets from the arm; 5-minute entries), or DefaultBreakpoints() for a request without
	// one; an empty, non-nil slice places none.
	Breakpoints []Breakpoint
	// ThinkingBudget is the thinking budget_tokens sent when a request asks to think (default and
	// minimum MinThinkingBudget); max_tokens is then ThinkingBudget+1.
	ThinkingBudget int
	// Thinking is how a request that asks to think (chat.Request.Think) asks the API:
	// ThinkingEnabled (default: extended thinking, {type: enabled, budget_tokens}, the only mode
	// of Claude 4.5 and earlier), ThinkingAdaptive ({type: adaptive}, the mode of Claude 4.6 and
	// later, which reject extended thinking from 4.7 on) or ThinkingOff (no thinking field).
	Thinking string
	// NoStream sends `stream: false` and reads one JSON response; TTFT is then unknown (0, with
	// a warning): the response headers arrive after the whole generation.
	NoStream bool
	// HTTPClient sends the requests (default: one with no overall timeout; requests end with
	// their context).
	HTTPClient *http.Client
	// Temperature is the sampling `temperature` of live generations (requests with
	// chat.Request.Generate > 0), 0 to 1; nil means [DefaultTemperature]. It is sent only when
	// the request does not think: the API refuses a temperature other than its default with
	// extended or adaptive thinking ("Thinking isn't compatible with temperature or top_k
	// modifications", Anthropic's extended thinking docs), so a thinking request samples at the
	// default, 1. Scripted requests send none.
	Temperature *float64
}

// DefaultTemperature is the sampling temperature of live generations when Options.Temperature
// is nil (the value the Ollama backend uses too).
const DefaultTemperature = 0.7

// Client sends the harness's requests to the Messages API. Safe for concurrent use: it holds
// no per-request state.
type Client struct {
	endpoint string
	// shown is endpoint as errors name it: its password redacted (url.URL.Redacted).
	shown       string
	model       string
	key         string
	breakpoints []Breakpoint
	budget      int
	explicit    bool
	thinking    string
	stream      bool
	http        *http.Client
	temperature float64
}

// New checks opts and returns a client. It reads the API key (from opts.KeyFile or
// ANTHROPIC_API_KEY; a missing key is an error naming both) but does not contact the server.
func New(opts Options) (*Client, error) {
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: bad base URL %q: want http(s)://host[:port][/path]", chat.RedactedURL(base))
	}
	if opts.Model == "" {
		return nil, errors.New("anthropic: no model: name one (such as claude-opus-4-5)")
	}
	bps := opts.Breakpoints
	if bps == nil {
		bps = DefaultBreakpoints()
	}
	if err := checkBreakpoints(bps); err != nil {
		return nil, err
	}
	switch opts.Thinking {
	case "", ThinkingEnabled, ThinkingAdaptive, ThinkingOff:
	default:
		return nil, fmt.Errorf("anthropic: thinking %q: want %s, %s or %s", opts.Thinking, ThinkingEnabled, ThinkingAdaptive, ThinkingOff)
	}
	budget := opts.ThinkingBudget
	if budget == 0 {
		budget = MinThinkingBudget
	}
	if budget < MinThinkingBudget {
		return nil, fmt.Errorf("anthropic: thinking budget %d: the API's minimum is %d", budget, MinThinkingBudget)
	}
	var key string
	if opts.KeyFile != "" {
		b, err := os.ReadFile(opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("anthropic: read the key file: %w", err)
		}
		if key = strings.TrimSpace(string(b)); key == "" {
			return nil, fmt.Errorf("anthropic: the key file %s is empty", opts.KeyFile)
		}
	} else if key = strings.TrimSpace(os.Getenv(KeyEnv)); key == "" {
		return nil, fmt.Errorf("anthropic: no API key: set %s or name a key file", KeyEnv)
	}
	temperature := DefaultTemperature
	if opts.Temperature != nil {
		if t := *opts.Temperature; t < 0 || t > 1 || t != t {
			return nil, fmt.Errorf("anthropic: temperature %g: the API takes 0 to 1", t)
		}
		temperature = *opts.Temperature
	}
	h := opts.HTTPClient
	if h == nil {
		h = &http.Client{}
	}
	return &Client{
		endpoint:    strings.TrimSuffix(u.String(), "/") + "/v1/messages",
		shown:       strings.TrimSuffix(u.Redacted(), "/") + "/v1/messages",
		model:       opts.Model,
		key:         key,
		breakpoints: bps,
		budget:      budget,
		explicit:    opts.Breakpoints != nil,
		thinking:    opts.Thinking,
		stream:      !opts.NoStream,
		http:        h,
		temperature: temperature,
	}, nil
}

// URL returns the endpoint the client posts to.
func (c *Client) URL() string { return c.endpoint }

// Model returns the model id.
func (c *Client) Model() string { return c.model }

// request is the Messages API request body; field order is the order the keys are written in.
type request struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	Stream      bool            `json:"stream"`
	Thinking    *thinkingConfig `json:"thinking,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	System      []*textBlock    `json:"system,omitempty"`
	Tools       []*tool         `json:"tools,omitempty"`
	Messages    []message       `json:"messages"`
}

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// The values of Options.Thinking.
const (
	ThinkingEnabled  = "enabled"
	ThinkingAdaptive = "adaptive"
	ThinkingOff      = "off"
)

type tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

// Body returns the Messages API request body for req as sent (JSON, HTML characters not
// escaped), and warnings for breakpoints that had nothing to mark (no tools, no system prompt).
// Errors are the message encoding's ([EncodeMessages]), a tool whose parameters are not JSON,
// and a live request (req.Generate > 0) with extended thinking whose Generate does not exceed
// the thinking budget (the API requires max_tokens > budget_tokens; the error names
// --max-tokens and the budget rather than lowering the budget behind the user's back).
//
// A live request sends max_tokens = req.Generate and, when it does not think, the temperature
// (Options.Temperature); a scripted one max_tokens 1 (budget+1 with thinking) and no
// temperature. The API has no sampling seed: the live driver's seed does not reach it.
func (c *Client) Body(req *chat.Request) (body []byte, warnings []string, err error) {
	msgs, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, nil, err
	}
	r := request{Model: c.model, MaxTokens: 1, Stream: c.stream, Messages: msgs}
	if req.Generate > 0 {
		r.MaxTokens = req.Generate
	}
	switch {
	case !req.Think || c.thinking == ThinkingOff:
	case c.thinking == ThinkingAdaptive:
		r.Thinking = &thinkingConfig{Type: ThinkingAdaptive}
	default:
		r.Thinking = &thinkingConfig{Type: ThinkingEnabled, BudgetTokens: c.budget}
		if req.Generate == 0 {
			r.MaxTokens = c.budget + 1
		} else if req.Generate <= c.budget {
			return nil, nil, fmt.Errorf("anthropic: a live generation of at most %d tokens (--max-tokens) with extended thinking: the API requires max_tokens above the thinking budget of %d tokens; give --max-tokens %d or more, or --thinking adaptive or off", req.Generate, c.budget, c.budget+1)
		}
	}
	if req.Generate > 0 && r.Thinking == nil {
		t := c.temperature
		r.Temperature = &t
	}
	if s := System(req.Messages); s != "" {
		r.System = []*textBlock{{Type: "text", Text: s}}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		} else if !json.Valid(schema) {
			return nil, nil, fmt.Errorf("anthropic: tool %s: parameters are not JSON", t.Name)
		}
		r.Tools = append(r.Tools, &tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	bps := c.breakpoints
	if !c.explicit && req.CacheBreakpoints != nil {
		// The arm's placement (chat.Request.CacheBreakpoints), 5-minute entries; a placement
		// given in Options wins.
		bps = bps[:0:0]
		for _, at := range req.CacheBreakpoints {
			bps = append(bps, Breakpoint{At: at})
		}
	}
	for _, b := range bps {
		cc := &cacheControl{Type: "ephemeral"}
		if b.TTL == TTL1h {
			cc.TTL = TTL1h
		}
		placed := false
		switch b.At {
		case AtTools:
			if n := len(r.Tools); n > 0 {
				r.Tools[n-1].CacheControl, placed = cc, true
			}
		case AtSystem:
			if len(r.System) > 0 {
				r.System[0].CacheControl, placed = cc, true
			}
		case AtLastMessage:
			placed = setBreakpoint(r.Messages, cc)
		}
		if !placed {
			warnings = append(warnings, fmt.Sprintf("cache breakpoint %s: nothing to mark", b.At))
		}
	}
	body, err = marshal(r)
	return body, warnings, err
}

// Response is the assistant message the server answered with, as far as it was generated.
type Response struct {
	// ID is the message id ("msg_...").
	ID string
	// Message is the answer: Thinking holds its thinking and redacted_thinking blocks with their
	// signatures, exactly as received (to be passed back unchanged in a tool-use loop);
	// Reasoning the thinking text joined; Content the text blocks joined; ToolCalls the tool_use
	// blocks, Arguments the input JSON as streamed.
	Message chat.Message
	// StopReason is the API's stop_reason ("end_turn", "max_tokens", "tool_use", ...).
	StopReason string
}

// Send sends req (see the package documentation) and returns what it measured. reply is not
// sent: a cloud API's cache holds prompts only, and the next request resends the reply as an
// assistant message. Errors are *chat.APIError (an HTTP error status, an `error` event in the
// stream, a body that cannot be read; a stream without message_stop, with no events or an
// empty 200: [chat.CutError], which the harness retries; an HTTP 200 that is not the API's
// answer: [chat.NotAnswerError]) with the API key redacted; the Result measured so far is
// returned with them. A JSON message answering a streamed request is read whole, usage
// included (TTFT unknown, with a warning).
//
// A live request (req.Generate > 0) is a real generation (see [Client.Body] for what it
// sends); Result.Reply is what the model wrote ([LiveReply]): also when the stream broke off,
// what came before. Rendered and CacheText stay empty: the API shows neither the prompt it
// rendered nor what its cache holds.
func (c *Client) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	resp, res, err := c.create(ctx, req)
	if req.Generate > 0 && res != nil && resp != nil {
		res.Reply = LiveReply(resp, res)
	}
	return res, err
}

// Create sends req and returns the model's answer besides the measurements; [Client.Send]
// returns the measurements with the answer as a chat.Reply. On an error the answer is nil.
func (c *Client) Create(ctx context.Context, req *chat.Request) (*Response, *chat.Result, error) {
	resp, res, err := c.create(ctx, req)
	if err != nil {
		return nil, res, err
	}
	return resp, res, nil
}

// create is Create returning, with a stream that broke off, the answer as far as it came.
func (c *Client) create(ctx context.Context, req *chat.Request) (*Response, *chat.Result, error) {
	body, warnings, err := c.Body(req)
	if err != nil {
		return nil, nil, err
	}
	res := &chat.Result{RequestBytes: int64(len(body)), Body: body, Warnings: warnings}
	h := http.Header{}
	h.Set("anthropic-version", APIVersion)
	h.Set("x-api-key", c.key)
	if c.stream {
		h.Set("accept", "text/event-stream")
	}
	ep := wire.Endpoint{Backend: "anthropic", URL: c.endpoint, Key: c.key}
	start := time.Now()
	resp, err := wire.Post(ctx, c.http, ep, http.MethodPost, c.endpoint, body, h)
	if err != nil {
		return nil, res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		ae := wire.StatusError(ep, resp, wire.ErrorMessage)
		res.Total = time.Since(start)
		return nil, res, ae
	}

	// The answer's form decides how it is read, whatever was asked: a server may answer a
	// streamed request with one JSON message.
	limit := req.ReplyLimit()
	// The proxy's accumulator ([Capture]): lab proxy reads an answer as Send does.
	ca := Capture{acc: accumulator{count: chat.ReplyCounter{Limit: limit}}}
	acc := &ca.acc
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head, err := chat.PeekAnswer(br)
	ctype := resp.Header.Get("Content-Type")
	switch form := chat.SniffAnswer(ctype, head); {
	case err != nil:
	case form == chat.AnswerEvents:
		err = readEventsMax(br, chat.WireLimit(limit), func(ev event) error {
			if res.TTFT == 0 && ev.content() {
				res.TTFT = time.Since(start)
			}
			if err := ca.take(ev); err != nil {
				return err
			}
			if acc.count.Over() {
				// Stop reading: the deferred Close drops the connection.
				return acc.count.Err("anthropic", "")
			}
			return nil
		})
		if err == nil {
			err = ca.End()
		}
	case form == chat.AnswerJSON:
		// One JSON message has no time to first token: its headers come after the whole
		// generation.
		if c.stream {
			res.Warnings = append(res.Warnings, "the server answered the streamed request with one JSON message, not a stream: time to first token unknown")
		} else {
			res.Warnings = append(res.Warnings, chat.Unstreamed)
		}
		var b []byte
		if b, err = chat.ReadAllMax(br, chat.WireLimit(limit)); err == nil {
			if err = ca.wholeBody(b); err == nil && acc.count.Over() {
				err = acc.count.Err("anthropic", "")
			}
		}
	default:
		err = chat.NotAnswerError("anthropic", "", ctype, head)
	}
	res.Total = time.Since(start)
	if errors.Is(err, chat.ErrWireTooLong) {
		err = chat.ReplyTooLongError("anthropic", "", limit)
	}
	if err != nil {
		var ae *chat.APIError
		if errors.As(err, &ae) {
			return acc.response(), res, c.apiError(ae.StatusCode, ae.Body)
		}
		if ctx.Err() != nil {
			return acc.response(), res, ctx.Err()
		}
		var se *streamError
		if errors.As(err, &se) {
			return acc.response(), res, c.apiError(resp.StatusCode, "error event in the stream: "+se.msg)
		}
		return acc.response(), res, c.apiError(resp.StatusCode, "read the answer: "+err.Error())
	}
	fill(res, acc, c.stream)
	return acc.response(), res, nil
}

// LiveReply returns the answer r as the chat.Reply of a live request: Thinking its thinking and
// redacted_thinking blocks exactly as received (signatures included: the next request sends them
// back unchanged), Reasoning their text joined by a blank line, Content the text, ToolCalls the
// tool_use blocks (Arguments the input JSON as streamed). A thinking block without its signature
// (the answer was cut before the signature_delta) and a tool_use whose input JSON the cut left
// unfinished cannot be sent back: they are left out, each with a warning on res (nil: none).
func LiveReply(r *Response, res *chat.Result) *chat.Reply {
	warn := func(format string, a ...any) {
		if res != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf(format, a...))
		}
	}
	m := r.Message
	out := &chat.Reply{Reasoning: m.Reasoning, Content: m.Content}
	for i, t := range m.Thinking {
		if !t.Redacted && t.Signature == "" {
			warn("thinking block %d has no signature (stop_reason %q): it cannot be sent back and was left out; its text stays in the reasoning", i, r.StopReason)
			continue
		}
		out.Thinking = append(out.Thinking, t)
	}
	for _, tc := range m.ToolCalls {
		if !json.Valid(tc.Arguments) {
			warn("tool_use %s (%s) has unfinished input (stop_reason %q): the call was left out", tc.ID, tc.Name, r.StopReason)
			continue
		}
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	return out
}

// fill sets the result's token figures from the accumulated usage; stream is whether the
// answer was read as a stream (a stream without message_start has no prompt counts).
func fill(res *chat.Result, acc *accumulator, stream bool) {
	u := &chat.Usage{Fields: map[chat.UsageField]string{}}
	set := func(name chat.UsageField, f usageField) { u.Set(name, f.src, f.v) }
	set(chat.UsageUncached, acc.input)
	set(chat.UsageCachedRead, acc.cacheRead)
	set(chat.UsageCacheWrite, acc.cacheWrite)
	set(chat.UsageCacheWrite5m, acc.write5m)
	set(chat.UsageCacheWrite1h, acc.write1h)
	set(chat.UsageGenerated, acc.output)

	if !acc.started && stream {
		res.Warnings = append(res.Warnings, "the stream had no message_start event: prompt counts unknown")
	}
	// The whole prompt is input + cache read + cache write. Anthropic's API always sends all
	// three; a server that sends no cache_creation_input_tokens has no cache write to count
	// (Ollama's /v1/messages sends input_tokens = prompt_eval_count alone, llama-server and vLLM
	// input and cache read), so its input_tokens holds every prompt token it did not read from
	// its cache and the fields it sends add up to the whole prompt. A cache write without the
	// cache read lacks a part: the prompt is then unknown, not the sum of what is there.
	switch {
	case u.Uncached != nil && (u.CacheWrite == nil || u.CachedRead != nil):
		p, wire := *u.Uncached, "usage.input_tokens"
		if u.CachedRead != nil {
			p += *u.CachedRead
			wire += " + usage.cache_read_input_tokens"
		}
		if u.CacheWrite != nil {
			p += *u.CacheWrite
			wire += " + usage.cache_creation_input_tokens"
		}
		u.Set(chat.UsagePrompt, wire, &p)
		res.PromptTokens = p
	case u.Uncached != nil:
		res.Warnings = append(res.Warnings, "the usage has cache_creation_input_tokens but no cache_read_input_tokens: the prompt's cached part is unknown, so prompt_tokens unknown")
	case acc.started || !stream:
		res.Warnings = append(res.Warnings, "the usage has no input_tokens: prompt counts unknown")
	}
	if u.CachedRead != nil {
		v := *u.CachedRead
		res.CachedTokens, res.CachedSource = &v, chat.SourceResponse
	}
	if u.Generated != nil {
		res.CompletionTokens = *u.Generated
	} else {
		res.Warnings = append(res.Warnings, "the usage has no output_tokens: completion tokens unknown")
	}
	if u.CacheWrite != nil && u.CacheWrite5m != nil && u.CacheWrite1h != nil && *u.CacheWrite5m+*u.CacheWrite1h != *u.CacheWrite {
		res.Warnings = append(res.Warnings, fmt.Sprintf("cache_creation 5m %d + 1h %d differs from cache_creation_input_tokens %d", *u.CacheWrite5m, *u.CacheWrite1h, *u.CacheWrite))
	}
	res.Usage = u
}

// apiError builds the *chat.APIError for a failure, the API key (and anything shaped like
// one) replaced by "[redacted]" ([wire.Redact]).
func (c *Client) apiError(status int, msg string) *chat.APIError {
	return wire.Endpoint{Backend: "anthropic", URL: c.endpoint, Key: c.key}.Error(status, msg)
}

// quote is [wire.Quote].
func quote(b []byte) string { return wire.Quote(b) }
