package llamacpp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"lab/backend/openai"
	"lab/chat"
	"lab/internal/wire"
)

// backendName is the Backend of every *chat.APIError this package returns.
const backendName = "llamacpp"

// Options configures a [Client]. The zero value of every field but BaseURL is a usable default.
type Options struct {
	// BaseURL is the server's address, such as http://127.0.0.1:8080 (an http or https URL
	// with a host; a trailing /v1 is accepted and dropped). Required.
	BaseURL string
	// Model is sent as the request's `model`. A single-model llama-server ignores it; a
	// router-mode server needs it. Empty sends none.
	Model string
	// Slot is the `id_slot` every request and the generation emulation are pinned to; 0 (the
	// default) is the first slot. A negative value lets the server choose, which leaves the
	// emulation free to land on another slot than the request it follows.
	Slot int
	// OwnSlot makes [Client.Reset] erase the pinned slot alone (Slot ≥ 0), not every slot the
	// server lists: the client of one of several sessions that run at once on a server started
	// with -np N, each pinned to its own slot, whose cold start must leave the others' caches.
	OwnSlot bool
	// ChatTemplateKwargs are sent as `chat_template_kwargs` (llama-server README,
	// "OpenAI-compatible API"), for example {"preserve_thinking": true}. Unless they set
	// "enable_thinking", the client sets it to the request's Think.
	ChatTemplateKwargs map[string]any
	// Output, when set, writes a reply as the served model would have generated it after the
	// rendered prompt, instead of the server's own rendering ([Client.ReplyText]), which nil,
	// the default, uses.
	Output func(*chat.Reply) string
	// APIKey is sent as `Authorization: Bearer` when the server was started with --api-key. The
	// caller reads it from the environment (LLAMA_API_KEY); it never appears in an error or a
	// Result.
	APIKey string
	// KeyFile names a file holding the API key (surrounding white space ignored); it is read by
	// New and wins over APIKey.
	KeyFile string
	// HTTPClient sends the requests; nil means one with no overall timeout (requests end with
	// their context).
	HTTPClient *http.Client
	// Temperature is the sampling `temperature` of live generations (requests with
	// chat.Request.Generate > 0); nil means [DefaultTemperature]. Scripted requests use 0.
	Temperature *float64
}

// DefaultTemperature is the sampling temperature of live generations when Options.Temperature
// is nil (the value the Ollama backend uses too).
const DefaultTemperature = 0.7

// DefaultSeed is the sampling seed of live generations until [Client.SetSeed] sets another.
const DefaultSeed = 42

// Client sends the harness's requests to one llama-server. Not safe for concurrent use: the
// measurement and its emulation must reach the slot in order.
type Client struct {
	base *url.URL
	opts Options
	key  string
	http *http.Client
	// eos is the model's end-of-generation token as text (/props eos_token), read once by
	// [Client.ReplyText].
	eos string
	// bos is the text of the token the server puts before every prompt it tokenizes (the
	// model's BOS where its GGUF says add_bos_token), as [Client.ReadStartToken] read it; ""
	// before, and for a model without one.
	bos string
	// temperature and seed sample the live generations.
	temperature float64
	seed        int64
	// cache keeps the last request's encoded messages ([Client.RequestBody]).
	cache bodyCache
}

// SetSeed sets the sampling seed (llama-server `seed`) of the live generations that follow
// (requests with chat.Request.Generate > 0); default [DefaultSeed]. The live driver gives each
// repetition its own (harness.Seeder). Scripted requests sample greedily (temperature 0) and
// send no seed.
func (c *Client) SetSeed(seed int64) { c.seed = seed }

