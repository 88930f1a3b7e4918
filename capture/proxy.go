package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lab/cachesim"
	"lab/chat"
	"lab/metrics"
)

// DefaultLabel is the arm of every row when [Options].Label is empty.
const DefaultLabel = "capture"

// DefaultMaxRequestBytes is the longest request body the proxy reads to record it unless told
// otherwise ([Options].MaxRequestBytes, lab proxy --max-request-bytes), in bytes: 64 MiB, twice
// the largest request the Anthropic Messages API accepts (32 MB, its documented request size
// limit, images and documents included) and some fifty times the body of a 200k-token
// conversation in text.
const DefaultMaxRequestBytes = 64 << 20

// idleUpstreamConns is how many idle connections to the upstream the default transport keeps:
// one per client of 256 harnesses or agents at once (http.DefaultTransport keeps 2 per host, so
// a 50-client load would open a new connection for most requests).
const idleUpstreamConns = 256

// collectAfter is the request body size, in bytes, past which the recorder collects garbage once
// it recorded the request.
const collectAfter = 4 << 20

// maxRender bounds the rendering the recorder reads back from the upstream (one at a time).
const maxRender = 256 << 20

// Options configures a [Proxy]. Zero fields take the defaults named.
type Options struct {
	// Upstream is the server the proxy forwards to, such as http://127.0.0.1:11434 or
	// https://api.openai.com (a request's path is appended to its path). Required.
	Upstream string
	// Dir is the capture's folder, created if missing; it must not already hold a capture.
	// Required (cmd/lab defaults it to results/run_id=<run-id>/).
	Dir string
	// RunID is every row's run_id and the manifest's; required.
	RunID string
	// Label is every row's arm; "" is [DefaultLabel].
	Label string
	// SaveRequests writes every recorded request body to the capture's requests file, one JSON
	// line per request, as lab run --save-requests does. Headers are never written, and a
	// credential-named field of a body is written "[redacted]" ([RedactBody]).
	SaveRequests bool
	// Progress, when set, receives one line per recorded request: its conversation, its index,
	// prompt tokens and the cached share.
	Progress io.Writer
	// Transport carries the forwarded requests; nil is a clone of http.DefaultTransport that
	// keeps up to [idleUpstreamConns] idle connections to the upstream, not its 2: clients at
	// once then reuse their connections instead of each opening a new one per request.
	Transport http.RoundTripper
	// LabVersion and Settings are recorded in the manifest.
	LabVersion string
	Settings   map[string]string
	// Tags are the user's labels of the capture (lab proxy --tag key=value), recorded in the
	// manifest.
	Tags map[string]string
	// Now is the clock of the manifest's start and end; nil is time.Now.
	Now func() time.Time
	// ServerLog is the debug log (OLLAMA_DEBUG=1) of an Ollama upstream: the cached tokens of
	// each /api/chat and /api/generate row are the `used=` of its `loading cache slot` line
	// (cached_source server_log), which Ollama's API does not report. Lines are read from the
	// log's end at New on, one per request in the order the answers ended (with Attribution, the requests came), each matched by its
	// `prompt=` to the answer's prompt_eval_count ([ollama.CacheLog.Match]); cache fills take
	// theirs too. "" leaves an Ollama row's cached tokens unknown.
	ServerLog string
	// UpstreamOllama says the upstream is an Ollama server (a caller that asked its /api/version,
	// [IsOllama]). A ServerLog or Attribution.Render [RenderOllama] say so too. Rows of Ollama's OpenAI- and Anthropic-compatible endpoints then never take
	// the answer's cached count, which Ollama always writes as 0: cached tokens come from
	// ServerLog, else stay unknown.
	UpstreamOllama bool
	// LogWait is how long the recorder waits for a request's line to reach the log; 0 is 3 s.
	LogWait time.Duration
	// MaxRequestBytes bounds the request body the proxy reads to record it, in bytes; 0 is
	// [DefaultMaxRequestBytes]. A longer body is forwarded to the upstream all the same, whole
	// and unchanged (streamed through, not held), and its row is an error row naming the limit:
	// its messages were not read, so its conversation and expected cached tokens are unknown
	// and no saved request is written for it.
	MaxRequestBytes int64
	// MaxReplyBytes bounds the answer the proxy keeps to parse, in bytes as the upstream sent
	// them (a stream's framing included); 0 is
	// [chat.DefaultMaxReplyBytes]. The client receives a longer answer whole all the same; its
	// row is an error row naming the limit ([chat.ReplyTooLong]).
	MaxReplyBytes int64
	// Attribution computes the expected cached tokens, the divergence and the re-read split of
	// each request against what the upstream's cache held ([cachesim.Attributor]); the zero
	// value computes none (expected_unknown true on every row).
	Attribution Attribution
	// SessionHeader is the name of a request header that names the session of the user's own
	// harness (lab proxy --session-header): requests with the same value are one session,
	// before any of [SessionIDs]; "" for none.
	SessionHeader string
}

