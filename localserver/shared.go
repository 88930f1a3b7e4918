package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"lab/gguf"
)

// The local servers the lab prepares, starts and supervises (`lab server ... --server KIND`).
const (
	// KindOllama is the lab's own Ollama build.
	KindOllama = "ollama"
	// KindLlamaCpp is llama.cpp's llama-server: Debian unstable's ([PrepareLlamaServer]), or a
	// user's own binary.
	KindLlamaCpp = "llamacpp"
)

// Kinds returns the server kinds a --server value names: "ollama", "llamacpp", or "all" (and
// "", the same) for both, Ollama first. Another value is an error naming the flag's values.
func Kinds(v string) ([]string, error) {
	switch v {
	case KindOllama, KindLlamaCpp:
		return []string{v}, nil
	case "all", "":
		return []string{KindOllama, KindLlamaCpp}, nil
	}
	return nil, fmt.Errorf("server %q: want %s, %s or all", v, KindOllama, KindLlamaCpp)
}

// SharedOllamaDir is the state folder of the Ollama server `lab server start` leaves running.
func SharedOllamaDir(cache string) string { return filepath.Join(cache, "server") }

// SharedLlamaDir is the state folder of the llama-server `lab server start --server llamacpp`
// leaves running.
func SharedLlamaDir(cache string) string { return filepath.Join(cache, "llama-server") }

// ServerOptions says how to prepare and start the lab's local servers. Fields may be added.
type ServerOptions struct {
	// Setup is Ollama's and the synthetic model's set-up; its CacheDir is the lab's cache
	// folder. Required.
	Setup Setup
	// Llama is the llama-server fetch; its CacheDir and Log, when empty, are the Setup's.
	Llama LlamaSetup
	// LlamaBinary is a user's own llama-server to run instead of the fetched one; "" fetches.
	LlamaBinary string
	// LlamaModel is the GGUF a user's own llama-server serves; "" is the synthetic model.
	LlamaModel string
	// CtxSize is the context size in tokens of either server: llama-server's -c, and the num_ctx
	// the Ollama model is registered with ([ModelParams]); 0 means [gguf.DefaultContextLength].
	CtxSize int
	// LlamaArgs are extra llama-server arguments.
	LlamaArgs []string
	// Renderer, when not "", is the Ollama built-in renderer ([OllamaRenderers]) the model is
	// registered with, on the synthetic model of the renderer's family (Setup.Model.Family is
	// then that family), under its own name ([OllamaChat.ModelName]); "" is the family's own
	// format ([OllamaChatOf]).
	Renderer string
}

// ollamaChat returns the format Ollama serves o's model in: o.Renderer's, else the family's.
func (o ServerOptions) ollamaChat() (OllamaChat, error) {
	if o.Renderer != "" {
		return OllamaChatOfRenderer(o.Renderer)
	}
	return OllamaChatOf(o.Setup.Model.Family)
}

func (o ServerOptions) llama() LlamaSetup {
	l := o.Llama
	if l.CacheDir == "" {
		l.CacheDir = o.Setup.CacheDir
	}
	if l.Log == nil {
		l.Log = o.Setup.Log
	}
	return l
}

// ServersPrepared is what [PrepareServers] made ready; nil for a kind not asked for.
type ServersPrepared struct {
	// Ollama is the ollama binary, model and tokenizer.
	Ollama *Prepared
	// Llama is the fetched llama-server.
	Llama *PreparedLlama
	// Model is the synthetic model (the same file for both servers).
	Model *Prepared
	// Took is how long each kind took, for the user's figures.
	Took map[string]time.Duration
}

