package localserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/gguf"
	"lab/localserver/supervise"
)

// Defaults of [LlamaStartOptions].
const (
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
	// CtxSize is the context size in tokens (-c); 0 means [gguf.DefaultContextLength], the
	// lab's one default context (Ollama's num_ctx and the sim's alike). With one slot it is the
	// slot's context.
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
	// CtxSize is a slot's context size in tokens as the server reports it (/props
	// default_generation_settings.n_ctx), which can differ from the -c asked for; 0 when the
	// server does not say.
	CtxSize int
	// Args are the arguments the server was started with.
	Args []string
	// Dir is the state folder.
	Dir string
	// Binary is the llama-server executable it runs.
	Binary string

	// proc is the supervised process.
	proc *supervise.Process
}

// llamaInfo is what <Dir>/llama-server.json records besides the supervisor's fields.
type llamaInfo struct {
	// BuildInfo is [LlamaServer].BuildInfo.
	BuildInfo string `json:"build_info"`
	// ModelPath is [LlamaServer].ModelPath.
	ModelPath string `json:"model_path"`
	// CtxSize is [LlamaServer].CtxSize; absent in state files of older labs.
	CtxSize int `json:"n_ctx,omitempty"`
}

// llamaSpec is the supervisor's view of a llama-server in dir: ready when GET /health answers
// 200 (it answers 503 while the model loads).
func llamaSpec(dir string) supervise.Spec {
	return supervise.Spec{Name: "llama-server", Dir: dir, StateFile: "llama-server.json", LogFile: "llama-server.log", Ready: llamaHealthy}
}

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
// loopback address, its slots (-np N, one unless extra gives -np or --parallel), Jinja chat
// templates (--jinja, needed for tools), the context size, and --slot-save-path (without it the
// server refuses every slot action, the erase of a cold start included). ctx is the context of
// one slot in tokens: llama-server splits -c between its slots (each slot's n_ctx is
// llama_n_ctx_seq, n_ctx / n_seq_max without --kv-unified, in tools/server/server-context.cpp
// load_model, llama.cpp b11669), so -c is ctx × N. help is the output of `llama-server --help`:
// when it lists --slots, the slots endpoint is switched on explicitly (older builds had it off),
// and when it lists --cache-ram, the host-RAM prompt cache is switched off (--cache-ram 0), since
// it could restore an erased prompt and warm a cold start, unless extra sets --cache-ram (or
// -cram) itself. Extra arguments come last, less the -np they gave.
func LlamaArgs(model, host string, port, ctx int, slotDir, help string, extra []string) []string {
	slots := 1
	var rest []string
	for i := 0; i < len(extra); i++ {
		if (extra[i] == "-np" || extra[i] == "--parallel") && i+1 < len(extra) {
			if n, err := strconv.Atoi(extra[i+1]); err == nil && n > 0 {
				slots = n
				i++
				continue
			}
		}
		rest = append(rest, extra[i])
	}
	args := []string{"-m", model, "--host", host, "--port", strconv.Itoa(port), "-np", strconv.Itoa(slots), "--jinja",
		"-c", strconv.Itoa(ctx * slots), "--slot-save-path", slotDir}
	if hasFlag(help, "--slots") {
		args = append(args, "--slots")
	}
	if hasFlag(help, "--cache-ram") && !slices.Contains(rest, "--cache-ram") && !slices.Contains(rest, "-cram") {
		args = append(args, "--cache-ram", "0")
	}
	return append(args, rest...)
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
// the error wraps [ErrAlreadyRunning]. The process is run by [supervise.Start].
func StartLlamaServer(ctx context.Context, o LlamaStartOptions) (*LlamaServer, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if !isFile(o.Model) {
		return nil, fmt.Errorf("start llama-server: model %q not found", o.Model)
	}
	if o.CtxSize < 0 {
		return nil, fmt.Errorf("start llama-server: context size %d is negative", o.CtxSize)
	}
	if o.CtxSize == 0 {
		o.CtxSize = gguf.DefaultContextLength
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultLlamaTimeout
	}
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("start llama-server: %w", err)
	}
	if o.Model, err = filepath.Abs(o.Model); err != nil {
		return nil, fmt.Errorf("start llama-server: %w", err)
	}
	dir, err := folder("start llama-server", "state", o.Dir, "slots")
	if err != nil {
		return nil, err
	}
	slotDir := filepath.Join(dir, "slots")
	var info llamaInfo
	spec := llamaSpec(dir)
	spec.Binary, spec.Port, spec.ReadyTimeout, spec.Log = o.Binary, o.Port, o.Timeout, o.Log
	spec.Command = func(_ string, port int) ([]string, []string) {
		args := LlamaArgs(o.Model, "127.0.0.1", port, o.CtxSize, slotDir, llamaHelp(ctx, bin), o.Args)
		return args, llamaEnv(os.Environ(), o.Env)
	}
	spec.Describe = func(ctx context.Context, url string) any {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		info = readProps(pctx, url)
		return info
	}
	p, err := supervise.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	s := newLlamaServer(p, info)
	fmt.Fprintf(o.Log, "llama-server %s serving %s at %s\n", s.BuildInfo, s.ModelPath, s.URL)
	return s, nil
}

// newLlamaServer returns the LlamaServer of a supervised llama-server process.
func newLlamaServer(p *supervise.Process, info llamaInfo) *LlamaServer {
	return &LlamaServer{URL: p.URL, LogPath: p.Log, PID: p.PID, BuildInfo: info.BuildInfo, ModelPath: info.ModelPath,
		CtxSize: info.CtxSize, Args: p.Args, Dir: p.Dir, Binary: p.Binary, proc: p}
}

// llamaHealthy is nil when GET /health answers 200 (the model is loaded).
func llamaHealthy(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return fmt.Errorf("GET /health: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health did not answer 200: %s", resp.Status)
	}
	return nil
}

// readProps returns the build, model path and slot context size of GET /props; empty fields
// when the server does not answer.
func readProps(ctx context.Context, url string) llamaInfo {
	var p llamaInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/props", nil)
	if err != nil {
		return p
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return p
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return p
	}
	var props struct {
		BuildInfo                 string `json:"build_info"`
		ModelPath                 string `json:"model_path"`
		DefaultGenerationSettings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&props) != nil {
		return p
	}
	return llamaInfo{BuildInfo: props.BuildInfo, ModelPath: props.ModelPath, CtxSize: props.DefaultGenerationSettings.NCtx}
}

// AttachLlamaServer returns the llama-server recorded in dir's llama-server.json if its process
// is alive, runs the recorded binary and GET /health answers 200 (within ctx and 5 s). When the
// folder records no server, or one whose process has ended (its stale state file is then
// removed), the error wraps [ErrNotRunning].
func AttachLlamaServer(ctx context.Context, dir string) (*LlamaServer, error) {
	var info llamaInfo
	p, err := supervise.Attach(ctx, llamaSpec(dir), &info)
	if err != nil {
		return nil, err
	}
	return newLlamaServer(p, info), nil
}

// Stop ends the server: SIGTERM, then after 10 s SIGKILL to its process group. It removes the
// state file if that still records this server. Stopping a server that has already exited is
// not an error.
func (s *LlamaServer) Stop() error { return s.proc.Stop() }
