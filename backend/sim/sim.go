// Package sim is the lab's simulation backend: the deterministic, instant reference (DESIGN.md,
// "sim backend"). It never contacts a server. For every request [Backend.Send]:
//
//  1. converts the request as the Ollama backend does ([ollama.Client.ChatRequest]) and renders it
//     in process with Ollama's own qwen3.5 renderer (github.com/ollama/ollama/model/renderers,
//     the renderer the served Qwen3 model uses in Ollama v0.17.4), so the prompt text is what the
//     real server would build; its code is applied message by message ([renderer]), so that a
//     session's request renders only the messages that changed or whose surroundings the
//     template reads changed;
//  2. tokenizes it with the given tokenizer (the served model's: tokenizer.LoadJSON), reusing the
//     tokens of a remembered prompt up to the last turn both share ([cachesim.Incremental], which
//     [Backend.Tokenizer] shares with the harness's attribution);
//  3. asks the cache model (lab/cachesim) how many leading tokens it reuses (Lookup), then leaves
//     the cache as a real generation would (Store: the rendered prompt followed by the scripted
//     reply as Qwen3 writes it, ollama.Qwen3Output, tokenized as one text: what the Ollama
//     backend's generation emulation of DESIGN.md leaves in the server's cache);
//  4. charges prefill time for the tokens not reused: (prompt − cached) × PrefillPerToken.
//
// With a context window (Options.NumCtx, Ollama num_ctx) the sim does what Ollama v0.17.4 does
// when a conversation passes it: the server drops the oldest messages from the rendering until it
// fits (server/prompt.go chatPrompt; [Backend.Send]'s Rendered is that rendering, as
// `_debug_render_only` returns it); the runner truncates a prompt that still does not fit, and
// truncates and shifts what its slot holds after the generation emulation
// ([cachesim.Window]). The cache model looks up and stores what the runner processed and holds.
//
// With the anthropic cache model each request is looked up at its `cache_control` breakpoints
// (chat.Request.CacheBreakpoints, the arm's placement, or Options.CacheBreakpoints), placed in the
// rendered prompt where the anthropic backend places them, the turns of the prompt being the
// content-block boundaries of the lookback ([cachesim.Anthropic.LookupTurns]). Its prompt is in
// the Messages API's order, tools, then system, then messages ([cachesim.ToolsThenSystem]): the
// renderer's tool block becomes a system turn of its own before the system prompt's. The other
// cache models see the renderer's own order ([cachesim.OrderOf]).
//
// With a chat template (Options.Template: lab run --backend sim --family) the sim stands for
// llama-server --jinja instead: the request is the llamacpp backend's, rendered in process with
// the model's Jinja template (package chattemplate, byte for byte llama-server's
// /apply-template), its start token first; a template that refuses the conversation fails the
// request with its own error; the reply is written into the llamacpp cache model as the llamacpp
// backend writes it into the server's slot (llamacpp.ReplyTextWith). See [Backend.Send].
//
// Cached tokens are reported with source chat.SourceSimulation.
//
// The scripted model's reply to a request with Generate > 0 is held to the request's reply limit
// ([chat.Request.ReplyLimit]): a longer one is the request's [chat.ReplyTooLongError], as a
// server's would be.
//
// A request with Generate > 0 (the live driver) is answered by the scripted model: the
// next reply of the script given with [Backend.SetScript], returned as [chat.Result].Reply as if
// the model had written it, and stored in the cache as in step 3. The live loop is so tested
// without a model: driven by the scenario's own steps, it sends the scripted driver's requests.
package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/ollama/ollama/api"

	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/cachesim"
	"lab/chat"
	"lab/chattemplate"
)

// Renderer is the Ollama renderer the sim renders with.
const Renderer = "qwen3.5"

// DefaultPrefillPerToken is the prefill cost per uncached prompt token when Options gives none. A
// placeholder (0.3 ms, the order of a small model on two CPU cores) until `lab calibrate`
// measures the real figure on a server.
const DefaultPrefillPerToken = 300 * time.Microsecond

