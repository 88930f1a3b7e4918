package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"lab/tools"
)

// shell answers a live session's bash call by running it for real (the scenario's `shell:`):
// in the workspace, or in cwd relative to the project root (spec 3.2.0 §11: bash starts in the
// project root; its cwd argument is resolved against it), without network, within the scenario's
// time limit and the turn's. Like any output it is capped (§3) and never deduplicated (§6).
func (r *runner) shell(ctx context.Context, raw json.RawMessage) string {
	var a struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return r.hs.Result("Error: arguments: " + err.Error())
	}
	if strings.TrimSpace(a.Command) == "" {
		return r.hs.Result("Error: bash: command is required")
	}
	dir, err := r.ws.Dir(a.Cwd)
	if err != nil {
		return r.hs.Result("Error: bash: cwd: " + err.Error())
	}
	// The scenario's own limit for its commands, else the run's tool time limit.
	limit := r.cfg.Scenario.Shell.Limit
	if r.cfg.Scenario.Shell.Timeout == "" || limit <= 0 {
		limit = r.cfg.Driver.toolLimit()
	}
	sh, err := r.ws.Shell()
	if err != nil {
		return r.hs.Result("Error: bash: " + err.Error())
	}
	sh.Limit, sh.Unsandboxed = limit, r.cfg.Driver.UnsandboxedShell
	res, err := sh.Run(ctx, dir, a.Command)
	if err == nil && res.Isolation != tools.IsolationView && !r.warnedUnsandboxed && r.cfg.Warn != nil {
		r.warnedUnsandboxed = true
		r.cfg.Warn(fmt.Errorf("%s/%s: the machine refused the shell's sandbox (%s): with --unsandboxed-shell its commands run with isolation %q", r.cfg.Scenario.Name, r.cfg.Arm.Name, strings.Join(res.Refused, "; "), res.Isolation))
	}
	if err != nil {
		if r.cfg.Warn != nil {
			r.cfg.Warn(fmt.Errorf("%s/%s: bash %s: %w", r.cfg.Scenario.Name, r.cfg.Arm.Name, strconv.Quote(a.Command), err))
		}
		return r.hs.Result("Error: bash: " + err.Error())
	}
	text := res.Text(limit)
	if res.TimedOut {
		// The turn's limit, or the run's stop, came before the command's own limit.
		own := fmt.Sprintf("(killed: the command ran past its time limit of %s)", limit)
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			text = strings.TrimSuffix(text, own) + "(killed: the command ran past the turn's time limit)"
		case ctx.Err() != nil:
			text = strings.TrimSuffix(text, own) + "(killed: the run was stopped)"
		}
		if r.cfg.Warn != nil {
			r.cfg.Warn(fmt.Errorf("%s/%s turn %d step %d: bash %s was killed: %s; the model was told so and the run goes on", r.cfg.Scenario.Name, r.cfg.Arm.Name, r.turn, r.step, strconv.Quote(a.Command), strings.Trim(text[strings.LastIndex(text, "(killed:"):], "()")))
		}
	}
	return r.hs.Result(text)
}