// PrepareServers prepares the servers of kinds ([Kinds]) without starting them: [Prepare] for
// Ollama, [PrepareLlamaServer] and [PrepareModel] for llama-server.
func PrepareServers(ctx context.Context, o ServerOptions, kinds []string) (*ServersPrepared, error) {
	p := &ServersPrepared{Took: map[string]time.Duration{}}
	for _, k := range kinds {
		start := time.Now()
		switch k {
		case KindOllama:
			op, err := Prepare(ctx, o.Setup)
			if err != nil {
				return nil, err
			}
			p.Ollama, p.Model = op, op
		case KindLlamaCpp:
			lp, err := PrepareLlamaServer(ctx, o.llama())
			if err != nil {
				return nil, err
			}
			mp, err := PrepareModel(ctx, o.Setup)
			if err != nil {
				return nil, err
			}
			p.Llama, p.Model = lp, mp
		default:
			return nil, fmt.Errorf("prepare: unknown server %q", k)
		}
		p.Took[k] = time.Since(start)
	}
	return p, nil
}

// Shared is one of the lab's shared local servers: an Ollama or a llama-server (the other nil).
type Shared struct {
	// Kind is [KindOllama] or [KindLlamaCpp].
	Kind string
	// Ollama is the Ollama server.
	Ollama *Server
	// Llama is the llama-server.
	Llama *LlamaServer
	// Already is true when the server was running before the call.
	Already bool
	// ModelName is the model Ollama serves it under ("" for llama-server).
	ModelName string
}

// URL is the server's base URL.
func (s *Shared) URL() string {
	if s.Ollama != nil {
		return s.Ollama.URL
	}
	return s.Llama.URL
}

// String describes the server in one line: kind, URL, version, pid, model and log.
func (s *Shared) String() string {
	if s.Ollama != nil {
		m := ""
		if s.ModelName != "" {
			m = ", model " + s.ModelName
		}
		return fmt.Sprintf("ollama %s: %s, pid %d%s, log %s", s.Ollama.Version, s.Ollama.URL, s.Ollama.PID, m, s.Ollama.LogPath)
	}
	l := s.Llama
	return fmt.Sprintf("llama-server %s: %s, pid %d, model %s, n_ctx %d, log %s", l.BuildInfo, l.URL, l.PID, l.ModelPath, l.CtxSize, l.LogPath)
}

