package harness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/arms"
	"lab/cachesim"
	"lab/chat"
	"lab/hygiene"
	"lab/metrics"
	"lab/prompts"
	"lab/row"
	"lab/scenario"
	"lab/tools"
)

// Backend sends one request to a model server. In scripted mode it also leaves the server's KV
// cache as if the model had answered with reply (the generation emulation; see the backend's
// documentation for its method). Implementations return *chat.APIError for a server's refusal.
type Backend interface {
	Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error)
}

// CacheFiller is a Backend whose generation emulation is a request of its own after the
// measured one (llama-server's raw /completion, Ollama's raw /api/generate). The harness sends
// the two steps apart, each retried on its own ([RetryPolicy]): a failed fill never sends the
// measured request again (that would measure a cache the first attempt warmed), and a fill that
// fails for good leaves the row its measurement, with a warning, and the next request's expected
// cached tokens counted from what the server then holds (the measured prompt without the reply).
type CacheFiller interface {
	Backend
	// Measure is Send without the generation emulation: it sends req, reads the server's
	// figures and returns them; the result's CacheText is "" for a scripted request until
	// FillCache sets it.
	Measure(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error)
	// FillCache leaves the server's cache as the generation of reply after res's prompt would
	// have, and sets res.CacheText to the text the cache then holds; it does nothing (nil) for a
	// request with no emulation (a live one, or reply nil). It is idempotent: the same text sent
	// again leaves the same cache, so the harness may call it again after a failure.
	FillCache(ctx context.Context, req *chat.Request, reply *chat.Reply, res *chat.Result) error
}

// Resetter is a Backend that can empty the server's prompt cache, so that every session starts
// cold.
type Resetter interface {
	Reset(ctx context.Context) error
}

// Tokenizer counts tokens as the served model does. Encode turns text (special tokens written
// as their text, such as <|im_start|>) into token ids.
type Tokenizer interface {
	Encode(text string) ([]int32, error)
}

// SessionConfig is everything one scripted session needs.
type SessionConfig struct {
	// Scenario is the session to replay, Arm the measures it applies.
	Scenario *scenario.Scenario
	Arm      arms.Arm
	// Repetition (1-based) and RunID are recorded in every sample.
	Repetition int
	RunID      string
	// Session is the session's 0-based place in the run's order ([MatrixSession].Number): the
	// cwd practice names the session's folder by it ([SessionDir]).
	Session int
	// Loop is loop.json's context section: the spec's texts and numbers.
	Loop *hygiene.Config
	// Backend sends the requests.
	Backend Backend
	// BackendName, Model and ServerVersion are recorded in every sample.
	BackendName, Model, ServerVersion string
	// Tokenizer is the served model's tokenizer; nil leaves expected_cached_tokens at 0.
	Tokenizer Tokenizer
	// Sink receives one sample per request.
	Sink metrics.Sink
	// SandboxDir is where the workspace is copied (into SandboxDir/<project>); SandboxShown is
	// the path tool answers name it by ("" means SandboxDir: [tools.Sandbox]).
	SandboxDir, SandboxShown string
	// Requests, when set, receives every request body as one JSON line.
	Requests io.Writer
	// OnSample, when set, is called after each sample is written (progress display).
	OnSample func(*metrics.Sample)
	// Warn, when set, receives problems that do not stop the run (a tokenizer that disagrees
	// with the server's count).
	Warn func(error)
	// NumCtx is the server's context window in tokens (Ollama num_ctx, llama-server -c); 0 when
	// unknown or unlimited. A request whose prompt, or prompt and reply, take more tokens is
	// marked [metrics.Sample].ContextOverflow.
	NumCtx int
	// Window is what the server keeps of a sequence longer than NumCtx ([RunConfig].Window).
	Window cachesim.Window
	// CacheReuse is llama-server's --cache-reuse ([RunConfig].CacheReuse).
	CacheReuse *int
	// RenderOrder is the server's order of system prompt and tool list ([RunConfig].RenderOrder).
	RenderOrder cachesim.RenderOrder
	// HostCache is llama-server's host-memory prompt cache ([RunConfig].HostCache).
	HostCache *cachesim.HostCache
	// PromptPrefix, when set, is written first in every system prompt the session sends: a
	// per-run nonce that starts a cloud API's prompt cache cold.
	PromptPrefix string
	// Warm keeps the server's cache as the previous session left it: no Reset.
	Warm bool
	// Cache, when set, is the expected-cache model the session's expected cached tokens start
	// from, which the session leaves as its last request left the server's cache: the sessions
	// of a warm run that follow each other on one server share one, in run order
	// ([RunConfig].Warm), so a session's first request is expected to find what the previous
	// session left. nil starts from an empty cache (the server was reset before the session),
	// in a model of the session's own. Its Tok, NumCtx, NoteOpen, Window, CacheReuse and
	// HostCache are the caller's.
	Cache *cachesim.Attributor
	// CacheUnknown, when not "", says why what the server's cache holds when the session starts
	// is unknown (a warm run's sessions at once, its first session on a server the lab did not
	// start, the session after a failed one): the first request's expected cached tokens,
	// divergence token and segment and chunk-reused tokens are then null (not 0, not a guess)
	// and its warnings say why, starting with [WarningCacheUnknown]. Its re-read split, which
	// follows the server's own cached count, and the requests after it are as always.
	CacheUnknown string
	// Price, when set, gives a request's price in US dollars from its usage (a pricing table);
	// ok false leaves cost_usd null.
	Price func(u *chat.Usage) (usd float64, ok bool)
	// Retry says how often a request that failed with a retryable error is sent again and how
	// long each attempt may take; the zero value is the default policy ([RetryPolicy]).
	Retry RetryPolicy
	// Driver says who decides the assistant's steps: the scenario (the zero value) or the model
	// ([DriverLive], with its bounds; see live.go).
	Driver Driver
	// ConstantCached, when set, says why the server's cached count is a constant and not a
	// measurement (Ollama's /v1/messages answers cache_read_input_tokens 0 whatever it reused):
	// every result's cached tokens are then dropped ([row.DropConstantCached]) and stay null.
	ConstantCached string
	// MaxReplyBytes is the most bytes one answer's reply may hold ([chat.Request].MaxReplyBytes,
	// set on every request the session sends); 0 means [chat.DefaultMaxReplyBytes]. A reply
	// past it is an error row ([chat.ReplyTooLongError]), not retried.
	MaxReplyBytes int64
	// DecodeRequest reads a captured request's body of one API into a request
	// (capture.DecodeKnownRequest: an API it does not decode is an error), for the
	// [CaptureAsSent] arm; nil refuses that arm.
	DecodeRequest func(api string, body []byte) (*chat.Request, error)
	// RequestsAPI is the API the backend's request bodies speak, as lab proxy names it
	// ("ollama-chat", "openai-chat", "anthropic", ...), written in each line of Requests; ""
	// leaves it out.
	RequestsAPI string
}

