package localserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"lab/gguf"
	"lab/localserver/supervise"
	"lab/metrics"
)

// Sentinel errors of a local server's life cycle, Ollama's and llama-server's alike: the
// supervisor's ([supervise.ErrNotRunning], [supervise.ErrAlreadyRunning]).
var (
	// ErrNotRunning means a state folder records no server, or one whose process has ended.
	ErrNotRunning = supervise.ErrNotRunning
	// ErrAlreadyRunning means [Start] or [StartLlamaServer] found a live server recorded in its
	// state folder; use [Attach] or [AttachLlamaServer] to get it.
	ErrAlreadyRunning = supervise.ErrAlreadyRunning
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

	// proc is the supervised process; nil for a value not made by Start or Attach.
	proc *supervise.Process
}

// ollamaInfo is what <Dir>/server.json records besides the supervisor's fields.
type ollamaInfo struct {
	// Version is [Server].Version at the start.
	Version string `json:"version"`
	// FlashAttention is [Server].FlashAttention; absent in state files of older labs.
	FlashAttention string `json:"flash_attention,omitempty"`
}

// ollamaSpec is the supervisor's view of an Ollama server in dir: ready when GET /api/version
// answers, whose answer it leaves in *version.
func ollamaSpec(dir string, version *string) supervise.Spec {
	return supervise.Spec{
		Name:      "ollama",
		Dir:       dir,
		StateFile: "server.json",
		LogFile:   "server.log",
		Ready: func(ctx context.Context, url string) error {
			v, err := apiClient(url).Version(ctx)
			if err != nil {
				return fmt.Errorf("GET /api/version: %w", err)
			}
			*version = v
			return nil
		},
	}
}

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

// Start starts `ollama serve` bound to 127.0.0.1:<o.Port> in its own process group, so that it
// outlives the lab process and ignores the terminal's Ctrl-C; ctx bounds only the start-up. The
// server runs with OLLAMA_DEBUG=1, OLLAMA_NUM_PARALLEL=1, OLLAMA_MAX_LOADED_MODELS=1,
// OLLAMA_KEEP_ALIVE=-1 and OLLAMA_NOPRUNE=1, its output appended to <Dir>/server.log. Start
// waits until GET /api/version answers (up to 30 s), records the state in <Dir>/server.json and
// returns. If the process exits or does not answer in time, the error carries the log's last
// lines. If the folder records a live server already, the error wraps [ErrAlreadyRunning]. The
// process is run by [supervise.Start].
func Start(ctx context.Context, o StartOptions) (*Server, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, err := folder("start ollama", "state", o.Dir, "models")
	if err != nil {
		return nil, err
	}
	models := filepath.Join(dir, "models")
	var version, flash string
	spec := ollamaSpec(dir, &version)
	spec.Binary, spec.Port, spec.Log = o.Binary, o.Port, o.Log
	spec.Command = func(addr string, _ int) ([]string, []string) {
		env := serverEnv(os.Environ(), addr, models, o.Env)
		flash = envValue(env, "OLLAMA_FLASH_ATTENTION")
		return []string{"serve"}, env
	}
	spec.Describe = func(context.Context, string) any {
		return ollamaInfo{Version: version, FlashAttention: flash}
	}
	p, err := supervise.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	s := newServer(p, version, flash)
	fmt.Fprintf(o.Log, "ollama %s serving at %s\n", s.Version, s.URL)
	return s, nil
}

// newServer returns the Server of a supervised ollama process.
func newServer(p *supervise.Process, version, flash string) *Server {
	return &Server{URL: p.URL, Host: p.Host(), LogPath: p.Log, PID: p.PID, Version: version, Dir: p.Dir,
		Binary: p.Binary, FlashAttention: flash, proc: p}
}

// apiClient returns an Ollama API client for the server at base URL u.
func apiClient(u string) *api.Client {
	pu, _ := url.Parse(u)
	return api.NewClient(pu, &http.Client{})
}

// client returns an Ollama API client for s.
func (s *Server) client() *api.Client { return apiClient(s.URL) }

// Attach returns the server recorded in dir's server.json if its process is alive, runs the
// recorded binary and answers GET /api/version (within ctx and 5 s); Version is that answer.
// When the folder records no server, or one whose process has ended (its stale state file is then
// removed), the error wraps [ErrNotRunning].
func Attach(ctx context.Context, dir string) (*Server, error) {
	var version string
	var info ollamaInfo
	p, err := supervise.Attach(ctx, ollamaSpec(dir, &version), &info)
	if err != nil {
		return nil, err
	}
	return newServer(p, version, info.FlashAttention), nil
}

// Stop ends the server: SIGTERM, then after 10 s SIGKILL to its process group (the server and
// its model runners). It removes the state file if that still records this server. Stopping a
// server that has already exited is not an error.
func (s *Server) Stop() error { return s.proc.Stop() }

