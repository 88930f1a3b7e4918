// Package supervise runs the model servers the lab starts (Ollama, llama-server) as detached
// processes it can find again: [Start] starts a command in its own process group with its output
// appended to a log file, waits until a health probe answers and records the process in a state
// file; [Attach] finds it again from that file, in this or a later lab process, checking that the
// pid still runs the recorded binary and that the probe answers; [Process.Stop] ends it with
// grace (SIGTERM, a wait, then SIGKILL to the whole group) and removes the state file.
//
// A server outlives the lab process that started it and ignores the terminal's Ctrl-C (its own
// process group); its log is a file, not a pipe, so it keeps writing after the lab exits. Only
// loopback addresses are handed out. Everything here runs on Linux (process
// groups, /proc/<pid>/cmdline and /proc/<pid>/stat).
package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sentinel errors of a server's life cycle; the errors of [Start] and [Attach] wrap them.
var (
	// ErrNotRunning means a state folder records no server, or one whose process has ended.
	ErrNotRunning = errors.New("server not running")
	// ErrAlreadyRunning means [Start] found a live server recorded in its state file; [Attach]
	// gets it.
	ErrAlreadyRunning = errors.New("server already running")
)

// Defaults of a [Spec].
const (
	// DefaultReadyTimeout is how long [Start] waits for the health probe unless told otherwise.
	DefaultReadyTimeout = 30 * time.Second
	// DefaultStopGrace is how long [Process.Stop] waits after SIGTERM before SIGKILL unless told
	// otherwise.
	DefaultStopGrace = 10 * time.Second
)

// Timing of the life cycle.
const (
	// probeTimeout bounds one health probe while Start waits.
	probeTimeout = 2 * time.Second
	// probeEvery is the pause between two probes while Start waits.
	probeEvery = 100 * time.Millisecond
	// attachTimeout bounds the health probe of Attach.
	attachTimeout = 5 * time.Second
	// killWait bounds the wait for a process group to end after SIGKILL.
	killWait = 5 * time.Second
	// logTailLines is how many lines of the server log an error of Start carries.
	logTailLines = 30
)

// Spec says which server to run and where its state lives. [Start] uses every field; [Attach]
// uses Name, Dir, StateFile, Ready and StopGrace.
type Spec struct {
	// Name names the server in errors and progress lines ("ollama", "llama-server").
	Name string
	// Binary is the executable. Required by Start, which makes it absolute: the state file
	// records it, and Attach takes a pid for this server only while the pid's command line runs
	// it (as the program, or as the first argument of an interpreter running a script).
	Binary string
	// Port is the loopback TCP port to serve on; 0 picks a free one.
	Port int
	// Command gives the command-line arguments after the program and the server's whole
	// environment (NAME=value; nil is an empty one) for the loopback address addr
	// ("127.0.0.1:<port>") and port Start chose. Required by Start.
	Command func(addr string, port int) (args, env []string)
	// Dir is the state folder, created if missing: the working directory, the log and the state
	// file. Required.
	Dir string
	// StateFile is the state file's name in Dir ("server.json"). Required.
	StateFile string
	// LogFile is the log's name in Dir ("server.log"), appended to. Required by Start.
	LogFile string
	// Ready is the health probe: nil when the server at base URL (http://host:port) answers as
	// ready, else why not. Start calls it until it answers nil (each call bounded to 2 s);
	// Attach once (5 s). Required.
	Ready func(ctx context.Context, url string) error
	// ReadyTimeout bounds Start's wait for Ready; 0 means [DefaultReadyTimeout].
	ReadyTimeout time.Duration
	// Describe, when set, is called by Start once Ready has answered, to give what the state
	// file records besides the process: a value whose JSON object's fields (what it serves, its
	// version) join the state file's own. Attach decodes them back into the value it is given.
	Describe func(ctx context.Context, url string) any
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL; 0 means
	// [DefaultStopGrace].
	StopGrace time.Duration
	// Log receives progress lines; nil means io.Discard.
	Log io.Writer
}

// State is a state file's own fields; [Spec].Describe's fields sit beside them.
type State struct {
	// PID is the server's process id; it leads its own process group.
	PID int `json:"pid"`
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string `json:"url"`
	// Log is the path of the server's log file.
	Log string `json:"log"`
	// Binary is the absolute path of the executable it runs.
	Binary string `json:"binary"`
	// Args are its command-line arguments after the program.
	Args []string `json:"args,omitempty"`
	// StartedAt is when it answered its health probe, UTC, to the second.
	StartedAt time.Time `json:"started_at"`
}

