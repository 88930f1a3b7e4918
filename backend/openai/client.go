package openai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"lab/chat"
	"lab/internal/wire"
)

// The APIs a Client can speak (Options.API).
const (
	// APIChat is Chat Completions, POST {base}/chat/completions.
	APIChat = "chat"
	// APIResponses is the Responses API, POST {base}/responses.
	APIResponses = "responses"
)

// Options configures a Client. Zero fields take the defaults named.
type Options struct {
	// Profile names the server kind ([ProfileByName]); "" is generic.
	Profile string
	// BaseURL is the API's base, such as http://127.0.0.1:8000/v1 (the endpoint path is
	// appended); "" takes the profile's DefaultBaseURL, an error for a self-hosted profile. It
	// must be http or https with a host.
	BaseURL string
	// Model is the model name sent in every request; required.
	Model string
	// API is APIChat (default) or APIResponses.
	API string
	// KeyFile names a file holding the API key (surrounding white space trimmed). Empty: the
	// key comes from the profile's environment variable (Profile.KeyEnv).
	KeyFile string
	// Getenv reads the environment; nil is os.Getenv. Only Profile.KeyEnv is read.
	Getenv func(string) string
	// HTTPClient carries the requests; nil is a client with no overall timeout (requests end
	// with their context).
	HTTPClient *http.Client
	// MaxTokens bounds the generation of every scripted request; 0 is the smallest the API
	// allows: 1 for Chat Completions, 16 for the Responses API (its minimum max_output_tokens).
	// A live request (chat.Request.Generate > 0) is bounded by its Generate instead.
	MaxTokens int
	// PromptCacheKey is sent as `prompt_cache_key` where the profile takes it (OpenAI), to
	// route a session's requests to the same cache; "" sends none.
	PromptCacheKey string
	// NoStream sends Chat Completions requests unstreamed (stream false); TTFT is then
	// unknown (0, with a warning). The Responses API is always streamed.
	NoStream bool
	// Extra are top-level request fields added to every body, such as
	// {"chat_template_kwargs": {"enable_thinking": true}} or DeepSeek's {"thinking": {"type":
	// "enabled"}}; they replace fields of the same name the client wrote.
	Extra map[string]json.RawMessage
	// Headers are extra HTTP headers for every request, added to the profile's.
	Headers map[string]string
	// Temperature is the sampling temperature (`temperature`, Chat Completions and Responses)
	// of live generations, requests with chat.Request.Generate > 0; nil means
	// [DefaultTemperature]. Scripted requests send no temperature. OpenAI's reasoning models
	// (o-series, gpt-5) accept only their default, 1: give 1 for them.
	Temperature *float64
}

// DefaultTemperature is the sampling temperature of live generations when Options.Temperature
// is nil (the value Ollama's backend uses too).
const DefaultTemperature = 0.7

// DefaultSeed is the sampling seed of live Chat Completions requests until [Client.SetSeed]
// sets another.
const DefaultSeed = 42

// Client sends the harness's requests to one OpenAI-compatible server and model. Safe for
// concurrent use: every request carries its own state.
type Client struct {
	profile Profile
	base    *url.URL
	model   string
	api     string
	key     string
	http    *http.Client
	max     int
	opts    Options
	extra   []field
	headers map[string]string

	// seenDetails records that a response from this server carried prompt_tokens_details
	// (for CachedDetailsOrZero: the server's flag is on).
	seenDetails atomic.Bool
	// temperature is the live generations' sampling temperature; seed their sampling seed
	// (Chat Completions only).
	temperature float64
	seed        atomic.Int64
}

// SetSeed sets the sampling seed (Chat Completions `seed`) of the live generations that follow
// (requests with chat.Request.Generate > 0); default [DefaultSeed]. The live driver gives each
// repetition its own (harness.Seeder). The Responses API takes no seed: there it has no effect.
// Servers sample reproducibly for a seed only on a best-effort basis (OpenAI says so of its
// own). Safe for concurrent use.
func (c *Client) SetSeed(seed int64) { c.seed.Store(seed) }

