// Package ollama is the lab's backend for an Ollama server (native /api/chat and /api/generate,
// v0.17.4). The /api/chat requests, the rendering and the measured one, are the lab's own: the
// bytes github.com/ollama/ollama/api's Client.Chat sends, built from each message's kept
// encoding ([Client.RequestBodies]) and posted in pieces (internal/wire), the answer read with the
// lab's JSON-line reader; the other calls go through that api client.
//
// For every request [Client.Send] does three things:
//
//  1. It learns the exact prompt text the server will tokenize: the server renders the request
//     with its own chat template (`_debug_render_only` on /api/chat), or, with
//     [WithLocalRender], the client renders it in process with the same renderer of the same
//     Ollama version wherever it can be sure of the server's text, and checks that against the
//     server's rendering at each session's start.
//  2. It sends the request for real, streamed, with `num_predict` 1: the server prefills the
//     prompt against its KV cache, which is what the lab measures (time to first token,
//     prompt_eval_count, prompt_eval_duration, and, from the server's debug log, how many prompt
//     tokens it reused).
//  3. Generation emulation, the scripted mode's method (DESIGN.md, "Generation is emulated
//     faithfully"): after a real generation the server's cache holds the rendered prompt followed
//     by the tokens the model emitted, in the model's own output format. The client leaves the
//     cache exactly so by sending a raw /api/generate request (`raw: true`, no template, no
//     parser) whose prompt is the rendered prompt followed by the scripted reply as Qwen3 writes it
//     ([Qwen3Output]). The server reuses the rendered prompt from its cache and prefills the
//     reply's tokens; its cache then holds what a real generation would have left. That request
//     is not a measurement and produces no sample.
//
// A request with Generate > 0 (the live driver) is a real generation instead: step 2
// sends num_predict = Generate, the temperature ([WithTemperature], default 0.7) and the seed
// ([Client.SetSeed]), and the streamed message's thinking, content and tool_calls become
// [chat.Result].Reply; there is no emulation (the server's cache holds what the model wrote).
//
// Pinned for the whole run: num_ctx and keep_alive (changing a runner option such as num_ctx
// reloads the model and drops the cache: ollama server/sched.go needsReload).
package ollama

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/version"

	"lab/chat"
	"lab/internal/wire"
)

// Client sends the harness's requests to one Ollama server and model. Not safe for concurrent
// use: the server has one cache slot and the log is read in order.
type Client struct {
	base      *url.URL
	api       *api.Client
	http      *http.Client
	model     string
	numCtx    int
	keepAlive time.Duration
	seed      int
	// temperature is the live generation's sampling temperature.
	temperature float64
	// renderer is the model's renderer as /api/show reported it ([Client.Renderer]).
	renderer string
	// replyEnds, when not empty, makes FillCache write a reply as the server renders it back,
	// cut after the first of them ([WithReplyEnds]); empty: as Qwen3 writes it.
	replyEnds []string
	// reasonOpen and reasonClose, when set, wrap a reply's reasoning before the renderer's text
	// of the reply ([WithReasoningTags]).
	reasonOpen, reasonClose string
	// noThinking is true when /api/show listed the model's capabilities without "thinking"
	// (a Go template without .Think, such as Llama 3's or Gemma 3's): Ollama refuses `think`
	// for such a model (HTTP 400 "does not support thinking"), so requests do not send it.
	noThinking bool

	logPath string
	log     *CacheLog
	logWait time.Duration

	// args and tools memoise the decoding of tool-call arguments and tool parameters: a session
	// resends the same ones on every request. The decoded values are only read afterwards. args
	// is keyed by the SHA-256 of the arguments' JSON, which may be megabytes.
	args  map[[sha256.Size]byte]api.ToolCallFunctionArguments
	tools map[string]api.Tool
	// cache keeps the last request's encoded messages ([Client.RequestBodies]).
	cache bodyCache
	// local is the in-process rendering's state ([WithLocalRender]).
	local localRender
}

// Option configures a Client.
type Option func(*Client)

// WithNumCtx pins the context length (Ollama option num_ctx) for every request; default 32768.
func WithNumCtx(n int) Option { return func(c *Client) { c.numCtx = n } }

// WithKeepAlive sets keep_alive for every request; default -1 (keep the model loaded: an unload
// drops the KV cache).
func WithKeepAlive(d time.Duration) Option { return func(c *Client) { c.keepAlive = d } }

// WithTemperature sets the sampling temperature (Ollama option temperature) of live generations
// (requests with Generate > 0); default 0.7. Scripted requests always use 0.
func WithTemperature(t float64) Option { return func(c *Client) { c.temperature = t } }

// SetSeed sets the sampling seed (Ollama option seed) of the requests that follow; default 42.
// The live driver gives each repetition its own.
func (c *Client) SetSeed(seed int64) { c.seed = int(seed) }