// Process is a server started by [Start] or found by [Attach].
type Process struct {
	State
	// Name is [Spec].Name.
	Name string
	// Dir is the absolute state folder.
	Dir string

	statePath string
	grace     time.Duration
	// exited is closed when the process this value started has been reaped; nil for one found
	// by Attach.
	exited chan struct{}
}

// loopbackAddr returns 127.0.0.1:<port> for a server named name to listen on: port, or a free
// one when port is 0, with the port. It fails when the port given is taken: another server there
// would answer in place of the one started. A free port it picked that another process takes
// before it is checked (other programs pick free ports too) is given up for another, up to
// freePortTries times.
func loopbackAddr(name string, port int) (addr string, portUsed int, err error) {
	if port != 0 {
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return "", 0, fmt.Errorf("start %s: port %d: %w", name, port, err)
		}
		l.Close()
		return addr, port, nil
	}
	for try := 1; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", 0, fmt.Errorf("find free port: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err = net.Listen("tcp", addr)
		if err == nil {
			l.Close()
			return addr, port, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == freePortTries {
			return "", 0, fmt.Errorf("start %s: port %d: %w", name, port, err)
		}
	}
}

// freePortTries is how many free ports loopbackAddr picks before it gives up.
const freePortTries = 10

// Start starts s.Binary on a loopback port (s.Port, or a free one), with the arguments and
// environment s.Command gives for it, in its own process group, working in s.Dir, its output
// appended to <Dir>/<LogFile> after a line "--- lab: starting ...", so that it outlives the lab
// process; ctx bounds only the start-up. It waits until s.Ready answers (up to s.ReadyTimeout),
// records the process (and s.Describe's fields) in <Dir>/<StateFile> and returns it. If the
// process exits, or does not answer in time, it is killed and the error carries the log's last
// lines. If the state file records a live server already, the error wraps [ErrAlreadyRunning]
// (or says why that server does not answer), and nothing is started.
func Start(ctx context.Context, s Spec) (*Process, error) {
	if s.Log == nil {
		s.Log = io.Discard
	}
	if s.Dir == "" {
		return nil, fmt.Errorf("start %s: no state folder given", s.Name)
	}
	if fi, err := os.Stat(s.Binary); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("start %s: binary %q not found", s.Name, s.Binary)
	}
	bin, err := filepath.Abs(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.Binary = bin
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.Dir = dir
	statePath := filepath.Join(dir, s.StateFile)
	if st, err := readState(statePath, nil); err == nil && st.PID > 0 && alive(st.PID, st.Binary) {
		p, err := Attach(ctx, s, nil)
		if err == nil {
			return nil, fmt.Errorf("start %s in %s: %w (pid %d at %s)", s.Name, dir, ErrAlreadyRunning, p.PID, p.URL)
		}
		return nil, fmt.Errorf("start %s in %s: the server recorded in %s is alive but %w; stop pid %d or remove the file", s.Name, dir, s.StateFile, err, st.PID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	addr, port, err := loopbackAddr(s.Name, s.Port)
	if err != nil {
		return nil, err
	}
	args, env := s.Command(addr, port)
	p := &Process{
		State:     State{URL: "http://" + addr, Log: filepath.Join(dir, s.LogFile), Binary: s.Binary, Args: args},
		Name:      s.Name,
		Dir:       dir,
		statePath: statePath,
		grace:     s.StopGrace,
		exited:    make(chan struct{}),
	}
	logf, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "--- lab: starting %s on %s at %s\n", strings.Join(append([]string{s.Binary}, args...), " "), addr, time.Now().Format(time.RFC3339))
	// exec.Command, not CommandContext: the server must outlive ctx and the lab process.
	cmd := exec.Command(s.Binary, args...)
	cmd.Dir = dir
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdout = logf // a file, not a pipe: the server keeps writing after the lab exits
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Binary, err)
	}
	p.PID = cmd.Process.Pid
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	fmt.Fprintf(s.Log, "starting %s on %s (pid %d, log %s)...\n", s.Name, p.URL, p.PID, p.Log)

	fail := func(err error) (*Process, error) {
		p.Kill()
		return nil, fmt.Errorf("start %s on %s: %w; last lines of %s:\n%s", s.Name, addr, err, p.Log, logTail(p.Log, logStart))
	}
	timeout := s.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(wctx, probeTimeout)
		perr := s.Ready(pctx, p.URL)
		pcancel()
		if perr == nil {
			select {
			case <-p.exited: // whoever answered, it was not this server
				return fail(errors.New("server exited"))
			default:
			}
			break
		}
		select {
		case <-p.exited:
			return fail(errors.New("server exited"))
		case <-wctx.Done():
			return fail(fmt.Errorf("not ready: %w (last probe: %v)", wctx.Err(), perr))
		case <-time.After(probeEvery):
		}
	}
	var info any
	if s.Describe != nil {
		info = s.Describe(ctx, p.URL)
	}
	p.StartedAt = time.Now().UTC().Truncate(time.Second)
	if err := writeState(p.statePath, p.State, info); err != nil {
		p.Kill()
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	return p, nil
}