// RunSession replays one scenario with one arm through the harness and the backend, writing one
// sample per request to cfg.Sink. A backend error is recorded in a sample's error column and
// ends the session with that error; samples already written stay.
func RunSession(ctx context.Context, cfg SessionConfig) error {
	r, err := newRunner(cfg)
	if err != nil {
		return err
	}
	defer r.ws.Remove()
	if b, ok := cfg.Backend.(Resetter); ok && !cfg.Warm {
		if err := retryDo(ctx, cfg.Retry, b.Reset); err != nil {
			return fmt.Errorf("reset the server's cache before %s/%s: %w", cfg.Scenario.Name, cfg.Arm.Name, err)
		}
	}
	if cfg.Arm.Name == CaptureAsSent {
		return r.sendCaptured(ctx)
	}
	return r.drv.run(ctx, r)
}

// newRunner sets up one session of cfg before its first step: the hygiene session, the
// scenario's workspace in its sandbox (the caller removes it: ws.Remove), the tool list and the
// system prompt, built once (§10.1).
func newRunner(cfg SessionConfig) (*runner, error) {
	sc := cfg.Scenario
	hs, err := hygiene.NewSession(cfg.Loop, cfg.Arm.Measures)
	if err != nil {
		return nil, err
	}
	contextBlock, err := prompts.Text("blocks/context.md")
	if err != nil {
		return nil, err
	}
	ws, err := tools.NewSandboxWorkspace(sc.Files, tools.Sandbox{Dir: cfg.SandboxDir, Shown: cfg.SandboxShown}, sc.Project)
	if err != nil {
		return nil, err
	}
	// Only the session's tools, its outside changes and its shell (which ends this) change the
	// sandbox: its reads and searches are answered from what it wrote.
	ws.Remember()
	if cfg.Arm.Find("cwd") != nil {
		// The model was told the session runs there: a call naming it reaches the project.
		ws.Alias = SessionDir(cfg.Session, sc.Project)
	}
	mode := sc.Mode
	if mode == "" {
		mode = "default"
	}
	r := &runner{cfg: cfg, hs: hs, ws: ws, clock: sc.Start, contextBlock: contextBlock,
		mode: mode, promptMode: mode, mcpResults: map[string]string{}, pending: map[string]string{}, commandRuns: map[string]int{},
		resultOf: map[string]string{}, withdrawn: map[string]bool{}}
	r.eventDay = r.date()
	r.tools = r.toolList()
	r.system = r.buildSystem() // §10.1: built once, when the session starts
	r.drv = newSessionDriver(cfg.Driver)
	return r, nil
}

// event runs one step of the scenario. The live driver runs every step but the assistant ones.
func (r *runner) event(ctx context.Context, st scenario.Step) error {
	switch {
	case st.Clock != nil:
		r.moveClock(st)
		r.noteDay()
	case st.User != nil:
		return r.user(*st.User)
	case st.Assistant != nil:
		return r.assistant(ctx, st.Assistant)
	case st.Compact != nil:
		return r.compact(ctx, st.Compact)
	case st.Mode != nil:
		r.events = append(r.events, "mode "+*st.Mode)
		return r.setMode(*st.Mode)
	case st.Plan != nil:
		r.plan = *st.Plan
		r.changed("plan", *st.Plan)
	case st.MCP != nil:
		r.connect(st.MCP)
	case st.Outside != nil:
		return r.ws.Outside(st.Outside.Path, st.Outside.Content, st.Outside.Delete)
	case st.Instructions != nil:
		return r.editInstructions(*st.Instructions)
	case st.Git != nil:
		// Session state only: spec 3.2.0 §10.3 says no note for it (the model runs git status
		// itself); an instructions practice with source git_status embeds it.
		r.gitStatus = strings.TrimRight(*st.Git, "\n")
	case st.Rewind != nil:
		r.rewind(*st.Rewind)
	}
	return nil
}