// Attribution says how the proxy models the upstream's one cache slot (a local server: one
// cache for every client, so one model per upstream, not per conversation).
type Attribution struct {
	// Render names how to get the upstream's own rendering of a request: [RenderOllama]
	// (POST /api/chat with `_debug_render_only`; a request of Ollama's OpenAI- and
	// Anthropic-compatible endpoints converted first as Ollama converts it,
	// [lab/backend/ollama.CompatibleChatRequest]), [RenderLlamaCpp] (POST /apply-template with
	// the chat request's body), or "" for none (cloud APIs, which show none).
	Render string
	// Tokenizer is the served model's tokenizer (for Ollama the model's GGUF tokenizer, for
	// llama-server its /tokenize endpoint); nil computes nothing.
	Tokenizer cachesim.Tokenizer
	// Output writes a reply as the served model generated it after its prompt (for Qwen3
	// models ollama.Qwen3Output), so that the slot is modelled as holding the prompt and the
	// reply; nil models it as holding the prompt only.
	Output func(*chat.Reply) string
	// NumCtx is the server's context window in tokens; 0 when unknown.
	NumCtx int
	// NoteOpen is the tag that opens a harness's session note ("<session-note>"); "" for none.
	NoteOpen string
	// OrderedArguments says the upstream converts an Anthropic Messages request with its tool
	// calls' arguments in the order sent ([ollama.OrderAnthropicArguments]): the lab's scripted
	// model does; Ollama's own /v1/messages does not (its order is random), and the rows say so.
	OrderedArguments bool
}

// The values of [Attribution].Render.
const (
	RenderOllama   = "ollama"
	RenderLlamaCpp = "llamacpp"
)

// Proxy is a pass-through reverse proxy that records, for each request to a model API it knows
// ([APIOpenAIChat] and the others), one metrics.Sample row. It is an http.Handler; serve it on a
// loopback listener, and [Proxy.Close] it once the server has stopped. Safe for concurrent use.
type Proxy struct {
	opts     Options
	upstream *url.URL
	rp       *httputil.ReverseProxy

	mu     sync.Mutex
	closed bool
	// inflight holds the recorded requests forwarded and not yet handed to the recorder; once
	// closed, idle is closed when it empties.
	inflight map[*exchange]struct{}
	idle     chan struct{}
	// With a slot model (Options.Attribution), exchanges reach the recorder in the order their
	// requests arrived, which is the order a one-slot server took them: seq numbers them as
	// they begin, held keeps those that ended before an earlier one, next is the number the
	// recorder takes next. A client that stops reading at a stream's end marker sends its next
	// request (the lab's cache fill) while the proxy still waits for the end of that stream; in
	// the order the answers ended the fill would come first.
	ordered bool
	seq     uint64
	next    uint64
	held    map[uint64]*exchange
	// stop is cancelled by Close: every forwarded request still waiting on the upstream is cut.
	stop       context.Context
	cancelStop context.CancelFunc
	// stopping is set by Stopping: an answer cut from now on was cut by the proxy's own stop.
	stopping atomic.Bool
	queue    chan *exchange
	done     chan struct{}
	rec      *recorder
}

// unwindWait bounds how long Close waits for the handlers of requests it cut to return (a
// handler blocked writing to a client that reads nothing, on a server still running): past it,
// their requests are recorded with what they hold. A variable for tests.
var unwindWait = 5 * time.Second

