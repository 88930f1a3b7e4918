package harness

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"

	"lab/arms"
	"lab/chat"
	"lab/metrics"
	"lab/scenario"
)

// CaptureAsSent names the arm that replays an imported capture's requests exactly as the
// captured harness sent them ([scenario.Scenario].Captured, decoded by
// [SessionConfig].DecodeRequest): no request is built by the lab's harness, no measure or
// practice acts, and each request is sent with the reply the capture recorded for it (or, where
// its line has none, the assistant message the next request sends back), so the server's cache
// is left as the captured server's was. On the captured server it gives the capture's own rows
// (prompt, cached and expected cached tokens, divergence). It is not one of [arms.Builtin]
// ("all" leaves it out): it applies only to a scenario imported from a capture, and is refused
// for any other ([CheckCaptureAsSent]).
const CaptureAsSent = "capture-as-sent"

// CaptureAsSentArm returns the [CaptureAsSent] arm, for `lab run --arm capture-as-sent`. No
// measure of the lab's is on (base plain, as the manifest records it): the requests are the
// capture's, whatever the captured harness did.
func CaptureAsSentArm() arms.Arm {
	return arms.Arm{
		Name:        CaptureAsSent,
		Description: "an imported capture's requests exactly as the captured harness sent them, with the replies it recorded",
		Base:        "plain",
		Source:      "built-in",
	}
}

// CheckCaptureAsSent refuses the [CaptureAsSent] arm for a scenario that was not imported from
// a capture: an error naming the scenario file and the import command; nil otherwise.
func CheckCaptureAsSent(sc *scenario.Scenario) error {
	if len(sc.Captured) == 0 {
		return fmt.Errorf("%s: arm %s replays the requests of an imported capture, and this scenario names none (capture:); import one with lab scenario import --from capture REQUESTS.jsonl -o DIR", sc.File, CaptureAsSent)
	}
	return nil
}

// sendCaptured is a session of the [CaptureAsSent] arm: each captured request decoded and sent
// as it is, in order, one row each, placed as the scenario's steps place their requests
// ([scenarioPlaces]) or, where they do not match the capture one to one, as lab proxy places a
// captured request (turn: its user messages; step: the assistant messages since the last one,
// plus one).
func (r *runner) sendCaptured(ctx context.Context) error {
	sc := r.cfg.Scenario
	if err := CheckCaptureAsSent(sc); err != nil {
		return err
	}
	if r.cfg.DecodeRequest == nil {
		return errors.New("arm " + CaptureAsSent + ": no decoder of captured requests")
	}
	file := path.Join(path.Dir(filepath.ToSlash(sc.File)), sc.Capture)
	reqs := make([]*chat.Request, len(sc.Captured))
	for i, c := range sc.Captured {
		req, err := r.cfg.DecodeRequest(c.API, c.Body)
		if err != nil {
			return &scenario.SyntaxError{File: file, Line: c.Line, Msg: fmt.Sprintf("%s request: %v", c.API, err)}
		}
		reqs[i] = req
	}
	places := scenarioPlaces(sc)
	for i, req := range reqs {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := place{kind: metrics.KindStep}
		if len(places) == len(reqs) {
			p = places[i]
		} else {
			p.turn, p.step = capturedTurnStep(req)
		}
		r.turn, r.step = p.turn, p.step
		if err := r.measure(ctx, req, capturedReply(sc.Captured, reqs, i), p.kind); err != nil {
			return err
		}
	}
	return nil
}

// place is a request's turn, step and kind in a session.
type place struct {
	turn, step int
	kind       string
}

// scenarioPlaces numbers the requests of the scenario's steps as a session of it numbers its
// rows (a user step starts a turn; each assistant and compact step is one request, the next
// step of the turn; a compaction's kind is compaction). An imported capture has one such
// step per captured request: its rows are then placed as the captured session's were.
func scenarioPlaces(sc *scenario.Scenario) []place {
	var out []place
	turn, step := 0, 0
	for _, st := range sc.Steps {
		switch {
		case st.User != nil:
			turn, step = turn+1, 0
		case st.Assistant != nil:
			step++
			out = append(out, place{turn, step, metrics.KindStep})
		case st.Compact != nil:
			step++
			out = append(out, place{turn, step, metrics.KindCompaction})
		}
	}
	return out
}

// capturedTurnStep is, for a capture whose scenario's steps do not match its requests one to
// one, a captured request's turn (its user messages, a compaction's summary
// included) and step (the assistant messages after the last user message, plus one).
func capturedTurnStep(req *chat.Request) (turn, step int) {
	step = 1
	for _, m := range req.Messages {
		switch m.Role {
		case chat.RoleUser:
			turn++
			step = 1
		case chat.RoleAssistant:
			step++
		}
	}
	return turn, step
}

// capturedReply is the reply the i-th captured request is sent with: its line's recorded reply,
// else the assistant message that follows its messages in the next request (the reply as the
// harness kept it), else an empty reply.
func capturedReply(lines []scenario.CapturedRequest, reqs []*chat.Request, i int) *chat.Reply {
	if rep := lines[i].Reply; rep != nil {
		out := &chat.Reply{Reasoning: rep.Reasoning, Content: rep.Content}
		for _, c := range rep.ToolCalls {
			out.ToolCalls = append(out.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		return out
	}
	if i+1 < len(reqs) {
		n, next := len(reqs[i].Messages), reqs[i+1].Messages
		if n < len(next) && next[n].Role == chat.RoleAssistant {
			m := next[n]
			return &chat.Reply{Reasoning: m.Reasoning, Content: m.Content, ToolCalls: m.ToolCalls, Thinking: m.Thinking}
		}
	}
	return &chat.Reply{}
}