// created is one entry of <Dir>/created.json: what CreateModel registered under a name.
type created struct {
	// GGUF is the sha256 digest of the model file ("sha256:...").
	GGUF string `json:"gguf"`
	// Manifest is the digest the server listed the model with afterwards.
	Manifest string `json:"manifest"`
	// Path is the model file registered, as CreateModel was given it.
	Path string `json:"path,omitempty"`
	// Params are the model's parameters; nil in records of labs that gave none.
	Params *ModelParams `json:"params,omitempty"`
	// Template is the sha256 of the Go template registered with it (OllamaChat.GoTemplate),
	// "" for none.
	Template string `json:"template,omitempty"`
	// Chat is the RENDERER and PARSER registered with it, "renderer/parser" ("/" for none).
	Chat string `json:"chat,omitempty"`
}

// ModelParams are the parameters [Server.CreateModel] gives the model it registers, as a
// Modelfile's PARAMETER lines do (Ollama's api.Options names). A request's own options override
// them: the lab's runs pin num_ctx and temperature per request; clients of Ollama's OpenAI- and
// Anthropic-compatible endpoints cannot send num_ctx, so for them the model's is the window.
type ModelParams struct {
	// NumCtx is the context window in tokens (num_ctx). Without it Ollama v0.17.4 runs the
	// model at 4,096 tokens and cuts a longer prompt.
	NumCtx int `json:"num_ctx"`
	// Temperature, TopK and TopP are the sampling a request gets unless it sends its own
	// (temperature, top_k, top_p). Ollama v0.17.4 stops a generation that gives the same
	// (trimmed) piece more than 30 times in a row ("token repeat limit", llm/server.go) and
	// answers HTTP 200 with an empty reply: greedy decoding (temperature 0) of the synthetic
	// model's random weights does that within a few dozen tokens. Its new-engine runner, which
	// serves qwen3, samples with temperature, top_k, top_p, min_p and seed only
	// (runner/ollamarunner, sample.NewSampler): repeat_penalty is not applied there, so sampling
	// is the remedy.
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
	// Seed is the sampler's seed (seed): fixed, so the same prompt gets the same reply.
	Seed int `json:"seed"`
	// NumPredict caps a reply in tokens (num_predict) for a request that sends no cap of its
	// own: OpenAI Responses clients such as Codex send no max_output_tokens, and the synthetic
	// model, sampled, rarely ends a reply by itself, so without a cap one reply runs until the
	// window is full. 0 (records of labs that gave none) is Ollama's own default, no cap.
	NumPredict int `json:"num_predict,omitempty"`
}

// DefaultReplyCap is the reply cap in tokens (num_predict) the lab registers its model with, for
// the requests that send no cap of their own: about 13 s of the synthetic model's noise on 2
// cores. Clients that send a cap (Claude Code's max_tokens, opencode, Qwen Code, pi, the lab's
// own harness with num_predict on every request) get theirs.
const DefaultReplyCap = 1024

// DefaultModelParams returns the parameters the lab registers its model with: numCtx (0 means
// [gguf.DefaultContextLength]) and sampling at temperature 1 over the 40 likeliest tokens with
// no nucleus cut (top_p 1) and seed 42, with replies capped at [DefaultReplyCap] tokens for a
// request that sends no cap (an OpenAI Responses client such as Codex, whose reply at the
// synthetic model would otherwise run until the window is full).
func DefaultModelParams(numCtx int) ModelParams {
	if numCtx <= 0 {
		numCtx = gguf.DefaultContextLength
	}
	return ModelParams{NumCtx: numCtx, Temperature: 1, TopK: 40, TopP: 1, Seed: 42, NumPredict: DefaultReplyCap}
}

// options returns the parameters as api.CreateRequest.Parameters takes them.
func (p ModelParams) options() map[string]any {
	o := map[string]any{"num_ctx": p.NumCtx, "temperature": p.Temperature, "top_k": p.TopK, "top_p": p.TopP, "seed": p.Seed}
	if p.NumPredict != 0 {
		o["num_predict"] = p.NumPredict
	}
	return o
}

// String returns the parameters as the manifest setting model_params records them:
// "num_ctx=65536 temperature=1 top_k=40 top_p=1 seed=42 num_predict=256" (num_predict only when
// set).
func (p ModelParams) String() string {
	s := fmt.Sprintf("num_ctx=%d temperature=%g top_k=%d top_p=%g seed=%d", p.NumCtx, p.Temperature, p.TopK, p.TopP, p.Seed)
	if p.NumPredict != 0 {
		s += fmt.Sprintf(" num_predict=%d", p.NumPredict)
	}
	return s
}