// WithServerLog names the server's log file, written with OLLAMA_DEBUG=1. After each request the
// client reads the new `msg="loading cache slot" … prompt=N used=U` line: U is the number of
// prompt tokens the server reused from its KV cache. Without a log, cached tokens are unknown.
func WithServerLog(path string) Option { return func(c *Client) { c.logPath = path } }

// WithReplyEnds makes [Client.FillCache] write a scripted reply into the cache as the server's
// own renderer renders it back ([Client.ReplyText]), cut after the first of ends (the model's
// end-of-generation texts in that format, such as DeepSeek's <｜end▁of▁sentence｜>), instead of
// as Qwen3 writes it ([Qwen3Output], the default, for the qwen3.5 renderer). For a model served
// with another renderer than Qwen3's.
func WithReplyEnds(ends ...string) Option {
	return func(c *Client) { c.replyEnds = slices.Clone(ends) }
}

// WithReasoningTags makes [Client.ReplyText] write a reply's reasoning between open and close
// before the renderer's text of the reply, as a thinking model writes it where the renderer's
// generation prompt opens no reasoning and its history drops it (Ollama's lfm2-thinking
// renderer: "<think>", "</think>"), so the next request parts from the cache where it would
// after the model's own reply. Only for requests that ask the model to think ([Client.Thinks]),
// and only when the renderer's text does not hold the reasoning already.
func WithReasoningTags(open, close string) Option {
	return func(c *Client) { c.reasonOpen, c.reasonClose = open, close }
}

// WithHTTPClient sets the HTTP client (default: one with no overall timeout; requests end with
// their context).
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) { c.http = h }
}

// New returns a client for the Ollama server at baseURL (such as http://127.0.0.1:11434) serving
// model. It does not contact the server; [Client.Version] does.
func New(baseURL, model string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("ollama: bad server address %q: want http://host:port", chat.RedactedURL(baseURL))
	}
	c := &Client{base: u, model: model, numCtx: 32768, keepAlive: -1, seed: 42, temperature: 0.7, logWait: 3 * time.Second,
		args: map[[sha256.Size]byte]api.ToolCallFunctionArguments{}, tools: map[string]api.Tool{}}
	c.http = &http.Client{}
	for _, o := range opts {
		o(c)
	}
	hc := *c.http
	hc.Transport = answerCheck{next: hc.Transport, base: u.Redacted()}
	c.api = api.NewClient(u, &hc)
	if c.logPath != "" {
		// Only lines written after now belong to this client's requests.
		c.log = OpenCacheLog(c.logPath)
	}
	return c, nil
}

// URL returns the server's address.
func (c *Client) URL() string { return c.base.String() }

// Model returns the served model's name.
func (c *Client) Model() string { return c.model }

// NumCtx returns the pinned context length.
func (c *Client) NumCtx() int { return c.numCtx }

// Version asks the server for its version (/api/version). An unreachable server is a
// *chat.APIError naming the address.
func (c *Client) Version(ctx context.Context) (string, error) {
	v, err := c.api.Version(ctx)
	if err != nil {
		return "", c.wrap(err)
	}
	return v, nil
}

// CheckModel asks the server whether it serves the client's model (/api/show); a
// *chat.APIError naming the address and the model when it does not. It keeps the model's
// renderer from the answer ([Client.Renderer]): its "renderer" field, which Ollama v0.17.4
// leaves empty, else the Modelfile's RENDERER line.
func (c *Client) CheckModel(ctx context.Context) error {
	resp, err := c.api.Show(ctx, &api.ShowRequest{Model: c.model})
	if err != nil {
		return fmt.Errorf("model %q: %w", c.model, c.wrap(err))
	}
	c.renderer = resp.Renderer
	if c.renderer == "" {
		c.renderer = modelfileLine(resp.Modelfile, "RENDERER")
	}
	c.noThinking = len(resp.Capabilities) > 0 && !slices.Contains(resp.Capabilities, "thinking")
	if c.local.count != nil {
		v, err := c.api.Version(ctx)
		if err != nil {
			return c.wrap(err)
		}
		c.setupLocal(v, resp)
	}
	return nil
}