// StartShared starts the shared server of kind in its folder under the cache ([SharedOllamaDir],
// [SharedLlamaDir]) and leaves it running, or returns the one already running there
// (Already true). Ollama gets the synthetic model of o.Setup.Model.Family registered with
// [DefaultModelParams] at o.CtxSize and the family's renderer ([Server.CreateFamilyModel]), or
// with o.Renderer the model of that renderer's family under the renderer's own name
// ([OllamaChat.ModelName], [Server.CreateChatModel]); a running Ollama gets another family's or
// renderer's model registered too (Already still true). llama-server
// serves the synthetic model (or o.LlamaModel with o.LlamaBinary) with one slot at o.CtxSize; a
// running one that serves another family's model ([FamilyOfModelFile]) than the non-Qwen3
// family asked for is an error naming it. A family Ollama cannot render ([OllamaChatOf]) is an
// error before anything starts.
func StartShared(ctx context.Context, o ServerOptions, kind string) (*Shared, error) {
	cache := o.Setup.CacheDir
	if cache == "" {
		return nil, errors.New("start: no cache folder given")
	}
	switch kind {
	case KindOllama:
		format, err := o.ollamaChat()
		if err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
		fam := o.Setup.Model.Family.OrQwen3()
		name := ""
		if o.Renderer != "" {
			// The renderer's family's model file, registered under the renderer's name.
			fam = format.Family.OrQwen3()
			o.Setup.Model.Family, o.Setup.ModelName = fam, "" // the file lab-<family>-synth-<key>.gguf
			if fam == gguf.Qwen3 {
				o.Setup.Model.Family = "" // the Qwen3 model's own file, as without a family
			}
			name = format.ModelName()
		}
		// Written as Ollama serves the family: its stand-in architecture, if any.
		o.Setup.Model = format.ModelOptions(o.Setup.Model)
		register := func(srv *Server, prep *Prepared) error {
			if name == "" {
				name = prep.ModelName
			}
			params := DefaultModelParams(o.CtxSize)
			return srv.CreateChatModel(ctx, name, prep.GGUF, format, &params)
		}
		if srv, err := Attach(ctx, SharedOllamaDir(cache)); err == nil {
			if fam == gguf.Qwen3 && o.Renderer == "" {
				return &Shared{Kind: kind, Ollama: srv, Already: true}, nil
			}
			// Another family's or renderer's model joins the running server under its own name.
			prep, err := PrepareModel(ctx, o.Setup)
			if err != nil {
				return nil, err
			}
			if err := register(srv, prep); err != nil {
				return nil, err
			}
			return &Shared{Kind: kind, Ollama: srv, Already: true, ModelName: name}, nil
		}
		prep, err := Prepare(ctx, o.Setup)
		if err != nil {
			return nil, err
		}
		srv, err := Start(ctx, StartOptions{Binary: prep.Binary, Dir: SharedOllamaDir(cache), Log: o.Setup.Log})
		if err != nil {
			return nil, err
		}
		if err := register(srv, prep); err != nil {
			return nil, errors.Join(err, srv.Stop())
		}
		return &Shared{Kind: kind, Ollama: srv, ModelName: name}, nil
	case KindLlamaCpp:
		if ls, err := AttachLlamaServer(ctx, SharedLlamaDir(cache)); err == nil {
			if fam := o.Setup.Model.Family.OrQwen3(); o.LlamaModel == "" && fam != gguf.Qwen3 && FamilyOfModelFile(ls.ModelPath) != fam {
				return nil, fmt.Errorf("start: the running llama-server (%s) serves %s, not the %s model: lab server stop --server llamacpp first", ls.URL, ls.ModelPath, fam)
			}
			return &Shared{Kind: kind, Llama: ls, Already: true}, nil
		}
		ls, err := StartOwnLlama(ctx, o, SharedLlamaDir(cache))
		if err != nil {
			return nil, err
		}
		return &Shared{Kind: kind, Llama: ls}, nil
	}
	return nil, fmt.Errorf("start: unknown server %q", kind)
}

// StartOwnLlama starts a llama-server in the state folder dir: o.LlamaBinary serving
// o.LlamaModel when given, else the fetched one ([PrepareLlamaServer]) serving the synthetic
// model ([PrepareModel]), with one slot at o.CtxSize and o.LlamaArgs.
func StartOwnLlama(ctx context.Context, o ServerOptions, dir string) (*LlamaServer, error) {
	bin, model := o.LlamaBinary, o.LlamaModel
	if bin == "" {
		lp, err := PrepareLlamaServer(ctx, o.llama())
		if err != nil {
			return nil, err
		}
		bin = lp.Binary
	}
	if model == "" {
		mp, err := PrepareModel(ctx, o.Setup)
		if err != nil {
			return nil, err
		}
		model = mp.GGUF
	}
	return StartLlamaServer(ctx, LlamaStartOptions{Binary: bin, Model: model, Dir: dir, CtxSize: o.CtxSize, Args: o.LlamaArgs, Log: o.Setup.Log})
}

