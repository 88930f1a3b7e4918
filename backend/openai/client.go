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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"lab/chat"
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
	oa      *goopenai.Client
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
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	cfg := goopenai.DefaultConfig(c.key)
	cfg.BaseURL = strings.TrimRight(u.String(), "/")
	cfg.HTTPClient = &doer{next: hc, headers: c.headers}
	c.oa = goopenai.NewClientWithConfig(cfg)
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

// edit is what the client's HTTPDoer does to one request, and what it saw. It travels in the
// request's context, so concurrent requests do not share it.
type edit struct {
	// set are the fields written into the body: each replaces the field of the same name
	// where go-openai wrote one, else it is appended, in order.
	set []field
	// tee keeps a copy of the response body (an unstreamed response, read by the lab after
	// go-openai decoded its own typed subset).
	tee bool

	// stream marks a streamed request: the doer takes a 2xx answer's body (answer, with its
	// Content-Type answerType) for the lab to read, and gives go-openai an empty one.
	stream bool

	body       []byte // the body sent
	start      time.Time
	response   bytes.Buffer
	status     int
	answer     io.ReadCloser
	answerType string
	// retryAfter is the answer's Retry-After header as a wait (RFC 9110 §10.2.3); 0 without one.
	retryAfter time.Duration
	// limit is the request's reply limit in bytes ([chat.Request.ReplyLimit]); an unstreamed
	// body (tee) longer than its wire bound ([chat.WireLimit]) is cut there and tooLong set.
	limit   int64
	tooLong bool
}

// wire returns the most bytes one piece of the answer may take: [chat.WireLimit] of e.limit.
func (e *edit) wire() int64 { return chat.WireLimit(e.limit) }

// boundedBody is an unstreamed answer's body read no further than max bytes: past them it
// fails with [chat.ErrWireTooLong] and sets *tooLong.
type boundedBody struct {
	r       io.Reader
	left    int64
	tooLong *bool
}

// Read implements io.Reader.
func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		*b.tooLong = true
		return 0, chat.ErrWireTooLong
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

type editKey struct{}

// doer is the go-openai ClientConfig.HTTPClient (an HTTPDoer). This is how the lab sends
// fields go-openai does not type without forking it: go-openai builds the request (URL,
// Authorization header, model, stream, stream_options), and doer rewrites its JSON body before
// it leaves — the `messages` array becomes EncodeMessagesWith's exact bytes (so reasoning is in
// the profile's field, present even when empty where DeepSeek needs it, and keys are in the
// lab's order), and `tools`, `max_tokens`, `prompt_cache_key` and Options.Extra are set — then
// records the bytes sent and the time, adds the profile's headers, and, for an unstreamed
// response, tees the body so untyped usage fields (DeepSeek's prompt_cache_hit_tokens,
// llama-server's timings) can be read. A streamed request's 2xx answer the doer takes whole
// (edit.answer), and go-openai gets an empty body: the lab reads the answer itself
// ([Client.readAnswer]), because go-openai's stream reader ends the same way at `data: [DONE]`
// and at a body that broke off, and drops an application/json answer.
type doer struct {
	next    goopenai.HTTPDoer
	headers map[string]string
}

// Do implements goopenai.HTTPDoer.
func (d *doer) Do(r *http.Request) (*http.Response, error) {
	for k, v := range d.headers {
		r.Header.Set(k, v)
	}
	e, _ := r.Context().Value(editKey{}).(*edit)
	if e == nil {
		return d.next.Do(r)
	}
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		if b, err = setFields(b, e.set); err != nil {
			return nil, err
		}
		e.body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	e.start = time.Now()
	resp, err := d.next.Do(r)
	if err != nil {
		return nil, err
	}
	e.status = resp.StatusCode
	e.retryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	e.answerType = resp.Header.Get("Content-Type")
	if e.stream && resp.StatusCode/100 == 2 {
		e.answer = resp.Body
		resp.Body = http.NoBody
	}
	if e.tee {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(&boundedBody{r: resp.Body, left: e.wire() + 1, tooLong: &e.tooLong}, &e.response), resp.Body}
	}
	return resp, nil
}