type runner struct {
	cfg SessionConfig
	hs  *hygiene.Session
	ws  *tools.Workspace
	// warnedUnsandboxed is set once a warning said the live shell runs without its sandbox.
	warnedUnsandboxed bool
	clock             time.Time
	tools             []chat.Tool
	system            string
	// contextBlock is prompts/blocks/context.md (§9).
	contextBlock string
	history      []chat.Message // stored, reasoning kept (§8)

	notedDate string
	// events are the scenario's changes since the last request (its clock into another day,
	// a mode step), for the next request's row (metrics.Sample.ScenarioEvent); eventDay is the
	// date the last "midnight" among them (or the session's start) left the clock in.
	events   []string
	eventDay string
	// turnClock, turnPrompt and turnIndex are the clock, the last prompt tokens and the request
	// index at the current turn's first request (practice lines updated per turn), taken by
	// [runner.nextRequest] once turnSnapped is false (a new turn began).
	turnClock   time.Time
	turnPrompt  int64
	turnIndex   int
	turnSnapped bool
	// summary is the last compaction's summary ("" before the first).
	summary string
	// mode is the permission mode now, promptMode the one the system prompt names (§10.3: "its
	// first line is in the prompt only as it was at the start").
	mode, promptMode string
	// instructions is the instruction file's text as the person's last instructions step wrote
	// it, for an arm without notes (§10.3 off) and without an instructions practice of source
	// file; "" before any such step. gitStatus is what git status says (the last git step).
	instructions, gitStatus string
	// warnedInstructions is set once a warning said the instructions practice could not read
	// its file.
	warnedInstructions bool
	// replies marks, for each model reply of the current turn still in the history, where the
	// history and the hygiene session's dedupe table stood before it, for a rewind step.
	replies []replyMark
	// plan is the person's plan now; mcp the instructions of MCP servers that connected late,
	// mcpResults what each of their tools answers.
	plan       string
	mcp        []string
	mcpResults map[string]string
	// pruned holds the tool call ids whose results the prune practice cleared: once pruned,
	// always pruned.
	pruned map[string]bool
	// churnedAt is the session's time at the tool_list_churn practice's latest change.
	churnedAt time.Time
	// windowFrom is the history index from which the window practice keeps messages (0: it
	// dropped none); the messages between the first user message and it are dropped for good.
	windowFrom int
	// resultOf maps a tool call's id to the id of the result the hygiene session gave it (§1);
	// withdrawn holds the result ids a practice removed from the requests, which the hygiene
	// session was told of ([hygiene.Session.Withdraw]).
	resultOf  map[string]string
	withdrawn map[string]bool
	// lastPrompt and lastBytes are the previous answered request's prompt tokens and request
	// size in bytes (0 before the first), for [promptShrank].
	lastPrompt, lastBytes int64
	// commandRuns counts the bash calls of each command so far.
	commandRuns map[string]int
	// pending holds the changes (kind → value) the next user message carries as a note (§10.3).
	pending map[string]string
	turn    int
	step    int
	index   int
	callSeq int

	// view is the last request's messages for an arm without practices ([runner.sentMessages]).
	view sentView

	// attrib follows the server's prefix cache from request to request, for the expected cached
	// tokens and the re-read attribution; made by the first expect.
	attrib *cachesim.Attributor
	// fillFailed is true when the last request's cache fill failed for good ([CacheFiller]).
	fillFailed bool

	// drv is the session's driver: what differs between scripted and live.
	drv sessionDriver
	// seenCalls holds every tool call of the session so far (the SHA-256 of its tool and canonical
	// arguments), for the repeated_call column.
	seenCalls map[[sha256.Size]byte]bool
}

// date is the person's date in the clock's zone (§10.3: "the date is the person's own").
// Clock steps may name another zone; the date is always read in the zone the scenario started in.
func (r *runner) date() string {
	return r.clock.In(r.cfg.Scenario.Start.Location()).Format("Monday, 2006-01-02")
}

// noteDay adds a "midnight" event when the clock's date ([runner.date]) is not the one the last
// event left (or the session started at): after a clock step and after the per-request steps
// ([runner.advanceClock]), which cross midnight as well as a clock step does.
func (r *runner) noteDay() {
	if d := r.date(); d != r.eventDay {
		r.events = append(r.events, "midnight")
		r.eventDay = d
	}
}

