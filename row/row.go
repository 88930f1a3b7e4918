// Package row is the one author of a row (metrics.Sample): `lab run`'s harness and `lab proxy`'s
// capture both fill their rows with it, so that a request measured either way gets the same
// columns, written by the same rules.
//
// It owns: a row's identity and the null defaults it starts from ([New], [Place]); filling the
// row from what the server reported about a request ([SetResult], chat.Result) and from the
// attribution of its cache use ([SetAttribution], cachesim.Attribution); the re-read rule
// ([SetReread]: reread_tokens = prompt_tokens − cached_tokens as the server counted them, never
// an estimate); the null rules for figures a server fills with a constant or an estimate
// ([DropConstantCached], [DropOllamaEstimate]) and for cached tokens read from a server log
// ([SetServerLogCached]); the client's clock ([SetTimes]); the warnings column's format
// ([SetWarnings]); and the saved-request line of --save-requests ([RequestLine]).
//
// What a caller still writes itself is its own text: the error message of a failed request
// (metrics.Sample.Error), the driver columns of the harness, and the proxy's redaction of
// secrets from the error and warnings. Adding a column touches metrics.Sample (the schema) and
// this package.
package row

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"lab/cachesim"
	"lab/chat"
	"lab/metrics"
)

// Identity is where a request's row sits in a run: the run, scenario (for `lab proxy`: the
// conversation), arm, 1-based repetition, the backend's and model's names and the server's
// version ("" when unknown), the 0-based request index, 1-based turn and step, the request's
// kind (metrics.KindStep, ...) and the wall-clock time it was sent.
type Identity struct {
	RunID, Scenario, Arm          string
	Repetition                    int
	Backend, Model, ServerVersion string
	RequestIndex, Turn, Step      int32
	Kind                          string
	StartedAt                     time.Time
}

// New returns the row of one request with its identity and every figure null: in particular
// expected_unknown is true until [SetAttribution] computes the expected cached tokens (a failed
// request never gets them). StartedAt is stored in UTC.
func New(id Identity) *metrics.Sample {
	return &metrics.Sample{
		RunID: id.RunID, Scenario: id.Scenario, Arm: id.Arm, Repetition: int32(id.Repetition),
		Backend: id.Backend, Model: id.Model, ServerVersion: id.ServerVersion,
		RequestIndex: id.RequestIndex, Turn: id.Turn, Step: id.Step, Kind: id.Kind,
		StartedAt:       id.StartedAt.UTC(),
		ExpectedUnknown: true,
	}
}

// Place sets the row's place in its session once it is known after the request was measured
// (`lab proxy` groups a request into a conversation by its content): the scenario (the
// conversation's name), the 0-based request index and the 1-based turn and step.
func Place(s *metrics.Sample, scenario string, index, turn, step int32) {
	s.Scenario, s.RequestIndex, s.Turn, s.Step = scenario, index, turn, step
}

// MarkSideRequest marks the row as a client's side request (metrics.Sample.SideRequest) and
// appends why the lab took it for one to its warnings, "side request: " + why.
func MarkSideRequest(s *metrics.Sample, why string) {
	s.SideRequest = true
	w := "side request: " + why
	if s.Warnings != "" {
		w = s.Warnings + "; " + w
	}
	s.Warnings = w
}

// SetTimes records what the client measured itself: the time to the first token (0, null in
// the file, when unknown: an unstreamed answer, a request that failed before it), the total
// time of the request (0 when it failed before an answer came) and the request body's size in
// bytes.
func SetTimes(s *metrics.Sample, ttft, total time.Duration, requestBytes int64) {
	s.TTFTNs, s.TotalNs, s.RequestBytes = int64(ttft), int64(total), requestBytes
}

// SetWarnings writes the row's warnings column: the warnings in order, joined by "; " ("" for
// none).
func SetWarnings(s *metrics.Sample, warnings []string) {
	s.Warnings = strings.Join(warnings, "; ")
}

