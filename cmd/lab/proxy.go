package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	lab "lab"
	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/capture"
	"lab/chat"
	"lab/hygiene"
	"lab/localserver"
	"lab/metrics"
	"lab/tokenizer"
)

// proxyOptions are `lab proxy`'s flags.
type proxyOptions struct {
	Listen   string
	Upstream string
	// RunDir is the capture's run folder (--run); "" for <results>/run_id=<run-id>.
	RunDir       string
	ResultsDir   string
	RunID        string
	Label        string
	SaveRequests bool
	Quiet        bool
	Render       string
	GGUF         string
	NumCtx       int
	ServerLog    string
	CacheDir     string
	// MaxRequestBytes and MaxReplyBytes are --max-request-bytes and --max-reply-bytes
	// (capture.Options).
	MaxRequestBytes int64
	MaxReplyBytes   int64
	// Tags are the --tag key=value values (parseTags).
	Tags []string
	// SessionHeader is --session-header (capture.Options.SessionHeader).
	SessionHeader string
	// ready, when set, is called with the address the proxy listens on (tests).
	ready func(addr string)
	// server, when set, is the lab server behind Upstream (lab agents' scripted model sits
	// between the proxy and it): its log, model file and use lock are the capture's.
	server string
	// scripted says the upstream is the lab's scripted model: the slot is modelled as holding
	// each prompt followed by the reply as Qwen3 writes it, as the scripted model leaves it.
	scripted bool
	// shutdownWait is how long a stop lets the answers under way finish before it cuts them;
	// 0 is proxyShutdownWait (tests shorten it).
	shutdownWait time.Duration
}

// proxyShutdownWait is how long `lab proxy`, stopped, lets the answers under way finish; the
// capture then cuts those left (capture.Proxy.Close), each recorded as stopped by the proxy.
const proxyShutdownWait = 10 * time.Second

