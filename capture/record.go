package capture

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lab/backend/ollama"
	"lab/backend/openai"
	"lab/cachesim"
	"lab/chat"
	"lab/metrics"
	"lab/row"
)

// recorder turns finished exchanges into rows, one at a time, in the order the answers ended
// (with a slot model, Options.Attribution, in the order the requests came).
type recorder struct {
	opts     Options
	upstream *url.URL
	http     *http.Client

	sink     *metrics.ParquetSink
	manPath  string
	reqPath  string
	requests *os.File
	man      *metrics.Manifest
	groups   grouper
	attr     *cachesim.Attributor
	// lastReq is the last request the slot model observed (a row's), nil before the first, and
	// lastRendered its rendered prompt.
	lastReq      *chat.Request
	lastRendered string
	backends     []string
	// log follows the upstream's debug log for cached tokens (Options.ServerLog); nil for none.
	log     *ollama.CacheLog
	logWait time.Duration
	// logMisses counts the requests whose line did not appear.
	logMisses int
	// ollama is set when the upstream is known to be Ollama (Options.UpstreamOllama, a server
	// log, Attribution.Render ollama). An answer of Ollama's own API does not set it: a gateway
	// may serve that API and others.
	ollama atomic.Bool

	// seen holds the secrets of the requests recorded so far (headers, query strings, body
	// fields), redacted from every later row, request body and progress line.
	seen seenSecrets

	mu   sync.Mutex
	rows int
	// manifestBytes counts the bytes of every manifest written (tests: none per row).
	manifestBytes int64
}

func newRecorder(opts Options, u *url.URL, tr http.RoundTripper) (*recorder, error) {
	create, manPath, reqPath := layout(opts.Dir)
	if _, err := os.Stat(manPath); err == nil {
		return nil, fmt.Errorf("capture: %s already holds a capture (%s)", opts.Dir, manPath)
	}
	r := &recorder{opts: opts, upstream: u, http: &http.Client{Transport: tr, Timeout: 5 * time.Minute}, manPath: manPath, reqPath: reqPath}
	r.ollama.Store(opts.UpstreamOllama || opts.ServerLog != "" || opts.Attribution.Render == RenderOllama)
	if opts.ServerLog != "" {
		r.log, r.logWait = ollama.OpenCacheLog(opts.ServerLog), opts.LogWait
		if r.logWait <= 0 {
			r.logWait = 3 * time.Second
		}
	}
	if a := opts.Attribution; a.Render != "" && a.Tokenizer != nil {
		r.attr = &cachesim.Attributor{Tok: a.Tokenizer, NumCtx: a.NumCtx, NoteOpen: a.NoteOpen}
	}
	settings := map[string]string{"upstream": RedactURL(u), "label": opts.Label,
		"max_request_bytes": strconv.FormatInt(opts.MaxRequestBytes, 10), "max_reply_bytes": strconv.FormatInt(opts.MaxReplyBytes, 10)}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	r.man = &metrics.Manifest{
		LabVersion: opts.LabVersion, RunID: opts.RunID, Shard: &metrics.Shard{Index: 1, Count: 1},
		Scenarios: []string{}, Arms: []string{opts.Label}, Repetitions: 1, Backend: "proxy",
		ServerURL: RedactURL(u), StartedAt: opts.Now().UTC(), CacheState: metrics.CacheUncontrolled, Settings: settings,
		Tags: opts.Tags, Host: metrics.CurrentHost(), SessionsFromRows: true,
	}
	if err := r.writeManifest(); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	sink, err := create(r.man.FileMeta())
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	r.sink = sink
	if opts.SaveRequests {
		f, err := os.OpenFile(reqPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			_ = sink.Close()
			return nil, fmt.Errorf("capture: %w", err)
		}
		r.requests = f
	}
	return r, nil
}

func (r *recorder) samples() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows
}