// Attach returns the server recorded in <dir>/<s.StateFile> (dir is s.Dir) if its process is
// alive, still runs the recorded binary and answers s.Ready (within ctx and 5 s). info, when not
// nil, is a pointer the state file is decoded into as well (the fields [Spec].Describe gave).
// When the folder records no server, or one whose process has ended (its stale state file is then
// removed), the error wraps [ErrNotRunning].
func Attach(ctx context.Context, s Spec, info any) (*Process, error) {
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.Name, err)
	}
	statePath := filepath.Join(dir, s.StateFile)
	st, err := readState(statePath, info)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("attach %s in %s: %w", s.Name, dir, ErrNotRunning)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", s.Name, err)
	}
	if st.PID <= 0 || !alive(st.PID, st.Binary) {
		os.Remove(statePath)
		return nil, fmt.Errorf("attach %s in %s: pid %d has ended: %w", s.Name, dir, st.PID, ErrNotRunning)
	}
	if u, err := url.Parse(st.URL); err != nil || u.Host == "" {
		return nil, fmt.Errorf("attach %s: read %s: url %q is no server address", s.Name, statePath, st.URL)
	}
	p := &Process{State: st, Name: s.Name, Dir: dir, statePath: statePath, grace: s.StopGrace}
	rctx, cancel := context.WithTimeout(ctx, attachTimeout)
	defer cancel()
	if err := s.Ready(rctx, st.URL); err != nil {
		return nil, fmt.Errorf("attach %s pid %d at %s: %w", s.Name, st.PID, st.URL, err)
	}
	return p, nil
}

// Host returns the host:port of p's URL.
func (p *Process) Host() string {
	u, err := url.Parse(p.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// Stop ends the server: SIGTERM to the server, then after the grace ([Spec].StopGrace) SIGKILL to
// its whole process group (the server and any child it started, such as Ollama's model runners).
// It removes the state file if that still records this server. Stopping a server that has
// already exited is not an error, and signals nothing: its pid may be another program's by now
// (see [Process.signal]). One still running 5 s after SIGKILL is an error.
func (p *Process) Stop() error {
	defer p.removeState()
	if err := p.signal(syscall.SIGTERM, false); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			p.killOrphans()
			return nil
		}
		return fmt.Errorf("stop %s pid %d: %w", p.Name, p.PID, err)
	}
	grace := p.grace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	if p.waitExit(grace) {
		return nil
	}
	if err := p.signal(syscall.SIGKILL, true); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s pid %d: %w", p.Name, p.PID, err)
	}
	if !p.waitExit(killWait) {
		return fmt.Errorf("stop %s pid %d: still running after SIGKILL", p.Name, p.PID)
	}
	return nil
}

// Kill ends the server's whole process group at once (SIGKILL) and waits up to 5 s for it; it
// leaves the state file alone. A server found by Attach that has already exited is left alone,
// its group too. For a server this value started and has reaped (one that died during Start),
// the group is still killed ([Process.killOrphans]): its children may outlive it.
func (p *Process) Kill() {
	if p.signal(syscall.SIGKILL, true) == nil {
		p.waitExit(killWait)
		return
	}
	p.killOrphans()
}

// killOrphans kills what is left of the process group of a server this value started and has
// reaped (Ollama's model runners, say). The group's id is the dead server's pid, which the kernel
// gives to no new process while a member of the group remains. So while no process has that pid,
// kill(2) of -pid reaches only those members (or nothing, ESRCH, once none is left); once a
// process has it again, the old group is empty and the pid another program's, and nothing is
// sent. A server found by Attach is not this process's child and is left alone.
func (p *Process) killOrphans() {
	if p.exited == nil || !p.Exited() {
		return
	}
	if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
		return // the pid is another program's: the old group is empty
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
}