// SetResult copies what the server reported about a request into its row: prompt, cached
// (with its source), completion tokens, the server's prefill and load times, and the provider's
// normalised usage (cache writes with their 5-minute and 1-hour split, reasoning tokens
// generated, usage_fields: each figure's wire field as sorted JSON, so the same usage gives the
// same text), cost_usd (res.CostUSD, else price(usage) when price is set and knows the model),
// and reread_tokens ([SetReread]). A figure the server did not give stays null: completion
// tokens come from res.Usage.Generated when the backend has a Usage, else from the answer's
// final message (known when it gave a prompt count); the load time only where the server
// reports one (res.LoadReported). The times the client measures itself (time to first token,
// total, request bytes) are set by [SetTimes].
func SetResult(s *metrics.Sample, res *chat.Result, price func(*chat.Usage) (float64, bool)) {
	s.PromptTokens = res.PromptTokens
	s.CachedTokens = res.CachedTokens
	s.CachedSource = string(res.CachedSource)
	if s.CachedTokens == nil {
		s.CachedSource = ""
	}
	s.CompletionTokens = nil
	switch {
	case res.Usage != nil:
		s.CompletionTokens = clone(res.Usage.Generated)
	case res.PromptTokens > 0:
		s.CompletionTokens = new(res.CompletionTokens)
	}
	s.PrefillNs = int64(res.Prefill)
	s.LoadNs = nil
	if res.LoadReported {
		s.LoadNs = new(int64(res.Load))
	}
	s.CostUSD = res.CostUSD
	SetReread(s)
	u := res.Usage
	if u == nil {
		return
	}
	s.CacheWriteTokens, s.CacheWrite5mTokens, s.CacheWrite1hTokens = u.CacheWrite, u.CacheWrite5m, u.CacheWrite1h
	s.ReasoningTokensGenerated = clone(u.ReasoningGenerated)
	if len(u.Fields) > 0 {
		b, _ := json.Marshal(u.Fields) // map keys sorted
		s.UsageFields = string(b)
	}
	if s.CostUSD == nil && price != nil {
		if usd, ok := price(u); ok {
			s.CostUSD = &usd
		}
	}
}

// DropConstantCached removes from res a cached count that the server fills with a constant, so
// it is not a measurement (Ollama's OpenAI- and Anthropic-compatible endpoints answer 0 cached
// tokens whatever the KV cache reused): CachedTokens and Usage.CachedRead become nil, and the
// uncached count derived from it goes too (Usage.Fields loses both). why says what the constant
// is; the returned warning names it, ok is false when res carried no cached count.
func DropConstantCached(res *chat.Result, why string) (warning string, ok bool) {
	if res == nil || (res.CachedTokens == nil && (res.Usage == nil || res.Usage.CachedRead == nil)) {
		return "", false
	}
	res.CachedTokens, res.CachedSource = nil, ""
	if u := res.Usage; u != nil && u.CachedRead != nil {
		drop := []chat.UsageField{chat.UsageCachedRead}
		if wire := u.Fields[chat.UsageCachedRead]; u.Uncached != nil && wire != "" && strings.Contains(u.Fields[chat.UsageUncached], wire) {
			drop = append(drop, chat.UsageUncached)
		}
		res.Usage = u.Without(drop...)
	}
	return why + ": that figure is not used (cached tokens come from the server log, else are unknown)", true
}

// clone returns a copy of *p, or nil.
func clone(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return new(*p)
}

// SetReread sets the row's reread_tokens from its prompt and cached tokens, as the server counted
// them: prompt_tokens − cached_tokens, or nil when either is unknown (cached_tokens nil, no
// prompt count); never an estimate from the expected cached tokens. Call it again after changing
// the cached tokens; [SetAttribution] splits the figure by segment.
func SetReread(s *metrics.Sample) {
	s.RereadTokens = nil
	if s.CachedTokens != nil && s.PromptTokens > 0 {
		s.RereadTokens = new(s.PromptTokens - *s.CachedTokens)
	}
}