// CheckLoopback returns an error unless addr (host:port) names a loopback address: 127.0.0.0/8,
// ::1 or "localhost". The lab only talks loopback; a proxy that forwards API keys must not be
// reachable from elsewhere.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q: not a loopback address (want 127.0.0.1:PORT or [::1]:PORT)", addr)
	}
	return nil
}

// New checks opts, creates the capture's folder with its samples file, journal and manifest
// (complete: false until Close), and returns the proxy. Errors: an upstream that is not an
// http(s) URL with a host, no Dir or RunID, a folder that already holds a capture, a file that
// cannot be created.
func New(opts Options) (*Proxy, error) {
	u, err := url.Parse(opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("capture: upstream %q: want http(s)://host[:port][/path]", opts.Upstream)
	}
	if opts.Dir == "" || opts.RunID == "" {
		return nil, errors.New("capture: no folder or run id")
	}
	if opts.Label == "" {
		opts.Label = DefaultLabel
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxRequestBytes < 0 || opts.MaxReplyBytes < 0 {
		return nil, fmt.Errorf("capture: MaxRequestBytes %d, MaxReplyBytes %d: want a number of bytes, or 0 for the default", opts.MaxRequestBytes, opts.MaxReplyBytes)
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxReplyBytes == 0 {
		opts.MaxReplyBytes = chat.DefaultMaxReplyBytes
	}
	switch opts.Attribution.Render {
	case "", RenderOllama, RenderLlamaCpp:
	default:
		return nil, fmt.Errorf("capture: Attribution.Render %q: want %s, %s or none", opts.Attribution.Render, RenderOllama, RenderLlamaCpp)
	}
	tr := opts.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = idleUpstreamConns, idleUpstreamConns
		tr = t
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	rec, err := newRecorder(opts, u, tr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{opts: opts, upstream: u, queue: make(chan *exchange, 4096), done: make(chan struct{}), rec: rec,
		inflight: map[*exchange]struct{}{}, idle: make(chan struct{}), ordered: opts.Attribution.Render != "", held: map[uint64]*exchange{}}
	p.stop, p.cancelStop = context.WithCancel(context.Background())
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			if exchangeOf(pr.In.Context()) != nil {
				// A compressed answer could not be parsed: ask for the plain one (the
				// client, which may have asked for gzip, gets identity, which HTTP allows).
				pr.Out.Header.Set("Accept-Encoding", "identity")
				if opts.Attribution.Render == RenderLlamaCpp {
					// llama-server closes the connection after a streamed answer although
					// its headers say keep-alive: pooled, the connection would fail the
					// next request sent on it (the recorder's own /apply-template, or the
					// next forwarded one) with EOF. The client's own Connection: close is
					// a hop-by-hop header the proxy does not forward.
					pr.Out.Close = true
				}
			}
		},
		Transport:     tr,
		FlushInterval: -1,
		// The buffer an answer is copied through, reused: ReverseProxy allocates 32 KiB per
		// request without one.
		BufferPool: copyBuffers{},
		ModifyResponse: func(resp *http.Response) error {
			if ex := exchangeOf(resp.Request.Context()); ex != nil {
				ex.respond(resp)
				resp.Body = &tee{rc: resp.Body, ex: ex}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if ex := exchangeOf(r.Context()); ex != nil {
				ex.fail(err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	go p.record()
	return p, nil
}

// copyBuffers is the proxy's httputil.BufferPool: 32 KiB buffers (ReverseProxy's own size),
// reused from request to request.
type copyBuffers struct{}

var copyBufferPool = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[32 << 10]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if cap(b) == 32<<10 {
		copyBufferPool.Put((*[32 << 10]byte)(b[:32<<10]))
	}
}

// Dir returns the capture's folder.
func (p *Proxy) Dir() string { return p.opts.Dir }

type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// ServeHTTP forwards r to the upstream and the answer to w as it arrives (flushed at once,
// streams included). A request to a known API is read whole first (it is needed to record it),
// unless its body is longer than [Options].MaxRequestBytes, which is forwarded as it comes and
// recorded as an error row; its answer is teed: each chunk the upstream sends is kept, with the
// time it arrived, up to [Options].MaxReplyBytes, for the recorder, which parses it once the
// answer ended. The body is not decoded before it is forwarded: the recorder reads it, and
// drops the exchange of a request that only renders a prompt or loads a model ([skip]).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := Classify(r.Method, r.URL.Path)
	if api == "" && isSlotErase(r.Method, r.URL) {
		api = apiSlotErase
	}
	if api == "" {
		p.rp.ServeHTTP(w, r)
		return
	}
	body, over, err := readBody(r.Body, r.ContentLength, p.opts.MaxRequestBytes)
	if err != nil {
		r.Body.Close()
		http.Error(w, "lab proxy: read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	ex := &exchange{api: api, auth: authHeaders(r.Header), keyHeaders: keyHeaders(p.opts.SessionHeader, r.Header), maxReply: p.opts.MaxReplyBytes}
	if v := r.Header.Get(parentSessionHeader); v != "" {
		ex.side = "header " + parentSessionHeader + " (a sub-agent of session " + v + ")"
	}
	ex.secrets = append(secretsOf(ex.auth), querySecrets(r.URL.Query())...)
	ex.secrets = append(ex.secrets, querySecrets(p.upstream.Query())...)
	if over {
		// Forwarded as it comes: what was read, then the rest (the length the client gave, if
		// any, stays the request's). Its size is the length it declared, else the bytes sent.
		ex.requestOver, ex.requestLen = p.opts.MaxRequestBytes, r.ContentLength
		ex.sent = &countingReader{r: io.MultiReader(bytes.NewReader(body), r.Body)}
		r.Body = struct {
			io.Reader
			io.Closer
		}{ex.sent, r.Body}
	} else {
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		// Nothing of the body is decoded on the way: the recorder reads its envelope once the
		// answer ended (exchange.readEnvelope), so a long conversation's decoding (some
		// milliseconds a megabyte) is not added to the time to first token.
		ex.body = body
	}
	ex.start = time.Now()
	if !p.begin(ex) {
		http.Error(w, "lab proxy: stopping", http.StatusServiceUnavailable)
		return
	}
	// The forwarded request ends with the client's or with the proxy's stop (Close).
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), exchangeKey{}, ex))
	unhook := context.AfterFunc(p.stop, cancel)
	defer func() {
		// Also when ReverseProxy panics with http.ErrAbortHandler (the client went away during
		// the answer): the request is recorded, then the panic goes on to the server.
		unhook()
		cancel()
		ex.finish(time.Now(), r.Context().Err() != nil || p.stop.Err() != nil, p.stopping.Load())
		p.end(ex)
	}()
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// begin registers ex as forwarded; false once Close has begun (the request is refused, not
// forwarded).
func (p *Proxy) begin(ex *exchange) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight[ex] = struct{}{}
	ex.seq = p.seq
	p.seq++
	return true
}

// release hands ex to the recorder: at once, or with a slot model in the order of arrival
// (the exchanges before it first; it waits in held for them). Called with p.mu held.
func (p *Proxy) release(ex *exchange) {
	if !p.ordered {
		p.queue <- ex
		return
	}
	p.held[ex.seq] = ex
	for {
		next, ok := p.held[p.next]
		if !ok {
			return
		}
		delete(p.held, p.next)
		p.next++
		p.queue <- next
	}
}

// end hands ex, whose handler is done, to the recorder, unless Close already recorded it.
func (p *Proxy) end(ex *exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.inflight[ex]; !ok {
		return
	}
	delete(p.inflight, ex)
	p.release(ex)
	if p.closed && len(p.inflight) == 0 {
		close(p.idle)
	}
}

func (p *Proxy) record() {
	defer close(p.done)
	for ex := range p.queue {
		p.rec.process(ex)
		if len(ex.body) >= collectAfter {
			// Decoding a long request leaves some times its size in garbage, which the
			// collector's pace (GOGC) lets grow to the size of everything live: the bodies of
			// every request in flight. Collected now, the garbage stays one request's.
			ex.body = nil
			runtime.GC()
		}
	}
}

// Stopping tells the proxy that its server is shutting down: an answer cut from now on (the
// server closing a connection whose upstream stalled) is recorded as cut by the proxy's stop,
// not as a client that disconnected.
func (p *Proxy) Stopping() { p.stopping.Store(true) }

// Close cuts every forwarded request still waiting on the upstream (its row says the proxy was
// stopped before the answer ended), waits for their handlers to return (at most [unwindWait];
// a request whose handler is still blocked then is recorded with what it holds), records every
// request forwarded, closes the samples file (its footer written, the journal removed) and writes
// the manifest a last time with complete true and one session record per conversation. Requests
// arriving once Close has begun are refused with HTTP 503, not forwarded. Stop the HTTP server
// first (http.Server.Shutdown, then Close if it timed out): Close need not wait for its handlers.
// Calling Close again returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.stopping.Store(true)
	if len(p.inflight) == 0 {
		close(p.idle)
	}
	p.mu.Unlock()
	p.cancelStop()
	select {
	case <-p.idle:
	case <-time.After(unwindWait):
	}
	p.mu.Lock()
	for ex := range p.inflight {
		ex.finish(time.Now(), true, true)
		p.held[ex.seq] = ex
	}
	clear(p.inflight)
	for _, seq := range slices.Sorted(maps.Keys(p.held)) {
		p.queue <- p.held[seq]
	}
	clear(p.held)
	close(p.queue)
	p.mu.Unlock()
	<-p.done
	return p.rec.close(true)
}

// Samples returns the number of rows written so far, each with the manifest that records it.
func (p *Proxy) Samples() int { return p.rec.samples() }

// chunk is a piece of an answer as it arrived.
type chunk struct {
	data []byte
	at   time.Time
}

// exchange is one recorded request and its answer, filled by the handler and read by the
// recorder once the handler is done.
type exchange struct {
	api string
	// body is the request body, nil when it was longer than requestOver.
	body []byte
	env  envelope
	// validJSON says body is valid JSON: its envelope decoded (json.Unmarshal checks the whole
	// text before it decodes); false when it did not, which may be for another reason.
	validJSON bool
	// requestOver is the limit (Options.MaxRequestBytes) the body went past, 0 when it did not;
	// requestLen is then the body's declared length (-1 when it declared none) and sent counts
	// the bytes forwarded.
	requestOver int64
	requestLen  int64
	sent        *countingReader
	// maxReply bounds the answer bytes kept (Options.MaxReplyBytes); truncated says the answer
	// went past it.
	maxReply int64
	// keyHeaders are the request's headers that may name its session (Options.SessionHeader and
	// the headers of SessionIDs), kept for the recorder.
	keyHeaders http.Header
	// key is the conversation key the request carried (a session header or prompt_cache_key),
	// "" for none: set by readEnvelope.
	key string
	// side says why the request is a side request by its headers alone (a parent session's
	// header); "" when they do not say.
	side string
	// auth holds the request's credentials, in memory only: for the rendering requests the
	// recorder sends to the same upstream.
	auth http.Header
	// secrets are the values redacted from anything written: auth's values (and a bearer token
	// alone), the credentials of the request's and the upstream's query strings, and (added by
	// the recorder, RedactBody) the body's credential-named fields.
	secrets []string
	// fill marks a request that only fills the upstream's cache: no row, but the slot model
	// takes it.
	fill bool
	// unload marks a request that unloads the upstream's model, which empties its cache: no
	// row, but the slot model is emptied.
	unload bool
	// passed marks a request that only renders a prompt or loads a model: no row, and nothing
	// of it is recorded. fill, unload and passed are set by readEnvelope.
	passed bool
	start  time.Time
	// seq numbers the exchange in the order the proxy began forwarding it.
	seq uint64

	mu     sync.Mutex
	status int
	ctype  string
	// encoding is the answer's Content-Encoding: "" or identity unless the upstream compressed
	// it although the proxy asked for identity.
	encoding string
	chunks   []chunk
	// size is the bytes of chunks.
	size      int
	truncated bool
	eof       bool
	readErr   error
	err       error
	end       time.Time
	gone      bool
	// stopped: the answer was cut because the proxy was stopping (Stopping), not by the client.
	stopped bool
	// scripted is the answer's scripted-model step header (chat.ScriptedStepHeader), "" for a
	// real model's answer; skipped the intents it skipped before that step.
	scripted string
	skipped  []string
}

func (ex *exchange) respond(resp *http.Response) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.status = resp.StatusCode
	ex.ctype, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ex.encoding = strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	ex.scripted = resp.Header.Get(chat.ScriptedStepHeader)
	ex.skipped = resp.Header.Values(chat.ScriptedSkippedHeader)
}

func (ex *exchange) fail(err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.err == nil {
		ex.err = err
	}
}

// declaredShare: [readBody] allocates a declared body whole once 1/declaredShare of it came, so
// a declared length costs at most declaredShare times the bytes that came, and a body that
// comes is allocated 1 + 1/declaredShare times its size.
const declaredShare = 8

// coalesceBytes and coalesceWindow: a piece of an answer is appended to the chunk before it
// when that chunk holds fewer than coalesceBytes and began at most coalesceWindow before the
// piece arrived. The bookkeeping of an answer (a slice and an arrival time per chunk) is then
// per buffer, not per piece read, so an answer sent in tiny pieces costs about its bytes; and a
// chunk's arrival time, which the time to first token is read from, is each of its pieces'
// within coalesceWindow.
const (
	coalesceBytes  = 4 << 10
	coalesceWindow = time.Millisecond
)

// add keeps a copy of p, a piece of the answer that arrived at at, while the bytes kept stay
// within ex.maxReply; past it, what fits, and truncated is set. Only the answer's bytes count,
// never how the upstream split them: the same answer is kept or refused however it was read.
func (ex *exchange) add(p []byte, at time.Time) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.truncated {
		return
	}
	if room := ex.maxReply - int64(ex.size); int64(len(p)) > room {
		// What fits is kept (the answer's form and first content are read from it).
		ex.truncated = true
		p = p[:max(room, 0)]
		if len(p) == 0 {
			return
		}
	}
	ex.size += len(p)
	if n := len(ex.chunks); n > 0 {
		if last := &ex.chunks[n-1]; len(last.data) < coalesceBytes && at.Sub(last.at) <= coalesceWindow {
			last.data = append(last.data, p...)
			return
		}
	}
	ex.chunks = append(ex.chunks, chunk{data: append([]byte(nil), p...), at: at})
}