// buildSystem builds the system prompt: the base prompt and the environment lines (§11). With
// §10.2 off, today's date comes first, where gpt-oss ("Current date:") and Llama 3.x ("Today
// Date:") templates put it.
func (r *runner) buildSystem() string {
	sc := r.cfg.Scenario
	var b strings.Builder
	if !r.cfg.Arm.Measures.DateInNote {
		b.WriteString(r.cfg.Loop.DateLine(r.date()) + "\n\n")
	}
	b.WriteString(strings.TrimRight(prompts.System(), "\n"))
	b.WriteString("\n\n")
	// §9: what the model is told about context hygiene, in every session that has recall.
	if r.cfg.Arm.Measures.Recall {
		b.WriteString(strings.TrimRight(r.contextBlock, "\n"))
		b.WriteString("\n\n")
	}
	m := r.cfg.Arm.Measures
	mode := r.promptMode
	if !m.NotesForChanges {
		mode = r.mode
	}
	b.WriteString(firstLine(r.modeText(mode)) + "\n\n")
	if !m.NotesForChanges {
		// What real harnesses do instead of §10.3's notes: the current values in the prompt.
		if r.plan != "" {
			b.WriteString("The current plan:\n" + strings.TrimRight(r.plan, "\n") + "\n\n")
		}
		for _, ins := range r.mcp {
			b.WriteString(strings.TrimRight(ins, "\n") + "\n\n")
		}
		if r.instructions != "" {
			b.WriteString("Instructions from " + scenario.DefaultInstructionsFile + ":\n" + r.instructions + "\n\n")
		}
	}
	if m.RelativePaths {
		b.WriteString(r.cfg.Loop.EnvironmentLines(sc.Project, sc.StartDir))
	} else {
		b.WriteString("Working directory: " + joinDir(r.ws.Root, sc.StartDir))
	}
	return b.String()
}

// modeText returns prompts/modes/<mode>.md ("" when there is none; the loader checked).
func (r *runner) modeText(mode string) string {
	t, _ := prompts.Text("modes/" + mode + ".md")
	return t
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// changed records a change made during the session (§10.3): with notes on, it waits for the
// next user message as a note; with notes off, the system prompt is rebuilt with it.
func (r *runner) changed(kind, value string) {
	if r.cfg.Arm.Measures.NotesForChanges {
		r.pending[kind] = strings.TrimRight(value, "\n")
		return
	}
	r.system = r.buildSystem()
}

// setMode switches the permission mode: a note whose body is modes/<mode>.md (§10.3), and, with
// the tool list not fixed (§10.4 off), a tool list without the tools the mode forbids.
func (r *runner) setMode(mode string) error {
	r.mode = mode
	r.changed("mode", strings.TrimRight(r.modeText(mode), "\n"))
	r.tools = r.toolList()
	return nil
}

// connect adds a late MCP server: its tools join the list (§10.4's one exception: one re-read,
// once) and its instructions come as a note.
func (r *runner) connect(s *scenario.MCPServer) {
	for _, t := range s.Tools {
		r.mcpResults[t.Name] = t.Result
	}
	r.mcp = append(r.mcp, s.Instructions)
	r.tools = r.toolList()
	if s.Instructions != "" {
		r.changed("mcp", s.Instructions)
	}
}

// bash answers a bash call with the scenario's scripted output for its command: the command's
// entries in order, the last one repeating. Like any output it is capped (§3) and never
// deduplicated (§6: "a command's output twice is two results").
func (r *runner) bash(raw json.RawMessage) string {
	var a struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return r.hs.Result("Error: arguments: " + err.Error())
	}
	var entries []scenario.Command
	for _, c := range r.cfg.Scenario.Commands {
		if c.Command == a.Command {
			entries = append(entries, c)
		}
	}
	if len(entries) == 0 {
		return r.hs.Result("Error: bash: no scripted output for " + strconv.Quote(a.Command))
	}
	n := r.commandRuns[a.Command]
	r.commandRuns[a.Command] = n + 1
	c := entries[min(n, len(entries)-1)]
	out := strings.TrimRight(c.Output, "\n")
	if c.Exit != 0 {
		out += fmt.Sprintf("\n(exit status %d)", c.Exit)
	}
	return r.hs.Result(out)
}

// toolList is the request's tool list: the session's fixed list (§10.4) plus the tools of MCP
// servers that connected; with §10.4 off, without the tools the current mode forbids.
func (r *runner) toolList() []chat.Tool {
	var list []chat.Tool
	for _, t := range tools.ToolList(r.cfg.Arm.Measures, r.cfg.Scenario.HasShell()) {
		if !r.cfg.Arm.Measures.FixedToolList && !tools.Allowed(r.mode, t.Name) {
			continue
		}
		list = append(list, t)
	}
	for _, t := range r.cfg.Scenario.Tools {
		// The scenario's own tools (an imported agent's): fixed for the session, in every arm.
		list = append(list, chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.ToolSchema()})
	}
	for _, s := range r.cfg.Scenario.Steps {
		if s.MCP == nil {
			continue
		}
		for _, t := range s.MCP.Tools {
			if _, ok := r.mcpResults[t.Name]; ok {
				list = append(list, chat.Tool{Name: t.Name, Description: t.Description, Parameters: []byte(`{"type":"object","properties":{}}`)})
			}
		}
	}
	return list
}

