package harness

import (
	"context"

	"lab/chat"
	"lab/metrics"
	"lab/scenario"
)

// sessionDriver is what differs between the two drivers in a session (DESIGN.md, "Two
// drivers"): [scripted] replays the scenario's assistant steps, the live driver ([liveState],
// live.go) lets the model decide them within its turn's bounds. Everything else (the tools, the
// hygiene session, the measurement of each request) is the same code for both.
type sessionDriver interface {
	// run runs the session's steps in the scenario's order, the assistant's as the driver
	// decides them (the next assistant step: the scenario's, or the model's).
	run(ctx context.Context, r *runner) error
	// compactionReply returns the reply a compaction request (§7) is measured with: the
	// scenario's summary, or nil when the model writes it (req's generation then bounded).
	compactionReply(req *chat.Request, c *scenario.CompactStep) *chat.Reply
	// summary returns the summary the compaction goes on with; ok false when there is none
	// (the compaction failed, the history stays).
	summary(r *runner, c *scenario.CompactStep) (summary string, ok bool)
	// liveShell reports whether the model's bash calls run in the scenario's shell (the
	// sandboxed live shell) rather than answering the scenario's scripted outputs.
	liveShell() bool
	// annotate fills a sample's driver columns (driver, repeated_call, and for a live step the
	// reasoning tokens generated and the turn's end_reason) before it is written. reply is the
	// scripted reply (nil for a live request); res and sendErr the request's result and error.
	annotate(r *runner, s *metrics.Sample, req *chat.Request, reply *chat.Reply, res *chat.Result, sendErr error)
}

// newSessionDriver returns the driver d names, the live one with its bounds' defaults.
func newSessionDriver(d Driver) sessionDriver {
	if d.Live() {
		return &liveState{d: d.withDefaults()}
	}
	return scripted{}
}

// scripted is the scripted driver: the scenario decides every assistant step, and writes every
// compaction's summary.
type scripted struct{}

// run runs every step of the scenario in order.
func (scripted) run(ctx context.Context, r *runner) error {
	for _, st := range r.cfg.Scenario.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.event(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// compactionReply is the scenario's reasoning and summary.
func (scripted) compactionReply(_ *chat.Request, c *scenario.CompactStep) *chat.Reply {
	return &chat.Reply{Reasoning: c.Reasoning, Content: c.Summary}
}

// summary is the scenario's.
func (scripted) summary(_ *runner, c *scenario.CompactStep) (string, bool) { return c.Summary, true }

// liveShell is false: bash answers the scenario's scripted outputs.
func (scripted) liveShell() bool { return false }

// annotate records the driver and whether the scripted reply repeats a call of the session.
func (scripted) annotate(r *runner, s *metrics.Sample, _ *chat.Request, reply *chat.Reply, _ *chat.Result, _ error) {
	s.Driver = DriverScripted
	if reply != nil {
		s.RepeatedCall = r.repeated(reply.ToolCalls)
	}
}
