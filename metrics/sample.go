package metrics

import (
	"slices"
	"strings"
	"time"
)

// Sample is one row of a run's Parquet part, results/run_id=<run-id>/part-<i>-of-<n>.parquet: one request a harness sent.
//
// Token counts are in tokens of the served model's tokenizer; durations are int64 nanoseconds.
//
// A figure the lab did not measure is null, in Parquet and in the journal's JSON, never 0 and
// never a guess. A figure that can truly be 0 is a pointer (nil: unknown). A figure that is never
// 0 when measured (a prompt has at least one token; a measured time is never 0 ns) stays a plain
// value whose column is optional: 0 is written as null and read back as 0, which means unknown.
// Each field's comment says which. Files written before a column became nullable read as before,
// except for the figures the old schema itself called meaningless ([Sample.Upgrade]).
//
// The parquet tags give the column names, which are a contract: new columns may be added,
// existing ones are never renamed.
type Sample struct {
	// RunID identifies the run, the <run-id> of results/run_id=<run-id>/ (also its Hive partition key).
	RunID string `parquet:"run_id,dict" json:"run_id"`
	// Scenario is the scenario's name, for example "midnight".
	Scenario string `parquet:"scenario,dict" json:"scenario"`
	// Arm is the name of the set of measures this request was sent under; [SpecArm] is every
	// measure as the spec specifies.
	Arm string `parquet:"arm,dict" json:"arm"`
	// Repetition is the 1-based repetition of the scenario×arm pair within the run.
	Repetition int32 `parquet:"repetition" json:"repetition"`
	// Backend is the wire protocol's name, for example "ollama" or "sim".
	Backend string `parquet:"backend,dict" json:"backend"`
	// Model is the served model's name as the backend knows it.
	Model string `parquet:"model,dict" json:"model"`
	// ServerVersion is the model server's version as it reported it; "" when unknown.
	ServerVersion string `parquet:"server_version,dict" json:"server_version"`
	// RequestIndex is the 0-based index of the request within one scenario×arm×repetition.
	RequestIndex int32 `parquet:"request_index" json:"request_index"`
	// Turn is the 1-based user turn the request belongs to.
	Turn int32 `parquet:"turn" json:"turn"`
	// Step is the 1-based step (model call) within the turn.
	Step int32 `parquet:"step" json:"step"`
	// Kind is what the request was for: [KindStep], [KindCompaction], [KindWrapUp] or [KindProbe].
	Kind string `parquet:"kind,dict" json:"kind"`
	// StartedAt is the wall-clock time the request was sent, stored as a UTC timestamp with
	// nanosecond precision (Parquet TIMESTAMP(NANOS, isAdjustedToUTC=true)). Readers return it in UTC.
	StartedAt time.Time `parquet:"started_at,timestamp(nanosecond:utc)" json:"started_at"`

	// PromptTokens is the number of tokens of the whole prompt the server processed or reused,
	// cached part included, as the server counted it (Ollama prompt_eval_count, OpenAI
	// usage.prompt_tokens, Anthropic input + cache read + cache write). Never 0 when measured:
	// 0 (null in the file) means the server gave no count (a failed request, a stream cut before
	// its usage).
	PromptTokens int64 `parquet:"prompt_tokens,optional" json:"prompt_tokens,omitempty"`
	// CachedTokens is the number of prompt tokens the server says it reused from its cache;
	// nil when unknown (never 0 for unknown). CachedSource says where the figure came from.
	CachedTokens *int64 `parquet:"cached_tokens,optional" json:"cached_tokens"`
	// CachedSource names where CachedTokens came from, for example [CachedSourceResponse] or
	// [CachedSourceServerLog]; "" (null in the file) when CachedTokens is nil.
	CachedSource string `parquet:"cached_source,optional,dict" json:"cached_source"`
	// CacheWriteTokens is the number of prompt tokens the server says it wrote to its cache (APIs
	// that bill cache writes report it); nil when unknown.
	CacheWriteTokens *int64 `parquet:"cache_write_tokens,optional" json:"cache_write_tokens"`
	// ExpectedCachedTokens is the number of prompt tokens a perfect prefix cache could have
	// reused: the longest common token prefix of this prompt and what the server's cache held
	// after the previous request, computed by the lab from the server's own rendering and the
	// served model's tokenizer. 0 is a real value (a cold cache); nil when it cannot be computed
	// (a cloud API shows no rendering, or no tokenizer was given; ExpectedUnknown is then true),
	// and nil on the first request of a warm session (lab run --warm) whose start the lab cannot
	// know: what the server's cache held then is unknown (sessions at once on a server's slots, a
	// resumed run, the first session on a server the lab did not make, the session after a
	// failed one). Such a row's Warnings start with "cache state unknown: " and the reason; its
	// ExpectedUnknown is false (the rendering is known: its re-read split is kept).
	ExpectedCachedTokens *int64 `parquet:"expected_cached_tokens,optional" json:"expected_cached_tokens"`
	// DivergenceToken is the 0-based index of the first prompt token that differs from what the
	// server's cache held; nil when the whole cache matched (the prompt only extended it).
	DivergenceToken *int64 `parquet:"divergence_token,optional" json:"divergence_token"`
	// DivergenceSegment names the part of the prompt DivergenceToken falls in: "system",
	// "tools", "message N", "reasoning N", "tool result N", "system N", "developer N", "item N"
	// (a piece of a captured request the lab does not read as text), "note" (N a 0-based
	// message index) or "generation prompt" (what the template writes after the last message);
	// "" when the whole cache matched.
	DivergenceSegment string `parquet:"divergence_segment,dict" json:"divergence_segment"`
	// RereadTokens is the number of prompt tokens the server processed again: PromptTokens −
	// CachedTokens, both as the server counted them. 0 is a real value; nil when CachedTokens or
	// PromptTokens is unknown (never estimated from ExpectedCachedTokens).
	RereadTokens *int64 `parquet:"reread_tokens,optional" json:"reread_tokens"`
	// RereadReasoningTokens is the part of RereadTokens that lies in reasoning text sent back
	// (see the re-read split below).
	RereadReasoningTokens *int64 `parquet:"reread_reasoning_tokens,optional" json:"reread_reasoning_tokens"`
	// ReasoningTokensSent is the number of prompt tokens that are earlier reasoning sent back,
	// counted with the served model's tokenizer (cachesim.Attribution). 0 is a real value; nil
	// when the rendering is unknown (ExpectedUnknown).
	ReasoningTokensSent *int64 `parquet:"reasoning_tokens_sent,optional" json:"reasoning_tokens_sent"`
	// CompletionTokens is the number of tokens the model generated, reasoning included, as the
	// server counted them (Ollama eval_count, OpenAI usage.completion_tokens, Anthropic
	// output_tokens). 0 is a real value; nil when the server gave no count.
	CompletionTokens *int64 `parquet:"completion_tokens,optional" json:"completion_tokens"`
	// ReasoningTokensGenerated is the part of CompletionTokens that is reasoning: the server's
	// count (OpenAI completion_tokens_details.reasoning_tokens), else the reasoning a live reply
	// carried counted with the served model's tokenizer. 0 is a real value; nil when neither is
	// known (a scripted request, a server that does not say).
	ReasoningTokensGenerated *int64 `parquet:"reasoning_tokens_generated,optional" json:"reasoning_tokens_generated"`

	// TTFTNs is the time from sending the request to the first streamed token, in nanoseconds,
	// measured by the client (the harness or the proxy). Never 0 when measured: 0 (null) means
	// not measured (the request failed before an answer came, or the answer was not streamed:
	// one JSON document, whose first byte comes after the whole generation, has none).
	TTFTNs int64 `parquet:"ttft_ns,optional" json:"ttft_ns,omitempty"`
	// PrefillNs is the time the server spent processing the prompt tokens it did not reuse, in
	// nanoseconds, as the server reports it (Ollama prompt_eval_duration, llama-server
	// timings.prompt_ms; the sim backend's model). Never 0 when measured (a server evaluates at
	// least the last prompt token): 0 (null) means the server does not say (cloud APIs).
	PrefillNs int64 `parquet:"prefill_ns,optional" json:"prefill_ns,omitempty"`
	// TotalNs is the time from sending the request to the end of the response, in nanoseconds,
	// measured by the client. Never 0 when measured: 0 (null) means not measured.
	TotalNs int64 `parquet:"total_ns,optional" json:"total_ns,omitempty"`
	// LoadNs is the time the server spent loading the model for this request, in nanoseconds, as
	// the server reports it (Ollama load_duration); a large value means the model (and its
	// cache) was reloaded. 0 is a real value; nil when the server does not say (every server
	// but Ollama).
	LoadNs *int64 `parquet:"load_ns,optional" json:"load_ns"`
	// RequestBytes is the size of the request body sent, in bytes.
	RequestBytes int64 `parquet:"request_bytes" json:"request_bytes"`
	// CostUSD is the request's price in US dollars; nil when unknown or not applicable (local
	// servers).
	CostUSD *float64 `parquet:"cost_usd,optional" json:"cost_usd"`
	// Error is the error the request ended with; "" when it succeeded, written as null (an
	// error message is never empty), so count(error) counts the failed requests.
	Error string `parquet:"error,optional" json:"error,omitempty"`

	// The re-read split: the tokens the server re-read, positions [CachedTokens, PromptTokens)
	// of the prompt as the server rendered it, by the kind of segment each token lies in
	// (cachesim.Attribution.Split). The eight columns (RereadReasoningTokens above and
	// RereadUnattributedTokens at the end included) add up to RereadTokens exactly. Each is 0 or
	// more, and nil when RereadTokens is nil or the rendering is unknown (ExpectedUnknown).
	//
	// RereadSystemTokens lies in system messages (the first one, "system", and any later one or
	// developer message, "system N", "developer N").
	RereadSystemTokens *int64 `parquet:"reread_system_tokens,optional" json:"reread_system_tokens"`
	// RereadToolsTokens lies in the tool list.
	RereadToolsTokens *int64 `parquet:"reread_tools_tokens,optional" json:"reread_tools_tokens"`
	// RereadMessageTokens lies in user and assistant messages (text and tool calls), text pasted
	// into them included.
	RereadMessageTokens *int64 `parquet:"reread_message_tokens,optional" json:"reread_message_tokens"`
	// RereadToolResultTokens lies in tool results (role tool).
	RereadToolResultTokens *int64 `parquet:"reread_tool_result_tokens,optional" json:"reread_tool_result_tokens"`
	// RereadNoteTokens lies in session notes (a <session-note> block ending a user message).
	RereadNoteTokens *int64 `parquet:"reread_note_tokens,optional" json:"reread_note_tokens"`
	// RereadOtherTokens lies in the generation prompt after the last message.
	RereadOtherTokens *int64 `parquet:"reread_other_tokens,optional" json:"reread_other_tokens"`

	// ContextOverflow is true when the prompt, or the prompt and the reply the server's cache held
	// after it, took more tokens than the context window the run pinned (Ollama num_ctx): the
	// server then truncates the prompt (Ollama keeps its first num_keep = 4 tokens) or shifts
	// its context during generation, and the next request finds almost none of its KV cache.
	ContextOverflow bool `parquet:"context_overflow" json:"context_overflow"`
	// Warnings are the problems with this request's figures that did not invalidate it (a
	// tokenizer that counts differently from the server, a context overflow, a server log line
	// that could not be matched), joined with "; "; "" when none.
	Warnings string `parquet:"warnings" json:"warnings"`
	// CacheWrite5mTokens and CacheWrite1hTokens split CacheWriteTokens by the cache entry's
	// lifetime where the provider says (Anthropic cache_creation.ephemeral_5m_input_tokens and
	// ephemeral_1h_input_tokens); nil when unknown.
	CacheWrite5mTokens *int64 `parquet:"cache_write_5m_tokens,optional" json:"cache_write_5m_tokens"`
	CacheWrite1hTokens *int64 `parquet:"cache_write_1h_tokens,optional" json:"cache_write_1h_tokens"`
	// UsageFields names the wire field each usage figure came from, as a JSON object keyed by
	// the field of chat.Usage, for example {"CachedRead":"usage.prompt_tokens_details.cached_tokens"};
	// "" when the backend reported none.
	UsageFields string `parquet:"usage_fields" json:"usage_fields"`
	// Retries is the number of times the request was sent again after a retryable failure (a
	// connection refused or reset, a timeout, HTTP 408, 429 or 5xx, a stream cut short); 0 when
	// the first attempt answered. The errors of the failed attempts are in Warnings.
	Retries int32 `parquet:"retries" json:"retries"`
	// RetryWaitNs is the time the harness waited between attempts (its backoff, or the server's
	// Retry-After), in nanoseconds; 0 without retries.
	RetryWaitNs int64 `parquet:"retry_wait_ns" json:"retry_wait_ns"`
	// Driver says who decided the assistant's steps: [DriverScripted] (the scenario),
	// [DriverLive] (the model) or [DriverScriptedModel] (an outside agent's requests answered by
	// the scripted model); "" for a capture of a real model's answers.
	Driver string `parquet:"driver,dict" json:"driver"`
	// EndReason is why the turn ended, on the turn's last request of a live session (one of the
	// End* constants, such as [EndAnswered] or [EndMaxSteps]); "" on every other request and in
	// scripted sessions, whose turns end where the scenario says.
	EndReason string `parquet:"end_reason,dict" json:"end_reason"`
	// RepeatedCall is true when the reply to this request made a tool call the session had
	// already made: the same tool with the same arguments (compared as canonical JSON: keys
	// sorted, no spaces), earlier in the session or earlier in the same reply.
	RepeatedCall bool `parquet:"repeated_call" json:"repeated_call"`
	// ExpectedUnknown is true when the lab could not compute what a perfect prefix cache could
	// have reused, because the backend shows neither the prompt as the server rendered it nor its
	// tokens (cloud APIs): ExpectedCachedTokens, the divergence token, ReasoningTokensSent and the
	// reread_*_tokens split are then nil. New rows write it equal to ExpectedCachedTokens == nil
	// but for a warm session's first request whose cache state is unknown (see
	// ExpectedCachedTokens); it stays for readers of older files, where those columns were 0 on
	// such rows. False in runs made before the column existed, whose backends (Ollama, sim)
	// always computed it.
	ExpectedUnknown bool `parquet:"expected_unknown" json:"expected_unknown"`
	// RereadUnattributedTokens is the part of the re-read split no segment holds: tokens the
	// server counted beyond the lab tokenizer's count of the rendered prompt (a tokenizer that
	// counts differently; see Warnings). 0 when the two agree; nil with the rest of the split.
	RereadUnattributedTokens *int64 `parquet:"reread_unattributed_tokens,optional" json:"reread_unattributed_tokens"`
	// ChunkReusedTokens is the part of ExpectedCachedTokens that llama-server's chunk reuse
	// (--cache-reuse N: chunks of at least N tokens after the common prefix, shifted into place
	// in the KV cache) supplies: the re-read tokens it saves, as the lab models it
	// (cachesim.ChunkReuse). 0 where the server's chunk reuse is off; nil where it is not
	// modelled (a server without it, a setting the lab could not learn, the sim) or the
	// rendering is unknown; a null is left out of the row's JSON (the journal), which reads back
	// as nil.
	ChunkReusedTokens *int64 `parquet:"chunk_reused_tokens,optional" json:"chunk_reused_tokens,omitempty"`
	// SideRequest is true on a request `lab proxy` took for a client's side request: one the
	// agent sends beside its session's own (a title, a summary, memory extraction, a
	// sub-agent), recorded as a conversation of its own. Warnings say how the lab knew (the
	// header that named a parent session, or a system prompt of its own beside the session's).
	// False on every row of the lab's own harness, and left out of the row's JSON then.
	SideRequest bool `parquet:"side_request" json:"side_request,omitempty"`
	// DivergenceExcerpt shows the first differing byte of the prompt against what the KV cache
	// held (the previous prompt and the reply the model generated), as a JSON object
	// {"before": the bytes both share just before it, "cached": what the cache held from there,
	// "prompt": what the prompt has} of at most 40 and 60 bytes each, and "before_cut",
	// "cached_cut", "prompt_cut" true where that text was cut (cachesim.Excerpt);
	// "" when no divergence token is known or the cache's text is not (after a context shift).
	DivergenceExcerpt string `parquet:"divergence_excerpt,optional" json:"divergence_excerpt,omitempty"`
	// ScenarioEvent names what the scenario changed since the session's previous request, on
	// the first request after it: "midnight" when its clock crossed into another day (the
	// date read in the zone the scenario started in), "mode NAME" when it switched the
	// permission mode to NAME; both joined by ", " in the order they happened. "" (null in the
	// file, left out of the row's JSON) when nothing changed, on a session's first request
	// (steps before it are where the session starts: there was no request to change) and on
	// every row of `lab proxy`, which sees no scenario. Charts mark these requests (plots).
	ScenarioEvent string `parquet:"scenario_event,optional,dict" json:"scenario_event,omitempty"`
}