// New validates opts and returns a client. It does not contact the server. Errors: an unknown
// profile or API, a base URL that does not parse or is not http(s)://host, no model, a key
// file that cannot be read, a missing key for a profile that needs one (naming the
// environment variable), an Extra field that is not JSON.
func New(opts Options) (*Client, error) {
	p, err := ProfileByName(opts.Profile)
	if err != nil {
		return nil, err
	}
	c := &Client{profile: p, model: opts.Model, api: opts.API, opts: opts, temperature: DefaultTemperature}
	c.seed.Store(DefaultSeed)
	if opts.Temperature != nil {
		if t := *opts.Temperature; t < 0 || t > 2 || t != t {
			return nil, fmt.Errorf("openai: temperature %g: want 0 to 2", t)
		}
		c.temperature = *opts.Temperature
	}
	if c.api == "" {
		c.api = APIChat
	}
	switch c.api {
	case APIChat:
		c.max = 1
	case APIResponses:
		c.max = 16
	default:
		return nil, fmt.Errorf("openai: unknown API %q: want %s or %s", opts.API, APIChat, APIResponses)
	}
	if opts.MaxTokens > 0 {
		c.max = opts.MaxTokens
	}
	if opts.Model == "" {
		return nil, errors.New("openai: no model: name the model the server serves")
	}
	raw := opts.BaseURL
	if raw == "" {
		raw = p.DefaultBaseURL
	}
	if raw == "" {
		return nil, fmt.Errorf("openai: profile %s needs a base URL (such as http://127.0.0.1:8000/v1)", p.Name)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: bad base URL %q: want http(s)://host[:port]/path", chat.RedactedURL(raw))
	}
	c.base = u
	if c.key, err = readKey(opts, p); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Extra)) {
		v := opts.Extra[k]
		if !json.Valid(v) {
			return nil, fmt.Errorf("openai: extra field %q: not JSON", k)
		}
		c.extra = append(c.extra, field{k, v})
	}
	c.headers = map[string]string{}
	for k, v := range p.Headers {
		c.headers[k] = v
	}
	for k, v := range opts.Headers {
		c.headers[k] = v
	}
	c.http = opts.HTTPClient
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// readKey returns the API key from opts.KeyFile or the profile's environment variable.
func readKey(opts Options, p Profile) (string, error) {
	if opts.KeyFile != "" {
		b, err := os.ReadFile(opts.KeyFile)
		if err != nil {
			return "", fmt.Errorf("openai: read key file: %w", err)
		}
		k := strings.TrimSpace(string(b))
		if k == "" {
			return "", fmt.Errorf("openai: key file %s is empty", opts.KeyFile)
		}
		return k, nil
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var k string
	if p.KeyEnv != "" {
		k = strings.TrimSpace(getenv(p.KeyEnv))
	}
	if k == "" && p.KeyRequired {
		return "", fmt.Errorf("openai: profile %s needs an API key: set %s or give a key file", p.Name, p.KeyEnv)
	}
	return k, nil
}

// URL returns the API's base URL.
func (c *Client) URL() string { return c.base.String() }

// Model returns the model name sent.
func (c *Client) Model() string { return c.model }

// Profile returns the client's profile.
func (c *Client) Profile() Profile { return c.profile }

// Send sends req once, streamed, with the smallest generation the API allows, and returns what
// it measured. The scripted reply is not generated: a cloud API's cache holds prompts, and the
// next request resends the reply as a message (the server cannot be made to hold it otherwise),
// so reply is not used. Rendered and CacheText stay empty (the server does not say how it
// rendered the prompt, nor which text its cache holds after the answer).
//
// A request with req.Generate > 0 (the live driver) is a real generation instead: the bound is
// req.Generate (the profile's MaxTokensField; Responses max_output_tokens), with `temperature`
// (Options.Temperature) and, for Chat Completions, `seed` ([Client.SetSeed]); reply is ignored
// and Result.Reply holds what the model wrote, parsed from the stream: Chat Completions
// content, reasoning_content (or reasoning) and tool_calls joined by their index; the
// Responses API's output items: reasoning text (reasoning_text, else the summary), output_text,
// function calls, and each reasoning item with encrypted_content as a Thinking block in
// [ReasoningBlock]'s form, which [EncodeInput] sends back as the same item. A generation cut
// at the bound, or a stream that broke off, gives what was parsed before the cut, less a tool
// call whose arguments the cut left unfinished (a warning says so).
//
// Figures: PromptTokens = usage.prompt_tokens (Responses: usage.input_tokens), CachedTokens from
// where the profile says (Profile.Cached; nil when the server did not say), CompletionTokens =
// usage.completion_tokens (output_tokens), TTFT = from sending to the first delta carrying
// content, reasoning or a tool call, Total = to the end of the stream, Prefill from
// llama-server's timings.prompt_ms when present. Usage is nil when the response carried none
// (a Warning says so). A server that answers the streamed request with one JSON document is
// read as the API's unstreamed answer (usage, text, reasoning, tool calls; TTFT unknown, with a
// warning). Errors are *chat.APIError; the API key appears in none. A stream that ends before
// its end marker (Chat Completions: `data: [DONE]`, or a finish_reason and its usage; the
// Responses API: response.completed or response.incomplete), a stream with no events and an
// empty 200 are a [chat.CutError], which the harness retries; an HTTP 200 that is not the
// API's answer (an HTML page) is a [chat.NotAnswerError].
func (c *Client) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	if c.api == APIResponses {
		return c.sendResponses(ctx, req)
	}
	return c.sendChat(ctx, req)
}

