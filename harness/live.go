package harness

// This file is the live driver (DESIGN.md, "Two drivers"): the scenario gives the user
// turns, the events and the workspace; the model decides every assistant step. Its tool calls run
// through the same tools and the same hygiene session as a scripted step's (runner.runTool), and
// every request is measured as a scripted one (runner.measure).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"lab/chat"
	"lab/metrics"
	"lab/scenario"
	"lab/tools"
)

// The drivers a session can run with ([Driver].Mode).
const (
	// DriverScripted replays the scenario's assistant steps (the default).
	DriverScripted = metrics.DriverScripted
	// DriverLive lets the model decide each step.
	DriverLive = metrics.DriverLive
)

// The live driver's default bounds.
const (
	// DefaultMaxSteps bounds the step requests of one live turn.
	DefaultMaxSteps = 30
	// DefaultMaxTokens bounds the tokens one live request may generate, reasoning included.
	DefaultMaxTokens = 2048
	// DefaultTurnTimeout bounds the wall time of one live turn.
	DefaultTurnTimeout = 10 * time.Minute
)

// Driver says who decides the assistant's steps: the scenario (scripted, the zero value) or the
// model (live), with the live driver's bounds. Start from the zero value; fields may be added.
type Driver struct {
	// Mode is [DriverScripted] ("" means scripted) or [DriverLive].
	Mode string
	// MaxSteps is the most step requests of one live turn; 0 means [DefaultMaxSteps]. The step
	// that reaches it has its calls run, then the turn ends ([metrics.EndMaxSteps]).
	MaxSteps int
	// MaxTokens is the most tokens a live request may generate, reasoning included
	// ([chat.Request].Generate); 0 means [DefaultMaxTokens].
	MaxTokens int
	// TurnTimeout is the most wall time of one live turn, its requests and tool calls; 0 means
	// [DefaultTurnTimeout]. A request it cuts ends the turn ([metrics.EndTimeout]) and the
	// session goes on with the next user turn.
	TurnTimeout time.Duration
	// Seed is the sampling seed of repetition 1; repetition r uses Seed + r − 1. It reaches a
	// backend that implements [Seeder].
	Seed int64
	// ToolTimeout bounds the wall time of each tool call with either driver (read, list, glob,
	// grep, edit, multiedit, write, apply_patch, recall: [tools.Workspace.RunWithin]) and of each
	// live shell command whose scenario gives no `shell.timeout`; 0 means [tools.DefaultToolTimeout].
	// A live call is bounded by the turn's TurnTimeout too. A call past it answers the model
	// "(stopped: …)", a warning says so, and the session goes on.
	ToolTimeout time.Duration
	// UnsandboxedShell lets the live shell run a command where the machine refuses its sandbox
	// ([tools.ErrNoIsolation], [tools.Shell].Unsandboxed): with namespaces but the whole filesystem the lab's
	// user has, or with no namespace at all (the network too); a warning says which. false (the
	// default) refuses every command there instead.
	UnsandboxedShell bool
}

// toolLimit is d's tool time limit, [tools.DefaultToolTimeout] when it gives none.
func (d Driver) toolLimit() time.Duration {
	if d.ToolTimeout > 0 {
		return d.ToolTimeout
	}
	return tools.DefaultToolTimeout
}

// Live reports whether d is the live driver.
func (d Driver) Live() bool { return d.Mode == DriverLive }

// Check reports a driver that cannot run: an unknown mode or a negative bound.
func (d Driver) Check() error {
	switch d.Mode {
	case "", DriverScripted, DriverLive:
	default:
		return fmt.Errorf("driver %q: want %s or %s", d.Mode, DriverScripted, DriverLive)
	}
	if d.MaxSteps < 0 || d.MaxTokens < 0 || d.TurnTimeout < 0 || d.ToolTimeout < 0 {
		return fmt.Errorf("driver: max steps %d, max tokens %d, turn timeout %s, tool timeout %s: want each ≥ 0", d.MaxSteps, d.MaxTokens, d.TurnTimeout, d.ToolTimeout)
	}
	return nil
}

func (d Driver) withDefaults() Driver {
	if d.MaxSteps == 0 {
		d.MaxSteps = DefaultMaxSteps
	}
	if d.MaxTokens == 0 {
		d.MaxTokens = DefaultMaxTokens
	}
	if d.TurnTimeout == 0 {
		d.TurnTimeout = DefaultTurnTimeout
	}
	return d
}

// Seeder is a Backend whose sampling seed can be set (Ollama option seed). The live driver sets
// it at the start of each session, so that each repetition samples differently.
type Seeder interface {
	SetSeed(seed int64)
}

// Scripter is a Backend that plays a scripted model (backend/sim): at the start of each live
// session the harness gives it the scenario's own assistant steps ([ScriptedReplies]).
type Scripter interface {
	SetScript(groups []chat.ScriptGroup)
}