// Tokenizer turns text (special tokens written as their text) into token ids.
type Tokenizer interface {
	Encode(text string) ([]int32, error)
}

// Options configures a Backend.
type Options struct {
	// Model is the prefix-cache model (cachesim.NewModel). Required.
	Model cachesim.Model
	// Tokenizer is the served model's tokenizer. Required.
	Tokenizer Tokenizer
	// PrefillPerToken is the time charged per uncached prompt token; 0 means
	// DefaultPrefillPerToken.
	PrefillPerToken time.Duration
	// Prefill, when set, is the prefill cost model `lab calibrate` fitted on a real server; it
	// replaces PrefillPerToken.
	Prefill *cachesim.PrefillModel
	// NumCtx is the server's context window in tokens (Ollama num_ctx, which `lab run --num-ctx`
	// pins); 0 is unlimited. A window is Ollama's: New refuses one with the openai and anthropic
	// cache models, which stand for cloud APIs.
	NumCtx int
	// CacheBreakpoints, when not nil, replaces every request's own placement of prompt-cache
	// breakpoints for the anthropic cache model (`lab run --cache-breakpoints`: "tools",
	// "system", "last-message"; empty: no caching). A request with none of its own gets
	// DefaultBreakpoints, as from the anthropic backend. Other cache models ignore breakpoints.
	CacheBreakpoints []string
	// Template, when set, makes the sim stand for llama-server --jinja serving a model with this
	// chat template ([Backend.Send] with a template): every request is rendered in process with
	// it (package chattemplate: llama-server's /apply-template byte for byte) instead of
	// Ollama's qwen3.5 renderer, and a reply is written into the cache as the llamacpp backend
	// writes it. Tokenizer must then add no token of its own (tokenizer.Tokenizer.Bare): the
	// start token the server's tokenizer adds is written first in the prompt
	// ([chattemplate.Template.StartToken]). It needs the llamacpp cache model; NumCtx is then
	// llama-server's -c (a prompt that does not fit is refused, as the server refuses it), not
	// Ollama's window.
	Template *chattemplate.Template
	// TemplateNow is the clock a chat template's strftime_now reads (Llama 3.2's "Today
	// Date"), as llama-server's reads the server's local time; nil is time.Now.
	TemplateNow func() time.Time
	// NoBody leaves every result's Body nil; RequestBytes still counts the body's bytes, worked
	// out without building it. For a run that keeps no request body (lab run without
	// --save-requests). Without Template only.
	NoBody bool
}

// Backend simulates a server: renders, tokenizes and applies a cache model. Not safe for
// concurrent use (the cache model has state).
type Backend struct {
	model cachesim.Model
	// tok is the tokenizer given to the harness; whole tokenizes the backend's own prompts and
	// cache texts incrementally (a step costs what it appends), remembering the last few (with
	// Qwen3's renderer it is inc, which tok shares with the harness's attribution).
	tok, whole Tokenizer
	perToken   time.Duration
	prefill    *cachesim.PrefillModel
	conv       *ollama.Client
	// inc is the incremental tokenizer (whole, without a chat template), asked for the turn
	// markers of a prompt; counter counts the renderings chatPrompt tries.
	inc     *cachesim.Incremental
	counter turnCounter
	window  cachesim.Window
	// breakpoints is Options.CacheBreakpoints.
	breakpoints []string
	// order is the cache model's provider order of system prompt and tools
	// ([cachesim.OrderOf]).
	order cachesim.RenderOrder

	// script is the scripted model's replies, in groups (see SetScript); group and next say
	// which reply comes next.
	script      []chat.ScriptGroup
	group, next int

	// tools and toolsJSON cache the JSON of the last tool list: a session sends the same list
	// on almost every request, and encoding its schemas is a third of the body's cost.
	tools     []chat.Tool
	toolsJSON json.RawMessage
	// sent are the previous request's messages, each with its JSON; spareSent is the list
	// before it, whose room the next request's reuses.
	sent, spareSent []sentMessage
	// renderer renders the whole conversation, each message once while it stays the same;
	// checkRender (tests only) checks every rendering against Ollama's renderer.
	renderer    renderer
	checkRender bool

	// tmpl is Options.Template; llama builds the llamacpp backend's request bodies for it (it
	// never connects) and numCtx is llama-server's -c (0: unlimited).
	tmpl   *chattemplate.Template
	now    func() time.Time // Options.TemplateNow
	llama  *llamacpp.Client
	numCtx int
	// noBody is Options.NoBody.
	noBody bool
}