// New returns a client for the llama-server at opts.BaseURL. It checks the options and reads
// KeyFile but does not contact the server; [Client.Props] does. A bad address or an unreadable
// key file is an error naming the field.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(opts.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llamacpp: Options.BaseURL %q: want http://host:port", chat.RedactedURL(opts.BaseURL))
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{base: u, opts: opts, key: opts.APIKey, http: opts.HTTPClient, temperature: DefaultTemperature, seed: DefaultSeed}
	if opts.Temperature != nil {
		if t := *opts.Temperature; t < 0 || t != t {
			return nil, fmt.Errorf("llamacpp: Options.Temperature %g: want 0 or more", t)
		}
		c.temperature = *opts.Temperature
	}
	if opts.KeyFile != "" {
		b, err := os.ReadFile(opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("llamacpp: Options.KeyFile: %w", err)
		}
		if c.key = strings.TrimSpace(string(b)); c.key == "" {
			return nil, fmt.Errorf("llamacpp: Options.KeyFile %s is empty", opts.KeyFile)
		}
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// URL returns the server's base address.
func (c *Client) URL() string { return c.base.String() }

// endpoint returns the URL of path on the server as errors name it: its password redacted
// (url.URL.Redacted). Requests are sent to c.base.String() + path.
func (c *Client) endpoint(path string) string { return c.base.Redacted() + path }

// tool is one entry of a Chat Completions `tools` array.
type tool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatBody is the /v1/chat/completions request; /apply-template gets the same.
type chatBody struct {
	Model              string          `json:"model,omitempty"`
	Messages           json.RawMessage `json:"messages"`
	Tools              []tool          `json:"tools,omitempty"`
	ChatTemplateKwargs map[string]any  `json:"chat_template_kwargs,omitempty"`
	Stream             bool            `json:"stream"`
	StreamOptions      *streamOptions  `json:"stream_options,omitempty"`
	MaxTokens          int             `json:"max_tokens"`
	Temperature        float64         `json:"temperature"`
	Seed               *int64          `json:"seed,omitempty"`
	CachePrompt        bool            `json:"cache_prompt"`
	IDSlot             int             `json:"id_slot"`
	// AddGenerationPrompt false asks /apply-template for the messages without the generation
	// prompt; nil sends none (the server's default, true).
	AddGenerationPrompt *bool `json:"add_generation_prompt,omitempty"`
}

// ChatBody returns the /v1/chat/completions request body for req, as JSON: `messages` from
// openai.EncodeMessages (reasoning as `reasoning_content`), `tools` as functions, the
// chat_template_kwargs (with `enable_thinking` = req.Think unless Options set it), `stream`
// with `stream_options.include_usage`, `max_tokens` 1, `temperature` 0, `cache_prompt` true and
// `id_slot`. A live request (req.Generate > 0) has `max_tokens` Generate, the live `temperature`
// (Options.Temperature) and `seed` ([Client.SetSeed]) instead. An invalid message (see
// openai.EncodeMessages) or tool parameters that are not JSON are errors naming the message or
// tool.
//
// The messages, or the tool list, it encoded for the previous request at the same place and
// unchanged are not encoded again ([Client.RequestBody], which gives the same bytes in pieces).
func (c *Client) ChatBody(req *chat.Request) ([]byte, error) {
	b, err := c.RequestBody(req)
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// chatBody is [Client.ChatBody] before its encoding.
func (c *Client) chatBody(req *chat.Request) (*chatBody, error) {
	msgs, err := openai.EncodeMessages(req.Messages)
	if err != nil {
		return nil, fmt.Errorf("llamacpp: %w", err)
	}
	b := chatBody{
		Model:         c.opts.Model,
		Messages:      msgs,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
		MaxTokens:     1,
		CachePrompt:   true,
		IDSlot:        max(c.opts.Slot, -1),
	}
	if req.Generate > 0 {
		seed := c.seed
		b.MaxTokens, b.Temperature, b.Seed = req.Generate, c.temperature, &seed
	}
	kw := make(map[string]any, len(c.opts.ChatTemplateKwargs)+1)
	for k, v := range c.opts.ChatTemplateKwargs {
		kw[k] = v
	}
	if _, ok := kw["enable_thinking"]; !ok {
		kw["enable_thinking"] = req.Think
	}
	b.ChatTemplateKwargs = kw
	for _, t := range req.Tools {
		params := bytes.TrimSpace(t.Parameters)
		if len(params) > 0 && !json.Valid(params) {
			return nil, fmt.Errorf("llamacpp: tool %s: parameters are not JSON", t.Name)
		}
		b.Tools = append(b.Tools, tool{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return &b, nil
}

// marshal encodes v as JSON without HTML escaping and without a trailing newline
// ([wire.Marshal]).
func marshal(v any) ([]byte, error) {
	b, err := wire.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("llamacpp: encode request: %w", err)
	}
	return b, nil
}

// post sends body to path and returns the response, or a *chat.APIError for a transport error
// or a status other than 200 (the body then read and closed; its message, [errorMessage], and
// Retry-After in the error), the key redacted.
func (c *Client) post(ctx context.Context, method, path string, body wire.Body) (*http.Response, error) {
	h := http.Header{}
	if c.key != "" {
		h.Set("Authorization", "Bearer "+c.key)
	}
	if path == "/v1/chat/completions" {
		// llama-server closes the connection after a streamed answer although its headers
		// say keep-alive: a request sent on it next would fail with EOF. Close it ourselves.
		h.Set("Connection", "close")
	}
	ep := wire.Endpoint{Backend: backendName, URL: c.endpoint(path), Key: c.key}
	resp, err := wire.PostBody(ctx, c.http, ep, method, c.endpoint(path), body, h)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, wire.StatusError(ep, resp, errorMessage)
	}
	return resp, nil
}

// getJSON sends a request to path and decodes the JSON answer into out.
func (c *Client) getJSON(ctx context.Context, method, path string, body wire.Body, out any) error {
	resp, err := c.post(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return &chat.APIError{Backend: backendName, URL: c.endpoint(path), StatusCode: resp.StatusCode, Body: c.redact("read answer: " + err.Error())}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &chat.APIError{Backend: backendName, URL: c.endpoint(path), StatusCode: resp.StatusCode, Body: c.redact("answer is not the expected JSON: " + err.Error() + ": " + quote(b))}
	}
	return nil
}

// errorBody is llama-server's error object: {"error": {"code", "message", "type"}}
// (format_error_response in tools/server/server-common.cpp).
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
	// NPromptTokens and NCtx come with an exceed_context_size_error: the prompt's tokens and
	// the slot's context size.
	NPromptTokens int `json:"n_prompt_tokens"`
	NCtx          int `json:"n_ctx"`
}

// exceedContextSize is llama-server's error type for a prompt that does not fit the slot's
// context (server-context.cpp update_slots: a prompt of n_ctx tokens or more is refused before
// the slot's cache is touched, "exceeds the available context size"; context shift, with
// --context-shift, applies only while generating).
const exceedContextSize = "exceed_context_size_error"

// errorMessage returns the message of an error answer: llama-server's error.message (with its
// type; for a prompt past the context window, [exceedContextSize], the prompt's tokens and the
// window first), an OpenAI-style error string, or the body quoted and cut to about 500 bytes.
func errorMessage(b []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && len(e.Error) > 0 {
		var eb errorBody
		if json.Unmarshal(e.Error, &eb) == nil && eb.Message != "" {
			if eb.Type == exceedContextSize && eb.NCtx > 0 {
				return fmt.Sprintf("the prompt (%d tokens) does not fit llama-server's context window of %d tokens (-c; it refuses a prompt of the window or more): %s (%s)",
					eb.NPromptTokens, eb.NCtx, eb.Message, eb.Type)
			}
			if eb.Type != "" {
				return eb.Message + " (" + eb.Type + ")"
			}
			return eb.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return s
		}
	}
	return quote(b)
}

// quote is [wire.Quote].
func quote(b []byte) string { return wire.Quote(b) }

// redact removes the API key, and anything shaped like one, from s ([wire.Redact]).
func (c *Client) redact(s string) string { return wire.Redact(s, c.key) }

// Render returns the prompt text the server builds from a chat request body with its own chat
// template (POST /apply-template, answer {"prompt": …}), without running the model.
func (c *Client) Render(ctx context.Context, body []byte) (string, error) {
	return c.render(ctx, wire.BodyOf(body))
}

// render is [Client.Render] of a body in pieces.
func (c *Client) render(ctx context.Context, body wire.Body) (string, error) {
	var out struct {
		Prompt *string `json:"prompt"`
	}
	if err := c.getJSON(ctx, http.MethodPost, "/apply-template", body, &out); err != nil {
		return "", err
	}
	if out.Prompt == nil {
		return "", &chat.APIError{Backend: backendName, URL: c.endpoint("/apply-template"), StatusCode: http.StatusOK, Body: "the answer has no prompt field"}
	}
	return *out.Prompt, nil
}

// Send is [Client.Measure] followed by [Client.FillCache]: it renders req, sends it for real
// (the measurement) and emulates the generation of reply (see the package documentation). A
// failed emulation is a *chat.CacheFillError with the measured result. The result's figures:
//
//   - PromptTokens: usage.prompt_tokens (the whole prompt), else timings.cache_n +
//     timings.prompt_n;
//   - CachedTokens: timings.cache_n, else usage.prompt_tokens_details.cached_tokens (source
//     "response"); nil with a warning when the answer has neither;
//   - CompletionTokens: usage.completion_tokens, else timings.predicted_n;
//   - Prefill: timings.prompt_ms; TTFT from sending to the first streamed chunk (unknown, 0
//     with a warning, for an unstreamed JSON answer); Total to the end of the answer;
//   - Usage: Prompt, CachedRead (timings.cache_n or the usage field), Uncached
//     (timings.prompt_n), Generated, ReasoningGenerated (usage.completion_tokens_details
//     .reasoning_tokens, where the build sends it), each with its wire field.
//
// A live request (req.Generate > 0) is a real generation instead (see [Client.ChatBody]): reply
// is ignored, there is no emulation (the slot's cache holds what the model generated), and
// Result.Reply is what the model wrote, parsed from the stream: reasoning_content, content and
// tool_calls (fragments joined by index). A generation cut at max_tokens (finish_reason
// "length") keeps what was parsed, less a tool call whose arguments the cut left unfinished (a
// warning says so); a stream that broke off gives what came before. CacheText is then Rendered
// followed by that reply as the server renders it in history ([Client.ReplyText], or
// [Options.Output]): the server does not return the generated tokens, so this is the text the
// model wrote rebuilt in its output format — exact for a reply the model ended itself, an
// approximation for one cut at max_tokens; empty, with a warning, when it cannot be rebuilt.
//
// A server's refusal is a *chat.APIError; the result so far is returned with it. A stream that
// ends before `data: [DONE]` (or a finish_reason and its usage), with no events or empty is a
// [chat.CutError], which the harness retries; an HTTP 200 that is not the API's answer (an HTML
// page) a [chat.NotAnswerError].
func (c *Client) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	res, err := c.Measure(ctx, req, reply)
	if err != nil {
		return res, err
	}
	if err := c.FillCache(ctx, req, reply, res); err != nil {
		return res, &chat.CacheFillError{Err: err}
	}
	return res, nil
}

// Measure is [Client.Send] without the generation emulation (harness.CacheFiller): the
// rendering, the measured request and, for a live request, the cache text of what the model
// wrote. A scripted result's CacheText is "" until [Client.FillCache].
func (c *Client) Measure(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	body, err := c.RequestBody(req)
	if err != nil {
		return nil, err
	}
	res := &chat.Result{RequestBytes: int64(body.Len())}
	// The body's bytes in one piece, for the requests file, once the answer is in: joining them
	// is not the request's work.
	defer func() { res.Body = body.Bytes() }()
	if res.Rendered, err = c.render(ctx, body); err != nil {
		return res, err
	}
	// The tokens the server prefills start with its BOS where the model adds one (Llama 3.1,
	// Gemma 3, DeepSeek V3; not Qwen3), which /apply-template's prompt lacks: the rendered
	// prompt the lab counts starts with it too ([Client.ReadStartToken]).
	res.Rendered = c.bos + res.Rendered

	start := time.Now()
	resp, err := c.post(ctx, http.MethodPost, "/v1/chat/completions", body)
	if err != nil {
		res.Total = time.Since(start)
		return res, err
	}
	comp, err := readCompletionMax(resp, req.ReplyLimit(), func() { res.TTFT = time.Since(start) })
	resp.Body.Close()
	res.Total = time.Since(start)
	if req.Generate > 0 && comp != nil {
		// What the model wrote, also when the stream broke off: a timeout keeps what came.
		res.Reply = liveReply(comp, res)
	}
	if err != nil {
		var ae *chat.APIError
		if errors.As(err, &ae) {
			ae.URL = c.endpoint("/v1/chat/completions")
			ae.Body = c.redact(ae.Body)
			return res, ae
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, &chat.APIError{Backend: backendName, URL: c.endpoint("/v1/chat/completions"), StatusCode: resp.StatusCode, Body: c.redact("read stream: " + err.Error())}
	}
	fill(res, comp)
	if comp.Unstreamed {
		res.Warnings = append(res.Warnings, chat.Unstreamed)
	}

	if req.Generate > 0 {
		out, err := c.output(ctx, req, res.Rendered, res.Reply)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Warnings = append(res.Warnings, "what the model wrote is not known as the server holds it (cache text unknown): "+err.Error())
			return res, nil
		}
		res.CacheText = res.Rendered + out
	}
	return res, nil
}

// FillCache emulates the generation of reply after the measured request res (harness
// .CacheFiller): a raw POST /completion of res.Rendered followed by the reply as the server
// renders it ([Client.ReplyText], or [Options.Output]), which leaves the slot's cache holding
// that text; it then sets res.CacheText to it. It does nothing for a live request or a nil
// reply. Sending it again leaves the same cache. Errors are the rendering's or the
// completion's, wrapped as "generation emulation".
func (c *Client) FillCache(ctx context.Context, req *chat.Request, reply *chat.Reply, res *chat.Result) error {
	if req.Generate > 0 || reply == nil {
		return nil
	}
	out, err := c.output(ctx, req, res.Rendered, reply)
	if err != nil {
		return fmt.Errorf("generation emulation: %w", err)
	}
	text := res.Rendered + out
	if err := c.emulate(ctx, text); err != nil {
		return err
	}
	res.CacheText = text
	return nil
}

// output is the text reply leaves after the prompt rendered: [Options.Output] of it when set,
// else [Client.ReplyText].
func (c *Client) output(ctx context.Context, req *chat.Request, rendered string, reply *chat.Reply) (string, error) {
	if c.opts.Output != nil {
		return c.opts.Output(reply), nil
	}
	return c.ReplyText(ctx, req, strings.TrimPrefix(rendered, c.bos), reply)
}

// ReadStartToken asks the server which token it adds before every prompt it tokenizes (the
// one token of an empty text tokenized with `add_special`, POST /tokenize with `with_pieces`)
// and returns its text: the model's BOS where its GGUF says add_bos_token (Llama 3.1's
// <|begin_of_text|>, Gemma 3's <bos>), "" for a model without one (Qwen3). From then on the
// client's Result.Rendered and CacheText start with it, so that the lab counts the tokens the
// server prefills, and the generation emulation leaves it to the server. Without the call they
// are the server's rendering as it is. Errors: the server's answer, or more than one token.
func (c *Client) ReadStartToken(ctx context.Context) (string, error) {
	body, err := marshal(map[string]any{"content": "", "add_special": true, "parse_special": true, "with_pieces": true})
	if err != nil {
		return "", err
	}
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := c.getJSON(ctx, http.MethodPost, "/tokenize", wire.BodyOf(body), &out); err != nil {
		return "", err
	}
	switch len(out.Tokens) {
	case 0:
		c.bos = ""
		return "", nil
	case 1:
		var p struct {
			Piece *string `json:"piece"`
		}
		if err := json.Unmarshal(out.Tokens[0], &p); err != nil || p.Piece == nil {
			return "", &chat.APIError{Backend: backendName, URL: c.endpoint("/tokenize"), StatusCode: http.StatusOK, Body: "the start token has no piece: " + quote(out.Tokens[0])}
		}
		c.bos = *p.Piece
		return c.bos, nil
	}
	return "", &chat.APIError{Backend: backendName, URL: c.endpoint("/tokenize"), StatusCode: http.StatusOK, Body: fmt.Sprintf("an empty text tokenized with add_special gave %d tokens; want 0 or 1", len(out.Tokens))}
}

// ReplyText returns the text the model writes after the generation prompt when it answers req
// with reply, taken from the server's own chat template (POST /apply-template), so that the
// slot's cache after rendered (req's prompt, generation prompt included) and this text holds
// exactly the tokens the next request's rendering of the assistant message starts with:
//
//   - H, the messages without the generation prompt (`add_generation_prompt` false), must
//     start rendered: the rest of rendered is the generation prompt G;
//   - N, the messages followed by reply as an assistant message and a tool result after it (as
//     the next request of a tool loop renders it: the assistant message is in the current
//     turn, its reasoning kept; a final reply is rendered the same way, as the model wrote it),
//     must start with H: the rest from there is the assistant message A;
//   - the text is A past what it shares with G, up to and including the model's first
//     end-of-generation token (GET /props `eos_token`, read once) — what a generation ends with.
//
// When the template's assistant message starts with the generation prompt (Qwen3's
// `<|im_start|>assistant\n`), the cache then holds N's prefix exactly. When it does not (a
// generation prompt that opens an empty think block the history drops), the text is what the
// model writes after G, and the next request diverges where the template does. Errors: a
// rendering that fails or does not start as said, a server that reports no eos_token, or an
// assistant message without it.
func (c *Client) ReplyText(ctx context.Context, req *chat.Request, rendered string, reply *chat.Reply) (string, error) {
	if c.eos == "" {
		p, err := c.Props(ctx)
		if err != nil {
			return "", fmt.Errorf("read the end-of-generation token: %w", err)
		}
		if p.EOSToken == "" {
			return "", &chat.APIError{Backend: backendName, URL: c.endpoint("/props"), StatusCode: http.StatusOK, Body: "the answer has no eos_token: the end of a generated reply is not known"}
		}
		c.eos = p.EOSToken
	}
	no := false
	return ReplyTextWith(func(r *chat.Request) (string, error) { return c.renderWith(ctx, r, &no) }, c.eos, req, rendered, reply)
}

// ReplyTextWith is [Client.ReplyText] with the rendering given: history returns the rendering
// of a request's messages without the generation prompt (`add_generation_prompt` false, the
// server's /apply-template for the client; the same chat template rendered in process for the
// sim backend), eos is the model's end-of-generation token (/props `eos_token`), rendered is
// req's prompt with its generation prompt, without the start token the server's tokenizer adds.
// It returns the text up to and including the first eos of the assistant message past what it
// shares with the generation prompt. Errors: history's, a rendering that does not start as
// [Client.ReplyText] says, or an assistant message without eos.
func ReplyTextWith(history func(*chat.Request) (string, error), eos string, req *chat.Request, rendered string, reply *chat.Reply) (string, error) {
	if eos == "" {
		return "", errors.New("llamacpp: no end-of-generation token: the end of a generated reply is not known")
	}
	h, err := history(req)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(rendered, h) {
		return "", fmt.Errorf("llamacpp: the server's rendering of the messages without the generation prompt is not the start of the prompt (%d bytes, %d shared)", len(h), commonPrefix(rendered, h))
	}
	gen := rendered[len(h):]
	after, err := history(chat.Replied(req, reply))
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(after, h) {
		return "", fmt.Errorf("llamacpp: the server renders the messages before the reply otherwise once the reply follows them (%d bytes shared of %d)", commonPrefix(after, h), len(h))
	}
	msg := after[len(h):]
	k := commonPrefix(msg, gen)
	end := strings.Index(msg[k:], eos)
	if end < 0 {
		return "", fmt.Errorf("llamacpp: the server's rendering of the reply has no end-of-generation token %q", eos)
	}
	return msg[k : k+end+len(eos)], nil
}

// renderWith renders req as [Client.Render] does, `add_generation_prompt` set to addGen (nil:
// the server's default).
func (c *Client) renderWith(ctx context.Context, req *chat.Request, addGen *bool) (string, error) {
	b, err := c.chatBody(req)
	if err != nil {
		return "", err
	}
	b.AddGenerationPrompt = addGen
	body, err := marshal(b)
	if err != nil {
		return "", err
	}
	return c.Render(ctx, body)
}

// commonPrefix is the length in bytes of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// liveReply returns what the model wrote in comp, the warnings of its assembly (a tool call
// cut inside its arguments at max_tokens, or without a name, dropped) added to res.
func liveReply(comp *completion, res *chat.Result) *chat.Reply {
	res.Warnings = append(res.Warnings, comp.replyWarnings...)
	return &chat.Reply{Reasoning: comp.Reasoning, Content: comp.Content, ToolCalls: comp.ToolCalls}
}

// fill sets res's figures from a finished completion: those [openai.ChatCapture.Result] read
// (llama-server's timings first, its usage otherwise: the reading `lab proxy` takes too), with
// warnings for an answer without timings or without a cached count.
func fill(res *chat.Result, comp *completion) {
	f := comp.figures
	res.PromptTokens, res.CompletionTokens, res.Usage = f.PromptTokens, f.CompletionTokens, f.Usage
	res.CachedTokens, res.CachedSource = f.CachedTokens, f.CachedSource
	if f.Prefill > 0 {
		res.Prefill = f.Prefill
	}
	res.Warnings = append(res.Warnings, f.Warnings...)
	if !comp.timings {
		res.Warnings = append(res.Warnings, "the answer carried no timings: cached tokens from usage only, prefill time unknown")
	}
	if res.CachedTokens == nil {
		res.Warnings = append(res.Warnings, "the answer has neither timings.cache_n nor usage.prompt_tokens_details.cached_tokens: cached tokens unknown")
	}
}

// apply copies u's counts and the timings' prefill time into res: PromptTokens, CachedTokens
// (source "response"; without a cached count, the warning noCached), CompletionTokens, Prefill
// (timings.prompt_ms) and Usage.
func apply(res *chat.Result, u *chat.Usage, t openai.Timings, noCached string) {
	if u.Prompt != nil {
		res.PromptTokens = *u.Prompt
	}
	if u.CachedRead != nil {
		n := *u.CachedRead
		res.CachedTokens, res.CachedSource = &n, chat.SourceResponse
	} else {
		res.Warnings = append(res.Warnings, noCached)
	}
	if u.Generated != nil {
		res.CompletionTokens = *u.Generated
	}
	if t.PromptMS != nil {
		res.Prefill = time.Duration(*t.PromptMS * float64(time.Millisecond))
	}
	if len(u.Fields) > 0 {
		res.Usage = u
	}
}

// completionRequest is a native POST /completion request.
type completionRequest struct {
	Prompt      string  `json:"prompt"`
	NPredict    int     `json:"n_predict"`
	CachePrompt bool    `json:"cache_prompt"`
	IDSlot      int     `json:"id_slot"`
	Temperature float64 `json:"temperature"`
	Stream      bool    `json:"stream"`
}

// emulate sends the raw completion that leaves the slot's cache holding text: n_predict 0
// evaluates the prompt into the cache and generates nothing (README, /completion).
func (c *Client) emulate(ctx context.Context, text string) error {
	// The server adds the BOS the rendered prompt starts with ([Client.startToken]) itself.
	text = strings.TrimPrefix(text, c.bos)
	body, err := marshal(completionRequest{Prompt: text, NPredict: 0, CachePrompt: true, IDSlot: max(c.opts.Slot, -1)})
	if err != nil {
		return err
	}
	var out json.RawMessage
	if err := c.getJSON(ctx, http.MethodPost, "/completion", wire.BodyOf(body), &out); err != nil {
		return fmt.Errorf("generation emulation: %w", err)
	}
	return nil
}

// slotInfo is one element of GET /slots.
type slotInfo struct {
	ID *int `json:"id"`
}

// Reset erases the prompt cache of every slot the server lists (GET /slots, then POST
// /slots/{id}?action=erase for each), so the next session starts cold. When GET /slots is
// disabled (--no-slots: 501, or 404 on builds without it) it erases the pinned slot only. An
// erase refused with 501 (the server was started without --slot-save-path) is an error saying
// so. With [Options].OwnSlot it erases the pinned slot alone.
func (c *Client) Reset(ctx context.Context) error {
	ids := []int{max(c.opts.Slot, 0)}
	var slots []slotInfo
	var err error
	if !c.opts.OwnSlot {
		err = c.getJSON(ctx, http.MethodGet, "/slots", wire.Body{}, &slots)
	}
	var ae *chat.APIError
	switch {
	case c.opts.OwnSlot:
	case err == nil:
		ids = ids[:0]
		for _, s := range slots {
			if s.ID != nil {
				ids = append(ids, *s.ID)
			}
		}
		if len(ids) == 0 {
			return &chat.APIError{Backend: backendName, URL: c.endpoint("/slots"), StatusCode: http.StatusOK, Body: "the server lists no slots"}
		}
	case errors.As(err, &ae) && (ae.StatusCode == http.StatusNotImplemented || ae.StatusCode == http.StatusNotFound):
		// The slots list is disabled; erase the pinned slot alone.
	default:
		return fmt.Errorf("list slots: %w", err)
	}
	for _, id := range ids {
		path := "/slots/" + strconv.Itoa(id) + "?action=erase"
		var out struct {
			NErased *int64 `json:"n_erased"`
		}
		if err := c.getJSON(ctx, http.MethodPost, path, wire.BodyOf([]byte("{}")), &out); err != nil {
			if errors.As(err, &ae) && ae.StatusCode == http.StatusNotImplemented {
				return fmt.Errorf("erase slot %d: llama-server refuses slot actions unless started with --slot-save-path DIR: %w", id, err)
			}
			return fmt.Errorf("erase slot %d: %w", id, err)
		}
	}
	return nil
}

// SaveSlot writes the pinned slot's prompt and its KV cache to filename in the server's
// --slot-save-path folder (POST /slots/{id}?action=save, llama-server README "POST
// /slots/{id_slot}?action=save") and returns the tokens saved (`n_saved`). A server started
// without --slot-save-path refuses with 501, an error saying so.
func (c *Client) SaveSlot(ctx context.Context, filename string) (int, error) {
	return c.slotFile(ctx, "save", filename)
}

// RestoreSlot loads filename, written by [Client.SaveSlot] (by this server or an earlier one of
// the same model), into the pinned slot (POST /slots/{id}?action=restore) and returns the tokens
// restored (`n_restored`): the slot then holds that prompt, as if it had just processed it. A
// prompt longer than the slot's context is refused (400, "Restored prompt does not fit in the
// slot context") and leaves the slot empty.
func (c *Client) RestoreSlot(ctx context.Context, filename string) (int, error) {
	return c.slotFile(ctx, "restore", filename)
}

func (c *Client) slotFile(ctx context.Context, action, filename string) (int, error) {
	id := max(c.opts.Slot, 0)
	body, err := marshal(map[string]string{"filename": filename})
	if err != nil {
		return 0, err
	}
	var out struct {
		NSaved    *int `json:"n_saved"`
		NRestored *int `json:"n_restored"`
	}
	if err := c.getJSON(ctx, http.MethodPost, "/slots/"+strconv.Itoa(id)+"?action="+action, wire.BodyOf(body), &out); err != nil {
		var ae *chat.APIError
		if errors.As(err, &ae) && ae.StatusCode == http.StatusNotImplemented {
			return 0, fmt.Errorf("%s slot %d: llama-server refuses slot actions unless started with --slot-save-path DIR: %w", action, id, err)
		}
		return 0, fmt.Errorf("%s slot %d: %w", action, id, err)
	}
	n := out.NSaved
	if action == "restore" {
		n = out.NRestored
	}
	if n == nil {
		return 0, &chat.APIError{Backend: backendName, URL: c.endpoint("/slots/" + strconv.Itoa(id)), StatusCode: http.StatusOK, Body: "the answer has no n_saved or n_restored"}
	}
	return *n, nil
}

// Props is what GET /props says about the server (llama-server README, "GET /props").
type Props struct {
	// ModelPath is the GGUF file the server loaded (`model_path`, the -m argument).
	ModelPath string
	// NCtx is the context size of a slot in tokens (`default_generation_settings.n_ctx`), 0
	// when not reported.
	NCtx int64
	// TotalSlots is the number of slots (`total_slots`, the --parallel option).
	TotalSlots int
	// BuildInfo is the build, "b<number>-<commit>" (`build_info`), "" on builds without it.
	BuildInfo string
	// ChatTemplate is the model's Jinja chat template (`chat_template`).
	ChatTemplate string
	// EOSToken is the model's end-of-generation token as text (`eos_token`, such as
	// "<|im_end|>"); "" on builds without it.
	EOSToken string
	// Raw is the whole answer.
	Raw json.RawMessage
}

// Props asks the server for its properties (GET /props). An unreachable server is a
// *chat.APIError naming the address.
func (c *Client) Props(ctx context.Context) (*Props, error) {
	var raw json.RawMessage
	if err := c.getJSON(ctx, http.MethodGet, "/props", wire.Body{}, &raw); err != nil {
		return nil, err
	}
	var p struct {
		ModelPath                 string `json:"model_path"`
		TotalSlots                int    `json:"total_slots"`
		BuildInfo                 string `json:"build_info"`
		ChatTemplate              string `json:"chat_template"`
		EOSToken                  string `json:"eos_token"`
		DefaultGenerationSettings struct {
			NCtx int64 `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &chat.APIError{Backend: backendName, URL: c.endpoint("/props"), StatusCode: http.StatusOK, Body: "answer is not the expected JSON: " + err.Error()}
	}
	return &Props{ModelPath: p.ModelPath, NCtx: p.DefaultGenerationSettings.NCtx, TotalSlots: p.TotalSlots,
		BuildInfo: p.BuildInfo, ChatTemplate: p.ChatTemplate, EOSToken: p.EOSToken, Raw: raw}, nil
}

// Version returns the server's build for the manifest: /props `build_info`, or "" when the
// build does not report one.
func (c *Client) Version(ctx context.Context) (string, error) {
	p, err := c.Props(ctx)
	if err != nil {
		return "", err
	}
	return p.BuildInfo, nil
}

// Tokenizer counts tokens with the server's own tokenizer (POST /tokenize). It implements the
// harness's Tokenizer. Safe for concurrent use.
type Tokenizer struct {
	c *Client
	// AddSpecial asks the server to add the model's special start tokens (BOS) to each text
	// (`add_special`). False, the default, suits the harness, which tokenizes prompts piece by
	// piece; a chat prompt's own count includes the BOS where the model adds one.
	AddSpecial bool

	mu   sync.Mutex
	memo map[string][]int32
}

// memoLimit bounds the number of texts a Tokenizer remembers.
const memoLimit = 4096

// Tokenizer returns a tokenizer backed by the server's /tokenize.
func (c *Client) Tokenizer() *Tokenizer { return &Tokenizer{c: c, memo: map[string][]int32{}} }

// Encode returns the token ids of text as the server tokenizes it: `parse_special` true, so
// special tokens written as text (such as <|im_start|>) become their ids, as in a rendered
// prompt; `with_pieces` false. The server's answer {"tokens": [ids…]} is also accepted with
// pieces ({"id", "piece"} objects). A server's refusal is a *chat.APIError; the call has no
// context and ends with the client's HTTP timeout, if any.
func (t *Tokenizer) Encode(text string) ([]int32, error) {
	if text == "" {
		return nil, nil
	}
	t.mu.Lock()
	if ids, ok := t.memo[text]; ok {
		t.mu.Unlock()
		return append([]int32(nil), ids...), nil
	}
	t.mu.Unlock()
	body, err := marshal(map[string]any{"content": text, "add_special": t.AddSpecial, "parse_special": true, "with_pieces": false})
	if err != nil {
		return nil, err
	}
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := t.c.getJSON(context.Background(), http.MethodPost, "/tokenize", wire.BodyOf(body), &out); err != nil {
		return nil, err
	}
	ids := make([]int32, len(out.Tokens))
	for i, raw := range out.Tokens {
		var id int32
		if err := json.Unmarshal(raw, &id); err != nil {
			var p struct {
				ID *int32 `json:"id"`
			}
			if err := json.Unmarshal(raw, &p); err != nil || p.ID == nil {
				return nil, &chat.APIError{Backend: backendName, URL: t.c.endpoint("/tokenize"), StatusCode: http.StatusOK, Body: fmt.Sprintf("token %d is neither an id nor {\"id\": …}: %s", i, quote(raw))}
			}
			id = *p.ID
		}
		ids[i] = id
	}
	t.mu.Lock()
	if len(t.memo) >= memoLimit {
		clear(t.memo)
	}
	t.memo[text] = ids
	t.mu.Unlock()
	return append([]int32(nil), ids...), nil
}