// modelfileLine returns the argument of the Modelfile's first line that starts with the
// instruction word ("RENDERER qwen3.5" → "qwen3.5"), "" when it has none.
func modelfileLine(modelfile, word string) string {
	for line := range strings.SplitSeq(modelfile, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), word+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// Thinks reports whether requests ask the model to think (`think`) when the harness asks:
// false once [Client.CheckModel] found a model without the "thinking" capability, true
// otherwise.
func (c *Client) Thinks() bool { return !c.noThinking }

// Renderer returns the renderer the server turns the model's messages into its prompt with, as
// /api/show reported it to [Client.CheckModel] (its "renderer" field: the Modelfile's RENDERER,
// for example "qwen3.5" for the lab's synthetic model); "" before CheckModel, and for a model
// that renders with a Go template instead.
func (c *Client) Renderer() string { return c.renderer }

func (c *Client) options() map[string]any {
	return map[string]any{"num_ctx": c.numCtx, "num_predict": 1, "temperature": 0, "seed": c.seed}
}

// generateOptions are the options of a live generation of at most n tokens.
func (c *Client) generateOptions(n int) map[string]any {
	return map[string]any{"num_ctx": c.numCtx, "num_predict": n, "temperature": c.temperature, "seed": c.seed}
}

func (c *Client) keep() *api.Duration { return &api.Duration{Duration: c.keepAlive} }

// wrap turns a transport or status error into a *chat.APIError naming the server.
func (c *Client) wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ae *chat.APIError
	if errors.As(err, &ae) {
		return ae // answerCheck's: an HTTP 200 that is not the API's answer
	}
	var se api.StatusError
	if errors.As(err, &se) {
		return &chat.APIError{Backend: "ollama", URL: c.base.Redacted(), StatusCode: se.StatusCode, Body: se.ErrorMessage}
	}
	var sep *api.StatusError
	if errors.As(err, &sep) {
		return &chat.APIError{Backend: "ollama", URL: c.base.Redacted(), StatusCode: sep.StatusCode, Body: sep.ErrorMessage}
	}
	return &chat.APIError{Backend: "ollama", URL: c.base.Redacted(), Body: err.Error()}
}

// ChatRequest converts a lab request to Ollama's /api/chat request: messages with `thinking` for
// reasoning (omitted when empty), tool calls with their arguments in the order written, and the
// pinned options (for req.Generate > 0: num_predict Generate, the live temperature and seed);
// `think` when req.Think and the model thinks ([Client.Thinks]).
func (c *Client) ChatRequest(req *chat.Request) (*api.ChatRequest, error) {
	out := c.chatRequest(req)
	if len(req.Messages) > 0 {
		out.Messages = make([]api.Message, 0, len(req.Messages))
	}
	for i := range req.Messages {
		am, err := c.message(&req.Messages[i])
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, am)
	}
	tools, err := c.toolList(req.Tools)
	if err != nil {
		return nil, err
	}
	out.Tools = tools
	return out, nil
}

// chatRequest is [Client.ChatRequest] without its messages and tools: the model, the options,
// keep_alive and think.
func (c *Client) chatRequest(req *chat.Request) *api.ChatRequest {
	out := &api.ChatRequest{Model: c.model, Options: c.options(), KeepAlive: c.keep()}
	if req.Generate > 0 {
		out.Options = c.generateOptions(req.Generate)
	}
	if req.Think && !c.noThinking {
		out.Think = &api.ThinkValue{Value: true}
	}
	return out
}

// message is m as [Client.ChatRequest] converts it: reasoning as `thinking`, tool calls with
// their arguments in the order written and their index; an error for arguments that are not a
// JSON object.
func (c *Client) message(m *chat.Message) (api.Message, error) {
	am := api.Message{Role: string(m.Role), Content: m.Content, Thinking: m.Reasoning, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
	for i, tc := range m.ToolCalls {
		key := sha256.Sum256(tc.Arguments)
		args, ok := c.args[key]
		if !ok {
			args = api.NewToolCallFunctionArguments()
			if err := json.Unmarshal(tc.Arguments, &args); err != nil {
				return api.Message{}, fmt.Errorf("ollama: tool call %s arguments: %w", tc.Name, err)
			}
			c.args[key] = args
		}
		am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: tc.ID, Function: api.ToolCallFunction{Index: i, Name: tc.Name, Arguments: args}})
	}
	return am, nil
}

// toolList is tools as [Client.ChatRequest] converts them (nil for none); an error for
// parameters that are not a JSON schema object.
func (c *Client) toolList(tools []chat.Tool) (api.Tools, error) {
	var out api.Tools
	for _, t := range tools {
		key := t.Name + "\x00" + t.Description + "\x00" + string(t.Parameters)
		tool, ok := c.tools[key]
		if !ok {
			var params api.ToolFunctionParameters
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return nil, fmt.Errorf("ollama: tool %s parameters: %w", t.Name, err)
			}
			tool = api.Tool{Type: "function", Function: api.ToolFunction{Name: t.Name, Description: t.Description, Parameters: params}}
			c.tools[key] = tool
		}
		out = append(out, tool)
	}
	return out, nil
}

// Render returns the prompt text the server builds from req with its own chat template
// (`_debug_render_only`: [RenderRequest]'s body), without running the model. Errors are those
// of [Client.Measure]'s answer; an answer without _debug_info.rendered_template is a
// *chat.APIError.
func (c *Client) Render(ctx context.Context, req *api.ChatRequest) (string, error) {
	body, err := RenderRequest(req)
	if err != nil {
		return "", err
	}
	return c.render(ctx, wire.BodyOf(body))
}