// runTool runs one call and records the id of the result the hygiene session gave it (§1).
func (r *runner) runTool(ctx context.Context, tc chat.ToolCall) string {
	before := r.hs.LastID()
	out := r.callTool(ctx, tc)
	if id := r.hs.LastID(); id != before {
		r.resultOf[tc.ID] = id
	}
	return out
}

// callTool runs one call: an MCP tool answers its scripted result; a tool the mode forbids
// answers loop.json's `unavailable` text (§10.4); any other runs in the workspace, within the
// run's tool time limit ([Driver].ToolTimeout) and ctx (the live turn's limit, the run's stop).
func (r *runner) callTool(ctx context.Context, tc chat.ToolCall) string {
	if res, ok := r.mcpResults[tc.Name]; ok {
		return r.hs.Result(res)
	}
	if r.cfg.Scenario.HasAgentTool(tc.Name) {
		// A scripted call of it answers its recorded answer (runner.recorded); a live one has none.
		return r.hs.Result("Error: " + tc.Name + " answers only the recorded answers of the session it was imported from, in the scripted driver")
	}
	if tc.Name == "bash" && r.cfg.Scenario.HasShell() {
		if r.drv.liveShell() && r.cfg.Scenario.Shell != nil {
			return r.shell(ctx, tc.Arguments)
		}
		return r.bash(tc.Arguments)
	}
	if !tools.Allowed(r.mode, tc.Name) {
		reason := "the permission mode is " + r.mode
		return r.hs.Result(strings.NewReplacer("{{tool}}", tc.Name, "{{reason}}", reason).Replace(r.cfg.Loop.Unavailable))
	}
	out, err := r.ws.RunWithin(ctx, r.cfg.Driver.toolLimit(), r.hs, tc.Name, tc.Arguments)
	if err != nil && r.cfg.Warn != nil {
		r.cfg.Warn(fmt.Errorf("%s/%s turn %d step %d: %w; the model was told so and the run goes on", r.cfg.Scenario.Name, r.cfg.Arm.Name, r.turn, r.step, err))
	}
	return out
}

func (r *runner) user(text string) error {
	r.turn++
	r.step = 0
	r.turnSnapped = false
	r.replies = nil
	r.hs.BeginTurn()
	changes := r.pending
	r.pending = map[string]string{}
	if r.cfg.Arm.Measures.DateInNote && r.date() != r.notedDate {
		changes["date"] = r.date()
		r.notedDate = r.date()
	}
	note, err := r.hs.Note(changes)
	if err != nil {
		return err
	}
	r.history = append(r.history, chat.Message{Role: chat.RoleUser, Content: hygiene.WithNote(text, note)})
	return nil
}

// request builds what is sent now: the system prompt (the session's kept bytes, or rebuilt with
// the date for the practice arm), the fixed tool list and the history with reasoning where §8
// says.
func (r *runner) request() *chat.Request {
	system := r.system
	if !r.cfg.Arm.Measures.DateInNote {
		system = r.buildSystem()
	}
	if len(r.cfg.Arm.Practices) == 0 {
		// No practice rewrites anything: the messages are the system prompt and the history as
		// §8 sends it, grown from the previous request's (runner.sentMessages).
		return &chat.Request{Messages: r.sentMessages(system), Tools: r.tools, Think: true, CacheBreakpoints: CacheBreakpoints(r.cfg.Arm)}
	}
	history := r.practiceWindow(system, r.reasoningHistory())
	history = r.practiceOnResults(history)
	msgs := append([]chat.Message{{Role: chat.RoleSystem, Content: system}}, history...)
	msgs = r.practiceInserts(msgs)
	msgs = r.practiceLines(msgs)
	return &chat.Request{Messages: msgs, Tools: r.practiceTools(r.tools), Think: true, CacheBreakpoints: CacheBreakpoints(r.cfg.Arm)}
}

// sentView is the messages of the last request an arm without practices built: the system
// prompt, then the history's first hist messages as §8 sends them (hygiene.AppendTurnReasoning),
// whose turn started after message start (hygiene.TurnStart). Requests share its array up to
// their own length and never past it (their capacity is their length), so a later request
// appends to it without changing an earlier one's messages.
type sentView struct {
	msgs        []chat.Message
	hist, start int
}

// sentMessages returns the messages of the next request of an arm without practices: the system
// prompt, then the history with the reasoning §8 says ([hygiene.CurrentTurnReasoning]). While
// the history only grows within a turn, the previous request's messages are kept and the new
// ones appended, so a step costs its new messages, not the whole conversation; a new turn (the
// previous turn's reasoning leaves), a changed system prompt, a rewind or a compaction
// ([runner.forgetSent]) builds them whole.
func (r *runner) sentMessages(system string) []chat.Message {
	h, v := r.history, &r.view
	start := hygiene.TurnStart(h)
	keep := v.msgs != nil && v.hist <= len(h) && v.start == start && v.msgs[0].Content == system
	if keep && v.hist > 0 {
		// The last message kept is still the history's (belt and braces: a change of the
		// history other than an append forgets the view).
		a, b := &v.msgs[v.hist], &h[v.hist-1]
		keep = a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID
	}
	if !keep {
		msgs := make([]chat.Message, 1, 1+len(h)+len(h)/2+8)
		msgs[0] = chat.Message{Role: chat.RoleSystem, Content: system}
		v.msgs, v.hist, v.start = msgs, 0, start
	}
	v.msgs = hygiene.AppendTurnReasoning(v.msgs, h, v.hist, start, r.cfg.Arm.Measures, nil)
	v.hist = len(h)
	return v.msgs[:len(v.msgs):len(v.msgs)]
}

