package localserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ollama/ollama/api"
)

// Sentinel errors of the server life cycle.
var (
	// ErrNotRunning means a state folder records no server, or one whose process has ended.
	ErrNotRunning = errors.New("localserver: no ollama server running")
	// ErrAlreadyRunning means Start found a live server recorded in its state folder; use
	// [Attach] to get it.
	ErrAlreadyRunning = errors.New("localserver: ollama server already running")
)

// Timing of the server life cycle.
const (
	// startTimeout bounds how long Start waits for /api/version to answer.
	startTimeout = 30 * time.Second
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 10 * time.Second
	// logTailLines is how many lines of the server log an error on start carries.
	logTailLines = 30
)

// Renderer and parser that CreateModel gives the model: Ollama's built-in Qwen3.5 chat format.
const (
	modelRenderer = "qwen3.5"
	modelParser   = "qwen3.5"
)

// StartOptions says how to start a local Ollama server.
type StartOptions struct {
	// Binary is the ollama executable, from [BuildOllama]. Required.
	Binary string
	// Dir is the server's state folder, created if missing: models under <Dir>/models
	// (OLLAMA_MODELS), the log at <Dir>/server.log (appended to), the state file
	// <Dir>/server.json. Required.
	Dir string
	// Port is the loopback TCP port to serve on; 0 picks a free one.
	Port int
	// Env holds extra NAME=value settings for the server (for example
	// OLLAMA_CONTEXT_LENGTH=16384); they override Start's own. Any OLLAMA_ variable of the
	// lab's own environment is dropped, so that the server is configured only from here.
	Env []string
	// Log receives progress lines; nil means io.Discard.
	Log io.Writer
}

// Server is a running `ollama serve`, started by [Start] or found by [Attach].
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>.
	URL string
	// Host is the host:port that OLLAMA_HOST takes.
	Host string
	// LogPath is the file the server's output is appended to.
	LogPath string
	// PID is the server's process id; the server leads its own process group.
	PID int
	// Version is what the server's /api/version reported ("0.17.4").
	Version string
	// Dir is the state folder.
	Dir string
	// Binary is the ollama executable it runs.
	Binary string
	// FlashAttention is the server's OLLAMA_FLASH_ATTENTION setting as it was started ("0" by
	// default, [FlashAttentionDefault]); "" when unknown (a server started by an older lab).
	FlashAttention string

	// exited is closed when the process this value started has been reaped; nil for a server
	// found by Attach.
	exited chan struct{}
}

// state is the content of <Dir>/server.json.
type state struct {
	PID       int       `json:"pid"`
	URL       string    `json:"url"`
	Log       string    `json:"log"`
	Version   string    `json:"version"`
	Binary    string    `json:"binary"`
	StartedAt time.Time `json:"started_at"`
	// FlashAttention is [Server].FlashAttention; absent in state files of older labs.
	FlashAttention string `json:"flash_attention,omitempty"`
}

// statePath returns the state file's path in dir.
func statePath(dir string) string { return filepath.Join(dir, "server.json") }

// FlashAttentionDefault is the OLLAMA_FLASH_ATTENTION value [Start] gives the server unless
// [StartOptions].Env sets another: off. On a CPU, the lab's Ollama v0.17.4 build prefills several
// times faster without flash attention (the synthetic Qwen3 model, 2 threads: a cold 16,470-token
// prompt in 1.56 s against 9.69 s with it on), and the KV-cache reuse the lab measures
// ("loading cache slot ... used=") does not depend on it.
const FlashAttentionDefault = "0"

// serverEnv returns the server's environment: the lab's own minus OLLAMA_* variables, then
// the settings the lab's measurements rely on, then extra.
func serverEnv(base []string, host, models string, extra []string) []string {
	var env []string
	for _, e := range base {
		if !strings.HasPrefix(e, "OLLAMA_") {
			env = append(env, e)
		}
	}
	return append(append(env,
		"OLLAMA_HOST="+host,
		"OLLAMA_MODELS="+models,
		"OLLAMA_DEBUG=1",             // logs "loading cache slot ... used=N"
		"OLLAMA_NUM_PARALLEL=1",      // one cache slot
		"OLLAMA_MAX_LOADED_MODELS=1", // one model in memory
		"OLLAMA_KEEP_ALIVE=-1",       // never unload: a reload drops the KV cache
		"OLLAMA_NOPRUNE=1",           // keep blobs on start-up
		"OLLAMA_NO_CLOUD=1",          // no remote models
		"OLLAMA_FLASH_ATTENTION="+FlashAttentionDefault,
	), extra...)
}