// renderLineMin is the longest line of a rendering's answer [Client.render] always reads: the
// Ollama api client's (its scanner's maxBufferSize in api/client.go, v0.17.4: 8 MB).
const renderLineMin = 8_000_000

// render sends body, a rendering request ([Client.RequestBodies], [RenderRequest]), to /api/chat
// and returns the answer's _debug_info.rendered_template.
func (c *Client) render(ctx context.Context, body wire.Body) (string, error) {
	// The answer's one line holds the prompt, which is about as long as the request's messages
	// and tools and escaped alike: four times the body is room enough.
	bound := max(renderLineMin, 4*int64(body.Len())+chat.WireFraming)
	var rendered string
	_, _, err := c.chat(ctx, body, bound, func(l *answerLine) error {
		if l.DebugInfo != nil {
			rendered = l.DebugInfo.RenderedTemplate
		}
		return nil
	})
	if errors.Is(err, chat.ErrWireTooLong) {
		return "", c.apiError(http.StatusOK, fmt.Sprintf("the rendering's answer has a line longer than %d bytes", bound))
	}
	if err != nil {
		return "", c.wrap(err)
	}
	if rendered == "" {
		return "", &chat.APIError{Backend: "ollama", URL: c.base.Redacted(), Body: "the server returned no _debug_info.rendered_template for a _debug_render_only request"}
	}
	return rendered, nil
}

// answerLine is one line of an /api/chat answer: api.ChatResponse, and the `error` of a request
// the server refused or of a stream that failed (Ollama's server/routes.go writes
// {"error": "…"}).
type answerLine struct {
	api.ChatResponse
	Error string `json:"error"`
}

// chatHeaders are the headers the Ollama api client sends with a streamed request
// (api/client.go stream, v0.17.4), Content-Type aside ([wire.PostBody] sets it).
var chatHeaders = http.Header{
	"Accept":     {"application/x-ndjson"},
	"User-Agent": {fmt.Sprintf("ollama/%s (%s %s) Go/%s", version.Version, runtime.GOARCH, runtime.GOOS, runtime.Version())},
}

// chat posts body to /api/chat and gives fn each line of the answer, decoded, in order, until fn
// returns an error, which chat returns as it is. It returns the number of lines read and the
// answer's form (chat.AnswerJSON, one document, or chat.AnswerLines, a stream). The lines are
// read by [wire.ReadLines]: a last line the body's end cut short is dropped (the stream then
// lacks its done line), a line longer than max bytes stops reading with chat.ErrWireTooLong.
// Errors, as the api client's Chat gives them and [Client.wrap] names them: a status other
// than 200 a *chat.APIError with the status and the body's `error` ([wire.ErrorMessage]); an
// HTTP 200 that is not JSON or JSON lines [chat.NotAnswerError] (an empty body "stream cut",
// retried); a line with an `error` a *chat.APIError with no status; a line that is not JSON a
// *chat.APIError with status 200 naming the line; a transport failure, or one while reading, a
// *chat.APIError with no status; a canceled or timed-out context as it is.
func (c *Client) chat(ctx context.Context, body wire.Body, max int64, fn func(*answerLine) error) (int, chat.AnswerForm, error) {
	ep := wire.Endpoint{Backend: "ollama", URL: c.base.String()}
	resp, err := wire.PostBody(ctx, c.http, ep, http.MethodPost, c.base.JoinPath("/api/chat").String(), body, chatHeaders)
	if err != nil {
		return 0, chat.AnswerOther, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, chat.AnswerOther, wire.StatusError(ep, resp, wire.ErrorMessage)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head, err := chat.PeekAnswer(br)
	if err != nil {
		return 0, chat.AnswerOther, c.readError(ctx, err)
	}
	ctype := resp.Header.Get("Content-Type")
	form := chat.SniffAnswer(ctype, head)
	if form != chat.AnswerJSON && form != chat.AnswerLines {
		return 0, form, chat.NotAnswerError("ollama", c.base.Redacted(), ctype, head)
	}
	n := 0
	_, err = wire.ReadLines(br, max, func(line []byte) error {
		n++
		var l answerLine
		if err := json.Unmarshal(line, &l); err != nil {
			return c.apiError(http.StatusOK, fmt.Sprintf("answer line %d is not JSON: %v: %s", n, err, wire.Quote(line)))
		}
		if l.Error != "" {
			return c.apiError(0, l.Error)
		}
		return fn(&l)
	})
	var re wire.ReadError
	switch {
	case err == nil, errors.Is(err, chat.ErrWireTooLong):
	case ctx.Err() != nil:
		return n, form, ctx.Err()
	case errors.As(err, &re):
		return n, form, c.readError(ctx, re.Err)
	}
	return n, form, err
}

// readError is a transport failure while reading an answer: the context's error when it ended,
// else a *chat.APIError with no status (harness.Retryable retries it).
func (c *Client) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return c.apiError(0, wire.ReadError{Err: err}.Error())
}