// forgetSent drops the view of the last request's messages: the history changed other than by
// growing (a rewind, a compaction).
func (r *runner) forgetSent() { r.view = sentView{} }

// nextRequest builds the next request to send ([runner.request]) after moving the clock on by
// the per-request steps ([runner.advanceClock]); the first of a turn records what practice lines
// updated per turn show for the whole turn. Every request sent is built by it, scripted or live.
func (r *runner) nextRequest() *chat.Request {
	r.advanceClock()
	if !r.turnSnapped {
		r.turnClock, r.turnPrompt, r.turnIndex, r.turnSnapped = r.clock, r.lastPrompt, r.index, true
	}
	return r.request()
}

func (r *runner) assistant(ctx context.Context, a *scenario.AssistantStep) error {
	req, msg, reply := r.decided(a)
	if err := r.measure(ctx, req, reply, metrics.KindStep); err != nil {
		return err
	}
	r.beginReply()
	r.history = append(r.history, msg)
	for i, tc := range msg.ToolCalls {
		var out string
		if ans := a.Calls[i].Answer; ans != nil {
			out = r.recorded(tc, *ans)
		} else {
			out = r.runTool(ctx, tc)
		}
		r.history = append(r.history, chat.Message{Role: chat.RoleTool, Content: out, ToolCallID: tc.ID, ToolName: tc.Name})
	}
	return nil
}

// recorded answers a call with its recorded answer ([scenario.Call].Answer) instead of running
// it: a result like any other (§1's id, §3's cap), recorded as the call's result.
func (r *runner) recorded(tc chat.ToolCall, answer string) string {
	before := r.hs.LastID()
	out := r.hs.Result(strings.TrimRight(answer, "\n"))
	if id := r.hs.LastID(); id != before {
		r.resultOf[tc.ID] = id
	}
	return out
}

// decided is what follows from a scripted assistant step once it is decided, before anything is
// sent: the request it is sent in ([runner.nextRequest]), the assistant message it leaves in the
// history and the reply the server's cache is left holding. It is the harness's part of the
// client's critical path (the request's bytes are the backend's part).
func (r *runner) decided(a *scenario.AssistantStep) (*chat.Request, chat.Message, *chat.Reply) {
	r.step++
	req := r.nextRequest()
	msg := chat.Message{Role: chat.RoleAssistant, Reasoning: a.Reasoning, Content: a.Text}
	for _, c := range a.Calls {
		r.callSeq++
		// The model wrote the absolute path: {{root}} is the sandbox's project root (§11).
		args := c.Args // not copied unless it names the workspace root: it may be megabytes
		if bytes.Contains(args, []byte(tools.RootPlaceholder)) {
			args = bytes.ReplaceAll(args, []byte(tools.RootPlaceholder), []byte(strings.Trim(strconv.Quote(r.ws.Root), `"`)))
		}
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: "call_" + strconv.Itoa(r.callSeq), Name: c.Tool, Arguments: args})
	}
	reply := &chat.Reply{Reasoning: a.Reasoning, Content: a.Text, ToolCalls: msg.ToolCalls}
	return req, msg, reply
}