func (ex *exchange) ended(at time.Time, err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.end.IsZero() {
		ex.end = at
	}
	if err == nil {
		ex.eof = true
	} else if ex.readErr == nil {
		ex.readErr = err
	}
}

func (ex *exchange) finish(at time.Time, clientGone, stopping bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.end.IsZero() {
		ex.end = at
	}
	ex.gone = clientGone && !ex.eof
	// While the proxy stops, an answer that ended short with no error of the upstream's own was
	// cut by the stop: the server closed the client's connection, and the handler may return on
	// the failed write before the request's context says the client is gone.
	ex.stopped = stopping && !ex.eof && (clientGone || (ex.err == nil && ex.readErr == nil))
}

// tee passes an answer's body through to the client and keeps a copy of each chunk with its
// arrival time. It adds a copy and a clock reading per read, nothing else: no parsing, no
// waiting.
type tee struct {
	rc io.ReadCloser
	ex *exchange
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		t.ex.add(p[:n], time.Now())
	}
	switch {
	case errors.Is(err, io.EOF):
		t.ex.ended(time.Now(), nil)
	case err != nil:
		t.ex.ended(time.Now(), err)
	}
	return n, err
}

func (t *tee) Close() error { return t.rc.Close() }

// countingReader counts the bytes read through it; safe to read the count while another goroutine
// reads.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// readBody reads a request body of at most limit bytes. Its memory grows as its bytes arrive:
// in blocks (64 KiB doubling to 4 MiB) copied once into one buffer of the size read, so a body
// is held once, not in the doubling buffers of io.ReadAll. A declared length (length >= 0, its
// Content-Length) bounds each block, and once an eighth of it has come ([declaredShare]) the
// body's buffer is allocated whole and the rest read into it: a declared length costs no
// memory before its bytes come (at most 8 times what came), and a body that comes costs little
// more than its size. over is true when the body is longer than limit: body is then what was
// read of it (nil when its declared length said so before anything was read), the rest left in
// r. Errors: the client's read errors, a body shorter than its declared length
// (io.ErrUnexpectedEOF, or io.EOF when none of it came).
func readBody(r io.Reader, length, limit int64) (body []byte, over bool, err error) {
	if length > limit {
		return nil, true, nil
	}
	if length == 0 {
		return []byte{}, false, nil
	}
	var blocks [][]byte
	var total int64
	size := 64 << 10
	for {
		want := int64(size)
		if length >= 0 {
			if share := length / declaredShare; total > 0 && total >= share {
				// Enough of the declared body came: its buffer, the rest read into it.
				body = make([]byte, length)
				off := 0
				for _, b := range blocks {
					off += copy(body[off:], b)
				}
				clear(blocks)
				if _, err := io.ReadFull(r, body[off:]); err != nil {
					if errors.Is(err, io.EOF) {
						err = io.ErrUnexpectedEOF
					}
					return nil, false, err
				}
				return body, false, nil
			} else if total > 0 {
				want = min(want, share-total)
			}
			want = min(want, length-total)
		}
		b := make([]byte, want)
		n, err := io.ReadFull(r, b)
		blocks = append(blocks, b[:n])
		total += int64(n)
		if total > limit {
			return slices.Concat(blocks...), true, nil
		}
		if length >= 0 && total == length {
			break
		}
		if length >= 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			if total == 0 {
				return nil, false, io.EOF
			}
			return nil, false, io.ErrUnexpectedEOF
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		size = min(2*size, 4<<20)
	}
	if len(blocks) == 1 && len(blocks[0]) == cap(blocks[0]) {
		return blocks[0], false, nil // one block of the body's size: no copy
	}
	body = slices.Concat(blocks...)
	if total >= collectAfter {
		// The blocks, as long as the body, are garbage now, which the collector's pace lets
		// grow with everything live (the bodies of every request in flight): collected now.
		clear(blocks)
		runtime.GC()
	}
	return body, false, nil
}