// Nonce returns a short line unique to runID, for the harness to put first in the system
// prompt of every request of the run: a cloud API's prompt cache is shared by everyone using
// the same prefix and cannot be emptied, so a run starts cold only if its prompt starts with
// bytes no earlier request had. The line is "lab-run: " and 16 hex digits of runID's SHA-256
// (the same runID gives the same line, so the requests of one run share their prefix), with no
// newline.
func Nonce(runID string) string {
	h := sha256.Sum256([]byte(runID))
	return "lab-run: " + hex.EncodeToString(h[:8])
}

// field is one top-level JSON field to set in a request body.
type field struct {
	key   string
	value json.RawMessage
}

// exchange is one request: what was sent and what came back. Each request has its own,
// so concurrent requests share nothing.
type exchange struct {
	body       []byte // the body sent
	status     int
	answer     io.ReadCloser // a 2xx answer's body, for the lab to read
	answerType string        // its Content-Type
	// limit is the request's reply limit in bytes ([chat.Request.ReplyLimit]).
	limit int64
}

// wire returns the most bytes one piece of the answer may take: [chat.WireLimit] of e.limit.
func (e *exchange) wire() int64 { return chat.WireLimit(e.limit) }

// encodeFields returns the JSON object of fields, in their order.
func encodeFields(fields []field) []byte {
	var out bytes.Buffer
	out.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(&out, f.key)
		out.WriteByte(':')
		out.Write(f.value)
	}
	out.WriteByte('}')
	return out.Bytes()
}

// endpoint is the server's name in the errors of the wire layer, the key redacted from them.
func (c *Client) endpoint() wire.Endpoint {
	return wire.Endpoint{Backend: "openai", URL: c.base.String(), Key: c.key}
}

// open begins an exchange: it builds req's request body from the fields that fields gives
// (and the warnings of its conversion), posts it to {base}{path} ([Client.post]) and returns the
// exchange, whose answer the caller reads and closes, the result begun (the warnings, the body
// and its size) and the time the request left. A conversion error comes with no result; a failed
// post with the result, its Total the time taken.
func (c *Client) open(ctx context.Context, req *chat.Request, path string,
	fields func(*chat.Request) ([]field, []string, error), stream bool) (e *exchange, res *chat.Result, start time.Time, err error) {
	set, warn, err := fields(req)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	e = &exchange{body: encodeFields(set), limit: req.ReplyLimit()}
	res = &chat.Result{Warnings: warn, Body: e.body, RequestBytes: int64(len(e.body))}
	if start, err = c.post(ctx, path, e, stream); err != nil {
		res.Total = time.Since(start)
	}
	return e, res, start, err
}

