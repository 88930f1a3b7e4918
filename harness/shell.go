package harness

// This file is the live driver's real shell: a scenario's `shell:` gives the model a
// bash tool that runs its commands for real, in the workspace, without network and within a time
// limit. The scripted driver never runs a command: it answers the scenario's scripted outputs
// (runner.bash), so a scripted run replays the same bytes on every machine.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// MaxShellOutput bounds what the lab keeps of one command's output, in bytes (1 MiB): the rest
// is dropped and a last line says how much. What is kept is then capped on its way into the
// prompt like any output (spec 3.2.0 §3) and stored in full for recall (§4).
const MaxShellOutput = 1 << 20

// shellPath is the shell that runs a command line.
const shellPath = "/bin/sh"

// ShellEnv is the whole environment a command runs with: the lab's own environment (API keys
// among it) never reaches the model's commands. HOME is home: a live session gives
// [Workspace.ShellHome], outside the project.
func ShellEnv(home string) []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home,
		"LANG=C.UTF-8",
		"TERM=dumb",
	}
}

// ShellResult is what one command did.
type ShellResult struct {
	// Output is stdout and stderr as one text, in the order written, at most [MaxShellOutput]
	// bytes.
	Output string
	// Dropped is the number of output bytes beyond [MaxShellOutput], not kept.
	Dropped int64
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int
	// TimedOut reports that the time limit killed the command (and every process it started).
	TimedOut bool
}

// Text is the result as the model reads it: the output, a line for dropped output, and, as the
// scripted commands do, "(exit status N)" when not 0, or the time limit that killed it.
func (r ShellResult) Text(limit time.Duration) string {
	out := strings.TrimRight(r.Output, "\n")
	var tail []string
	if r.Dropped > 0 {
		tail = append(tail, fmt.Sprintf("[%d more bytes of output not kept]", r.Dropped))
	}
	switch {
	case r.TimedOut:
		tail = append(tail, fmt.Sprintf("(killed: the command ran past its time limit of %s)", limit))
	case r.ExitCode != 0:
		tail = append(tail, fmt.Sprintf("(exit status %d)", r.ExitCode))
	}
	if len(tail) == 0 {
		return out
	}
	if out == "" {
		return strings.Join(tail, "\n")
	}
	return out + "\n" + strings.Join(tail, "\n")
}

// ErrNoIsolation is returned (wrapped) when the machine refuses the new network namespace a
// command needs: the lab then runs no command at all rather than one with network.
var ErrNoIsolation = errors.New("the shell needs a network namespace of its own")

// RunShell runs command with /bin/sh -c in dir, with [ShellEnv](home), stdin empty, in a network
// namespace of its own holding only a loopback interface that is down (so no address, not even
// the machine's loopback, can be reached), in a user namespace of its own (so that, even when
// the lab runs as root, it can neither enter the lab's network namespace again nor read the
// environment of the lab's processes through /proc) and in a PID namespace of its own that is
// killed whole when /bin/sh ends or limit (or ctx) runs out: nothing the command starts, in the
// background or in a session of its own, outlives it. Output past [MaxShellOutput] is counted,
// not kept.
//
// It is not a filesystem sandbox: the command runs as the lab's user and can reach what that
// user can (a scenario's author enables it), a Unix socket file among it. Nor does it bound the
// number of processes a command starts before its time limit. The error is non-nil only when
// the command could not be started: a refused namespace wraps [ErrNoIsolation].
func RunShell(ctx context.Context, dir, home, command string, limit time.Duration) (ShellResult, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, shellPath, "-c", command)
	cmd.Dir = dir
	cmd.Env = ShellEnv(home)
	out := &cappedBuffer{max: MaxShellOutput}
	cmd.Stdout, cmd.Stderr = out, out
	attr, err := isolation()
	if err != nil {
		return ShellResult{}, fmt.Errorf("%w: %v", ErrNoIsolation, err)
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	// A process the command left behind may hold the output open: stop waiting for it soon
	// after the kill.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); cmd.ProcessState == nil {
		// Not started: the namespace was refused (or /bin/sh is missing).
		return ShellResult{}, fmt.Errorf("%w: start %s: %v", ErrNoIsolation, shellPath, err)
	}
	res := ShellResult{Output: out.buf.String(), Dropped: out.dropped, ExitCode: cmd.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		// cmd.Cancel killed the group, and the kernel the rest of the PID namespace: nothing to
		// kill here (the group's id may already name another group).
		res.TimedOut, res.ExitCode = true, -1
	}
	return res, nil
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room >= len(p) {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

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
	dir, name, err := r.ws.resolve(a.Cwd)
	if err == nil {
		var fi os.FileInfo
		if fi, err = r.ws.stat(name); err != nil {
			err = fmt.Errorf("stat %s: %w", dir, unwrapPathError(err))
		} else if !fi.IsDir() {
			err = fmt.Errorf("%s is not a directory", dir)
		}
	}
	if err != nil {
		return r.hs.Result("Error: bash: cwd: " + err.Error())
	}
	// The scenario's own limit for its commands, else the run's tool time limit.
	limit := r.cfg.Scenario.Shell.Limit
	if r.cfg.Scenario.Shell.Timeout == "" || limit <= 0 {
		limit = r.cfg.Driver.toolLimit()
	}
	home, err := r.ws.ShellHome()
	if err != nil {
		return r.hs.Result("Error: bash: " + err.Error())
	}
	res, err := RunShell(ctx, dir, home, a.Command, limit)
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