// measure sends one request and writes its sample: the server's figures, and the expected cached
// tokens computed from the rendered prompt and what the server's cache held after the previous
// request.
func (r *runner) measure(ctx context.Context, req *chat.Request, reply *chat.Reply, kind string) error {
	cfg := r.cfg
	s := row.New(row.Identity{
		RunID: cfg.RunID, Scenario: cfg.Scenario.Name, Arm: cfg.Arm.Name, Repetition: cfg.Repetition,
		Backend: cfg.BackendName, Model: cfg.Model, ServerVersion: cfg.ServerVersion,
		RequestIndex: int32(r.index), Turn: int32(r.turn), Step: int32(r.step), Kind: kind,
		StartedAt: time.Now(),
	})
	// Before the session's first request nothing was sent that an event could change: a mode
	// or clock step there is where the session starts.
	if r.index > 0 {
		s.ScenarioEvent = strings.Join(r.events, ", ")
	}
	r.events = nil
	r.index++
	if req.MaxReplyBytes == 0 {
		req.MaxReplyBytes = cfg.MaxReplyBytes
	}
	if cfg.PromptPrefix != "" && len(req.Messages) > 0 && req.Messages[0].Role == chat.RoleSystem {
		cp := *req
		cp.Messages = slices.Clone(req.Messages)
		cp.Messages[0].Content = cfg.PromptPrefix + cp.Messages[0].Content
		req = &cp
	}
	res, tries, sendErr := send(ctx, cfg.Retry, cfg.Backend, req, reply)
	s.Retries, s.RetryWaitNs = int32(tries.retries), int64(tries.wait)
	if res != nil && len(res.Body) > 0 && cfg.Requests != nil {
		line, err := row.RequestLine{Scenario: cfg.Scenario.Name, Arm: cfg.Arm.Name, Repetition: cfg.Repetition,
			RequestIndex: s.RequestIndex, API: cfg.RequestsAPI, Body: res.Body, Reply: row.SaveReply(reply)}.Marshal()
		if err == nil {
			_, err = cfg.Requests.Write(line)
		}
		if err != nil {
			return fmt.Errorf("write requests.jsonl: %w", err)
		}
	}
	if sendErr != nil {
		s.Error = sendErr.Error()
		r.drv.annotate(r, s, req, reply, res, sendErr)
		row.SetWarnings(s, tries.notes)
		if err := cfg.Sink.Write(s); err != nil {
			return errors.Join(sendErr, err)
		}
		if cfg.OnSample != nil {
			cfg.OnSample(s)
		}
		return sendErr
	}
	if cfg.ConstantCached != "" {
		if w, ok := row.DropConstantCached(res, cfg.ConstantCached); ok {
			res.Warnings = append(res.Warnings, w)
		}
	}
	row.SetResult(s, res, cfg.Price)
	row.SetTimes(s, res.TTFT, res.Total, res.RequestBytes)
	r.drv.annotate(r, s, req, reply, res, nil)
	warnings := append(tries.notes, res.Warnings...)
	if r.fillFailed {
		warnings = append(warnings, WarningAfterFailedFill+": the server's cache held the previous prompt without its reply, which this request read again")
	}
	r.fillFailed = tries.fillFailed
	// Where the lab renders the prompt itself it knows the window and marks overflows
	// (ContextOverflow); elsewhere a shrinking prompt is the only sign of a cut.
	if cfg.Tokenizer == nil {
		if w := promptShrank(r.lastPrompt, r.lastBytes, s.PromptTokens, s.RequestBytes); w != "" {
			warnings = append(warnings, w)
		}
	}
	if s.PromptTokens > 0 && s.RequestBytes > 0 {
		r.lastPrompt, r.lastBytes = s.PromptTokens, s.RequestBytes
	}
	if err := r.expect(req, res, s, &warnings); err != nil {
		return err
	}
	for _, w := range warnings {
		if cfg.Warn != nil {
			cfg.Warn(fmt.Errorf("%s/%s request %d: %s", s.Scenario, s.Arm, s.RequestIndex, w))
		}
	}
	row.SetWarnings(s, warnings)
	if err := cfg.Sink.Write(s); err != nil {
		return err
	}
	if cfg.OnSample != nil {
		cfg.OnSample(s)
	}
	return nil
}

// WarningPromptShrank starts the warning of a request whose prompt tokens fell below the
// previous request's although its body grew: the server cut the prompt to its context window
// (Ollama's OpenAI- and Anthropic-compatible endpoints take no num_ctx and run the model at the
// server's default window, 4,096 tokens, cutting longer prompts without an error).
const WarningPromptShrank = "prompt cut by the server"

// promptShrank returns the [WarningPromptShrank] warning when a request of reqBytes bytes, larger
// than the previous request's prevBytes, was counted as at least 5 % fewer prompt tokens than
// the previous one's prevPrompt; "" otherwise, and when either request's figures are unknown (0).
// A request that an arm made smaller (pruned, compacted) never warns: its body shrank too. A
// chat template that drops earlier reasoning at a new user message shrinks the prompt a little
// while the body grows (the sim matrix: at most 4 %), hence the margin.
func promptShrank(prevPrompt, prevBytes, prompt, reqBytes int64) string {
	if prevPrompt <= 0 || prevBytes <= 0 || prompt <= 0 || reqBytes <= prevBytes || prompt*100 > prevPrompt*95 {
		return ""
	}
	return fmt.Sprintf("%s: %d prompt tokens after %d, though the request grew from %d to %d bytes; "+
		"the server truncated it to its context window, so its figures are not the session's",
		WarningPromptShrank, prompt, prevPrompt, prevBytes, reqBytes)
}

// expect fills the expected cached tokens, the divergence, the re-read attribution and the
// reasoning figures from the session's [cachesim.Attributor]: expected is the longest common token
// prefix of this request's rendered prompt and what the server's cache held (the previous
// rendered prompt followed by the reply as the model wrote it; for a cache that keeps the
// prefixes its breakpoints wrote, chat.Result.CacheWrites, the longest of them), at most the
// prompt less one token. It marks the sample ContextOverflow, with a warning, when the prompt, or the prompt and
// the reply the cache holds after it, take more tokens than the context window (cfg.NumCtx).
func (r *runner) expect(req *chat.Request, res *chat.Result, s *metrics.Sample, warnings *[]string) error {
	if r.attrib == nil {
		r.attrib = r.cfg.Cache
		if r.attrib == nil {
			r.attrib = newAttributor(r.cfg.Tokenizer, r.cfg.NumCtx, r.cfg.Loop, r.cfg.Window, r.cfg.CacheReuse, r.cfg.HostCache, r.cfg.RenderOrder)
		}
	}
	var a cachesim.Attribution
	var err error
	if res.CacheWrites != nil {
		// The cache keeps the prefixes the request's breakpoints wrote (the sim's anthropic model).
		a, err = r.attrib.ObserveWrites(req, res.Rendered, res.CacheWrites, res.PromptTokens)
	} else {
		a, err = r.attrib.Observe(req, res.Rendered, res.CacheText, res.PromptTokens)
	}
	if err != nil {
		return err
	}
	*warnings = append(*warnings, row.SetAttribution(s, a)...)
	if s.RequestIndex == 0 && r.cfg.CacheUnknown != "" && !a.Unknown {
		// What the cache held before is unknown: so is what this request could reuse of it.
		s.ExpectedCachedTokens, s.DivergenceToken, s.DivergenceSegment, s.ChunkReusedTokens = nil, nil, "", nil
		*warnings = append(*warnings, WarningCacheUnknown+": "+r.cfg.CacheUnknown)
	}
	return nil
}