// envValue returns the value of the last NAME=value setting of name in env, and "" when none.
func envValue(env []string, name string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// loopbackHost returns 127.0.0.1:<port> for a server named what to listen on: port, or a free
// one when port is 0. It fails when the port is taken: another server there would answer in
// place of ours.
func loopbackHost(what string, port int) (host string, portUsed int, err error) {
	if port == 0 {
		if port, err = freePort(); err != nil {
			return "", 0, err
		}
	}
	host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", host)
	if err != nil {
		return "", 0, fmt.Errorf("start %s: port %d: %w", what, port, err)
	}
	l.Close()
	return host, port, nil
}

// Start starts `ollama serve` bound to 127.0.0.1:<o.Port> in its own process group, so that it
// outlives the lab process and ignores the terminal's Ctrl-C; ctx bounds only the start-up. The
// server runs with OLLAMA_DEBUG=1, OLLAMA_NUM_PARALLEL=1, OLLAMA_MAX_LOADED_MODELS=1,
// OLLAMA_KEEP_ALIVE=-1 and OLLAMA_NOPRUNE=1, its output appended to <Dir>/server.log. Start
// waits until GET /api/version answers (up to 30 s), records the state in <Dir>/server.json and
// returns. If the process exits or does not answer in time, the error carries the log's last
// lines. If the folder records a live server already, the error wraps [ErrAlreadyRunning].
func Start(ctx context.Context, o StartOptions) (*Server, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Dir == "" {
		return nil, errors.New("start ollama: no state folder given")
	}
	if !isFile(o.Binary) {
		return nil, fmt.Errorf("start ollama: binary %q not found", o.Binary)
	}
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("start ollama: %w", err)
	}
	o.Binary = bin
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("start ollama: %w", err)
	}
	if st, err := readState(dir); err == nil && st.PID > 0 && processAlive(st.PID) {
		s, err := Attach(ctx, dir)
		if err == nil {
			return nil, fmt.Errorf("start ollama in %s: %w (pid %d at %s)", dir, ErrAlreadyRunning, s.PID, s.URL)
		}
		return nil, fmt.Errorf("start ollama in %s: the server recorded in server.json is alive but %w; stop pid %d or remove the file", dir, err, st.PID)
	}
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		return nil, fmt.Errorf("start ollama: %w", err)
	}
	host, _, err := loopbackHost("ollama", o.Port)
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:     "http://" + host,
		Host:    host,
		LogPath: filepath.Join(dir, "server.log"),
		Dir:     dir,
		Binary:  o.Binary,
		exited:  make(chan struct{}),
	}

	logf, err := os.OpenFile(s.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	logStart, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "--- lab: starting %s serve on %s at %s\n", o.Binary, host, time.Now().Format(time.RFC3339))
	// exec.Command, not CommandContext: the server must outlive ctx and the lab process.
	cmd := exec.Command(o.Binary, "serve")
	cmd.Dir = dir
	cmd.Env = serverEnv(os.Environ(), host, models, o.Env)
	s.FlashAttention = envValue(cmd.Env, "OLLAMA_FLASH_ATTENTION")
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
	fmt.Fprintf(o.Log, "starting ollama on %s (pid %d, log %s)...\n", s.URL, s.PID, s.LogPath)

	fail := func(err error) (*Server, error) {
		s.kill()
		return nil, fmt.Errorf("start ollama on %s: %w; last lines of %s:\n%s", host, err, s.LogPath, s.logTail(logStart))
	}
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		vctx, vcancel := context.WithTimeout(wctx, 2*time.Second)
		v, err := s.version(vctx)
		vcancel()
		if err == nil {
			s.Version = v
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
			return fail(fmt.Errorf("no answer from /api/version: %w", wctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := writeState(s); err != nil {
		s.kill()
		return nil, err
	}
	fmt.Fprintf(o.Log, "ollama %s serving at %s\n", s.Version, s.URL)
	return s, nil
}

// client returns an Ollama API client for s.
func (s *Server) client() *api.Client {
	u, _ := url.Parse(s.URL)
	return api.NewClient(u, &http.Client{})
}

// version asks the server for its version.
func (s *Server) version(ctx context.Context) (string, error) {
	return s.client().Version(ctx)
}

// logTail returns the last lines the server log got from offset on.
func (s *Server) logTail(offset int64) string {
	f, err := os.Open(s.LogPath)
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

// writeState records s in its state file, atomically.
func writeState(s *Server) error {
	b, err := json.MarshalIndent(state{
		PID: s.PID, URL: s.URL, Log: s.LogPath, Version: s.Version, Binary: s.Binary,
		FlashAttention: s.FlashAttention, StartedAt: time.Now().UTC().Truncate(time.Second),
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("write server state: %w", err)
	}
	return writeFileAtomic(statePath(s.Dir), append(b, '\n'))
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
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

// Attach returns the server recorded in dir's server.json if its process is alive and answers
// GET /api/version (within ctx and 5 s). When the folder records no server, or one whose process
// has ended (its stale state file is then removed), the error wraps [ErrNotRunning].
func Attach(ctx context.Context, dir string) (*Server, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("attach ollama: %w", err)
	}
	st, err := readState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("attach ollama in %s: %w", dir, ErrNotRunning)
	}
	if err != nil {
		return nil, fmt.Errorf("attach ollama: %w", err)
	}
	if st.PID <= 0 || !processAlive(st.PID) {
		os.Remove(statePath(dir))
		return nil, fmt.Errorf("attach ollama in %s: pid %d has ended: %w", dir, st.PID, ErrNotRunning)
	}
	u, err := url.Parse(st.URL)
	if err != nil {
		return nil, fmt.Errorf("attach ollama: read %s: %w", statePath(dir), err)
	}
	s := &Server{URL: st.URL, Host: u.Host, LogPath: st.Log, PID: st.PID, Dir: dir, Binary: st.Binary, FlashAttention: st.FlashAttention}
	vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if s.Version, err = s.version(vctx); err != nil {
		return nil, fmt.Errorf("attach ollama pid %d at %s: %w", st.PID, st.URL, err)
	}
	return s, nil
}

// readState reads dir's state file; a missing file gives an error wrapping os.ErrNotExist.
func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("read %s: %w", statePath(dir), err)
	}
	return st, nil
}

// processAlive reports whether pid is a live ollama process (not a zombie, and not another
// program that got the pid of a server that has ended).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil &&
		!strings.HasPrefix(filepath.Base(exe), "ollama") {
		return false
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
func (s *Server) proc() process {
	return process{name: "ollama", pid: s.PID, exited: s.exited, alive: processAlive}
}

// kill ends the server's whole process group at once (the server and its model runners).
func (s *Server) kill() { s.proc().kill() }

// Stop ends the server: SIGTERM, then after 10 s SIGKILL to its process group (the server and
// its model runners). It removes the state file if that still records this server. Stopping a
// server that has already exited is not an error.
func (s *Server) Stop() error {
	defer s.removeState()
	return s.proc().stop()
}

// removeState deletes the state file if it records this server's pid.
func (s *Server) removeState() {
	if st, err := readState(s.Dir); err == nil && st.PID == s.PID {
		os.Remove(statePath(s.Dir))
	}
}

// created is one entry of <Dir>/created.json: what CreateModel registered under a name.
type created struct {
	// GGUF is the sha256 digest of the model file ("sha256:...").
	GGUF string `json:"gguf"`
	// Manifest is the digest the server listed the model with afterwards.
	Manifest string `json:"manifest"`
	// Path is the model file registered, as CreateModel was given it.
	Path string `json:"path,omitempty"`
}

// CreateModel registers the GGUF file at ggufPath under name, as `ollama create name` with a
// Modelfile of `FROM <ggufPath>`, `RENDERER qwen3.5` and `PARSER qwen3.5` does: it uploads the
// file as a blob (unless the server has it) and creates the model from it. It does nothing when
// the server already lists name with the manifest this call recorded for the same file's
// digest in <Dir>/created.json. It takes about a second for a 45 MB file.
func (s *Server) CreateModel(ctx context.Context, name, ggufPath string) error {
	digest, err := fileDigest(ggufPath)
	if err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	full := name
	if !strings.Contains(name, ":") {
		full += ":latest"
	}
	recPath := filepath.Join(s.Dir, "created.json")
	recs := map[string]created{}
	if b, err := os.ReadFile(recPath); err == nil {
		_ = json.Unmarshal(b, &recs) // a damaged record only costs a re-create
	}
	c := s.client()
	if rec, ok := recs[full]; ok && rec.GGUF == digest {
		if d, err := s.listedDigest(ctx, full); err == nil && d == rec.Manifest {
			if rec.Path == ggufPath {
				return nil
			}
			rec.Path = ggufPath // a record written before paths were kept
			recs[full] = rec
			return writeRecords(recPath, recs, name)
		}
	}

	// A runner still serving the name's previous file could not be unloaded by name once the
	// name points to the new file (Ollama resolves a name to its current blob): unload it now.
	if err := s.unload(ctx, full); err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	if err := s.uploadBlob(ctx, digest, ggufPath); err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	stream := false
	req := &api.CreateRequest{
		Model:    name,
		Files:    map[string]string{filepath.Base(ggufPath): digest},
		Renderer: modelRenderer,
		Parser:   modelParser,
		Stream:   &stream,
	}
	if err := c.Create(ctx, req, func(api.ProgressResponse) error { return nil }); err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	d, err := s.listedDigest(ctx, full)
	if err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	recs[full] = created{GGUF: digest, Manifest: d, Path: ggufPath}
	return writeRecords(recPath, recs, name)
}

// writeRecords writes created.json.
func writeRecords(path string, recs map[string]created, name string) error {
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// ModelFile returns the GGUF file [Server.CreateModel] registered under name on this server
// (as <Dir>/created.json records it), for its tokenizer. An error says why it is unknown: no
// record (a model the lab did not register), a record from before paths were kept, or a file
// that is gone.
func (s *Server) ModelFile(name string) (string, error) {
	full := name
	if !strings.Contains(name, ":") {
		full += ":latest"
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, "created.json"))
	if err != nil {
		return "", fmt.Errorf("model %s: no record of the file registered: %w", name, err)
	}
	recs := map[string]created{}
	if err := json.Unmarshal(b, &recs); err != nil {
		return "", fmt.Errorf("model %s: %s: %w", name, filepath.Join(s.Dir, "created.json"), err)
	}
	rec, ok := recs[full]
	switch {
	case !ok:
		return "", fmt.Errorf("model %s: not registered by the lab on this server", name)
	case rec.Path == "":
		return "", fmt.Errorf("model %s: registered before the lab kept model paths (lab server stop, then lab server start, records it again)", name)
	}
	if _, err := os.Stat(rec.Path); err != nil {
		return "", fmt.Errorf("model %s: %w", name, err)
	}
	return rec.Path, nil
}

// listedDigest returns the digest the server's model list shows for name (with its tag).
func (s *Server) listedDigest(ctx context.Context, name string) (string, error) {
	l, err := s.client().List(ctx)
	if err != nil {
		return "", fmt.Errorf("list models: %w", err)
	}
	for _, m := range l.Models {
		if m.Name == name || m.Model == name {
			return m.Digest, nil
		}
	}
	return "", fmt.Errorf("list models: %s not listed", name)
}

// uploadBlob sends the file at path to the server as the blob digest, unless it has it.
func (s *Server) uploadBlob(ctx context.Context, digest, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, s.URL+"/api/blobs/"+digest, nil)
	if err != nil {
		return fmt.Errorf("check blob: %w", err)
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return fmt.Errorf("check blob: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("upload blob: %w", err)
	}
	defer f.Close()
	if err := s.client().CreateBlob(ctx, digest, f); err != nil {
		return fmt.Errorf("upload blob: %w", err)
	}
	return nil
}

// fileDigest returns "sha256:<hex>" of the file at path.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hash file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// unload asks the server to unload the model name (full, with its tag) if a runner serves it, and
// waits up to 30 s until /api/ps no longer lists it.
func (s *Server) unload(ctx context.Context, full string) error {
	c := s.client()
	running := func() (bool, error) {
		ps, err := c.ListRunning(ctx)
		if err != nil {
			return false, err
		}
		for _, m := range ps.Models {
			if m.Name == full || m.Model == full {
				return true, nil
			}
		}
		return false, nil
	}
	if r, err := running(); err != nil || !r {
		return err
	}
	stream := false
	g := &api.GenerateRequest{Model: full, Stream: &stream, KeepAlive: &api.Duration{Duration: 0}}
	if err := c.Generate(ctx, g, func(api.GenerateResponse) error { return nil }); err != nil {
		return fmt.Errorf("unload %s: %w", full, err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if r, err := running(); err != nil || !r {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("unload %s: still running after 30 s", full)
}