// apiError is a *chat.APIError of the server with status and body.
func (c *Client) apiError(status int, body string) *chat.APIError {
	return &chat.APIError{Backend: "ollama", URL: c.base.Redacted(), StatusCode: status, Body: body}
}

// Send renders req, sends it for real (the measurement), and emulates the generation of reply
// (see the package documentation); with req.Generate > 0 it lets the model generate instead,
// ignores reply and returns what the model wrote in the result's Reply. The result's figures: PromptTokens = prompt_eval_count (the
// whole prompt, cached part included, in v0.17.4; 0, null in the row, with a warning when the
// done message has none), Prefill = prompt_eval_duration (the uncached
// part only), CachedTokens from the server log's `used=` (nil without a log), TTFT from sending to
// the first streamed chunk (unknown, 0 with a warning, for an unstreamed answer: one JSON
// document), Total to the last. A stream without its done message, or an empty
// 200, is a [chat.CutError] (the harness retries it); an HTTP 200 that is not JSON or JSON lines
// (an HTML page) is a [chat.NotAnswerError]. Send is [Client.Measure] followed by
// [Client.FillCache]; a failed emulation is a *chat.CacheFillError with the measured result.
func (c *Client) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	return chat.MeasureThenFill(ctx, req, reply, c.Measure, c.FillCache)
}

// Measure is [Client.Send] without the generation emulation (harness.CacheFiller): the
// rendering and the measured request. A scripted result's CacheText is "" until
// [Client.FillCache].
func (c *Client) Measure(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	body, renderBody, err := c.RequestBodies(req)
	if err != nil {
		return nil, err
	}
	res := &chat.Result{RequestBytes: int64(body.Len())}
	// The body's bytes in one piece, for the requests file, once the answer is in: joining them
	// is not the request's work.
	defer func() { res.Body = body.Bytes() }()
	local, warning := false, ""
	if res.Rendered, local, warning, err = c.prompt(ctx, renderBody); err != nil {
		return res, err
	}
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	if err := c.skipCacheLog(); err != nil {
		return res, err
	}

	// The proxy's accumulator ([Capture]): lab proxy reads an answer as Send does.
	var ca Capture
	ca.count.Limit = req.ReplyLimit()
	start := time.Now()
	_, form, err := c.chat(ctx, body, chat.WireLimit(ca.count.Limit), func(l *answerLine) error {
		if res.TTFT == 0 {
			res.TTFT = time.Since(start)
		}
		if _, err := ca.take(&captureLine{Message: l.Message, Done: l.Done, Metrics: l.Metrics}); err != nil {
			return fmt.Errorf("ollama: %w", err)
		}
		if ca.count.Over() {
			// Stop reading: closing the body drops the connection.
			return ca.count.Err("ollama", c.base.Redacted())
		}
		return nil
	})
	if errors.Is(err, chat.ErrWireTooLong) {
		// A line longer than the reply limit allows: not read whole.
		err = chat.ReplyTooLongError("ollama", c.base.Redacted(), ca.count.Limit)
	}
	if req.Generate > 0 {
		// What the model wrote, also when the stream broke off: a timeout keeps what came.
		res.Reply = ca.Reply()
	}
	res.Total = time.Since(start)
	if err != nil {
		return res, c.wrap(err)
	}
	// An answer whose body ended (or whose last line was cut) before its done message is a
	// failure; so is one whose context ended as it came.
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if ca.End() != nil {
		return res, chat.CutError("ollama", c.base.Redacted(), "no done message")
	}
	if form == chat.AnswerJSON && ca.lines == 1 {
		// One JSON document, not a stream: its first byte came after the whole generation.
		res.TTFT = 0
		res.Warnings = append(res.Warnings, chat.Unstreamed)
	}
	// The figures as the proxy reads them ([Capture.Result]): a chat prompt has at least its
	// template's tokens, so a done message without prompt_eval_count (or with 0) gave no count,
	// and the row's prompt tokens stay null.
	fig := ca.Result()
	res.PromptTokens, res.CompletionTokens, res.Usage = fig.PromptTokens, fig.CompletionTokens, fig.Usage
	res.Prefill, res.Load, res.LoadReported = fig.Prefill, fig.Load, fig.LoadReported
	res.Warnings = append(res.Warnings, fig.Warnings...)
	if local && res.PromptTokens > 0 && !c.local.countsOtherwise {
		if n, err := c.local.count(res.Rendered); err == nil && int64(n) != res.PromptTokens {
			// The server counted another prompt than the one rendered in process: ask it.
			server, err := c.render(ctx, renderBody)
			if err != nil {
				return res, err
			}
			if server != res.Rendered {
				res.Warnings = append(res.Warnings, c.stopLocal(res.Rendered, server))
				res.Rendered = server
			} else {
				// The same text: the tokenizer counts otherwise than the server, which says
				// nothing of the rendering; session starts are still checked.
				c.local.countsOtherwise = true
			}
		}
	}
	if c.logPath != "" {
		line, err := c.readCacheLog(c.logWait)
		if err != nil {
			return res, err
		}
		switch {
		case line == nil:
			res.Warnings = append(res.Warnings, fmt.Sprintf("no `loading cache slot` line in %s within %s: cached tokens unknown (is OLLAMA_DEBUG=1 set?)", c.logPath, c.logWait))
		case res.PromptTokens == 0:
			res.Warnings = append(res.Warnings, fmt.Sprintf("the server log's prompt=%d cannot be matched without prompt_eval_count: cached tokens unknown", line.Prompt))
		case int64(line.Prompt) != res.PromptTokens:
			res.Warnings = append(res.Warnings, fmt.Sprintf("the server log's prompt=%d does not match prompt_eval_count %d: the line belongs to another request, cached tokens unknown", line.Prompt, res.PromptTokens))
		default:
			used := int64(line.Used)
			res.CachedTokens, res.CachedSource = &used, chat.SourceServerLog
		}
	}

	if req.Generate > 0 {
		// The cache holds the real generation. Its text is rebuilt from the parsed reply in
		// Qwen3's output format, or the model renderer's ([WithReplyEnds]; the server does not
		// return the raw tokens): exact for a reply
		// the model ended itself, an approximation for one cut off at num_predict.
		out, err := c.output(ctx, req, res.Rendered, res.Reply)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Warnings = append(res.Warnings, "what the model wrote is not known as the server holds it (cache text unknown): "+err.Error())
			return res, nil
		}
		res.CacheText = res.Rendered + out
		return res, nil
	}
	return res, nil
}