// sensitiveHeaders carry credentials; they are forwarded to the upstream and written nowhere.
var sensitiveHeaders = []string{"Authorization", "Proxy-Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie"}

func authHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range sensitiveHeaders {
		if v := h.Values(k); len(v) > 0 {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// SessionID is one place a known client names its session on the wire: a request header, or
// a field of the JSON body. The proxy groups the requests that carry the same value into the
// same session ([Options.SessionHeader] comes before every entry).
type SessionID struct {
	// Agent is the client that sends it, such as "Claude Code".
	Agent string
	// Header is the header's name (matched case-insensitively); "" for a body field.
	Header string
	// Field is the top-level JSON field of the body when Header is "".
	Field string
}

// SessionIDs are the session identities of the agents the lab knows, in the order the proxy
// looks for them, as their own packages send them (agents/agents.json): OpenAI Codex's
// prompt_cache_key (its thread id) and its session-id and thread-id headers (older versions:
// session_id and conversation_id); Claude Code's X-Claude-Code-Session-Id; opencode's
// x-session-affinity and X-Session-Id; the generic Session-Id. Qwen Code and pi send none to a
// custom base URL: their requests are grouped by their messages.
var SessionIDs = []SessionID{
	{Agent: "OpenAI Codex", Field: "prompt_cache_key"},
	{Agent: "Claude Code", Header: "X-Claude-Code-Session-Id"},
	{Agent: "OpenAI Codex", Header: "Session-Id"},
	{Agent: "OpenAI Codex", Header: "Thread-Id"},
	{Agent: "OpenAI Codex", Header: "Session_id"},
	{Agent: "OpenAI Codex", Header: "Conversation_id"},
	{Agent: "opencode", Header: "X-Session-Affinity"},
	{Agent: "opencode", Header: "X-Session-Id"},
}

// parentSessionHeader is the header opencode sends on a sub-agent's requests, naming the
// session that started it: such a request is a side request.
const parentSessionHeader = "X-Parent-Session-Id"

// readEnvelope decodes the envelope of the exchange's body (when it was read: not past the
// limit) and sets what follows from it: validJSON, the conversation key, and whether the
// request only fills the cache, unloads the model or renders or loads ([skip]). The recorder
// calls it once the handler is done; own is Options.SessionHeader.
func (ex *exchange) readEnvelope(own string) {
	if ex.requestOver > 0 {
		ex.key = sessionKey(own, ex.keyHeaders, nil)
		return
	}
	// A body that is not JSON is the upstream's to refuse.
	ex.validJSON = json.Unmarshal(ex.body, &ex.env) == nil
	ex.key = sessionKey(own, ex.keyHeaders, &ex.env)
	switch skip(ex.api, &ex.env) {
	case "fill":
		ex.fill = true
	case "unload":
		ex.unload = true
	case "":
	default:
		ex.passed = true
	}
}

// keyHeaders returns the headers of h that [sessionKey] reads: own (Options.SessionHeader, ""
// for none) and those of [SessionIDs], by any case of their names.
func keyHeaders(own string, h http.Header) http.Header {
	var out http.Header
	for hk, v := range h {
		named := own != "" && strings.EqualFold(hk, own)
		for _, id := range SessionIDs {
			named = named || (id.Header != "" && strings.EqualFold(hk, id.Header))
		}
		if named {
			if out == nil {
				out = http.Header{}
			}
			out[hk] = slices.Clone(v)
		}
	}
	return out
}

// sessionKey returns the conversation key of a request with headers h and body fields env: the
// value of the user's own header (Options.SessionHeader, "" for none), else of the first entry
// of [SessionIDs] the request carries, prefixed by the header's or field's name in lower case;
// "" when it carries none.
func sessionKey(own string, h http.Header, env *envelope) string {
	header := func(name string) string {
		for hk, v := range h {
			if strings.EqualFold(hk, name) && len(v) > 0 && v[0] != "" {
				return v[0]
			}
		}
		return ""
	}
	if own != "" {
		if v := header(own); v != "" {
			return strings.ToLower(own) + " " + v
		}
	}
	for _, id := range SessionIDs {
		switch {
		case id.Header != "":
			if v := header(id.Header); v != "" {
				return strings.ToLower(id.Header) + " " + v
			}
		case id.Field == "prompt_cache_key" && env != nil && env.PromptCacheKey != "":
			return "prompt_cache_key " + env.PromptCacheKey
		}
	}
	return ""
}

// querySecrets returns the values of q's credential parameters.
func querySecrets(q url.Values) []string {
	var out []string
	for k, vs := range q {
		if chat.IsCredentialParam(k) {
			out = append(out, vs...)
		}
	}
	return out
}

// secretsOf returns the values of auth's headers, each also without a "Bearer " or "Basic "
// scheme.
func secretsOf(auth http.Header) []string {
	var out []string
	for _, vs := range auth {
		for _, v := range vs {
			out = append(out, v)
			if _, tok, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
				out = append(out, strings.TrimSpace(tok))
			}
		}
	}
	return out
}

// RedactURL returns u as text with its password and the values of its credential query
// parameters (key, api-key, access_token, token, sig, ...) replaced, for logs and manifests.
func RedactURL(u *url.URL) string {
	c := *u
	if q := c.Query(); len(querySecrets(q)) > 0 {
		for k := range q {
			if chat.IsCredentialParam(k) {
				q[k] = []string{"redacted"}
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.Redacted()
}

// layout is where the capture's files go in its folder: the results layout of lab run (one
// part, 1/1, of the hive-partitioned layout results/run_id=<id>/). The part is written to its
// journal as rows come and to its Parquet file at Close (metrics.CreateJournalPart), so that a
// capture's memory does not grow with its rows: a Parquet writer holds every row group's
// metadata until it writes the footer.
func layout(dir string) (samples func(metrics.FileMeta) (*metrics.ParquetSink, error), manifest, requests string) {
	s := metrics.Shard{Index: 1, Count: 1}
	return func(meta metrics.FileMeta) (*metrics.ParquetSink, error) {
			return metrics.CreateJournalPart(dir, s, meta)
		},
		filepath.Join(dir, metrics.PartManifestFile(s)), filepath.Join(dir, metrics.PartRequestsFile(s))
}