// encode returns the /api/chat body of creq, built from req, reusing the tool list's JSON when
// it is the previous request's.
func (b *Backend) encode(req *chat.Request, creq *api.ChatRequest) (body []byte, n int, err error) {
	same := slices.EqualFunc(req.Tools, b.tools, func(x, y chat.Tool) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters)
	})
	if !same || (b.toolsJSON == nil && len(req.Tools) > 0) {
		j, err := json.Marshal(creq.Tools)
		if err != nil {
			return nil, 0, err
		}
		b.tools, b.toolsJSON = slices.Clone(req.Tools), j
	}
	// The messages: each one's JSON is reused from the previous request's message at the same
	// place when the two are the same (a session resends its history).
	var msgs [][]byte
	each := len(req.Messages) == len(creq.Messages) && len(creq.Messages) > 0
	if each {
		next := slices.Grow(b.spareSent[:0], len(req.Messages))[:len(req.Messages)]
		for i := range req.Messages {
			m := &req.Messages[i]
			var j []byte
			if i < len(b.sent) && sameEncoding(&b.sent[i].m, m) {
				j = b.sent[i].json
			} else {
				if j, err = json.Marshal(creq.Messages[i]); err != nil {
					return nil, 0, err
				}
			}
			next[i] = sentMessage{m: *m, json: j}
			msgs = append(msgs, j)
		}
		// The list before this one is no longer read: cleared, it takes the next request's.
		clear(b.sent)
		b.sent, b.spareSent = next, b.sent
	} else {
		j, err := json.Marshal(creq.Messages)
		if err != nil {
			return nil, 0, err
		}
		msgs = [][]byte{j}
	}
	// The rest of the request, then the messages and the tool list spliced in as they are
	// (a json.RawMessage field would be validated and copied again on every request).
	rest := *creq
	rest.Messages, rest.Tools = nil, nil
	head, err := json.Marshal(&rest)
	if err != nil {
		return nil, 0, err
	}
	// encoding/json writes the fields in the struct's order: the messages second, the tool list
	// just before the options (which has no omitempty, so it is always there).
	const null, options = `"messages":null`, `,"options":`
	k := bytes.Index(head, []byte(null))
	o := bytes.Index(head, []byte(options))
	if k < 0 || o < k {
		return nil, 0, errors.New("sim: encode request: unexpected field layout")
	}
	// The body's size: the head without its null messages, the messages' array, the tool list.
	n = len(head) - len(null) + len(`"messages":`)
	if !each {
		n += len(msgs[0])
	} else {
		n += 2 + len(msgs) - 1 // the brackets and commas
		for _, j := range msgs {
			n += len(j)
		}
	}
	if len(req.Tools) > 0 {
		n += len(`,"tools":`) + len(b.toolsJSON)
	}
	if b.noBody {
		return nil, n, nil
	}
	// The body is built once at its final size: the messages' JSON is copied into it, never
	// into an array of its own first (a message may hold a tool argument of megabytes).
	body = make([]byte, 0, n)
	body = append(body, head[:k]...)
	body = append(body, `"messages":`...)
	if !each {
		body = append(body, msgs[0]...) // the whole array (or null), marshalled at once
	} else {
		body = append(body, '[')
		for i, j := range msgs {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, j...)
		}
		body = append(body, ']')
	}
	body = append(body, head[k+len(null):o]...)
	if len(req.Tools) > 0 {
		body = append(body, `,"tools":`...)
		body = append(body, b.toolsJSON...)
	}
	body = append(body, head[o:]...)
	if len(body) != n {
		return nil, 0, fmt.Errorf("sim: encode request: %d bytes built, %d worked out", len(body), n)
	}
	return body, n, nil
}