// Upgrade makes a row read from a file written before its columns were nullable say unknown
// where the old schema wrote a stand-in value: on an ExpectedUnknown row the expected cached
// tokens, reasoning tokens sent and the re-read split (then 0 and meaningless) become nil; on a
// row without cached tokens, reread_tokens (then prompt − expected, an estimate) and its split
// become nil; on a row with an error and no prompt count, the completion count becomes nil; a
// load time of 0 on a row of a backend other than Ollama (which alone reports one) becomes nil. A
// row written by this version is left as it is, so calling it twice changes nothing. Readers of
// results files ([ReadParquet], [ReadJournal]) call it on every row.
func (s *Sample) Upgrade() {
	if s.ExpectedUnknown {
		s.ExpectedCachedTokens, s.ReasoningTokensSent = nil, nil
		s.clearSplit()
	}
	if s.CachedTokens == nil || s.PromptTokens <= 0 {
		s.RereadTokens = nil
		s.clearSplit()
	}
	if s.Error != "" && s.PromptTokens <= 0 && s.CompletionTokens != nil && *s.CompletionTokens == 0 {
		s.CompletionTokens = nil
	}
	if s.LoadNs != nil && *s.LoadNs == 0 && s.Backend != "ollama" && !strings.HasPrefix(s.Backend, "proxy:ollama-") {
		s.LoadNs = nil // only Ollama reports a load time
	}
}