// ScriptedReplies returns the scenario's assistant steps and compaction summaries as the replies
// a scripted model answers with, grouped as a scripted model answers them ([Scripter]): a new
// group at each turn's first step, at each compaction and at the first step after a compaction
// (each is a request whose last message is a user message; the last kind is marked
// AfterCompaction, since a turn cut short by a bound never sends it). root is the sandbox's
// project root, written where a call's arguments say {{root}}, as the scripted driver does.
func ScriptedReplies(sc *scenario.Scenario, root string) []chat.ScriptGroup {
	quoted := []byte(strings.Trim(strconv.Quote(root), `"`))
	var groups []chat.ScriptGroup
	fresh, afterCompaction := true, false
	for _, st := range sc.Steps {
		switch {
		case st.User != nil:
			fresh, afterCompaction = true, false
		case st.Compact != nil:
			groups = append(groups, chat.ScriptGroup{Replies: []chat.Reply{{Reasoning: st.Compact.Reasoning, Content: st.Compact.Summary}}})
			fresh, afterCompaction = true, true
		case st.Assistant != nil:
			a := st.Assistant
			rep := chat.Reply{Reasoning: a.Reasoning, Content: a.Text}
			for _, c := range a.Calls {
				rep.ToolCalls = append(rep.ToolCalls, chat.ToolCall{Name: c.Tool, Arguments: bytes.ReplaceAll(c.Args, []byte(tools.RootPlaceholder), quoted)})
			}
			if fresh || len(groups) == 0 {
				groups = append(groups, chat.ScriptGroup{AfterCompaction: afterCompaction})
				fresh, afterCompaction = false, false
			}
			g := &groups[len(groups)-1]
			g.Replies = append(g.Replies, rep)
		}
	}
	return groups
}

// liveState is the live driver ([sessionDriver]) and its state in a session.
type liveState struct {
	d Driver
	// parent is the session's context, turn the current turn's (with its time limit).
	parent, turn context.Context
	// steps and calls count the current turn's step requests and tool calls so far.
	steps, calls int
	// end is why the current turn ended; "" while it goes on.
	end string
	// last is the result of the last request measured.
	last *chat.Result
}