// SetAttribution copies an attribution of the request's cache use ([cachesim.Attributor]) into
// its row: expected cached tokens, the first divergence, its segment and excerpt, reasoning tokens sent,
// the tokens chunk reuse supplies (chunk_reused_tokens, null where it is not modelled), the
// context overflow mark, and the split of the measured re-read tokens by segment kind (the
// range [cached_tokens, prompt_tokens) by token position, less the reused chunks,
// [cachesim.Attribution.Split]), which
// adds up to reread_tokens exactly; the split is null when reread_tokens is (or is negative).
// Call it after [SetResult] and any later change of the cached tokens. An unknown attribution
// marks the row expected_unknown and leaves those figures null. It returns the attribution's
// warnings.
func SetAttribution(s *metrics.Sample, a cachesim.Attribution) []string {
	s.ExpectedCachedTokens, s.ReasoningTokensSent, s.ChunkReusedTokens = nil, nil, nil
	s.DivergenceToken, s.DivergenceSegment, s.DivergenceExcerpt = nil, "", ""
	for _, p := range s.RereadSplit() {
		*p = nil
	}
	if a.Unknown {
		s.ExpectedUnknown = true
		return nil
	}
	s.ExpectedUnknown = false
	s.ExpectedCachedTokens = new(a.ExpectedCachedTokens)
	s.DivergenceToken, s.DivergenceSegment = a.DivergenceToken, a.DivergenceSegment.String()
	if a.Excerpt != nil {
		b, err := json.Marshal(a.Excerpt)
		if err == nil { // a struct of three strings always marshals
			s.DivergenceExcerpt = string(b)
		}
	}
	s.ReasoningTokensSent = new(a.ReasoningTokensSent)
	s.ChunkReusedTokens = clone(a.ChunkReusedTokens)
	s.ContextOverflow = a.ContextOverflow
	if s.RereadTokens == nil || *s.RereadTokens < 0 {
		return a.Warnings
	}
	r := a.Split(*s.CachedTokens, s.PromptTokens)
	s.RereadSystemTokens, s.RereadToolsTokens = new(r.System), new(r.Tools)
	s.RereadMessageTokens, s.RereadToolResultTokens = new(r.Message), new(r.ToolResult)
	s.RereadReasoningTokens, s.RereadNoteTokens = new(r.Reasoning), new(r.Note)
	s.RereadOtherTokens, s.RereadUnattributedTokens = new(r.Other), new(r.Unattributed)
	return a.Warnings
}

// SetServerLogCached records the cached tokens a server's debug log gave for the request (the
// used= of Ollama's `loading cache slot` line, cached_source server_log) when the answer gave
// none: a count the answer reported itself (prompt_eval_cached_count, newer Ollama servers) is
// kept. It sets reread_tokens again ([SetReread]); call it before [SetAttribution].
func SetServerLogCached(s *metrics.Sample, used int64) {
	if s.CachedTokens == nil {
		s.CachedTokens, s.CachedSource = new(used), string(chat.SourceServerLog)
	}
	SetReread(s)
}

// SetPartsDivergence records where a request first differed from its conversation's previous
// request when no rendering of the prompt is known (a cloud API): the segment named by comparing
// the two requests part by part ([cachesim.FirstDifference]; no segment, written "", when none
// differed). The divergence token stays null, as do the expected cached tokens.
func SetPartsDivergence(s *metrics.Sample, segment cachesim.Segment) {
	s.DivergenceSegment = segment.String()
}

// DropOllamaEstimate removes from the result of Ollama's /v1/messages a prompt count that
// message_start gave and no message_delta replaced (a stream cut before its end): Ollama writes
// there its estimate of the prompt (the request's length / 4, anthropic.EstimateInputTokens in
// v0.17.4), not a count, which comes only with message_delta. The prompt count and the uncached
// count become unknown (nil, and gone from Usage.Fields). It returns the warning; ok is false
// when the prompt count came from elsewhere (the usage's Uncached field is not message_start's).
func DropOllamaEstimate(res *chat.Result) (warning string, ok bool) {
	u := res.Usage
	if u == nil || !strings.HasPrefix(u.Fields[chat.UsageUncached], "message_start.") {
		return "", false
	}
	res.Usage, res.PromptTokens = u.Without(chat.UsageUncached, chat.UsagePrompt), 0
	return "the upstream is Ollama, whose message_start input_tokens is an estimate from the request's length, and no message_delta gave the count: prompt tokens unknown", true
}

// RequestLine is one line of a requests file (`lab run --save-requests`: requests.jsonl or a
// part's requests-<i>-of-<n>.jsonl; `lab proxy --save-requests`): the request's scenario (the
// proxy's conversation), arm, 1-based repetition and 0-based request index, as in its row, the
// API it spoke ("openai-chat", "ollama-chat", ... as lab proxy classifies it, `lab run` its
// backend's; omitted when "" or unknown), the request body as sent, and the reply the request
// was answered with (the scripted reply of `lab run`, the reply the proxy read from the
// answer; omitted when unknown), which `lab scenario import --from capture` and the
// capture-as-sent arm read back.
type RequestLine struct {
	Scenario     string          `json:"scenario"`
	Arm          string          `json:"arm"`
	Repetition   int             `json:"repetition"`
	RequestIndex int32           `json:"request_index"`
	API          string          `json:"api,omitempty"`
	Body         json.RawMessage `json:"body"`
	Reply        *SavedReply     `json:"reply,omitempty"`
}