// setFields returns the JSON object body with each of set written: in place of the field of the
// same name, or appended, in set's order. Other fields keep their order and bytes.
func setFields(body []byte, set []field) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("openai: request body is not a JSON object")
	}
	done := make([]bool, len(set))
	var out bytes.Buffer
	out.WriteByte('{')
	n := 0
	put := func(k string, v []byte) {
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		writeString(&out, k)
		out.WriteByte(':')
		out.Write(v)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("openai: request body: %w", err)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("openai: request body field %q: %w", k, err)
		}
		replaced := false
		for i, f := range set {
			if f.key == k && !done[i] {
				put(k, f.value)
				done[i], replaced = true, true
				break
			}
		}
		if !replaced {
			put(k, v)
		}
	}
	for i, f := range set {
		if !done[i] {
			put(f.key, f.value)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
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

// apiError turns a go-openai or transport error into a *chat.APIError naming the server, with
// the API key redacted. Context cancellation passes through.
func (c *Client) apiError(err error, status int) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ae := &chat.APIError{Backend: "openai", URL: c.base.Redacted(), StatusCode: status}
	var oe *goopenai.APIError
	var re *goopenai.RequestError
	switch {
	case errors.As(err, &oe):
		ae.StatusCode = oe.HTTPStatusCode
		ae.Body = oe.Message
		if oe.Type != "" {
			ae.Body = oe.Type + ": " + ae.Body
		}
	case errors.As(err, &re):
		ae.StatusCode = re.HTTPStatusCode
		ae.Body = quote(re.Body)
	default:
		ae.Body = err.Error()
	}
	ae.Body = c.redact(ae.Body)
	return ae
}

// apiErrorFrom is apiError for the failure of the request e sent, with the server's
// Retry-After (429, 503) when it gave one.
func (c *Client) apiErrorFrom(err error, e *edit) error {
	err = c.apiError(err, e.status)
	var ae *chat.APIError
	if errors.As(err, &ae) {
		ae.RetryAfter = e.retryAfter
	}
	return err
}

// ParseRetryAfter reads a Retry-After header value (RFC 9110 §10.2.3): delay-seconds, or an
// HTTP-date from which the wait is counted from now, at most a day. Empty, unreadable, negative
// and past values are 0. For [chat.APIError].RetryAfter.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// quote returns a body that is not JSON (or JSON without an error object) as a quoted string,
// truncated to 500 bytes.
func quote(b []byte) string {
	const max = 500
	if len(b) > max {
		return fmt.Sprintf("%q… (%d bytes)", b[:max], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// keyLike matches the shapes API keys take (OpenAI sk-…, OpenRouter sk-or-…), so that a
// server's echo of part of a key is not kept either.
var keyLike = regexp.MustCompile(`\b(sk|rk)-[A-Za-z0-9_\-*.]{6,}`)

// redact removes the client's API key, and anything shaped like one, from s.
func (c *Client) redact(s string) string {
	if c.key != "" {
		s = strings.ReplaceAll(s, c.key, "[redacted]")
	}
	return keyLike.ReplaceAllString(s, "[redacted]")
}

// usageCounts is a response's usage as the OpenAI-compatible servers write it, every field a
// pointer so that a missing one stays unknown (go-openai's Usage turns it into 0).
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

// timings is llama-server's `timings` object (tools/server/server-task.cpp result_timings).
type timings struct {
	CacheN   *int64   `json:"cache_n"`
	PromptN  *int64   `json:"prompt_n"`
	PromptMS *float64 `json:"prompt_ms"`
}

// fillUsage normalises u (and llama-server's timings t, either may be nil) into res: Usage
// with the wire field of every count, PromptTokens, CachedTokens and CompletionTokens.
func (c *Client) fillUsage(res *chat.Result, u *usageCounts, t *timings) {
	if t != nil && t.PromptMS != nil {
		res.Prefill = time.Duration(*t.PromptMS * float64(time.Millisecond))
	}
	if u == nil {
		res.Warnings = append(res.Warnings, "the response carried no usage: token counts unknown (does the server honour stream_options.include_usage?)")
		return
	}
	us := &chat.Usage{Fields: map[string]string{}}
	us.Set("Prompt", "usage.prompt_tokens", u.PromptTokens)
	us.Set("Generated", "usage.completion_tokens", u.CompletionTokens)
	if d := u.CompletionTokensDetails; d != nil {
		us.Set("ReasoningGenerated", "usage.completion_tokens_details.reasoning_tokens", d.ReasoningTokens)
	}
	var cached *int64
	if d := u.PromptTokensDetails; d != nil {
		cached = d.CachedTokens
		us.Set("CacheWrite", "usage.prompt_tokens_details.cache_write_tokens", d.CacheWriteTokens)
	}
	switch c.profile.Cached {
	case CachedConstant:
		res.Warnings = append(res.Warnings, fmt.Sprintf("profile %s: the server's cached_tokens is a constant, not a measurement: cached tokens unknown", c.profile.Name))
	case CachedHitMiss:
		us.Set("CachedRead", "usage.prompt_cache_hit_tokens", u.PromptCacheHitTokens)
		us.Set("Uncached", "usage.prompt_cache_miss_tokens", u.PromptCacheMissTokens)
		us.Set("CachedRead", "usage.prompt_tokens_details.cached_tokens", cached)
	case CachedDetailsOrZero:
		if u.PromptTokensDetails != nil {
			c.seenDetails.Store(true)
		}
		if cached != nil {
			us.Set("CachedRead", "usage.prompt_tokens_details.cached_tokens", cached)
		} else if us.Prompt != nil {
			if c.seenDetails.Load() {
				us.Set("CachedRead", "usage.prompt_tokens_details.cached_tokens (absent: 0)", new(int64))
			} else {
				// Absent means 0 only if the server reports the field at all: not known yet.
				res.Warnings = append(res.Warnings, fmt.Sprintf("profile %s: no prompt_tokens_details in the usage: cached tokens unknown "+
					"until a response carries the field (the server runs with --enable-prompt-tokens-details (vLLM) or --enable-cache-report (SGLang)); "+
					"from then on a missing field counts 0", c.profile.Name))
			}
		}
	default:
		us.Set("CachedRead", "usage.prompt_tokens_details.cached_tokens", cached)
		if t != nil {
			us.Set("CachedRead", "timings.cache_n", t.CacheN)
		}
	}
	deriveUncached(us)
	c.result(res, us)
}

// deriveUncached sets Uncached, when the server did not say, as the prompt less its cached
// read and cache write (OpenAI's prompt_tokens includes both), naming the fields it came from.
func deriveUncached(us *chat.Usage) {
	if us.Uncached != nil || us.Prompt == nil || us.CachedRead == nil {
		return
	}
	un := *us.Prompt - *us.CachedRead
	wire := us.Fields["Prompt"] + " - " + us.Fields["CachedRead"]
	if us.CacheWrite != nil {
		un -= *us.CacheWrite
		wire += " - " + us.Fields["CacheWrite"]
	}
	us.Set("Uncached", wire, &un)
}

// result copies the normalised usage's counts into the Result's own figures.
func (c *Client) result(res *chat.Result, us *chat.Usage) {
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