// run runs the session with the live driver: user turns and events in the scenario's order;
// each turn runs from where the scenario's first assistant step of the turn is, and the events
// the scenario places between a turn's assistant steps keep their place by step count (an event
// after scripted step k comes before live step k+1, or at the turn's end when the model took
// fewer steps).
func (lv *liveState) run(ctx context.Context, r *runner) error {
	d := lv.d
	lv.parent = ctx
	if s, ok := r.cfg.Backend.(Seeder); ok {
		s.SetSeed(d.Seed + int64(max(r.cfg.Repetition, 1)) - 1)
	}
	if s, ok := r.cfg.Backend.(Scripter); ok {
		s.SetScript(ScriptedReplies(r.cfg.Scenario, r.ws.Root))
	}
	steps := r.cfg.Scenario.Steps
	for i := 0; i < len(steps); {
		if err := ctx.Err(); err != nil {
			return err
		}
		if steps[i].Assistant == nil {
			if err := r.event(ctx, steps[i]); err != nil {
				return err
			}
			i++
			continue
		}
		// The turn's scripted steps run to the next user step; between[k] holds the events after
		// scripted step k+1, the last group those after the turn's last step.
		between := [][]scenario.Step{nil}
		j := i + 1
		for ; j < len(steps) && steps[j].User == nil; j++ {
			if steps[j].Assistant != nil {
				between = append(between, nil)
				continue
			}
			between[len(between)-1] = append(between[len(between)-1], steps[j])
		}
		if err := lv.liveTurn(ctx, r, between); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// liveTurn runs one live turn: a request, the model's calls run and their results inserted, again
// until the model answers without calls or a bound ends the turn.
func (lv *liveState) liveTurn(ctx context.Context, r *runner, between [][]scenario.Step) error {
	turn, cancel := context.WithTimeout(ctx, lv.d.TurnTimeout)
	defer cancel()
	lv.turn, lv.steps, lv.calls, lv.end = turn, 0, 0, ""
	applied := 0
	apply := func(upto int) error {
		for ; applied < upto; applied++ {
			for _, st := range between[applied] {
				if err := r.event(ctx, st); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for lv.end == "" {
		if err := apply(min(lv.steps, len(between)-1)); err != nil {
			return err
		}
		lv.steps++
		r.step++
		req := r.nextRequest()
		req.Generate = lv.d.MaxTokens
		lv.last = nil
		if err := r.measure(turn, req, nil, metrics.KindStep); err != nil {
			if lv.end != metrics.EndTimeout {
				return err
			}
			if r.cfg.Warn != nil {
				r.cfg.Warn(fmt.Errorf("%s/%s turn %d: the turn's time limit of %s ran out at step %d", r.cfg.Scenario.Name, r.cfg.Arm.Name, r.turn, lv.d.TurnTimeout, lv.steps))
			}
			break
		}
		var reply chat.Reply
		if lv.last != nil && lv.last.Reply != nil {
			reply = *lv.last.Reply
		}
		msg := chat.Message{Role: chat.RoleAssistant, Reasoning: reply.Reasoning, Content: reply.Content, Thinking: reply.Thinking}
		for _, tc := range reply.ToolCalls {
			// The harness numbers the calls as the scripted driver does, whatever ids the
			// server gave: the same session sends the same bytes with either driver.
			r.callSeq++
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: "call_" + strconv.Itoa(r.callSeq), Name: tc.Name, Arguments: tc.Arguments})
		}
		r.beginReply()
		r.history = append(r.history, msg)
		for _, tc := range msg.ToolCalls {
			out := r.runTool(turn, tc)
			r.history = append(r.history, chat.Message{Role: chat.RoleTool, Content: out, ToolCallID: tc.ID, ToolName: tc.Name})
		}
		lv.calls += len(msg.ToolCalls)
	}
	return apply(len(between))
}

// annotate fills a live sample's driver columns before it is written: the driver, whether the
// reply repeated a call of the session, the reasoning tokens generated (counted with the
// session's tokenizer when the server did not say) and, for a step, why the turn ended when it
// did (the turn's bounds: steps, tokens, time). The reply is the result's.
func (lv *liveState) annotate(r *runner, s *metrics.Sample, req *chat.Request, reply *chat.Reply, res *chat.Result, sendErr error) {
	s.Driver = DriverLive
	lv.last = res
	reply = nil
	if res != nil {
		reply = res.Reply
	}
	if reply == nil {
		reply = &chat.Reply{}
	}
	if sendErr == nil {
		s.RepeatedCall = r.repeated(reply.ToolCalls)
		// The server did not count the reasoning: count what the reply carried (none is 0).
		if s.ReasoningTokensGenerated == nil && res != nil && res.Reply != nil && r.cfg.Tokenizer != nil {
			if ids, err := r.cfg.Tokenizer.Encode(reply.Reasoning); err == nil {
				s.ReasoningTokensGenerated = new(int64(len(ids)))
			}
		}
	}
	if s.Kind != metrics.KindStep {
		return
	}
	switch {
	case sendErr != nil && lv.turn != nil && lv.turn.Err() != nil && lv.parent.Err() == nil:
		lv.end = metrics.EndTimeout
	case sendErr != nil:
		lv.end = metrics.EndError
	case len(reply.ToolCalls) > 0:
		if lv.steps >= lv.d.MaxSteps {
			lv.end = metrics.EndMaxSteps
		}
	case req.Generate > 0 && res.CompletionTokens >= int64(req.Generate):
		lv.end = metrics.EndMaxTokens
	case lv.calls == 0:
		lv.end = metrics.EndNoCall
	default:
		lv.end = metrics.EndAnswered
	}
	s.EndReason = lv.end
}

// repeated reports whether any of calls repeats a call the session already made (the same tool
// with the same arguments as canonical JSON), and records them.
func (r *runner) repeated(calls []chat.ToolCall) bool {
	if r.seenCalls == nil {
		r.seenCalls = map[[sha256.Size]byte]bool{}
	}
	rep := false
	for _, tc := range calls {
		// A digest of the call, not its text: a call's arguments may be megabytes.
		h := sha256.New()
		h.Write([]byte(tc.Name + "\x00"))
		h.Write([]byte(CanonicalJSON(tc.Arguments)))
		var key [sha256.Size]byte
		h.Sum(key[:0])
		if r.seenCalls[key] {
			rep = true
		}
		r.seenCalls[key] = true
	}
	return rep
}

// CanonicalJSON returns a JSON value re-encoded canonically: object keys sorted, no spaces,
// numbers as written, strings with Go's escaping. Two argument objects that differ only in key
// order or spacing give the same text. A value that is not JSON is returned as it is.
func CanonicalJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(v) // map keys sorted
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// compactionReply bounds the compaction request's generation: the model writes the summary.
func (lv *liveState) compactionReply(req *chat.Request, c *scenario.CompactStep) *chat.Reply {
	req.Generate = lv.d.MaxTokens
	return nil
}

// liveShell implements sessionDriver: the model's bash calls run in the scenario's shell.
func (lv *liveState) liveShell() bool { return true }

// summary returns what the model wrote as the compaction's summary. ok is false when it wrote
// none: the compaction failed (spec 3.2.0 §7: a reply with no summary fails the compaction), the
// history stays as it is, and a warning says so.
func (lv *liveState) summary(r *runner, c *scenario.CompactStep) (summary string, ok bool) {
	if lv.last != nil && lv.last.Reply != nil && strings.TrimSpace(lv.last.Reply.Content) != "" {
		return lv.last.Reply.Content, true
	}
	if r.cfg.Warn != nil {
		r.cfg.Warn(fmt.Errorf("%s/%s turn %d: the model wrote no summary: the compaction failed and the history stays whole (spec §7)", r.cfg.Scenario.Name, r.cfg.Arm.Name, r.turn))
	}
	return "", false
}