// output is the text reply leaves in the cache after the prompt rendered: [Client.ReplyText]
// with [WithReplyEnds], else [Qwen3Output].
func (c *Client) output(ctx context.Context, req *chat.Request, rendered string, reply *chat.Reply) (string, error) {
	if len(c.replyEnds) == 0 {
		return Qwen3Output(reply), nil
	}
	return c.ReplyText(ctx, req, rendered, reply)
}

// ReplyText returns the text the model writes after the prompt rendered (req's rendering, its
// generation prompt included) when it answers req with reply, taken from the server's own
// renderer or template ([WithReplyEnds]): the server renders req's messages followed by reply
// as an assistant message and a tool result after it (as the next request of a tool loop
// renders it); the text is that rendering past what it shares with rendered, up to and
// including the first of the reply ends. A request that does not ask the model to think, or a
// model that cannot ([Client.Thinks]), gets the reply without its reasoning: the model writes
// none (the glm-ocr renderer would otherwise render the scripted reasoning into its history).
// Where the renderer writes the history otherwise than
// its generation prompt (deepseek3.1's `</think>` where the prompt ends `<think>`), the text
// starts where the two part, at the start of the tag they part in (`</think>…` after the
// prompt's `<think>`, as a model closes the tag), so the next request diverges where the
// renderer does; where the template's assistant message
// starts with its generation prompt (Llama 3.2's header), the cache holds the next request's
// prefix exactly. Errors: the rendering's, a rendering that parts from rendered before one of
// the reply ends in it (the history rendered otherwise once a reply follows it, as a template
// that writes the server's date does across midnight), or one without a reply end after the
// shared part.
func (c *Client) ReplyText(ctx context.Context, req *chat.Request, rendered string, reply *chat.Reply) (string, error) {
	if len(c.replyEnds) == 0 {
		return "", errors.New("ollama: ReplyText needs the reply's end texts (WithReplyEnds)")
	}
	if !req.Think || c.noThinking {
		// A model that does not think writes no reasoning, whatever the script gives it.
		r := *reply
		r.Reasoning = ""
		reply = &r
	}
	next := chat.Replied(req, reply)
	next.Generate = 0
	// The rendering's body from the kept encodings: next is req's messages and the reply's.
	_, body, err := c.RequestBodies(next)
	if err != nil {
		return "", err
	}
	after, err := c.render(ctx, body)
	if err != nil {
		return "", err
	}
	k := 0
	for k < len(after) && k < len(rendered) && after[k] == rendered[k] {
		k++
	}
	if k < len(rendered) {
		// The renderings part inside a tag the generation prompt opens and the history writes
		// otherwise (deepseek3.1's "<think>" against "</think>"): the model's text starts at
		// the history's tag, after all of the prompt.
		k = chat.OpenTagStart(rendered, k, 24)
	}
	msg := after[k:]
	end := -1
	for _, e := range c.replyEnds {
		if strings.Contains(rendered[k:], e) {
			// The renderings part before the last turn of the prompt: the history is rendered
			// otherwise now (a template that writes the date, rendered again after midnight).
			return "", fmt.Errorf("ollama: the server renders the messages before the reply otherwise once the reply follows them (%d bytes shared of %d)", k, len(rendered))
		}
		if i := strings.Index(msg, e); i >= 0 && (end < 0 || i+len(e) < end) {
			end = i + len(e)
		}
	}
	if end < 0 {
		return "", fmt.Errorf("ollama: the server's rendering of the reply has none of its end texts %q after the %d bytes it shares with the prompt", c.replyEnds, k)
	}
	text := msg[:end]
	if c.reasonOpen != "" && req.Think && !c.noThinking && reply.Reasoning != "" && !strings.Contains(text, reply.Reasoning) {
		// The history drops the reasoning the model wrote first ([WithReasoningTags]).
		text = c.reasonOpen + reply.Reasoning + c.reasonClose + text
	}
	return text, nil
}