// WarningCacheUnknown starts the warning of a warm session's first request whose expected
// cached tokens are null because what the server's cache held when the session started is
// unknown ([SessionConfig].CacheUnknown).
const WarningCacheUnknown = "cache state unknown"

// newAttributor is the expected-cache model of a server with these settings, empty
// ([RunConfig] and [SessionConfig] name each).
func newAttributor(tok Tokenizer, numCtx int, loop *hygiene.Config, w cachesim.Window, reuse *int, host *cachesim.HostCache, order cachesim.RenderOrder) *cachesim.Attributor {
	a := &cachesim.Attributor{Tok: tok, NumCtx: numCtx, Window: w, CacheReuse: reuse, HostCache: host, Order: order}
	if loop != nil {
		a.NoteOpen = loop.Note.Open
	}
	return a
}

// compactionSystem is the system prompt of the practice arm's separate compaction request.
const compactionSystem = "You write summaries of coding-agent sessions, for the agent to continue from."

// compact compacts the session (spec 3.2.0 §7). With §7 on, the summary is asked for as the next
// turn of the same conversation: the same system prompt, the same tools, every message, then one
// more user message, tasks/compact.md with {{transcript}} and {{previous_summary}} empty. With §7
// off, as real harnesses did: a separate request with its own system prompt, no tools, and the
// transcript pasted in. Either way the request is measured (kind "compaction") and is not a turn
// of the session; the history then starts afresh from the summary, followed, with §7 on, by the
// harness's table of the files read; the dedupe table is emptied and the system prompt built
// again (§10.1).
func (r *runner) compact(ctx context.Context, c *scenario.CompactStep) error {
	tmpl, err := prompts.Text("tasks/compact.md")
	if err != nil {
		return err
	}
	m := r.cfg.Arm.Measures
	var req *chat.Request
	if m.CompactionNextTurn {
		task := strings.NewReplacer("{{transcript}}", "", "{{previous_summary}}", "").Replace(tmpl)
		req = r.nextRequest()
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleUser, Content: strings.TrimRight(task, "\n")})
		// The task message starts a turn of its own (§8): nothing before it carries reasoning.
		req.Messages = append(req.Messages[:1:1], hygiene.CurrentTurnReasoning(req.Messages[1:], m)...)
	} else {
		r.advanceClock() // a request of its own: the time passes as before any other
		previous := ""
		if r.summary != "" {
			previous = "\n\nThe summary of the session before this part:\n" + r.summary
		}
		task := strings.NewReplacer("{{transcript}}", "\n\nThe session:\n\n"+r.transcript(), "{{previous_summary}}", previous).Replace(tmpl)
		req = &chat.Request{Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: compactionSystem},
			{Role: chat.RoleUser, Content: strings.TrimRight(task, "\n")},
		}, Think: true}
	}
	r.step++
	reply := r.drv.compactionReply(req, c)
	if err := r.measure(ctx, req, reply, metrics.KindCompaction); err != nil {
		return err
	}
	summary, ok := r.drv.summary(r, c)
	if !ok {
		return nil
	}
	content := strings.TrimRight(summary, "\n")
	if table := r.hs.Compact(); table != "" {
		content += "\n\n" + table
	}
	r.history = []chat.Message{{Role: chat.RoleUser, Content: content, Summary: true}}
	r.forgetSent()
	r.pruned, r.windowFrom, r.replies = nil, 0, nil
	r.summary = summary
	r.promptMode = r.mode
	r.system = r.buildSystem()
	// The note that carried the date is gone with the history: the next message carries it again.
	r.notedDate = ""
	return nil
}

// transcript writes the history as plain text, for the practice arm's pasted transcript.
func (r *runner) transcript() string {
	var b strings.Builder
	for _, m := range r.history {
		switch m.Role {
		case chat.RoleTool:
			fmt.Fprintf(&b, "[%s result]\n%s\n\n", m.ToolName, m.Content)
		default:
			if m.Content != "" {
				fmt.Fprintf(&b, "%s: %s\n\n", m.Role, m.Content)
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "%s called %s %s\n\n", m.Role, tc.Name, tc.Arguments)
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// joinDir joins a base folder and a relative one; "" and "." mean base itself.
func joinDir(base, rel string) string {
	if rel == "" || rel == "." {
		return base
	}
	return filepath.Join(base, rel)
}