// clearSplit sets every reread_*_tokens column of the split to nil.
func (s *Sample) clearSplit() {
	for _, p := range s.RereadSplit() {
		*p = nil
	}
}

// RereadSplit returns pointers to the fields of the re-read split, in the order of
// [RereadSplitNames]: system, tools, message, tool result, reasoning, note, other, unattributed.
func (s *Sample) RereadSplit() []**int64 {
	return []**int64{&s.RereadSystemTokens, &s.RereadToolsTokens, &s.RereadMessageTokens, &s.RereadToolResultTokens,
		&s.RereadReasoningTokens, &s.RereadNoteTokens, &s.RereadOtherTokens, &s.RereadUnattributedTokens}
}

// RereadSplitNames names the kinds of [Sample.RereadSplit], in its order, as the columns name
// them without "reread_" and "_tokens".
var RereadSplitNames = []string{"system", "tools", "message", "tool_result", "reasoning", "note", "other", "unattributed"}

// Int64 returns *p, and whether p is not nil (the figure is known): a reader's way to sum a
// nullable column while counting its unknown rows.
func Int64(p *int64) (int64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// The values of [Sample].Driver.
const (
	// DriverScripted: the scenario gives every assistant step.
	DriverScripted = "scripted"
	// DriverLive: the model decides; the scenario gives the user turns and the workspace.
	DriverLive = "live"
	// DriverScriptedModel: an outside agent decided its requests, answered by the lab's scripted
	// model (lab/scriptmodel) from a script, through lab proxy.
	DriverScriptedModel = "scripted-model"
)

// The values of [Sample].EndReason: why a live turn ended.
const (
	// EndAnswered: the model answered without tool calls after making at least one in the turn.
	EndAnswered = "answered"
	// EndNoCall: the model answered without making any tool call in the turn.
	EndNoCall = "no_call"
	// EndMaxTokens: the reply reached the per-request token limit without a tool call (cut off).
	EndMaxTokens = "max_tokens"
	// EndMaxSteps: the turn reached its step limit; the last step's calls were run.
	EndMaxSteps = "max_steps"
	// EndTimeout: the turn's wall-time limit ran out during a request.
	EndTimeout = "timeout"
	// EndError: the request failed; the error column says why.
	EndError = "error"
)

// WarningContextOverflow starts the warning of a request marked [Sample].ContextOverflow.
const WarningContextOverflow = "context overflow"

// Failed reports whether the request failed: it ended with an error, other than a live turn's
// time limit ([EndTimeout]), which ends the turn normally though the request was cut.
func (s *Sample) Failed() bool { return s.Error != "" && s.EndReason != EndTimeout }

// The values of [Sample].Kind.
const (
	// KindStep is a request for one step of the agent's turn.
	KindStep = "step"
	// KindCompaction is a request that summarises the conversation to compact it.
	KindCompaction = "compaction"
	// KindWrapUp is the request that ends a session.
	KindWrapUp = "wrap_up"
	// KindProbe is a measuring request outside the conversation (for example one that only
	// checks what the server's cache holds).
	KindProbe = "probe"
)

// Sources of [Sample].CachedTokens, the values of [Sample].CachedSource.
const (
	// CachedSourceResponse: a usage field of the server's response.
	CachedSourceResponse = "response"
	// CachedSourceServerLog: the server's log (Ollama's "loading cache slot ... used=U").
	CachedSourceServerLog = "server_log"
	// CachedSourceTiming: estimated from the prefill time.
	CachedSourceTiming = "timing"
	// CachedSourceSimulation: computed by a cache model (the sim backend).
	CachedSourceSimulation = "simulation"
)

// SpecArm is the name of the arm that applies every measure as the spec specifies. Reports
// compare the other arms to it and list it first.
const SpecArm = "spec"

// SortArms sorts arm names in the lab's display order, in place: [SpecArm] first, then the
// others in lexical order. Duplicates are kept.
func SortArms(arms []string) { slices.SortFunc(arms, CompareArms) }

// CompareArms orders two arm names as [SortArms] does: negative when a comes first, 0 when they
// are equal, positive when b does.
func CompareArms(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == SpecArm:
		return -1
	case b == SpecArm:
		return 1
	case a < b:
		return -1
	default:
		return 1
	}
}