// post sends e.body to {base}{path} (stream: asking for an event stream) with the headers the
// API takes (Authorization: Bearer with the key, when there is one) and the profile's and
// Options.Headers, and returns when the request left. A 2xx answer's body is e.answer, for the
// caller to read and close; any other status is a *chat.APIError with the server's message
// ([ErrorMessage]) and Retry-After, the key redacted; so is a transport failure (no status).
func (c *Client) post(ctx context.Context, path string, e *exchange, stream bool) (time.Time, error) {
	h := http.Header{}
	if c.key != "" {
		h.Set("Authorization", "Bearer "+c.key)
	}
	if stream {
		h.Set("Accept", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
	} else {
		h.Set("Accept", "application/json")
	}
	for k, v := range c.headers {
		h.Set(k, v)
	}
	url := strings.TrimRight(c.base.String(), "/") + path
	start := time.Now()
	resp, err := wire.Post(ctx, c.http, c.endpoint(), http.MethodPost, url, e.body, h)
	if err != nil {
		return start, err
	}
	e.status, e.answerType = resp.StatusCode, resp.Header.Get("Content-Type")
	if resp.StatusCode/100 != 2 {
		return start, wire.StatusError(c.endpoint(), resp, ErrorMessage)
	}
	e.answer = resp.Body
	return start, nil
}

// baseFields are the fields every request of c gets beside messages/input: tools, the
// generation bound (req.Generate for a live request, else the smallest), for a live request
// the temperature and, with seed, the seed, then the prompt cache key. Options.Extra (applied
// after, by withExtra) may replace any of them.
func (c *Client) baseFields(req *chat.Request, flatTools bool, maxField string, seed bool) ([]field, error) {
	var set []field
	if len(req.Tools) > 0 {
		tools, err := encodeTools(req.Tools, flatTools)
		if err != nil {
			return nil, err
		}
		set = append(set, field{"tools", tools})
	}
	bound := c.max
	if req.Generate > 0 {
		bound = req.Generate
	}
	set = append(set, field{maxField, json.RawMessage(strconv.Itoa(bound))})
	if req.Generate > 0 {
		set = append(set, field{"temperature", json.RawMessage(strconv.FormatFloat(c.temperature, 'g', -1, 64))})
		if seed {
			set = append(set, field{"seed", json.RawMessage(strconv.FormatInt(c.seed.Load(), 10))})
		}
	}
	if c.opts.PromptCacheKey != "" && c.profile.PromptCacheKey {
		k, _ := json.Marshal(c.opts.PromptCacheKey)
		set = append(set, field{"prompt_cache_key", k})
	}
	return set, nil
}

// withExtra returns set with Options.Extra applied: an extra field replaces one of the same
// name, else it is appended.
func (c *Client) withExtra(set []field) []field {
	for _, x := range c.extra {
		found := false
		for i := range set {
			if set[i].key == x.key {
				set[i].value, found = x.value, true
			}
		}
		if !found {
			set = append(set, x)
		}
	}
	return set
}

// apiError turns an error into a *chat.APIError naming the server, with the given status and
// the API key redacted. Context cancellation passes through.
func (c *Client) apiError(err error, status int) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return c.endpoint().Error(status, err.Error())
}

// quote is [wire.Quote].
func quote(b []byte) string { return wire.Quote(b) }

// redact removes the client's API key, and anything shaped like one, from s ([wire.Redact]).
func (c *Client) redact(s string) string { return wire.Redact(s, c.key) }

// usageCounts is a response's usage as the OpenAI-compatible servers write it, every field a
// pointer so that a missing one stays unknown.
type usageCounts struct {
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    *int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     *int64 `json:"cached_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// DeepSeek.
	PromptCacheHitTokens  *int64 `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens *int64 `json:"prompt_cache_miss_tokens"`
}