// FillCache emulates the generation of reply after the measured request res
// (harness.CacheFiller): a raw /api/generate of res.Rendered followed by [Qwen3Output] of reply
// (the format of Ollama's qwen3.5 renderer, whose generation prompt ends in "<think>\n"; with
// [WithReplyEnds], the reply as the model's renderer or template renders it: [Client.ReplyText]), which
// leaves the runner's cache holding that text; it then sets res.CacheText to it. It does nothing
// for a live request or a nil reply. Sending it again leaves the same cache (the same raw
// prompt), so it may be tried again after a failure without measuring the request again.
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

// noPromptCount is the warning of an answer whose done message has no prompt_eval_count (or 0):
// its prompt tokens are unknown, written as null.
const noPromptCount = "the answer's done message has no prompt_eval_count: prompt tokens unknown"

// answerCheck is the transport of the api client's HTTP client (/api/generate, /api/show,
// /api/version, /api/ps; /api/chat is [Client.chat]'s, which checks its answer alike). It passes an HTTP 200 answer on
// only when its body is what Ollama answers, JSON or JSON lines ([chat.SniffAnswer]); anything
// else fails the request with a *chat.APIError: an empty body a cut answer ([chat.CutError],
// retried), an HTML page or any other body [chat.NotAnswerError] (not retried). The api client
// would take an empty body as an answer without content, and the first line of a page as its
// error message. HEAD requests (the api client's heartbeat) pass as they are.
type answerCheck struct {
	next http.RoundTripper
	base string
}