// signal sends sig to the server, or to its whole process group when group is set, only while
// its pid is still the server's: not reaped, for a process this value started; for one found by
// Attach, still running the recorded binary. The pid is held through a pidfd (pidfd_open(2),
// Linux 5.3) opened before that check, so the server is signalled, not a program that got its pid
// since (pidfd_send_signal(2)); the group is signalled (kill(2) of -pid) while the pidfd shows the
// server alive, so the group is still the one it leads. An ended server gives ESRCH.
func (p *Process) signal(sig syscall.Signal, group bool) error {
	if p.Exited() {
		return syscall.ESRCH
	}
	fd, err := unix.PidfdOpen(p.PID, 0)
	if errors.Is(err, unix.ENOSYS) {
		// A kernel without pidfds: the check above is all there is.
		if group {
			return syscall.Kill(-p.PID, sig)
		}
		return syscall.Kill(p.PID, sig)
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if p.Exited() { // the pid went to another program before the pidfd was opened
		return syscall.ESRCH
	}
	if !group {
		return unix.PidfdSendSignal(fd, sig, nil, 0)
	}
	if err := unix.PidfdSendSignal(fd, 0, nil, 0); err != nil {
		return err
	}
	return syscall.Kill(-p.PID, sig)
}

// Exited reports whether the server has ended: for a process this value started, whether it has
// been reaped; for one found by Attach, whether its pid no longer runs the recorded binary.
func (p *Process) Exited() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
	return !alive(p.PID, p.Binary)
}

// waitExit waits up to d for the process to end and reports whether it did.
func (p *Process) waitExit(d time.Duration) bool {
	deadline := time.After(d)
	for {
		if p.exited != nil {
			select {
			case <-p.exited:
				return true
			case <-deadline:
				return false
			}
		}
		if !alive(p.PID, p.Binary) {
			return true
		}
		select {
		case <-deadline:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// removeState deletes the state file if it records this server's pid.
func (p *Process) removeState() {
	if st, err := readState(p.statePath, nil); err == nil && st.PID == p.PID {
		os.Remove(p.statePath)
	}
}

// alive reports whether pid is a live process running binary: not ended, not a zombie, and not
// another program that got the pid of a server that has ended. The command line must name binary
// as the program or, for a script, as its first argument; a process whose command line cannot be
// read (another user's) is taken at its pid.
func alive(pid int, binary string) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		argv := strings.Split(string(bytes.TrimRight(cl, "\x00")), "\x00")
		if binary == "" || !(argv[0] == binary || len(argv) > 1 && argv[1] == binary) {
			return false
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state letter follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// readState reads the state file at path, and into info too when it is not nil; a missing file
// gives an error wrapping os.ErrNotExist.
func readState(path string, info any) (State, error) {
	var st State
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	if info != nil {
		if err := json.Unmarshal(b, info); err != nil {
			return st, fmt.Errorf("read %s: %w", path, err)
		}
	}
	return st, nil
}

// writeState records st and info's fields (a JSON object; the state's own fields win a clash)
// in the state file at path, atomically.
func writeState(path string, st State, info any) error {
	fields := map[string]json.RawMessage{}
	if info != nil {
		b, err := json.Marshal(info)
		if err != nil {
			return fmt.Errorf("write server state: %w", err)
		}
		if err := json.Unmarshal(b, &fields); err != nil {
			return fmt.Errorf("write server state: %T is no JSON object: %w", info, err)
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("write server state: %w", err)
	}
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("write server state: %w", err)
	}
	out, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return fmt.Errorf("write server state: %w", err)
	}
	return WriteFileAtomic(path, append(out, '\n'))
}

// WriteFileAtomic writes b to path through a temporary file beside it and a rename, so that a
// reader of a state folder's file finds the old content or the new, never a part. The error
// names the file.
func WriteFileAtomic(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// logTail returns the last lines the file at path got from offset on.
func logTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "(unreadable log: " + err.Error() + ")"
	}
	b, _ := io.ReadAll(f)
	return Tail(b, logTailLines)
}

// Tail returns the last n lines of a command's or server's output out, for an error message.
func Tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