// Timings is llama-server's `timings` object (result_timings::to_json in
// tools/server/server-task.cpp), sent with the last chunk of a Chat Completions stream, an
// unstreamed chat.completion and a native /completion answer: CacheN prompt tokens reused from
// the slot's KV cache, PromptN prompt tokens prefilled in PromptMS milliseconds, PredictedN
// tokens generated in PredictedMS milliseconds. Every field is a pointer: a missing one stays
// unknown.
type Timings struct {
	CacheN      *int64   `json:"cache_n"`
	PromptN     *int64   `json:"prompt_n"`
	PromptMS    *float64 `json:"prompt_ms"`
	PredictedN  *int64   `json:"predicted_n"`
	PredictedMS *float64 `json:"predicted_ms"`
}

// counts reports whether t carries llama-server's own count of the prompt (cache_n or
// prompt_n).
func (t *Timings) counts() bool { return t != nil && (t.CacheN != nil || t.PromptN != nil) }

// SetPrompt records the timings' prompt figures in u, each where u has none yet
// ([chat.Usage.Set]: the first source wins): the prompt as cache_n + prompt_n (both needed), the
// cached part cache_n, the uncached part prompt_n, each with its wire field
// ("timings.cache_n+timings.prompt_n", "timings.cache_n", "timings.prompt_n"). They are the
// server's own count of what its slot reused and prefilled: where present, the lab reads the
// cached and uncached tokens from them before any usage field.
func (t Timings) SetPrompt(u *chat.Usage) {
	if t.CacheN != nil && t.PromptN != nil {
		sum := *t.CacheN + *t.PromptN
		u.Set(chat.UsagePrompt, "timings.cache_n+timings.prompt_n", &sum)
	}
	u.Set(chat.UsageCachedRead, "timings.cache_n", t.CacheN)
	u.Set(chat.UsageUncached, "timings.prompt_n", t.PromptN)
}