// sentMessage is a message of a request's body: the chat message and its JSON.
type sentMessage struct {
	m    chat.Message
	json []byte
}

// sameEncoding reports whether chat messages a and b encode the same in the /api/chat body:
// the fields the Ollama backend's conversion reads (ollama.Client.ChatRequest) are equal.
func sameEncoding(a, b *chat.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Reasoning != b.Reasoning || a.ToolCallID != b.ToolCallID ||
		a.ToolName != b.ToolName || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Name != y.Name || !bytes.Equal(x.Arguments, y.Arguments) {
			return false
		}
	}
	return true
}

// SetScript gives the scripted model its replies for the session that follows, in groups: a
// request whose last message is a user message (a turn's first request, a compaction's, or the
// first after a compaction, whose last message is the summary) is answered with the first reply
// of the next group of its kind (AfterCompaction for the request after a compaction, any other
// group otherwise, skipping an AfterCompaction group that a turn cut short never asked for),
// every other request with the next reply of the current group. A group that runs out, or a
// script that does, answers an empty reply (no reasoning, text or calls). So a turn cut short by
// a bound does not shift the replies of the turns after it. The harness builds the script from a
// scenario (harness.ScriptedReplies).
func (b *Backend) SetScript(groups []chat.ScriptGroup) {
	b.script, b.group, b.next = groups, -1, 0
}

