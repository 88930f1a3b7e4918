package localserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sentinel errors of the llama-server life cycle.
var (
	// ErrLlamaNotRunning means a state folder records no llama-server, or one whose process has
	// ended.
	ErrLlamaNotRunning = errors.New("localserver: no llama-server running")
	// ErrLlamaAlreadyRunning means StartLlamaServer found a live llama-server recorded in its
	// state folder; use [AttachLlamaServer] to get it.
	ErrLlamaAlreadyRunning = errors.New("localserver: llama-server already running")
)

// Defaults of [LlamaStartOptions].
const (
	// DefaultLlamaCtx is the context size (-c) StartLlamaServer gives the one slot, the lab's
	// default num_ctx for Ollama.
	DefaultLlamaCtx = 40960
	// defaultLlamaTimeout bounds how long StartLlamaServer waits for GET /health to answer 200
	// (a real model loads from disk first).
	defaultLlamaTimeout = 5 * time.Minute
)

// LlamaStartOptions says how to start a user's own llama-server (llama.cpp).
type LlamaStartOptions struct {
	// Binary is the llama-server executable. Required.
	Binary string
	// Model is the GGUF file to serve (-m). Required.
	Model string
	// Dir is the state folder, created if missing: the log at <Dir>/llama-server.log (appended
	// to), the state file <Dir>/llama-server.json and the slot-save folder <Dir>/slots.
	// Required.
	Dir string
	// Port is the loopback TCP port to serve on; 0 picks a free one.
	Port int
	// CtxSize is the context size in tokens (-c); 0 means [DefaultLlamaCtx]. With one slot it
	// is the slot's context.
	CtxSize int
	// Args are extra command-line arguments, appended after the lab's own (for example
	// "-ngl", "99" or "--chat-template-file", "qwen3.jinja").
	Args []string
	// Env holds extra NAME=value settings for the server. Any LLAMA_ARG_ variable of the lab's
	// own environment is dropped, so that the server is configured only from here.
	Env []string
	// Timeout bounds the wait for the model to load; 0 means 5 minutes.
	Timeout time.Duration
	// Log receives progress lines; nil means io.Discard.
	Log io.Writer
}

// LlamaServer is a running llama-server, started by [StartLlamaServer] or found by
// [AttachLlamaServer].
type LlamaServer struct {
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string
	// LogPath is the file the server's output is appended to.
	LogPath string
	// PID is the server's process id; the server leads its own process group.
	PID int
	// BuildInfo is what GET /props reported as build_info ("b7212-a1b2c3d4"); "" when the
	// build does not say.
	BuildInfo string
	// ModelPath is the GGUF file the server loaded (/props model_path).
	ModelPath string
	// Args are the arguments the server was started with.
	Args []string
	// Dir is the state folder.
	Dir string
	// Binary is the llama-server executable it runs.
	Binary string

	// exited is closed when the process this value started has been reaped; nil for a server
	// found by AttachLlamaServer.
	exited chan struct{}
}

// llamaState is the content of <Dir>/llama-server.json.
type llamaState struct {
	PID       int       `json:"pid"`
	URL       string    `json:"url"`
	Log       string    `json:"log"`
	BuildInfo string    `json:"build_info"`
	ModelPath string    `json:"model_path"`
	Binary    string    `json:"binary"`
	Args      []string  `json:"args"`
	StartedAt time.Time `json:"started_at"`
}

// llamaStatePath returns the state file's path in dir.
func llamaStatePath(dir string) string { return filepath.Join(dir, "llama-server.json") }

// llamaEnv returns the server's environment: the lab's own minus LLAMA_ARG_* variables (which
// would configure the server behind the lab's back), then extra.
func llamaEnv(base, extra []string) []string {
	var env []string
	for _, e := range base {
		if !strings.HasPrefix(e, "LLAMA_ARG_") {
			env = append(env, e)
		}
	}
	return append(env, extra...)
}

// LlamaArgs returns the command line StartLlamaServer gives llama-server: the model, the
// loopback address, one slot (-np 1), Jinja chat templates (--jinja, needed for tools), the
// context size, and --slot-save-path (without it the server refuses every slot action, the
// erase of a cold start included). help is the output of `llama-server --help`: when it lists
// --slots, the slots endpoint is switched on explicitly (older builds had it off), and when it
// lists --cache-ram, the host-RAM prompt cache is switched off (--cache-ram 0), since it could
// restore an erased prompt and warm a cold start. Extra arguments come last.
func LlamaArgs(model, host string, port, ctx int, slotDir, help string, extra []string) []string {
	args := []string{"-m", model, "--host", host, "--port", strconv.Itoa(port), "-np", "1", "--jinja",
		"-c", strconv.Itoa(ctx), "--slot-save-path", slotDir}
	if hasFlag(help, "--slots") {
		args = append(args, "--slots")
	}
	if hasFlag(help, "--cache-ram") {
		args = append(args, "--cache-ram", "0")
	}
	return append(args, extra...)
}