// SavedReply is a [RequestLine]'s reply: reasoning, visible text and tool calls (id, name,
// arguments as a JSON object).
type SavedReply struct {
	Reasoning string      `json:"reasoning,omitempty"`
	Content   string      `json:"content,omitempty"`
	ToolCalls []SavedCall `json:"tool_calls,omitempty"`
}

// SavedCall is one tool call of a [SavedReply].
type SavedCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// SaveReply returns r as a [SavedReply]; nil for nil. Arguments that are not a JSON object's
// valid JSON are saved as a JSON string of their bytes.
func SaveReply(r *chat.Reply) *SavedReply {
	if r == nil {
		return nil
	}
	out := &SavedReply{Reasoning: r.Reasoning, Content: r.Content}
	for _, c := range r.ToolCalls {
		args := c.Arguments
		if !json.Valid(args) {
			args, _ = json.Marshal(string(args))
		}
		out.ToolCalls = append(out.ToolCalls, SavedCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return out
}

// Marshal returns the line as one line of JSON, in the fields' order, ending in a newline; the
// body is compacted, with <, > and & escaped (\u003c, ...) as encoding/json does. A body that
// is not valid JSON is saved as a JSON string of its bytes.
func (l RequestLine) Marshal() ([]byte, error) {
	if !json.Valid(l.Body) {
		b, err := json.Marshal(string(l.Body))
		if err != nil {
			return nil, err
		}
		l.Body = b
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// PromptCutWarning is the warning of a row whose prompt the server cut to its context window
// (num_ctx), from what its log said: keptMessages is the number of chat messages the server kept
// when it dropped earlier ones (0: it dropped none); limit, prompt and kept the runner's window,
// the prompt's length and what it kept of it, in tokens (limit 0: the runner cut nothing). The
// row's figures are those of the cut prompt, which the client never sent whole. "" when nothing
// was cut.
func PromptCutWarning(keptMessages, limit, prompt, kept int) string {
	var parts []string
	if keptMessages > 0 {
		parts = append(parts, fmt.Sprintf("the server dropped the messages before the last %d (keeping the system messages) to fit its context window", keptMessages))
	}
	if limit > 0 {
		parts = append(parts, fmt.Sprintf("the server cut the prompt from %d to %d tokens to fit its context window of %d (num_ctx)", prompt, kept, limit))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", and ") + ": the model saw less than the client sent"
}

// DroppedMessages returns a warning for each message of req whose text the server's rendering
// of the request (rendered, the chat template's output) does not contain: the server's
// chat template dropped it (Ollama's qwen3.5 renderer drops developer messages, which the
// decoders read as system messages) or the server dropped it to fit its window. Only a
// message's own text (chat.Message.Content, trimmed of white space) is looked for; reasoning,
// which templates drop from earlier turns by design, and tool calls, which they re-encode, are
// not. A message is looked for whole, and else line by line: a message the decoder joined from
// several blocks (an Anthropic system prompt, a user message of text blocks) with separators
// the server's conversion does not use (Ollama joins them with nothing) is rendered when at
// least half of its non-blank lines are. Messages without text are skipped. i in a warning is
// the message's 0-based index.
func DroppedMessages(req *chat.Request, rendered string) []string {
	if req == nil || rendered == "" {
		return nil
	}
	var out []string
	for i, m := range req.Messages {
		text := strings.TrimSpace(m.Content)
		if text == "" || strings.Contains(rendered, text) || linesRendered(text, rendered) {
			continue
		}
		out = append(out, fmt.Sprintf("the server's rendering of the request lacks message %d (%s, %d bytes of text): the model never saw it", i, m.Role, len(text)))
	}
	return out
}

// linesRendered reports whether at least half of text's non-blank lines (trimmed), and at least
// two, are in rendered.
func linesRendered(text, rendered string) bool {
	n, found := 0, 0
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n++
		if strings.Contains(rendered, l) {
			found++
		}
	}
	return n >= 2 && 2*found >= n
}