// scripted returns the scripted model's reply to req.
func (b *Backend) scripted(req *chat.Request) (*chat.Reply, error) {
	if b.script == nil {
		return nil, errors.New("sim: a request with Generate > 0 needs the scripted model's replies (SetScript)")
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == chat.RoleUser {
		after := req.Messages[n-1].Summary
		b.group, b.next = b.group+1, 0
		for !after && b.group < len(b.script) && b.script[b.group].AfterCompaction {
			b.group++
		}
		if after && b.group < len(b.script) && !b.script[b.group].AfterCompaction {
			// The scenario's turn went on with a new user message after the compaction; the
			// model has nothing scripted for this step, and keeps the group for that turn.
			b.group--
			return &chat.Reply{}, nil
		}
	}
	if b.group < 0 || b.group >= len(b.script) || b.next >= len(b.script[b.group].Replies) {
		return &chat.Reply{}, nil
	}
	r := b.script[b.group].Replies[b.next]
	b.next++
	return &r, nil
}

// New returns a simulation backend.
func New(o Options) (*Backend, error) {
	if o.Model == nil || o.Tokenizer == nil {
		return nil, errors.New("sim: a cache model and a tokenizer are required")
	}
	if o.PrefillPerToken < 0 {
		return nil, fmt.Errorf("sim: prefill per token %s < 0", o.PrefillPerToken)
	}
	if o.PrefillPerToken == 0 {
		o.PrefillPerToken = DefaultPrefillPerToken
	}
	if o.NumCtx < 0 {
		return nil, fmt.Errorf("sim: context window %d < 0", o.NumCtx)
	}
	if n := o.Model.Name(); o.NumCtx > 0 && (n == cachesim.ModelOpenAI || n == cachesim.ModelAnthropic) {
		return nil, fmt.Errorf("sim: the %s cache model stands for a cloud API, whose context window is the model's: it takes no num_ctx", n)
	}
	// The client only converts requests; it never connects.
	conv, err := ollama.New("http://127.0.0.1:1", "sim")
	if err != nil {
		return nil, err
	}
	if o.Template != nil {
		return newTemplated(o)
	}
	inc := &cachesim.Incremental{Tok: o.Tokenizer}
	return &Backend{model: o.Model, tok: &prompts{recent: recent{tok: o.Tokenizer}, inc: inc}, whole: inc, inc: inc,
		counter: turnCounter{tok: o.Tokenizer}, window: cachesim.NewWindow(o.NumCtx), breakpoints: o.CacheBreakpoints,
		perToken: o.PrefillPerToken, prefill: o.Prefill, conv: conv, order: cachesim.OrderOf(o.Model.Name()), noBody: o.NoBody}, nil
}

// Tokenizer returns the backend's tokenizer, which remembers the last few texts it encoded: give
// it to the harness (SessionConfig.Tokenizer) so the prompt and cache text the backend just
// tokenized are not tokenized again. Without a chat template it is a
// [cachesim.PromptTokenizer], whose Prompts is the backend's own incremental tokenizer of
// prompts and cache texts: the harness's attribution finds them there. The ids it returns are
// shared; callers must not change them.
func (b *Backend) Tokenizer() Tokenizer { return b.tok }

// prompts is the tokenizer [Backend.Tokenizer] returns without a chat template: recent, and the
// backend's incremental tokenizer of whole prompts (cachesim.PromptTokenizer).
type prompts struct {
	recent
	inc *cachesim.Incremental
}

// Prompts returns the backend's incremental tokenizer of prompts and cache texts.
func (p *prompts) Prompts() *cachesim.Incremental { return p.inc }

// recent remembers the ids of the last recentSize texts encoded, of at most recentMaxBytes each.
type recent struct {
	tok   Tokenizer
	texts [recentSize]string
	ids   [recentSize][]int32
	next  int
}

const recentSize = 4

// recentMaxBytes is the longest text recent remembers. A longer one (a turn holding a tool
// argument of megabytes) is tokenized again when asked again: its ids, millions of them, would
// otherwise be held here for the next requests besides the tokenizer's own memo, which keeps
// that second tokenization a copy.
const recentMaxBytes = 1 << 20

func (r *recent) Encode(text string) ([]int32, error) {
	for i, t := range r.texts {
		if r.ids[i] != nil && t == text {
			return r.ids[i], nil
		}
	}
	ids, err := r.tok.Encode(text)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []int32{}
	}
	if len(text) > recentMaxBytes {
		return ids, nil
	}
	r.texts[r.next], r.ids[r.next] = text, ids
	r.next = (r.next + 1) % recentSize
	return ids, nil
}

// Model returns the cache model.
func (b *Backend) Model() cachesim.Model { return b.model }