func newProxyCmd(s *streams) *cobra.Command {
	o := &proxyOptions{}
	c := &cobra.Command{
		Use:   "proxy",
		Short: "Record any harness's traffic to a model API with lab run's columns",
		Long: `proxy forwards every request it receives to --upstream and the answer back as it arrives
(streams included), and records each request to a model API (OpenAI Chat Completions and
Responses, Anthropic Messages, Ollama /api/chat and /api/generate, llama-server) as one row with
the columns lab run writes: prompt, cached, cache-write, completion and reasoning tokens, time to
first token, total time. Requests are grouped into conversations (the longest shared message
prefix, among the requests of the same session header or prompt_cache_key), each a scenario of
the capture; the
arm is --label. Rows are written as each answer ends into --run (default
results/run_id=<run-id>/); Ctrl-C stops the proxy and closes the capture, which lab report and
lab check --run read as a run. API keys are forwarded, never written.

With --render ollama (and --gguf, the served model's file) or --render llamacpp, the proxy asks
the local upstream for its own rendering of each request and models its one cache slot: expected
cached tokens, the first divergence and the re-read tokens by segment, as lab run computes them.
With --render llamacpp and no --upstream it forwards to the llama-server lab server start
--server llamacpp runs; in front of a local llama-server it holds that server's use lock.

Ollama reports no cached-token count in its API: with --server-log (the server's log, written
with OLLAMA_DEBUG=1) each Ollama row's cached tokens are the used= of its "loading cache slot"
line, as lab run reads them. When --upstream is the server lab server start left running, its
log is the default, and the proxy holds that server's use lock while it runs (a lab run waits
for it, as it waits for another run).`,
		Example: `  lab proxy --listen 127.0.0.1:8081 --upstream https://api.openai.com
  OPENAI_BASE_URL=http://127.0.0.1:8081/v1 my-harness ...
  lab proxy --listen 127.0.0.1:11435 --upstream http://127.0.0.1:11434 --render ollama --gguf qwen3.gguf \
      --server-log ~/.ollama/logs/server.log
  lab report results/run_id=<run-id>`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxy(cmd.Context(), s, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "", "the loopback address to listen on, such as 127.0.0.1:8081 (required)")
	f.StringVar(&o.Upstream, "upstream", "", "the server or API to forward to, such as http://127.0.0.1:11434 or https://api.anthropic.com (required; with --render llamacpp, default: lab server start --server llamacpp's server)")
	f.StringVar(&o.RunDir, "run", "", "the capture's run folder (default: <results>/run_id=<run-id>)")
	f.StringVar(&o.ResultsDir, "results", "results", "folder that receives run_id=<run-id>/")
	f.StringVar(&o.RunID, "run-id", "", "the capture's run id (default: the start time, YYYYMMDD-HHMMSS)")
	f.StringVar(&o.Label, "label", capture.DefaultLabel, "the rows' arm: a name for the harness or setting measured")
	f.BoolVar(&o.SaveRequests, "save-requests", false, "also write every recorded request body to the capture's requests file")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no line per recorded request on stderr")
	f.StringVar(&o.Render, "render", "", "ollama or llamacpp: ask the local upstream for its rendering and compute expected cached tokens (ollama needs --gguf)")
	f.StringVar(&o.GGUF, "gguf", "", "with --render ollama: the served model's GGUF file, for its tokenizer (default: the synthetic model, when --upstream is lab server start's server)")
	f.IntVar(&o.NumCtx, "num-ctx", 0, "with --render: the server's context window in tokens, to flag context overflows (0: unknown)")
	f.StringVar(&o.ServerLog, "server-log", "", "an Ollama upstream's log, written with OLLAMA_DEBUG=1, for cached tokens (default: lab server start's log when --upstream is that server)")
	f.Int64Var(&o.MaxRequestBytes, "max-request-bytes", capture.DefaultMaxRequestBytes, "the longest request body the proxy reads to record, in bytes; a longer one is forwarded whole and its row is an error row naming the limit")
	f.Int64Var(&o.MaxReplyBytes, "max-reply-bytes", chat.DefaultMaxReplyBytes, "the longest answer the proxy keeps to parse, in bytes as sent (a stream's framing included); the client gets a longer one whole, its row is an error row naming the limit")
	f.StringArrayVar(&o.Tags, "tag", nil, "a label of the capture, key=value (repeatable), recorded in the manifest and shown in the report")
	f.StringVar(&o.CacheDir, "cache", "", "the lab's cache folder, where lab server start keeps its server (default $LAB_CACHE or ~/.cache/lab)")
	f.StringVar(&o.SessionHeader, "session-header", "", "a request header that names your harness's session: requests with the same value are one conversation (before the agents' own session headers)")
	aliasFlag(f, "out", "run")
	return c
}

func runProxy(ctx context.Context, s *streams, o *proxyOptions) (err error) {
	if o.Render == capture.RenderLlamaCpp && o.Upstream == "" {
		// The lab's shared llama-server (lab server start --server llamacpp), if one runs.
		if cache, err := cacheDir(s, o.CacheDir); err == nil {
			if srv, err := localserver.AttachLlamaServer(ctx, localserver.SharedLlamaDir(cache)); err == nil {
				o.Upstream = srv.URL
			}
		}
		if o.Upstream == "" {
			return badInput("--render llamacpp without --upstream needs the llama-server lab server start --server llamacpp runs, and none runs")
		}
	}
	if o.Listen == "" || o.Upstream == "" {
		return badInput("--listen and --upstream are required")
	}
	if err := capture.CheckLoopback(o.Listen); err != nil {
		return badInput("--listen: %v", err)
	}
	if u, err := url.Parse(o.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return badInput("--upstream %q: want http(s)://host[:port][/path], such as http://127.0.0.1:11434", o.Upstream)
	}
	if o.Label == "" || strings.ContainsAny(o.Label, `/\`) || strings.IndexFunc(o.Label, func(r rune) bool { return unicode.IsControl(r) }) >= 0 {
		return badInput("--label %q: want a name, without slashes or control characters", o.Label)
	}
	if o.NumCtx < 0 {
		return badInput("--num-ctx %d: want a number of tokens, or 0 for unknown", o.NumCtx)
	}
	if o.MaxRequestBytes < 0 {
		return badInput("--max-request-bytes %d: want a number of bytes, or 0 for the default", o.MaxRequestBytes)
	}
	if o.MaxReplyBytes < 0 {
		return badInput("--max-reply-bytes %d: want a number of bytes, or 0 for the default", o.MaxReplyBytes)
	}
	tags, err := parseTags(o.Tags)
	if err != nil {
		return err
	}
	// The server lab server start left running: its log is the default, its model file the
	// default --gguf, and its use lock keeps a lab run from resetting its cache under the
	// capture (taken below, once the flags are checked).
	lsrv := labServer(ctx, s, o.CacheDir, cmp.Or(o.server, o.Upstream))
	if lsrv != nil && o.Render == capture.RenderOllama && o.GGUF == "" {
		gguf, err := lsrv.ModelFile(localserver.DefaultModelName)
		if err != nil {
			return badInput("--render ollama needs --gguf, the served model's file: %v", err)
		}
		o.GGUF = gguf
	}
	attr := capture.Attribution{Render: o.Render, NumCtx: o.NumCtx}
	if o.scripted {
		attr.Output, attr.OrderedArguments = ollama.Qwen3Output, true
	}
	modelParams := "" // the served model's own num_ctx and sampling: what a client that sends none gets
	if lsrv != nil {
		if mp, err := lsrv.ModelParams(localserver.DefaultModelName); err == nil {
			modelParams = mp.String()
			if attr.NumCtx == 0 {
				attr.NumCtx = mp.NumCtx
			}
		}
	}
	switch o.Render {
	case "":
		if o.GGUF != "" {
			return badInput("--gguf is for --render ollama")
		}
	case capture.RenderOllama:
		if o.GGUF == "" {
			return badInput("--render ollama needs --gguf, the served model's file (its tokenizer); it is the default only for lab server start's server")
		}
		// Counted as Ollama's runner for the file tokenizes it (Ollama's own engine or llama.cpp).
		tok, err := tokenizer.LoadOllama(o.GGUF)
		if err != nil {
			return badInput("--gguf: %v", err)
		}
		attr.Tokenizer = tok
	case capture.RenderLlamaCpp:
		cl, err := llamacpp.New(llamacpp.Options{BaseURL: o.Upstream, APIKey: s.getenv("LLAMA_API_KEY")})
		if err != nil {
			return badInput("--upstream: %v", err)
		}
		attr.Tokenizer = cl.Tokenizer()
		if o.NumCtx == 0 {
			// The slot's context window, as lab run reads it (GET /props n_ctx).
			if p, err := cl.Props(ctx); err == nil {
				attr.NumCtx = int(p.NCtx)
			}
		}
		if u, err := url.Parse(o.Upstream); err == nil && capture.CheckLoopback(net.JoinHostPort(u.Hostname(), "0")) == nil {
			// One measurement at a time on a llama-server: a lab run given its address waits
			// while the proxy models its slot, as it waits for another run.
			cache, err := cacheDir(s, o.CacheDir)
			if err != nil {
				return err
			}
			unlock, err := localserver.LockURL(ctx, cache, o.Upstream, s.err)
			if err != nil {
				return err
			}
			defer unlock()
		}
	default:
		return badInput("--render %q: want ollama or llamacpp", o.Render)
	}
	if o.ServerLog != "" {
		if _, err := os.Stat(o.ServerLog); err != nil {
			return badInput("--server-log: %v", err)
		}
	}
	if srv := lsrv; srv != nil {
		unlock, err := srv.Lock(ctx, s.err)
		if err != nil {
			return err
		}
		defer unlock()
		if o.ServerLog == "" {
			o.ServerLog = srv.LogPath
		}
		fmt.Fprintf(s.err, "lab proxy: %s is lab server start's server: holding its use lock, reading cached tokens from %s\n", o.Upstream, o.ServerLog)
	}
	if loop, err := hygiene.ParseConfig(lab.LoopJSON); err == nil {
		attr.NoteOpen = loop.Note.Open
	}
	runID := o.RunID
	if runID == "" {
		runID = time.Now().Format("20060102-150405")
	}
	if err := metrics.CheckRunID(runID); err != nil {
		return badInput("--run-id: %v", err)
	}
	dir := o.RunDir
	if dir == "" {
		dir = metrics.RunDir(o.ResultsDir, runID)
	}
	if _, err := os.Stat(dir); err == nil {
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			return badInput("--run %s: the folder exists and is not empty", dir)
		}
	}
	var progress io.Writer = s.err
	if o.Quiet {
		progress = nil
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	// A loopback upstream that answers /api/version is Ollama, whose OpenAI- and
	// Anthropic-compatible endpoints report a constant 0 cached tokens: the capture ignores it.
	isOllama := o.Render == capture.RenderOllama || o.ServerLog != ""
	if u, err := url.Parse(o.Upstream); err == nil && !isOllama && capture.CheckLoopback(net.JoinHostPort(u.Hostname(), "0")) == nil {
		isOllama = capture.IsOllama(ctx, &http.Client{}, o.Upstream)
	}
	settings := map[string]string{"listen": ln.Addr().String(), "render": o.Render, "server_log": o.ServerLog, "upstream_ollama": strconv.FormatBool(isOllama)}
	if o.SessionHeader != "" {
		settings["session_header"] = o.SessionHeader
	}
	if modelParams != "" {
		settings["model_params"] = modelParams
	}
	if o.scripted {
		settings["scripted_model"] = "true"
	}
	p, err := capture.New(capture.Options{
		Upstream: o.Upstream, Dir: dir, RunID: runID, Label: o.Label, SaveRequests: o.SaveRequests,
		Progress: progress, LabVersion: version(), Attribution: attr, ServerLog: o.ServerLog, Tags: tags, UpstreamOllama: isOllama,
		MaxRequestBytes: o.MaxRequestBytes, MaxReplyBytes: o.MaxReplyBytes,
		Settings: settings, SessionHeader: o.SessionHeader,
	})
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: time.Minute, ErrorLog: nil}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	upstream := o.Upstream
	if u, err := url.Parse(o.Upstream); err == nil {
		upstream = capture.RedactURL(u)
	}
	fmt.Fprintf(s.err, "lab proxy: listening on http://%s, forwarding to %s, recording into %s (Ctrl-C stops)\n", ln.Addr(), upstream, dir)
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	wait := o.shutdownWait
	if wait <= 0 {
		wait = proxyShutdownWait
	}
	shut, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p.Stopping()
	if serr := srv.Shutdown(shut); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		// The wait is over: the connections left are closed, and Close below cuts their
		// requests to the upstream and records each one.
		_ = srv.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if cerr := p.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	fmt.Fprintf(s.out, "capture: %s (%d requests recorded)\n", dir, p.Samples())
	if entries, rerr := os.ReadDir(dir); rerr == nil {
		for _, e := range entries {
			fmt.Fprintf(s.out, "  %s\n", filepath.ToSlash(e.Name()))
		}
	}
	return err
}

// labServer returns the server `lab server start` left running in the cache folder (the flag,
// else $LAB_CACHE or ~/.cache/lab) when upstream is its address; nil otherwise.
func labServer(ctx context.Context, s *streams, cacheFlag, upstream string) *localserver.Server {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" || (u.Path != "" && u.Path != "/") {
		return nil
	}
	cache, err := cacheDir(s, cacheFlag)
	if err != nil {
		return nil
	}
	srv, err := localserver.Attach(ctx, sharedServerDir(cache))
	if err != nil {
		return nil
	}
	su, err := url.Parse(srv.URL)
	if err != nil || !sameHost(su.Host, u.Host) {
		return nil
	}
	return srv
}

// sameHost reports whether two host:port pairs name the same loopback address and port
// ("localhost" and 127.0.0.1 are the same).
func sameHost(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb {
		return false
	}
	norm := func(h string) string {
		if h == "localhost" {
			return "127.0.0.1"
		}
		return h
	}
	return norm(ha) == norm(hb)
}