// process records one exchange: a row for a request, the slot model only for a cache fill.
func (r *recorder) process(ex *exchange) {
	ex.readEnvelope(r.opts.SessionHeader)
	if ex.passed {
		return
	}
	// A credential-named field's value in the body is a secret like a header's, and every
	// secret seen so far is redacted from this request's row too (a key sent once and echoed
	// later).
	// A body whose envelope decoded is valid JSON: not scanned again to be told so.
	body, bodySecrets := redactBody(ex.body, ex.validJSON || json.Valid(ex.body))
	ex.secrets = append(ex.secrets, bodySecrets...)
	r.seen.add(ex.secrets)
	secrets := append(slices.Clone(r.seen.list), ex.secrets...)
	if ex.fill {
		r.observeFill(ex)
		return
	}
	if ex.unload {
		if r.attr != nil && ex.err == nil && ex.status/100 == 2 {
			*r.attr = cachesim.Attributor{Tok: r.attr.Tok, NumCtx: r.attr.NumCtx, NoteOpen: r.attr.NoteOpen}
			r.lastReq, r.lastRendered = nil, ""
		}
		return
	}
	s, req, reply := r.measure(ex, secrets)
	conv, _ := r.groups.assign(ex.key, ex.side, req)
	turn, step := turnStep(req)
	row.Place(s, conv.name, int32(conv.requests), turn, step)
	if conv.side != "" {
		row.MarkSideRequest(s, conv.side)
	}
	if lost := r.groups.lost; lost != "" {
		// A conversation the grouper dropped may have taken this request.
		if s.Warnings != "" {
			lost = s.Warnings + "; " + lost
		}
		s.Warnings = lost
	}
	if s.ExpectedUnknown {
		// No rendering (a cloud API): name the segment by comparing the request with the
		// conversation's previous one part by part; the token stays unknown.
		parts := digestParts(cachesim.DifferenceParts(req, r.opts.Attribution.NoteOpen))
		if s.Error == "" {
			if conv.parts != nil {
				row.SetPartsDivergence(s, cachesim.FirstDifference(asParts(conv.parts), asParts(parts)))
			}
			conv.parts = parts
		}
	}
	r.groups.update(conv, req, reply, s.Error != "")
	s.Error = Redact(s.Error, secrets)
	s.Warnings = Redact(s.Warnings, secrets)
	var errs []error
	if err := r.sink.Write(s); err != nil {
		errs = append(errs, err)
	}
	if r.requests != nil && ex.requestOver == 0 {
		body := json.RawMessage(bytes.ReplaceAll(body, []byte("\n"), []byte(" ")))
		if !json.Valid(body) {
			b, _ := json.Marshal(string(ex.body))
			body = b
		}
		body = json.RawMessage(Redact(string(body), secrets))
		if !json.Valid(body) { // a secret that spanned the JSON's punctuation
			b, _ := json.Marshal(string(body))
			body = b
		}
		line, err := row.RequestLine{Scenario: s.Scenario, Arm: s.Arm, Repetition: 1, RequestIndex: s.RequestIndex, API: ex.api, Body: body,
			Reply: savedReply(reply, ex.body, s.Error, secrets)}.Marshal()
		if err == nil {
			_, err = r.requests.Write(line)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", r.reqPath, err))
		}
	}
	if r.man.Model == "" {
		r.man.Model = s.Model
	}
	if !contains(r.backends, s.Backend) {
		r.backends = append(r.backends, s.Backend)
		if len(r.backends) == 1 {
			r.man.Backend = s.Backend
		} else {
			r.man.Backend = "proxy"
		}
	}
	// The manifest is not written again until close: a row is all a reader needs, its
	// conversation and how it ended are its columns (metrics.Manifest.SessionsFromRows), so a
	// capture killed before Close (kill -9) reads every row answered so far, and the work a row
	// costs does not grow with the number of conversations.
	// Counted once its row is written (Samples: what a reader finds).
	r.mu.Lock()
	r.rows++
	r.mu.Unlock()
	if w := r.opts.Progress; w != nil {
		fmt.Fprintln(w, progressLine(s))
		for _, err := range errs {
			fmt.Fprintln(w, "lab proxy:", err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// savedReply is the reply read from the answer as the requests file keeps it (row.SaveReply),
// every secret seen redacted from its texts and arguments; nil for an answer that failed
// (errText not "") or gave no reply, and for a request (body) that let the server generate at
// most one token ([generationCapped]): its reply is not what the server's cache went on with
// (lab run's measured request, whose cache fill follows).
func savedReply(reply *chat.Reply, body []byte, errText string, secrets []string) *row.SavedReply {
	if reply == nil || errText != "" || generationCapped(body) {
		return nil
	}
	out := row.SaveReply(reply)
	out.Reasoning, out.Content = Redact(out.Reasoning, secrets), Redact(out.Content, secrets)
	for i := range out.ToolCalls {
		c := &out.ToolCalls[i]
		args, _ := RedactBody(c.Arguments)
		c.Arguments = json.RawMessage(Redact(string(args), secrets))
		if !json.Valid(c.Arguments) {
			c.Arguments, _ = json.Marshal(string(c.Arguments))
		}
	}
	if out.Reasoning == "" && out.Content == "" && len(out.ToolCalls) == 0 {
		return nil
	}
	return out
}

// generationCapped reports whether a request body bounds the reply to at most one token:
// Ollama's options.num_predict, llama-server's n_predict, OpenAI's max_tokens,
// max_completion_tokens or max_output_tokens, Anthropic's max_tokens, 0 or 1.
func generationCapped(body []byte) bool {
	var b struct {
		Options struct {
			NumPredict *int `json:"num_predict"`
		} `json:"options"`
		NPredict            *int `json:"n_predict"`
		MaxTokens           *int `json:"max_tokens"`
		MaxCompletionTokens *int `json:"max_completion_tokens"`
		MaxOutputTokens     *int `json:"max_output_tokens"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for _, n := range []*int{b.Options.NumPredict, b.NPredict, b.MaxTokens, b.MaxCompletionTokens, b.MaxOutputTokens} {
		if n != nil && *n >= 0 && *n <= 1 {
			return true
		}
	}
	return false
}

// progressLine is the one line a recorded request gets on the progress writer.
func progressLine(s *metrics.Sample) string {
	cached := "? cached"
	if s.CachedTokens != nil && s.PromptTokens > 0 {
		cached = fmt.Sprintf("%.0f%% cached", 100*float64(*s.CachedTokens)/float64(s.PromptTokens))
	} else if s.CachedTokens != nil {
		cached = fmt.Sprintf("%d cached", *s.CachedTokens)
	}
	prompt := "?" // not measured: null in the row
	if s.PromptTokens > 0 {
		prompt = fmt.Sprint(s.PromptTokens)
	}
	l := fmt.Sprintf("%s request %d (%s): %s prompt tokens, %s", s.Scenario, s.RequestIndex, s.Backend, prompt, cached)
	if s.DivergenceSegment != "" {
		l += ", diverged at " + s.DivergenceSegment
	}
	if s.Error != "" {
		l += ", error: " + s.Error
	}
	return l
}

// measure builds the row of one exchange from its request and answer: everything but its place
// in a conversation. secrets are redacted from an error answer before its message is quoted
// (and maybe cut short, which would leave part of a secret no later redaction finds).
func (r *recorder) measure(ex *exchange, secrets []string) (*metrics.Sample, *chat.Request, *chat.Reply) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	s := row.New(row.Identity{
		RunID: r.opts.RunID, Arm: r.opts.Label, Repetition: 1, Backend: "proxy:" + ex.api, Model: ex.env.Model,
		Kind: metrics.KindStep, StartedAt: ex.start,
	})
	var warnings []string
	req := &chat.Request{}
	requestBytes := int64(len(ex.body))
	var ttft time.Duration
	if ex.requestOver > 0 {
		requestBytes = ex.requestLen
		if requestBytes < 0 {
			requestBytes = ex.sent.n.Load()
		}
	} else if d, err := DecodeRequest(ex.api, ex.body); err != nil {
		warnings = append(warnings, "the request could not be decoded, so it is grouped alone: "+err.Error())
	} else {
		req = d
	}
	chunks, derr := decodeChunks(ex.encoding, ex.chunks)
	var reply *chat.Reply
	switch {
	case ex.stopped:
		s.Error = "the proxy was stopped before the answer ended"
	case ex.gone && errors.Is(ex.err, context.Canceled):
		s.Error = "the client disconnected before the answer ended"
	case ex.err != nil:
		s.Error = "upstream: " + ex.err.Error()
	case derr != nil:
		s.Error = derr.Error()
	case ex.status/100 != 2:
		s.Error = fmt.Sprintf("HTTP %d: %s", ex.status, openai.ErrorMessage([]byte(Redact(string(joinChunks(chunks)), secrets))))
	default:
		head := answerHead(chunks)
		form := chat.SniffAnswer(ex.ctype, head)
		mode, ok := framingOf(ex.api, form)
		if !ok {
			// An HTML page, an empty body: not an answer the API gives, whose figures stay
			// unknown.
			s.Error = chat.NotAnswerError("", "", ex.ctype, head).Body
			if ex.truncated {
				s.Error = replyTooLong(ex.maxReply)
			}
			break
		}
		p := newParser(ex.api)
		first, perr := feed(p, mode, chunks)
		res := p.result()
		reply = p.reply()
		// An unstreamed answer (one JSON document, Ollama's included; JSON lines sent as
		// application/json are a stream) has no time to first token: its first byte comes after
		// the whole generation. lab run leaves it unknown too.
		unstreamed := form == chat.AnswerJSON && (mode == framingWhole || !bytes.Contains(bytes.TrimSpace(joinChunks(chunks)), []byte("\n")))
		switch {
		case unstreamed:
			warnings = append(warnings, chat.Unstreamed)
		case first >= 0:
			ttft = chunks[first].at.Sub(ex.start)
		case len(chunks) > 0:
			ttft = chunks[0].at.Sub(ex.start)
			warnings = append(warnings, "no event carried content, reasoning or a tool call: time to first token is the time to the answer's first byte")
		}
		if r.ollama.Load() && ollamaCompatible(ex.api) {
			if w, ok := row.DropConstantCached(res, "the upstream is Ollama, whose OpenAI- and Anthropic-compatible endpoints always answer 0 cached tokens"); ok {
				warnings = append(warnings, w)
			}
			if w, ok := row.DropOllamaEstimate(res); ok && ex.api == APIAnthropic {
				warnings = append(warnings, w)
			}
			if ex.api == APIAnthropic && res.Usage != nil && res.Usage.Uncached != nil {
				// Ollama's input_tokens is its whole prompt (prompt_eval_count), not the part
				// read afresh that Anthropic's field means: the prompt count it is, the
				// uncached count it is not (the server log's used= says what was reused).
				res.Usage = res.Usage.Without(chat.UsageUncached)
			}
		}
		row.SetResult(s, res, nil)
		warnings = append(warnings, res.Warnings...)
		whole := p.end()
		switch {
		case ex.truncated:
			// Before a parser's error: the kept bytes end mid-answer.
			s.Error = replyTooLong(ex.maxReply)
		case perr != nil:
			var ae *chat.APIError
			if errors.As(perr, &ae) {
				s.Error = ae.Body
			} else {
				s.Error = "read the answer: " + perr.Error()
			}
		case whole == nil:
			// The answer's end marker came (data: [DONE], message_stop, done: true): the
			// answer is whole, also when the client, which stops reading at the end marker,
			// closed its connection before the upstream's end of the body reached the proxy.
		case ex.gone:
			s.Error = "the client disconnected before the answer ended"
		case ex.readErr != nil:
			s.Error = "read the answer: " + ex.readErr.Error()
		default:
			// A stream that ended before its end marker ("stream cut: no message_stop").
			var ae *chat.APIError
			if errors.As(whole, &ae) {
				s.Error = ae.Body
			}
		}
		if r.log != nil && (ex.api == APIOllamaChat || ex.api == APIOllamaGenerate || ollamaCompatible(ex.api)) {
			warnings = append(warnings, r.cachedFromLog(ex, res, s)...)
		}
		if r.attr != nil && s.Error == "" && ex.requestOver == 0 {
			warnings = append(warnings, r.attribute(ex, req, res, reply, s)...)
		}
	}
	if ex.requestOver > 0 {
		// The answer's figures are the upstream's and stay; what the row could not record is
		// the request's side.
		note := fmt.Sprintf("request body over the limit of %d bytes (--max-request-bytes): forwarded whole, not recorded (its conversation and expected cached tokens unknown, no saved request)", ex.requestOver)
		if s.Error == "" {
			s.Error = note
		} else {
			s.Error = note + "; " + s.Error
		}
	}
	if ex.scripted != "" {
		// The lab's scripted model answered (chat.ScriptedStepHeader): the agent's requests,
		// the script's replies.
		s.Driver = metrics.DriverScriptedModel
		for _, sk := range ex.skipped {
			warnings = append(warnings, "scripted model: intent skipped, "+sk)
		}
	}
	row.SetTimes(s, ttft, ex.end.Sub(ex.start), requestBytes)
	row.SetWarnings(s, warnings)
	return s, req, reply
}

// replyTooLong is the error of a row whose answer went past limit bytes ([Options].MaxReplyBytes):
// it begins with [chat.ReplyTooLong] and names the limit and its flag.
func replyTooLong(limit int64) string {
	return fmt.Sprintf("%s: the answer grew past the limit of %d bytes the proxy keeps to parse (--max-reply-bytes); the client received it whole", chat.ReplyTooLong, limit)
}

// ollamaCompatible reports whether api is one of the foreign APIs Ollama also serves
// (/v1/chat/completions, /v1/responses, /v1/messages), whose answers carry a cached count that
// Ollama v0.17.4 always writes as 0.
func ollamaCompatible(api string) bool {
	return api == APIOpenAIChat || api == APIOpenAIResponses || api == APIAnthropic
}

// joinChunks returns the chunks' bytes in one buffer of their size.
func joinChunks(cs []chunk) []byte {
	n := 0
	for _, c := range cs {
		n += len(c.data)
	}
	b := make([]byte, 0, n)
	for _, c := range cs {
		b = append(b, c.data...)
	}
	return b
}

// answerHead returns the first 64 bytes of the chunks after their leading white space.
func answerHead(cs []chunk) []byte {
	var head []byte
	for _, c := range cs {
		d := c.data
		if len(head) == 0 {
			d = bytes.TrimLeft(d, " \t\r\n")
		}
		head = append(head, d[:min(len(d), 64-len(head))]...)
		if len(head) == 64 {
			break
		}
	}
	return head
}

// turnStep derives a request's turn (the number of user messages, 1-based: a tool result or an
// item, chat.Message.Item, is not one) and step (the assistant messages since the last user
// message, plus one: the request asks for the next).
func turnStep(req *chat.Request) (turn, step int32) {
	step = 1
	for _, m := range req.Messages {
		if m.Item != "" { // an image, a server tool's block: part of the message it came with
			continue
		}
		switch m.Role {
		case chat.RoleUser:
			turn++
			step = 1
		case chat.RoleAssistant:
			step++
		}
	}
	return max(turn, 1), step
}

// attribute computes the expected cached tokens, the divergence and the re-read split of a
// request with the upstream's own rendering, against the one slot the upstream has; it returns
// the warnings.
func (r *recorder) attribute(ex *exchange, req *chat.Request, res *chat.Result, reply *chat.Reply, s *metrics.Sample) []string {
	rendered, err := r.render(ex)
	if err != nil {
		return []string{"expected cached tokens unknown: " + err.Error()}
	}
	if rendered == "" {
		return nil
	}
	dropped := row.DroppedMessages(req, rendered)
	if ex.api == APIAnthropic && r.opts.Attribution.Render == RenderOllama && !r.opts.Attribution.OrderedArguments {
		if n := multiArgumentCalls(req); n > 0 {
			dropped = append(dropped, fmt.Sprintf("%s (%d in this request)", anthropicArgumentOrder, n))
		}
	}
	cacheText := ""
	if out := r.opts.Attribution.Output; out != nil && reply != nil {
		cacheText = rendered + out(reply)
	}
	prompt := res.PromptTokens
	if res.Usage == nil || res.Usage.Prompt == nil {
		prompt = -1
	}
	at, err := r.attr.Observe(req, rendered, cacheText, prompt)
	if err != nil {
		return append(dropped, "expected cached tokens unknown: "+err.Error())
	}
	r.lastReq, r.lastRendered = req, rendered
	if at.Unknown {
		return dropped // the row stays expected_unknown
	}
	return append(dropped, row.SetAttribution(s, at)...)
}

// anthropicArgumentOrder is the warning of an Anthropic Messages request to Ollama that holds a
// tool call with more than one argument: Ollama v0.17.4 converts a tool_use block's input through
// a Go map (anthropic.mapToArgs), whose order is random, so the server renders those arguments in
// a new order on every request, and what it reuses of its cache from the first such call on is
// chance. The expected cached tokens are one draw of that order (the proxy's own rendering).
const anthropicArgumentOrder = "Ollama converts an Anthropic tool_use input through a Go map (anthropic.mapToArgs, v0.17.4): it renders a call's arguments in a random order on every request, so from the first call with more than one argument the server's cache reuse, and the expected cached tokens, are chance"

// multiArgumentCalls counts the tool calls in req's assistant messages whose arguments are a
// JSON object of more than one key.
func multiArgumentCalls(req *chat.Request) int {
	n := 0
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			var args map[string]json.RawMessage
			if json.Unmarshal(tc.Arguments, &args) == nil && len(args) > 1 {
				n++
			}
		}
	}
	return n
}

// cachedFromLog fills the row's cached tokens of an Ollama answer from the upstream's debug log:
// the first unconsumed `loading cache slot` line whose prompt= is the answer's prompt_eval_count
// (earlier lines belong to requests the proxy does not follow and are dropped). A failed request
// whose answer began (the runner took its slot, so it wrote a line) consumes the first line
// without a count to match. A count the answer reported itself (prompt_eval_cached_count, newer
// servers) is kept; the line is consumed all the same. It returns the warnings.
func (r *recorder) cachedFromLog(ex *exchange, res *chat.Result, s *metrics.Sample) []string {
	wait := r.wait()
	if s.Error != "" || res.PromptTokens <= 0 {
		if ex.status/100 == 2 {
			if _, err := r.log.Match(-1, 0); err != nil {
				return []string{err.Error()}
			}
		}
		return nil
	}
	line, err := r.log.Match(int(res.PromptTokens), wait)
	if err != nil {
		return []string{"cached tokens unknown: " + err.Error()}
	}
	if line == nil {
		r.logMisses++
		return []string{fmt.Sprintf("no `loading cache slot` line with prompt=%d in %s within %s: cached tokens unknown (is OLLAMA_DEBUG=1 set?)", res.PromptTokens, r.log.Path(), wait)}
	}
	row.SetServerLogCached(s, int64(line.Used))
	if c := line.Cut; c != nil {
		return []string{row.PromptCutWarning(c.KeptMessages, c.Limit, c.Prompt, c.New)}
	}
	return nil
}

// wait is how long to wait for a request's cache line: Options.LogWait, or nothing once a line
// failed to appear in a log that never showed one (a server without OLLAMA_DEBUG=1: do not wait
// on every request).
func (r *recorder) wait() time.Duration {
	if r.logMisses > 0 && !r.log.Seen() {
		return 0
	}
	return r.logWait
}

// observeFill lets the slot model take a cache fill (a raw prompt evaluated into the cache): the
// slot then holds the raw prompt. With a server log the fill consumes its own cache line, so the
// next row reads its own.
func (r *recorder) observeFill(ex *exchange) {
	if ex.err != nil || ex.status/100 != 2 {
		return
	}
	if r.log != nil && (ex.api == APIOllamaGenerate || ex.api == APIOllamaChat) {
		p := &ollamaParser{}
		n := -1
		if p.whole(joinChunks(ex.chunks)) == nil && p.result().PromptTokens > 0 {
			n = int(p.result().PromptTokens)
		}
		if line, _ := r.log.Match(n, r.wait()); line == nil {
			r.logMisses++
		}
	}
	if r.attr == nil {
		return
	}
	prompt, _ := promptOf(ex.body)
	if prompt == "" {
		return
	}
	// A fill that holds the last request's prompt and its reply (the lab's generation
	// emulation) is observed with that request: the model keeps which of its messages carried
	// reasoning, so that the next request, which may drop it (a new turn), diverges at
	// "reasoning N" as lab run names it.
	req := &chat.Request{}
	if r.lastReq != nil && strings.HasPrefix(prompt, r.lastRendered) {
		req = r.lastReq
	}
	_, _ = r.attr.Observe(req, prompt, "", -1)
}

// render asks the upstream for its own rendering of the exchange's request: "" when the API has
// none the proxy can ask for.
func (r *recorder) render(ex *exchange) (string, error) {
	var path string
	var body []byte
	switch {
	case r.opts.Attribution.Render == RenderOllama && ex.api == APIOllamaChat:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(ex.body, &m); err != nil {
			return "", err
		}
		m["_debug_render_only"], m["stream"] = json.RawMessage("true"), json.RawMessage("false")
		b, err := json.Marshal(m)
		if err != nil {
			return "", err
		}
		path, body = "/api/chat", b
	case r.opts.Attribution.Render == RenderOllama && ollamaCompatible(ex.api):
		// Converted as Ollama converts it before its /api/chat handler renders it (its own
		// conversion code), then rendered by that handler.
		c, err := ollama.CompatibleChatRequest(ex.api, ex.body)
		if err != nil {
			return "", fmt.Errorf("render the prompt: %w", err)
		}
		if ex.api == APIAnthropic && r.opts.Attribution.OrderedArguments {
			if err := ollama.OrderAnthropicArguments(c, ex.body); err != nil {
				return "", fmt.Errorf("render the prompt: %w", err)
			}
		}
		b, err := ollama.RenderRequest(c)
		if err != nil {
			return "", fmt.Errorf("render the prompt: %w", err)
		}
		text, err := r.renderAt(ex, "/api/chat", b)
		var nt *noThinking
		if ex.api == APIAnthropic && c.Think != nil && errors.As(err, &nt) {
			// Ollama's /v1/messages relaxes `think` to unset for a model without thinking
			// (its handler's relax_thinking) where /api/chat refuses it: render as it serves.
			c.Think = nil
			if b, err = ollama.RenderRequest(c); err != nil {
				return "", fmt.Errorf("render the prompt: %w", err)
			}
			text, err = r.renderAt(ex, "/api/chat", b)
		}
		return text, err
	case r.opts.Attribution.Render == RenderLlamaCpp && ex.api == APIOpenAIChat:
		path, body = "/apply-template", ex.body
	case ex.api == APIOllamaGenerate && ex.env.Raw, ex.api == APILlamaCppCompletion:
		prompt, ok := promptOf(ex.body)
		if !ok {
			return "", nil
		}
		return prompt, nil
	default:
		return "", nil
	}
	return r.renderAt(ex, path, body)
}

// noThinking is the rendering error of an Ollama that refuses `think` for a model without
// thinking (HTTP 400, "… does not support thinking").
type noThinking struct{ msg string }

func (e *noThinking) Error() string { return e.msg }

// renderAt posts body to the upstream's rendering endpoint path and returns the rendering: the
// answer's `prompt` (llama-server) or `_debug_info.rendered_template` (Ollama).
func (r *recorder) renderAt(ex *exchange, path string, body []byte) (string, error) {
	u := *r.upstream
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	if r.opts.Attribution.Render == RenderLlamaCpp || ollamaCompatible(ex.api) {
		// An upstream given with its /v1 (the compatible endpoints' base URL): the rendering
		// endpoint sits beside it.
		u.Path = strings.TrimSuffix(strings.TrimSuffix(r.upstream.Path, "/"), "/v1") + path
	}
	hreq, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hreq.Header.Set("Content-Type", "application/json")
	for k, v := range ex.auth {
		hreq.Header[k] = v
	}
	resp, err := r.http.Do(hreq)
	if err != nil {
		return "", fmt.Errorf("render the prompt: %s", Redact(err.Error(), ex.secrets))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRender))
	if err != nil {
		return "", fmt.Errorf("render the prompt: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("render the prompt: %s: HTTP %d: %s", path, resp.StatusCode, openai.ErrorMessage([]byte(Redact(string(b), ex.secrets))))
		if resp.StatusCode == http.StatusBadRequest && bytes.Contains(b, []byte("does not support thinking")) {
			return "", &noThinking{err.Error()}
		}
		return "", err
	}
	var out struct {
		Prompt    *string `json:"prompt"`
		DebugInfo *struct {
			RenderedTemplate string `json:"rendered_template"`
		} `json:"_debug_info"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return "", fmt.Errorf("render the prompt: %s: %w", path, err)
	}
	switch {
	case out.Prompt != nil:
		return *out.Prompt, nil
	case out.DebugInfo != nil:
		return out.DebugInfo.RenderedTemplate, nil
	}
	return "", fmt.Errorf("render the prompt: %s answered no rendering", path)
}

// sessions returns one session record per conversation: complete unless its last request
// failed.
func (r *recorder) sessions() []metrics.SessionRecord {
	var out []metrics.SessionRecord
	for num, c := range r.groups.records {
		rec := metrics.SessionRecord{Scenario: convName(int32(num)), Arm: r.opts.Label, Repetition: 1, Requests: int(c.requests), Complete: !c.lastFailed}
		if c.lastFailed {
			rec.Error = "its last request failed"
		}
		out = append(out, rec)
	}
	return out
}

// close closes the samples file and the requests file and writes the manifest a last time:
// complete as given, the end time, one session record per conversation (complete unless its
// last request failed).
func (r *recorder) close(complete bool) error {
	var errs []error
	if err := r.sink.Close(); err != nil {
		errs = append(errs, err)
		complete = false
	}
	if r.requests != nil {
		if err := r.requests.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", r.reqPath, err))
		}
	}
	r.man.EndedAt = r.opts.Now().UTC()
	if r.man.Host != nil {
		r.man.Host.LoadEnd = metrics.CurrentLoad()
	}
	r.man.Complete = complete
	r.man.Samples = r.samples()
	r.man.Sessions = r.sessions()
	r.man.Scenarios = r.man.Scenarios[:0]
	for num := range r.groups.records {
		r.man.Scenarios = append(r.man.Scenarios, convName(int32(num)))
	}
	if err := r.writeManifest(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeManifest writes the manifest (atomically, synced: metrics.WriteManifest).
func (r *recorder) writeManifest() error {
	err := metrics.WriteManifest(r.manPath, r.man)
	if fi, serr := os.Stat(r.manPath); serr == nil {
		r.mu.Lock()
		r.manifestBytes += fi.Size()
		r.mu.Unlock()
	}
	return err
}