// Send simulates one request (see the package documentation). reply is the scripted reply whose
// generation is emulated; nil stores the prompt alone. With req.Generate > 0 the scripted model
// answers instead (reply is ignored; see [Backend.SetScript]) and the result's Reply is its
// answer; the scripted model does not cut a reply at Generate tokens, and its reply is stored as
// the emulation stores one. The result has PromptTokens (the prompt the runner processed: at most
// NumCtx), CachedTokens (source simulation), CompletionTokens (the reply's tokens), Prefill = TTFT
// = Total = (prompt − cached) × PrefillPerToken, RequestBytes and Body (the /api/chat body the
// Ollama backend would send), Rendered (the server's rendering, without the messages it dropped to
// fit the window) and CacheText (Rendered and the reply), and Warnings for breakpoints that mark
// nothing. With the anthropic cache model CacheWrites are the breakpoints whose entries the model
// wrote (the cache holds those prefixes of the prompt, not CacheText).
//
// With Options.Template, Body is the llamacpp backend's body, Rendered the template's rendering
// after the start token, CacheText Rendered and the reply as the llamacpp backend writes it;
// there is no window: a prompt (or prompt and reply) of NumCtx tokens or more is refused as
// llama-server refuses it, the prompt's an error, the reply's a *chat.CacheFillError; a reply
// the template renders without the end-of-generation token is a *chat.CacheFillError too, the
// cache then holding the prompt alone. The row keeps its figures in both cases.
func (b *Backend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.tmpl != nil {
		return b.sendTemplated(req, reply)
	}
	huge := textBytes(req)+chat.ReplySize(reply) > hugeBytes
	if huge {
		defer tighten()()
	}
	creq, err := b.conv.ChatRequest(req)
	if err != nil {
		return nil, err
	}
	body, n, err := b.encode(req, creq)
	if err != nil {
		return nil, fmt.Errorf("sim: encode request: %w", err)
	}
	res := &chat.Result{RequestBytes: int64(n), Body: body}
	if huge {
		collect()
	}
	if req.Generate > 0 {
		// The scripted model's reply is held to the request's limit as a server's is, before
		// anything renders or tokenizes it.
		if reply, err = b.scripted(req); err != nil {
			return res, err
		}
		if limit := req.ReplyLimit(); chat.ReplySize(reply) > limit {
			return res, chat.ReplyTooLongError("sim", "in process", limit)
		}
		res.Reply = reply
		if !huge && textBytes(req)+chat.ReplySize(reply) > hugeBytes {
			huge = true
			defer tighten()()
		}
	}
	var out string // the reply as the model writes it, which the cache holds after the prompt
	if reply != nil {
		out = ollama.Qwen3Output(reply)
	}
	r, err := b.chatPrompt(creq, out)
	if err != nil {
		return res, fmt.Errorf("sim: render: %w", err)
	}
	rendered, prompt := r.text, r.tokens
	if huge {
		collect()
	}
	res.Rendered = rendered
	// The runner's input: the prompt truncated to the window.
	input := b.window.Truncate(prompt)
	var cached int64
	var marked []int // the anthropic model's breakpoints, for the entries Store writes
	a, anthropic := b.model.(*cachesim.Anthropic)
	if anthropic {
		n, pos, warnings, err := b.lookupAnthropic(a, req, creq, r)
		if err != nil {
			return res, err
		}
		cached, marked, res.Warnings = int64(n), pos, warnings
	} else {
		cached = int64(b.model.Lookup(input))
	}
	held, generated := prompt, []int32(nil)
	res.CacheText = rendered
	if reply != nil {
		res.CacheText = r.withReply
		// What the server holds after the generation emulation: the cache text tokenized whole,
		// as the Ollama backend's raw generate request leaves it and as the harness counts it.
		// Its tokens after the prompt are the generated ones. Where the reply's first token
		// merges with the prompt's last (an empty reasoning: "<think>\n" + "\n</think>" gives
		// "\n\n"), the held prompt is the common part and the rest counts as generated.
		full, err := b.whole.Encode(res.CacheText)
		if err != nil {
			return res, fmt.Errorf("sim: tokenize the reply: %w", err)
		}
		n := cachesim.CommonPrefix(prompt, full)
		held, generated = full[:n], full[n:]
	}
	if huge {
		collect()
	}
	// The slot after a text that reaches the window: truncated, then shifted.
	heldNow, generatedNow, _ := b.window.Hold(held, generated)
	b.model.Store(heldNow, generatedNow)
	if anthropic {
		// The entries Store wrote: the breakpoints of at least the minimum, within what it held.
		res.CacheWrites = []int{}
		for _, p := range marked {
			if p >= a.MinTokens && p <= len(heldNow) && !slices.Contains(res.CacheWrites, p) {
				res.CacheWrites = append(res.CacheWrites, p)
			}
		}
	}
	res.PromptTokens = int64(len(input))
	res.CompletionTokens = int64(len(generated))
	res.CachedTokens, res.CachedSource = &cached, chat.SourceSimulation
	res.Prefill = time.Duration(int64(len(input))-cached) * b.perToken
	if b.prefill != nil {
		res.Prefill = b.prefill.Cost(int(cached), len(input))
	}
	res.TTFT, res.Total = res.Prefill, res.Prefill
	return res, nil
}

