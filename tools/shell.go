package tools

// This file is the live driver's real shell: a scenario's `shell:` gives the model a
// bash tool that runs its commands for real, in the workspace, without network and within a time
// limit. The scripted driver never runs a command: it answers the scenario's scripted outputs
// (the harness answers bash from them), so a scripted run replays the same bytes on every machine.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultShellTimeout bounds a command when the shell is given no limit (a scenario's `shell:`
// without a timeout).
const DefaultShellTimeout = 30 * time.Second

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
	// Isolation is how the command ran: [IsolationView], or with [Shell].Unsandboxed a weaker
	// one the machine allowed ([IsolationNamespaces], [IsolationNone]); Refused says why each
	// stricter one was refused.
	Isolation string
	Refused   []string
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

// ErrNoIsolation is returned (wrapped) when the machine refuses the namespaces a command needs
// (user, mount, network, PID) or the filesystem view built in them: the lab then runs no command
// at all rather than one with network or with the whole filesystem, unless [Shell].Unsandboxed
// says the user accepts that.
var ErrNoIsolation = errors.New("the shell needs namespaces of its own (user, mount, network, PID)")

// The isolations a command ran with ([ShellResult].Isolation), from the strictest.
const (
	// IsolationView is the sandbox: user, mount, network, PID, IPC, UTS and cgroup namespaces,
	// and the filesystem view in them.
	IsolationView = "namespaces and filesystem view"
	// IsolationNamespaces is user, network and PID namespaces with the host's whole filesystem
	// (the machine refused the view; only with [Shell].Unsandboxed).
	IsolationNamespaces = "namespaces without a filesystem view"
	// IsolationNone is a plain /bin/sh as the lab's user, with its network and filesystem (the
	// machine refused every namespace; only with [Shell].Unsandboxed).
	IsolationNone = "none"
)

// Shell is how the live shell runs commands for one project.
type Shell struct {
	// Project is the project copy, bound read-write in the view; Home the command's HOME
	// ([Workspace.ShellHome]), bound read-write too. Both are absolute paths, as the command
	// sees them (its cwd, $HOME, what pwd and error messages print).
	Project, Home string
	// ProjectDir and HomeDir are where Project and Home really are on the machine ("" means at
	// their own paths): the view mounts each at its shown path ([Sandbox], [PrivateSandbox]), so
	// the command sees and prints the shown paths and never the real ones. A shell without the
	// view ([Shell].Unsandboxed) cannot show a folder where it is not: it refuses to run when
	// either differs from its shown path.
	ProjectDir, HomeDir string
	// Limit bounds the wall time of each command; 0 means [DefaultShellTimeout].
	Limit time.Duration
	// Unsandboxed lets a command run where the machine refuses the sandbox: with user,
	// network and PID namespaces but the host's whole filesystem if the machine refuses only
	// the view, or as a plain /bin/sh if it refuses every namespace. false refuses the command
	// ([ErrNoIsolation]).
	Unsandboxed bool
}

// RunShell runs command in dir as [Shell.Run] does, for the project dir with HOME home, within
// limit, refused where the machine refuses the sandbox.
func RunShell(ctx context.Context, dir, home, command string, limit time.Duration) (ShellResult, error) {
	return Shell{Project: dir, Home: home, Limit: limit}.Run(ctx, dir, command)
}