// fillUsage normalises u (and llama-server's timings t, either may be nil) into res by profile
// p's rules: Usage with the wire field of every count, PromptTokens, CachedTokens and
// CompletionTokens. seen records that a response from the server carried
// prompt_tokens_details (profile rule [CachedDetailsOrZero]: from then on a missing field
// counts 0); nil for an answer read on its own.
//
// Under the default rule ([CachedDetails]) an answer with llama-server's timings is read as
// llama-server's own count: the prompt is usage.prompt_tokens, else timings cache_n + prompt_n;
// the cached tokens timings.cache_n, else usage.prompt_tokens_details.cached_tokens; the
// uncached timings.prompt_n; the generated usage.completion_tokens, else timings.predicted_n;
// with a warning when usage and timings disagree on the cached tokens, and when the answer
// carried timings but no usage (counts from the timings only). This is the one reading of
// llama-server's figures: `lab run --backend llamacpp` (backend/llamacpp, through
// [ChatCapture]) and `lab proxy` in front of llama-server take it.
func fillUsage(res *chat.Result, u *usageCounts, t *Timings, p Profile, seen *atomic.Bool) {
	if seen == nil {
		seen = new(atomic.Bool)
	}
	if t != nil && t.PromptMS != nil {
		res.Prefill = time.Duration(*t.PromptMS * float64(time.Millisecond))
	}
	llama := p.Cached == CachedDetails && t.counts()
	if u == nil && !llama {
		res.Warnings = append(res.Warnings, "the response carried no usage: token counts unknown (does the server honour stream_options.include_usage?)")
		return
	}
	us := &chat.Usage{Fields: map[chat.UsageField]string{}}
	if u == nil {
		res.Warnings = append(res.Warnings, "the stream carried no usage chunk (stream_options.include_usage ignored?): counts from timings only")
		u = &usageCounts{}
	}
	us.Set(chat.UsagePrompt, "usage.prompt_tokens", u.PromptTokens)
	if llama {
		t.SetPrompt(us)
	}
	us.Set(chat.UsageGenerated, "usage.completion_tokens", u.CompletionTokens)
	if llama {
		us.Set(chat.UsageGenerated, "timings.predicted_n", t.PredictedN)
	}
	if d := u.CompletionTokensDetails; d != nil {
		us.Set(chat.UsageReasoningGenerated, "usage.completion_tokens_details.reasoning_tokens", d.ReasoningTokens)
	}
	var cached *int64
	if d := u.PromptTokensDetails; d != nil {
		cached = d.CachedTokens
		us.Set(chat.UsageCacheWrite, "usage.prompt_tokens_details.cache_write_tokens", d.CacheWriteTokens)
	}
	switch p.Cached {
	case CachedConstant:
		res.Warnings = append(res.Warnings, fmt.Sprintf("profile %s: the server's cached_tokens is a constant, not a measurement: cached tokens unknown", p.Name))
	case CachedHitMiss:
		us.Set(chat.UsageCachedRead, "usage.prompt_cache_hit_tokens", u.PromptCacheHitTokens)
		us.Set(chat.UsageUncached, "usage.prompt_cache_miss_tokens", u.PromptCacheMissTokens)
		us.Set(chat.UsageCachedRead, "usage.prompt_tokens_details.cached_tokens", cached)
	case CachedDetailsOrZero:
		if u.PromptTokensDetails != nil {
			seen.Store(true)
		}
		if cached != nil {
			us.Set(chat.UsageCachedRead, "usage.prompt_tokens_details.cached_tokens", cached)
		} else if us.Prompt != nil {
			if seen.Load() {
				us.Set(chat.UsageCachedRead, "usage.prompt_tokens_details.cached_tokens (absent: 0)", new(int64))
			} else {
				// Absent means 0 only if the server reports the field at all: not known yet.
				res.Warnings = append(res.Warnings, fmt.Sprintf("profile %s: no prompt_tokens_details in the usage: cached tokens unknown "+
					"until a response carries the field (the server runs with --enable-prompt-tokens-details (vLLM) or --enable-cache-report (SGLang)); "+
					"from then on a missing field counts 0", p.Name))
			}
		}
	default:
		if llama && t.CacheN != nil && cached != nil && *t.CacheN != *cached {
			res.Warnings = append(res.Warnings, fmt.Sprintf("timings.cache_n %d and usage.prompt_tokens_details.cached_tokens %d disagree; cached tokens from timings", *t.CacheN, *cached))
		}
		us.Set(chat.UsageCachedRead, "usage.prompt_tokens_details.cached_tokens", cached)
		if t != nil {
			us.Set(chat.UsageCachedRead, "timings.cache_n", t.CacheN)
		}
	}
	deriveUncached(us)
	setUsage(res, us)
}

// deriveUncached sets Uncached, when the server did not say, as the prompt less its cached
// read and cache write (OpenAI's prompt_tokens includes both), naming the fields it came from.
func deriveUncached(us *chat.Usage) {
	if us.Uncached != nil || us.Prompt == nil || us.CachedRead == nil {
		return
	}
	un := *us.Prompt - *us.CachedRead
	wire := us.Fields[chat.UsagePrompt] + " - " + us.Fields[chat.UsageCachedRead]
	if us.CacheWrite != nil {
		un -= *us.CacheWrite
		wire += " - " + us.Fields[chat.UsageCacheWrite]
	}
	us.Set(chat.UsageUncached, wire, &un)
}

// setUsage copies the normalised usage's counts into the Result's own figures.
func setUsage(res *chat.Result, us *chat.Usage) {
	res.Usage = us
	if us.Prompt != nil {
		res.PromptTokens = *us.Prompt
	} else {
		res.Warnings = append(res.Warnings, "the usage carried no prompt token count")
	}
	if us.Generated != nil {
		res.CompletionTokens = *us.Generated
	}
	if us.CachedRead != nil {
		v := *us.CachedRead
		res.CachedTokens, res.CachedSource = &v, chat.SourceResponse
	}
}