// hugeBytes is the size of a request's texts and reply, in bytes, past which Send keeps the heap
// close to what it holds (see tighten).
const hugeBytes = 4 << 20

// hugeGCPercent is the garbage collector's GOGC while Send handles a huge request.
const hugeGCPercent = 10

// textBytes returns the bytes of req's message texts and tool-call arguments.
func textBytes(req *chat.Request) int64 {
	var n int64
	for _, m := range req.Messages {
		n += int64(len(m.Content) + len(m.Reasoning))
		for _, tc := range m.ToolCalls {
			n += int64(len(tc.Arguments))
		}
	}
	return n
}

// tighten lowers the garbage collector's target for a huge request (GOGC to hugeGCPercent, when
// it is higher and the collector is on) and returns the function that collects and restores it.
//
// Garbage dominates such a request: tokenizing a text of megabytes with Ollama's tokenizer
// allocates about a hundred bytes per byte and frees them at once, and encoding and rendering it
// (encoding/json's nested marshalling of a tool call's arguments, the renderer's) leave several
// transient copies of it; with the default GOGC of 100 the heap grows to twice what was live
// at the last cycle, which ran in the middle of such a step, before collecting: an 11 MiB tool
// argument took 580 MiB. The lower target costs collector time only while a huge request is
// handled.
func tighten() func() {
	old := debug.SetGCPercent(hugeGCPercent)
	if old < 0 || old <= hugeGCPercent {
		debug.SetGCPercent(old)
		return func() {}
	}
	return func() {
		collect()
		debug.SetGCPercent(old)
	}
}

// collect runs a garbage collection between the steps of a huge request, so that the next step
// starts from what is really held, not from a cycle that ran in the middle of the last one. A
// second cycle empties sync.Pool's victim cache, where encoding/json keeps the encoder buffers
// of the arguments' nested marshalling, each as long as the argument.
func collect() {
	runtime.GC()
	runtime.GC()
}

// lookupAnthropic looks the rendered prompt up in the anthropic model at the request's
// breakpoints (Options.CacheBreakpoints, else the request's own, else DefaultBreakpoints) and
// returns the cached tokens and the breakpoints' token positions; the lookback's boundaries are
// the prompt's turns. When the turns cannot be told apart (a message
// whose text holds a turn marker) it is an error: the breakpoints have no place.
func (b *Backend) lookupAnthropic(a *cachesim.Anthropic, req *chat.Request, creq *api.ChatRequest, r *rendering) (cached int, pos []int, warnings []string, err error) {
	places := b.breakpoints
	if places == nil {
		places = req.CacheBreakpoints
	}
	if places == nil {
		places = DefaultBreakpoints
	}
	_, marks, err := b.inc.EncodeTurns(r.text)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("sim: tokenize the prompt: %w", err)
	}
	ts, ok := turns(r, creq.Tools, marks, b.order)
	if !ok {
		return 0, nil, nil, fmt.Errorf("sim: anthropic cache: the rendered prompt has %d turn markers, not one per turn of its messages (a message holds %q): its cache breakpoints have no place", len(marks), turnMarker)
	}
	pos, warnings = placeBreakpoints(places, ts)
	bounds := make([]cachesim.Boundary, len(ts))
	for i, t := range ts {
		bounds[i] = cachesim.Boundary{Pos: t.end, Blocks: t.blocks}
	}
	n, err := a.LookupTurns(r.tokens, pos, bounds)
	if err != nil {
		return 0, nil, warnings, fmt.Errorf("sim: anthropic cache: %w", err)
	}
	return n, pos, warnings, nil
}

// Reset empties the cache model, so the next session starts cold.
func (b *Backend) Reset(context.Context) error {
	b.model.Reset()
	b.counter.counts = nil
	return nil
}