// Run runs command with /bin/sh -c in dir (in sh.Project or sh.Home), with [ShellEnv](sh.Home),
// stdin empty, no terminal (a session of its own) and no descriptor but stdin, stdout and
// stderr, in namespaces of its own:
//   - a mount namespace whose root holds only the project copy and HOME, read-write at their
//     shown paths (Project and Home, mounted from ProjectDir and HomeDir), /usr, /bin, /sbin,
//     /lib* and /etc of the host read-only, a private /tmp (an in-memory filesystem of at
//     most [ShellTmpBytes], emptied after each command), a /dev of null, zero, full, random
//     and urandom, and a /proc of its own PID namespace (its processes, no /proc/sys or
//     other kernel setting): nothing else of the host (not the run's results folder, not
//     the lab's folder or its temporary folder, no other process) can be read or written,
//     and the command, left with no capability, cannot undo the view;
//   - a network namespace holding only a loopback interface that is down (no address, not even
//     the machine's loopback, can be reached);
//   - a user namespace of its own, so that even a lab running as root gives the command no
//     power over the machine's namespaces; a root lab's command runs as the host's nobody
//     (65534), to whom the project and HOME are given (the lab, root, still reads and writes
//     them), not as the host's root;
//   - a PID namespace of its own, killed whole when /bin/sh ends or the limit (or ctx) runs out:
//     nothing the command starts, in the background or in a session of its own, outlives it;
//   - IPC, UTS and cgroup namespaces of its own, and a session keyring of its own: no shared
//     memory or message queue of the host, no key of the lab's session.
//
// Output past [MaxShellOutput] is counted, not kept. It does not bound the processes or memory
// a command uses within its time limit (other than /tmp's size). The error is non-nil only when
// the command could not be started: a refused namespace or view wraps [ErrNoIsolation] (with
// sh.Unsandboxed the next isolation is tried instead: [ShellResult].Isolation says which ran).
func (sh Shell) Run(ctx context.Context, dir, command string) (ShellResult, error) {
	limit := sh.Limit
	if limit <= 0 {
		limit = DefaultShellTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	levels := []string{IsolationView}
	if sh.Unsandboxed {
		levels = append(levels, IsolationNamespaces, IsolationNone)
	}
	var refused []string
	for i, level := range levels {
		res, err := sh.runAt(ctx, level, dir, command)
		if errors.Is(err, ErrNoIsolation) && i < len(levels)-1 {
			refused = append(refused, err.Error())
			continue
		}
		if err != nil && len(refused) > 0 {
			err = fmt.Errorf("%w (before: %s)", err, strings.Join(refused, "; "))
		}
		res.Isolation, res.Refused = level, refused
		return res, err
	}
	panic("unreachable")
}

// runAt runs command with the isolation level.
func (sh Shell) runAt(ctx context.Context, level, dir, command string) (ShellResult, error) {
	var cmd *exec.Cmd
	var report *os.File
	switch level {
	case IsolationView:
		c, r, done, err := viewCommand(ctx, sh, dir, command)
		if err != nil {
			return ShellResult{}, fmt.Errorf("%w: %v", ErrNoIsolation, err)
		}
		defer done()
		defer r.Close()
		cmd, report = c, r
	case IsolationNamespaces:
		if err := sh.shownWhereTheyAre(); err != nil {
			return ShellResult{}, err
		}
		attr, err := isolation()
		if err != nil {
			return ShellResult{}, fmt.Errorf("%w: %v", ErrNoIsolation, err)
		}
		cmd = exec.CommandContext(ctx, shellPath, "-c", command)
		cmd.SysProcAttr = attr
		cmd.Env = ShellEnv(sh.Home)
	default:
		if err := sh.shownWhereTheyAre(); err != nil {
			return ShellResult{}, err
		}
		cmd = exec.CommandContext(ctx, shellPath, "-c", command)
		cmd.SysProcAttr = plainAttr()
		cmd.Env = ShellEnv(sh.Home)
	}
	if level != IsolationView {
		cmd.Dir = dir // the view's init enters dir once the view is built
	}
	out := &cappedBuffer{max: MaxShellOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	// A process the command left behind may hold the output open: stop waiting for it soon
	// after the kill.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the init's end of the report pipe
	}
	if err != nil {
		// Not started: the namespaces were refused (or /bin/sh is missing).
		return ShellResult{}, fmt.Errorf("%w: start %s: %v", ErrNoIsolation, cmd.Path, err)
	}
	_ = cmd.Wait()
	if report != nil {
		if msg, _ := io.ReadAll(report); len(msg) > 0 {
			return ShellResult{}, fmt.Errorf("%w: %s", ErrNoIsolation, msg)
		}
	}
	res := ShellResult{Output: out.buf.String(), Dropped: out.dropped, ExitCode: cmd.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		// cmd.Cancel killed the group, and the kernel the rest of the PID namespace: nothing to
		// kill here (the group's id may already name another group).
		res.TimedOut, res.ExitCode = true, -1
	}
	return res, nil
}

// hostDirs returns where sh.Project and sh.Home really are ([Shell].ProjectDir, HomeDir; their
// own paths when those are "").
func (sh Shell) hostDirs() (project, home string) {
	project, home = sh.ProjectDir, sh.HomeDir
	if project == "" {
		project = sh.Project
	}
	if home == "" {
		home = sh.Home
	}
	return project, home
}

// shownWhereTheyAre refuses a shell without the view for a project or HOME shown elsewhere than
// where they are: its commands would name (and look for) the real folders, not the shown ones.
func (sh Shell) shownWhereTheyAre() error {
	if p, h := sh.hostDirs(); p != sh.Project || h != sh.Home {
		return fmt.Errorf("the project %s is really at %s: only the shell's filesystem view shows it at its shown path (claim the sandbox's fixed folder for a shell without the view: ClaimSandbox)", sh.Project, p)
	}
	return nil
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