// SharedStatus returns the shared servers of kinds that are running, in kinds' order; a kind
// that is not running is absent.
func SharedStatus(ctx context.Context, cache string, kinds []string) ([]*Shared, error) {
	var out []*Shared
	for _, k := range kinds {
		var s *Shared
		var err error
		switch k {
		case KindOllama:
			var srv *Server
			if srv, err = Attach(ctx, SharedOllamaDir(cache)); err == nil {
				s = &Shared{Kind: k, Ollama: srv, Already: true}
			}
		case KindLlamaCpp:
			var ls *LlamaServer
			if ls, err = AttachLlamaServer(ctx, SharedLlamaDir(cache)); err == nil {
				s = &Shared{Kind: k, Llama: ls, Already: true}
			}
		default:
			return nil, fmt.Errorf("status: unknown server %q", k)
		}
		if errors.Is(err, ErrNotRunning) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// StopShared stops the shared servers of kinds that are running and returns them.
func StopShared(ctx context.Context, cache string, kinds []string) ([]*Shared, error) {
	running, err := SharedStatus(ctx, cache, kinds)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range running {
		if s.Ollama != nil {
			errs = append(errs, s.Ollama.Stop())
		} else {
			errs = append(errs, s.Llama.Stop())
		}
	}
	return running, errors.Join(errs...)
}

// RunLlama is a llama-server a run uses: the shared one (locked for the run) or one started for
// the run alone.
type RunLlama struct {
	// Server is the llama-server.
	Server *LlamaServer
	// Shared is true for the server `lab server start --server llamacpp` left running.
	Shared bool
	// release unlocks the shared server or stops the run's own.
	release func() error
}

// Release ends the run's use: it unlocks the shared server, or stops the run's own server,
// keeping its folder's log (Server.LogPath) and removing its slot-save folder.
func (r *RunLlama) Release() error { return r.release() }

// OpenRunLlama returns the llama-server a run measures on: without o.LlamaBinary and
// o.LlamaModel, the shared one when it is running and serves the family of o.Setup.Model
// ([FamilyOfModelFile]) (after taking its use lock [LockURL], waiting for another run that holds it; log gets
// the waiting line); else one started for the run ([StartOwnLlama]) in a new folder
// <CacheDir>/llama-server-runs/<UTC time>-<random>, whose log is kept after [RunLlama.Release].
func OpenRunLlama(ctx context.Context, o ServerOptions, log io.Writer) (*RunLlama, error) {
	cache := o.Setup.CacheDir
	if cache == "" {
		return nil, errors.New("open llama-server: no cache folder given")
	}
	if o.LlamaBinary != "" || o.LlamaModel != "" || len(o.LlamaArgs) > 0 {
		// A user's own binary or model, or settings of the run's own (--cache-reuse), start a
		// server for the run; the shared server serves the lab's own model as it was started.
	} else if ls, err := AttachLlamaServer(ctx, SharedLlamaDir(cache)); err == nil && FamilyOfModelFile(ls.ModelPath) == o.Setup.Model.Family.OrQwen3() {
		// The shared server serves the run's family (another family's run starts its own).
		unlock, err := LockURL(ctx, cache, ls.URL, log)
		if err != nil {
			return nil, err
		}
		return &RunLlama{Server: ls, Shared: true, release: func() error { unlock(); return nil }}, nil
	}
	runs := filepath.Join(cache, "llama-server-runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, fmt.Errorf("create the llama-server's folder: %w", err)
	}
	dir, err := os.MkdirTemp(runs, time.Now().UTC().Format("20060102T150405Z")+"-")
	if err != nil {
		return nil, fmt.Errorf("create the llama-server's folder: %w", err)
	}
	ls, err := StartOwnLlama(ctx, o, dir)
	if err != nil {
		return nil, err
	}
	return &RunLlama{Server: ls, release: func() error {
		err := ls.Stop()
		os.RemoveAll(filepath.Join(dir, "slots"))
		return err
	}}, nil
}

// CacheReuseOf returns the --cache-reuse N a llama-server was started with (its arguments, as
// [LlamaServer].Args holds them): the minimum chunk, in tokens, its slot reuses after the common
// prefix (llama.cpp tools/server, params.n_cache_reuse); 0, llama.cpp's default (off), when the
// arguments do not give it or give it unreadably.
func CacheReuseOf(args []string) int {
	n := 0
	for i, a := range args {
		v, ok := "", false
		switch {
		case a == "--cache-reuse" && i+1 < len(args):
			v, ok = args[i+1], true
		case strings.HasPrefix(a, "--cache-reuse="):
			v, ok = strings.TrimPrefix(a, "--cache-reuse="), true
		}
		if ok {
			if k, err := strconv.Atoi(v); err == nil && k >= 0 {
				n = k
			}
		}
	}
	return n
}