// RoundTrip implements http.RoundTripper.
func (a answerCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	next := a.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || r.Method == http.MethodHead {
		return resp, err
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	head, err := chat.PeekAnswer(br)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	ctype := resp.Header.Get("Content-Type")
	switch form := chat.SniffAnswer(ctype, head); form {
	case chat.AnswerJSON, chat.AnswerLines:
		var body io.Reader = br
		if form == chat.AnswerLines {
			body = wire.DropCutLine(body) // a stream: its last line may be cut
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{body, resp.Body}
		return resp, nil
	}
	resp.Body.Close()
	return nil, chat.NotAnswerError("ollama", a.base, ctype, head)
}

// emulate sends the raw generate request that leaves the server's cache holding text.
func (c *Client) emulate(ctx context.Context, text string) error {
	stream := false
	g := &api.GenerateRequest{Model: c.model, Prompt: text, Raw: true, Stream: &stream, Options: c.options(), KeepAlive: c.keep()}
	if err := c.api.Generate(ctx, g, func(api.GenerateResponse) error { return nil }); err != nil {
		return fmt.Errorf("generation emulation: %w", c.wrap(err))
	}
	if c.logPath != "" {
		// Consume the emulation's own cache line so the next request reads its own.
		if _, err := c.readCacheLog(c.logWait); err != nil {
			return err
		}
	}
	return nil
}

// Reset unloads the model (keep_alive 0), which drops the server's KV cache, so the next
// session starts cold. The next request loads it again with the same options. Any other of the
// lab's synthetic models the server still lists as loaded (/api/ps: an earlier run's family or
// renderer on the same server, whose runner may serve the same model file) is unloaded too;
// other models (a user's, on their own server) are left loaded. Reset waits until the server
// lists none of those it unloaded; an error naming the ones still listed when that takes over
// 30 s.
func (c *Client) Reset(ctx context.Context) error {
	// A new session: its first prompt is rendered by the server too ([WithLocalRender]).
	c.local.check = true
	unloaded := map[string]bool{}
	unload := func(model string) error {
		stream := false
		g := &api.GenerateRequest{Model: model, Stream: &stream, KeepAlive: &api.Duration{Duration: 0}}
		if err := c.api.Generate(ctx, g, func(api.GenerateResponse) error { return nil }); err != nil {
			return fmt.Errorf("unload model %s: %w", model, c.wrap(err))
		}
		unloaded[withTag(model)] = true
		return nil
	}
	if err := unload(c.model); err != nil {
		return err
	}
	// Wait until the server reports neither the model nor another of the lab's synthetic models
	// loaded (/api/ps), so no later request finds their cache; a model of the lab's another run
	// left loaded (another family or renderer) is unloaded too, and a model of the user's is
	// left alone.
	var left []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ps, err := c.api.ListRunning(ctx)
		if err != nil {
			return c.wrap(err)
		}
		left = left[:0]
		for _, m := range ps.Models {
			name := cmp.Or(m.Model, m.Name)
			if !unloaded[withTag(name)] && labModel(name) {
				if err := unload(name); err != nil {
					return err
				}
			}
			if unloaded[withTag(name)] {
				left = append(left, name)
			}
		}
		if len(left) == 0 {
			return c.skipCacheLog()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("ollama at %s: %s did not unload within 30 s", c.base, strings.Join(left, ", "))
}

// withTag is an Ollama model name with its tag, ":latest" where it has none: the name /api/ps
// lists a model by.
func withTag(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return name + ":latest"
}

// labModel reports whether an Ollama model name is one of the lab's synthetic models
// (lab-<family>[-<renderer>]-synth, with or without a tag): the models [Client.Reset] unloads
// besides the client's own.
func labModel(name string) bool {
	base, _, _ := strings.Cut(name, ":")
	return strings.HasPrefix(base, "lab-") && strings.HasSuffix(base, "-synth")
}

// Prefill empties the server's cache, sends text as a raw prompt and returns the server's count
// of its tokens (prompt_eval_count) and the time it took to prefill them (prompt_eval_duration):
// one point for `lab calibrate`.
func (c *Client) Prefill(ctx context.Context, text string) (tokens int, prefill time.Duration, err error) {
	if err := c.Reset(ctx); err != nil {
		return 0, 0, err
	}
	stream := false
	g := &api.GenerateRequest{Model: c.model, Prompt: text, Raw: true, Stream: &stream, Options: c.options(), KeepAlive: c.keep()}
	var final api.GenerateResponse
	if err := c.api.Generate(ctx, g, func(r api.GenerateResponse) error { final = r; return nil }); err != nil {
		return 0, 0, c.wrap(err)
	}
	if c.logPath != "" {
		if _, err := c.readCacheLog(c.logWait); err != nil {
			return 0, 0, err
		}
	}
	return final.PromptEvalCount, final.PromptEvalDuration, nil
}

// readCacheLog returns the last `loading cache slot` line since the previous read, waiting up
// to wait for one to appear ([CacheLog.Next]); nil without a log or when none appeared.
func (c *Client) readCacheLog(wait time.Duration) (*CacheLine, error) {
	if c.log == nil {
		return nil, nil
	}
	return c.log.Next(wait)
}

// skipCacheLog drops the log's lines so far: what follows belongs to the next request.
func (c *Client) skipCacheLog() error {
	if c.log == nil {
		return nil
	}
	return c.log.Skip()
}

// Qwen3Output returns a reply as a Qwen3 model in thinking mode writes it after a generation
// prompt that ends in "<think>\n": the reasoning, "\n</think>\n\n", the text, then each tool call
// as `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>` (JSON with ", " and ": "
// separators and unescaped <, >, &, as Qwen's chat format writes it) on its own line, and the
// end-of-turn token
// <|im_end|>. A reply with no reasoning still closes the (empty) think block.
func Qwen3Output(r *chat.Reply) string {
	var b strings.Builder
	b.WriteString(strings.Trim(r.Reasoning, "\n"))
	b.WriteString("\n</think>\n\n")
	b.WriteString(strings.TrimLeft(r.Content, "\n"))
	for i, tc := range r.ToolCalls {
		if i > 0 || r.Content != "" {
			b.WriteString("\n")
		}
		b.WriteString("<tool_call>\n{\"name\": \"" + tc.Name + "\", \"arguments\": ")
		b.WriteString(spacedJSON(tc.Arguments))
		b.WriteString("}\n</tool_call>")
	}
	b.WriteString("<|im_end|>")
	return b.String()
}

// spacedJSON re-encodes a JSON value with ", " and ": " separators, keys in their order.
func spacedJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := writeSpaced(&b, dec); err != nil {
		return string(raw)
	}
	return b.String()
}

func writeSpaced(b *strings.Builder, dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			b.WriteByte('{')
			for first := true; dec.More(); first = false {
				if !first {
					b.WriteString(", ")
				}
				k, err := dec.Token()
				if err != nil {
					return err
				}
				writeString(b, k)
				b.WriteString(": ")
				if err := writeSpaced(b, dec); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for first := true; dec.More(); first = false {
				if !first {
					b.WriteString(", ")
				}
				if err := writeSpaced(b, dec); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			b.WriteByte(']')
		}
	default:
		writeString(b, v)
	}
	return nil
}

// writeString writes a JSON scalar as a model writes it: strings with <, > and & as they are
// (Go's json.Marshal would write \u003c; Ollama's renderer does, which is a real divergence
// between what the model emitted and what the template renders back).
func writeString(b *strings.Builder, v any) {
	out, err := wire.Marshal(v)
	if err != nil {
		fmt.Fprint(b, v)
		return
	}
	b.Write(out)
}