// hasFlag reports whether a --help text lists flag as a whole word.
func hasFlag(help, flag string) bool {
	for i := 0; ; {
		j := strings.Index(help[i:], flag)
		if j < 0 {
			return false
		}
		end := i + j + len(flag)
		if end == len(help) || !isFlagChar(help[end]) {
			if i+j == 0 || !isFlagChar(help[i+j-1]) {
				return true
			}
		}
		i = end
	}
}

func isFlagChar(b byte) bool {
	return b == '-' || b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// llamaHelp runs `binary --help` (at most 20 s) and returns its output; "" when it fails.
func llamaHelp(ctx context.Context, binary string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, binary, "--help").CombinedOutput()
	return string(out)
}

// StartLlamaServer starts the user's llama-server with the GGUF o.Model on 127.0.0.1:<o.Port>
// in its own process group, so that it outlives the lab process and ignores the terminal's
// Ctrl-C; ctx bounds only the start-up. The command line is [LlamaArgs]'s; the output is
// appended to <Dir>/llama-server.log. It waits until GET /health answers 200 (503 while the
// model loads; up to o.Timeout), reads GET /props for the build and model path, records the
// state in <Dir>/llama-server.json and returns. If the process exits or the model does not load
// in time, the error carries the log's last lines. If the folder records a live server already,
// the error wraps [ErrLlamaAlreadyRunning].
func StartLlamaServer(ctx context.Context, o LlamaStartOptions) (*LlamaServer, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Dir == "" {
		return nil, errors.New("start llama-server: no state folder given")
	}
	if !isFile(o.Binary) {
		return nil, fmt.Errorf("start llama-server: binary %q not found", o.Binary)
	}
	if !isFile(o.Model) {
		return nil, fmt.Errorf("start llama-server: model %q not found", o.Model)
	}
	if o.CtxSize < 0 {
		return nil, fmt.Errorf("start llama-server: context size %d is negative", o.CtxSize)
	}
	if o.CtxSize == 0 {
		o.CtxSize = DefaultLlamaCtx
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultLlamaTimeout
	}
	var err error
	if o.Binary, err = filepath.Abs(o.Binary); err != nil {
		return nil, fmt.Errorf("start llama-server: %w", err)
	}
	if o.Model, err = filepath.Abs(o.Model); err != nil {
		return nil, fmt.Errorf("start llama-server: %w", err)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("start llama-server: %w", err)
	}
	if st, err := readLlamaState(dir); err == nil && st.PID > 0 && llamaAlive(st.PID, st.Binary) {
		s, err := AttachLlamaServer(ctx, dir)
		if err == nil {
			return nil, fmt.Errorf("start llama-server in %s: %w (pid %d at %s)", dir, ErrLlamaAlreadyRunning, s.PID, s.URL)
		}
		return nil, fmt.Errorf("start llama-server in %s: the server recorded in llama-server.json is alive but %w; stop pid %d or remove the file", dir, err, st.PID)
	}
	slotDir := filepath.Join(dir, "slots")
	if err := os.MkdirAll(slotDir, 0o755); err != nil {
		return nil, fmt.Errorf("start llama-server: %w", err)
	}
	host, port, err := loopbackHost("llama-server", o.Port)
	if err != nil {
		return nil, err
	}

	args := LlamaArgs(o.Model, "127.0.0.1", port, o.CtxSize, slotDir, llamaHelp(ctx, o.Binary), o.Args)
	s := &LlamaServer{
		URL:     "http://" + host,
		LogPath: filepath.Join(dir, "llama-server.log"),
		Args:    args,
		Dir:     dir,
		Binary:  o.Binary,
		exited:  make(chan struct{}),
	}
	logf, err := os.OpenFile(s.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "--- lab: starting %s %s at %s\n", o.Binary, strings.Join(args, " "), time.Now().Format(time.RFC3339))
	// exec.Command, not CommandContext: the server must outlive ctx and the lab process.
	cmd := exec.Command(o.Binary, args...)
	cmd.Dir = dir
	cmd.Env = llamaEnv(os.Environ(), o.Env)
	cmd.Stdout = logf // a file, not a pipe: the server keeps writing after the lab exits
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	s.PID = cmd.Process.Pid
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	fmt.Fprintf(o.Log, "starting llama-server on %s with %s (pid %d, log %s)...\n", s.URL, filepath.Base(o.Model), s.PID, s.LogPath)

	fail := func(err error) (*LlamaServer, error) {
		s.kill()
		return nil, fmt.Errorf("start llama-server on %s: %w; last lines of %s:\n%s", host, err, s.LogPath, tailFrom(s.LogPath, logStart))
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for {
		hctx, hcancel := context.WithTimeout(wctx, 2*time.Second)
		ok := s.healthy(hctx)
		hcancel()
		if ok {
			select {
			case <-s.exited: // whoever answered, it was not our server
				return fail(errors.New("server exited"))
			default:
			}
			break
		}
		select {
		case <-s.exited:
			return fail(errors.New("server exited"))
		case <-wctx.Done():
			return fail(fmt.Errorf("GET /health did not answer 200: %w", wctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	s.readProps(pctx)
	pcancel()
	if err := writeLlamaState(s); err != nil {
		s.kill()
		return nil, err
	}
	fmt.Fprintf(o.Log, "llama-server %s serving %s at %s\n", s.BuildInfo, s.ModelPath, s.URL)
	return s, nil
}

// tailFrom returns the last lines the file at path got from offset on.
func tailFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "(unreadable log: " + err.Error() + ")"
	}
	b, _ := io.ReadAll(f)
	return tail(b, logTailLines)
}

// healthy reports whether GET /health answers 200 (the model is loaded).
func (s *LlamaServer) healthy(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// readProps fills BuildInfo and ModelPath from GET /props; it leaves them as they are when the
// server does not answer.
func (s *LlamaServer) readProps(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/props", nil)
	if err != nil {
		return
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	var p struct {
		BuildInfo string `json:"build_info"`
		ModelPath string `json:"model_path"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&p) == nil {
		s.BuildInfo, s.ModelPath = p.BuildInfo, p.ModelPath
	}
}

// writeLlamaState records s in its state file, atomically.
func writeLlamaState(s *LlamaServer) error {
	b, err := json.MarshalIndent(llamaState{
		PID: s.PID, URL: s.URL, Log: s.LogPath, BuildInfo: s.BuildInfo, ModelPath: s.ModelPath,
		Binary: s.Binary, Args: s.Args, StartedAt: time.Now().UTC().Truncate(time.Second),
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("write llama-server state: %w", err)
	}
	return writeFileAtomic(llamaStatePath(s.Dir), append(b, '\n'))
}

// readLlamaState reads dir's state file; a missing file gives an error wrapping
// os.ErrNotExist.
func readLlamaState(dir string) (llamaState, error) {
	var st llamaState
	b, err := os.ReadFile(llamaStatePath(dir))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read %s: %w", llamaStatePath(dir), err)
	}
	return st, nil
}

// AttachLlamaServer returns the llama-server recorded in dir's llama-server.json if its process
// is alive and GET /health answers 200 (within ctx and 5 s). When the folder records no server,
// or one whose process has ended (its stale state file is then removed), the error wraps
// [ErrLlamaNotRunning].
func AttachLlamaServer(ctx context.Context, dir string) (*LlamaServer, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("attach llama-server: %w", err)
	}
	st, err := readLlamaState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("attach llama-server in %s: %w", dir, ErrLlamaNotRunning)
	}
	if err != nil {
		return nil, fmt.Errorf("attach llama-server: %w", err)
	}
	if st.PID <= 0 || !llamaAlive(st.PID, st.Binary) {
		os.Remove(llamaStatePath(dir))
		return nil, fmt.Errorf("attach llama-server in %s: pid %d has ended: %w", dir, st.PID, ErrLlamaNotRunning)
	}
	if _, err := url.Parse(st.URL); err != nil {
		return nil, fmt.Errorf("attach llama-server: read %s: %w", llamaStatePath(dir), err)
	}
	s := &LlamaServer{URL: st.URL, LogPath: st.Log, PID: st.PID, BuildInfo: st.BuildInfo, ModelPath: st.ModelPath,
		Args: st.Args, Dir: dir, Binary: st.Binary}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if !s.healthy(hctx) {
		return nil, fmt.Errorf("attach llama-server pid %d at %s: GET /health did not answer 200", st.PID, st.URL)
	}
	return s, nil
}

// llamaAlive reports whether pid is a live process running binary (not a zombie, and not
// another program that got the pid of a server that has ended). The command line must name
// binary as the program or, for a script, as its first argument.
func llamaAlive(pid int, binary string) bool {
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

// proc is the server's process, for waiting on it and stopping it.
func (s *LlamaServer) proc() process {
	return process{name: "llama-server", pid: s.PID, exited: s.exited,
		alive: func(pid int) bool { return llamaAlive(pid, s.Binary) }}
}

// kill ends the server's whole process group at once.
func (s *LlamaServer) kill() { s.proc().kill() }

// Stop ends the server: SIGTERM, then after 10 s SIGKILL to its process group. It removes the
// state file if that still records this server. Stopping a server that has already exited is
// not an error.
func (s *LlamaServer) Stop() error {
	defer s.removeState()
	return s.proc().stop()
}

// removeState deletes the state file if it records this server's pid.
func (s *LlamaServer) removeState() {
	if st, err := readLlamaState(s.Dir); err == nil && st.PID == s.PID {
		os.Remove(llamaStatePath(s.Dir))
	}
}