// CreateModel registers the GGUF file at ggufPath under name, as `ollama create name` with a
// Modelfile of `FROM <ggufPath>`, `RENDERER qwen3.5`, `PARSER qwen3.5` and a PARAMETER line for
// each of the model's parameters does: it uploads the file as a blob (unless the server has it)
// and creates the model from it. The parameters are those the name was last registered with
// for the same file, else [DefaultModelParams] (0): a run on a server started with another
// window keeps it. It does nothing when the server already lists name with the manifest this
// call recorded for the same file's digest and parameters in <Dir>/created.json. It takes about
// a second for a 45 MB file.
func (s *Server) CreateModel(ctx context.Context, name, ggufPath string) error {
	return s.CreateFamilyModel(ctx, name, ggufPath, gguf.Qwen3, nil)
}

// CreateModelWith is [Server.CreateModel] with the model's parameters given: the name is
// registered again when it was registered with others.
func (s *Server) CreateModelWith(ctx context.Context, name, ggufPath string, p ModelParams) error {
	return s.CreateFamilyModel(ctx, name, ggufPath, gguf.Qwen3, &p)
}

// CreateFamilyModel is [Server.CreateModel] for the synthetic model of family f: the Modelfile's
// RENDERER and PARSER are the family's ([OllamaChatOf]; none for a family rendered with the Go
// template Ollama detects), and p, when not nil, its parameters as [Server.CreateModelWith]
// takes them. An error for a family Ollama cannot render (gpt-oss) names the reason, before
// anything is sent. For [gguf.Qwen3] it is CreateModel (or CreateModelWith) itself.
func (s *Server) CreateFamilyModel(ctx context.Context, name, ggufPath string, f gguf.Family, p *ModelParams) error {
	format, err := OllamaChatOf(f)
	if err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	return s.CreateChatModel(ctx, name, ggufPath, format, p)
}

// CreateChatModel is [Server.CreateFamilyModel] with the format given: the Modelfile's
// RENDERER, PARSER and TEMPLATE are format's (a built-in renderer of [OllamaRenderers], say,
// on the model file of its Family). The name is registered again when it was registered with
// another renderer, parser or template.
func (s *Server) CreateChatModel(ctx context.Context, name, ggufPath string, format OllamaChat, p *ModelParams) error {
	return s.createModel(ctx, name, ggufPath, p, format)
}

// ModelParams returns the parameters [Server.CreateModel] registered name with on this server
// (as <Dir>/created.json records it). An error says why they are unknown: no record, or a record
// of a lab that gave none.
func (s *Server) ModelParams(name string) (ModelParams, error) {
	recs, err := s.records()
	if err != nil {
		return ModelParams{}, fmt.Errorf("model %s: %w", name, err)
	}
	rec, ok := recs[fullName(name)]
	switch {
	case !ok:
		return ModelParams{}, fmt.Errorf("model %s: not registered by the lab on this server", name)
	case rec.Params == nil:
		return ModelParams{}, fmt.Errorf("model %s: registered without parameters (lab server stop, then lab server start, registers it again)", name)
	}
	return *rec.Params, nil
}

// fullName returns name with its tag (":latest" when it has none).
func fullName(name string) string {
	if !strings.Contains(name, ":") {
		return name + ":latest"
	}
	return name
}

// records reads <Dir>/created.json.
func (s *Server) records() (map[string]created, error) {
	path := filepath.Join(s.Dir, "created.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no record of the models registered: %w", err)
	}
	recs := map[string]created{}
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

func (s *Server) createModel(ctx context.Context, name, ggufPath string, params *ModelParams, format OllamaChat) error {
	digest, err := metrics.DigestFile(ggufPath)
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
	want := DefaultModelParams(0)
	switch rec, ok := recs[full]; {
	case params != nil:
		want = *params
		if want.NumCtx <= 0 {
			want.NumCtx = gguf.DefaultContextLength
		}
	case ok && rec.GGUF == digest && rec.Params != nil:
		want = *rec.Params
	}
	tmplSum := ""
	if format.GoTemplate != "" {
		sum := sha256.Sum256([]byte(format.GoTemplate))
		tmplSum = hex.EncodeToString(sum[:])
	}
	chatKey := format.Renderer + "/" + format.Parser
	if rec, ok := recs[full]; ok && rec.GGUF == digest && rec.Params != nil && *rec.Params == want && rec.Template == tmplSum && rec.Chat == chatKey {
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
		Model:      name,
		Files:      map[string]string{filepath.Base(ggufPath): digest},
		Renderer:   format.Renderer,
		Parser:     format.Parser,
		Template:   format.GoTemplate,
		Parameters: want.options(),
		Stream:     &stream,
	}
	if err := c.Create(ctx, req, func(api.ProgressResponse) error { return nil }); err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	d, err := s.listedDigest(ctx, full)
	if err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	recs[full] = created{GGUF: digest, Manifest: d, Path: ggufPath, Params: &want, Template: tmplSum, Chat: chatKey}
	return writeRecords(recPath, recs, name)
}

// writeRecords writes created.json.
func writeRecords(path string, recs map[string]created, name string) error {
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return fmt.Errorf("create model %s: %w", name, err)
	}
	return supervise.WriteFileAtomic(path, append(b, '\n'))
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
