package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"lab/backend/anthropic"
	"lab/backend/llamacpp"
	"lab/backend/openai"
	"lab/cachesim"
	"lab/capture"
	"lab/chat"
	"lab/harness"
	"lab/localserver"
	"lab/pricing"
)

// remoteOptions are the flags of the backends other than ollama and sim.
type remoteOptions struct {
	// BaseURL is the server's or API's address (--base-url).
	BaseURL string
	// Profile is the OpenAI-compatible server kind (--profile).
	Profile string
	// API is chat or responses (--api, openai only).
	API string
	// KeyFile names a file holding the API key (--key-file); else the environment.
	KeyFile string
	// Breakpoints is the Anthropic cache_control placement (--cache-breakpoints).
	Breakpoints string
	// LlamaServer is a llama-server binary to start (--llamacpp), serving --gguf.
	LlamaServer string
	// Pricing is a pricing file replacing the embedded table (--pricing).
	Pricing string
	// Thinking is how Anthropic requests ask to think (--thinking): enabled, adaptive or off.
	Thinking string
	// CacheReuse is llama-server's --cache-reuse for the server the lab starts (--cache-reuse):
	// the minimum chunk its slot reuses after the common prefix; -1 when not given (the server's
	// default, 0: off).
	CacheReuse optionalInt
	// Parallel is the number of sessions run at once, each on its own slot of one llama-server
	// (--parallel N; the server the lab starts gets -np N): 1 (or 0) runs them one at a time.
	Parallel int
	// CacheRAM is llama-server's --cache-ram for the server the lab starts (--cache-ram MiB): its
	// host-memory prompt cache; -1 when not given (the lab starts its server with 0: off).
	CacheRAM optionalInt
}

// optionalInt is an int flag whose default is "not given", -1, shown as no default in the help.
type optionalInt int

func (v *optionalInt) String() string {
	if *v < 0 {
		return ""
	}
	return strconv.Itoa(int(*v))
}

// Set parses a count of 0 or more.
func (v *optionalInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a count of 0 or more", s)
	}
	*v = optionalInt(n)
	return nil
}

func (*optionalInt) Type() string { return "int" }

// remoteBackends are the --backend values openRemote serves.
var remoteBackends = []string{"llamacpp", "openai", "anthropic"}

// checkRemote validates the remote backends' flags before anything starts.
func checkRemote(o *runOptions) error {
	r := &o.Remote
	if r.Parallel < 0 {
		return badInput("--parallel %d: want 1 or more sessions at once", r.Parallel)
	}
	if r.Parallel > 1 && o.Backend != "llamacpp" {
		return badInput("--parallel runs sessions on llama-server's slots: it is for --backend llamacpp, not %s", o.Backend)
	}
	if r.CacheRAM >= 0 && (o.Backend != "llamacpp" || r.BaseURL != "") {
		return badInput("--cache-ram is given to the llama-server the lab starts (--backend llamacpp, with or without --llamacpp PATH); a running server keeps its own")
	}
	if r.CacheRAM > 0 && r.Parallel > 1 {
		return badInput("--cache-ram with --parallel: sessions at once share one host cache in the order their requests arrive, which the lab does not model")
	}
	if r.CacheReuse >= 0 && (o.Backend != "llamacpp" || r.BaseURL != "") {
		return badInput("--cache-reuse is given to the llama-server the lab starts (--backend llamacpp, with or without --llamacpp PATH); a running server keeps its own")
	}
	isRemote := false
	for _, b := range remoteBackends {
		isRemote = isRemote || o.Backend == b
	}
	if !isRemote {
		if r.Breakpoints != "" && o.Backend == "sim" {
			// The sim's anthropic cache model honours them (openSim).
			if o.CacheModel != cachesim.ModelAnthropic {
				return badInput("--cache-breakpoints is for --backend anthropic, or --backend sim with --cache-model anthropic")
			}
			if _, err := anthropic.ParseBreakpoints(r.Breakpoints); err != nil {
				return badInput("--cache-breakpoints: %v", err)
			}
		}
		for _, f := range []struct{ flag, v string }{{"--base-url", r.BaseURL}, {"--profile", r.Profile}, {"--api", r.API},
			{"--key-file", r.KeyFile}, {"--cache-breakpoints", simOK(o, r.Breakpoints)}, {"--llamacpp", r.LlamaServer}, {"--pricing", r.Pricing}, {"--thinking", r.Thinking}} {
			if f.v != "" {
				return badInput("%s is for --backend %s, not %s", f.flag, strings.Join(remoteBackends, ", "), o.Backend)
			}
		}
		return nil
	}
	if o.ServerURL != "" || o.ServerLog != "" {
		return badInput("--backend %s takes --base-url, not --server or --server-log", o.Backend)
	}
	if r.Profile != "" && o.Backend != "openai" {
		return badInput("--profile is for --backend openai")
	}
	if r.API != "" && o.Backend != "openai" {
		return badInput("--api is for --backend openai")
	}
	if r.Breakpoints != "" && o.Backend != "anthropic" {
		return badInput("--cache-breakpoints is for --backend anthropic")
	}
	if r.Thinking != "" && o.Backend != "anthropic" {
		return badInput("--thinking is for --backend anthropic")
	}
	if o.Backend == "llamacpp" {
		switch {
		case r.LlamaServer != "" && r.BaseURL != "":
			return badInput("give --base-url (a running llama-server) or --llamacpp (start one), not both")
		case r.LlamaServer != "" && o.GGUF == "":
			return badInput("--llamacpp needs --gguf: the model file to serve")
		}
	} else if r.LlamaServer != "" {
		return badInput("--llamacpp is for --backend llamacpp")
	}

	if o.Backend != "llamacpp" && o.GGUF != "" {
		return badInput("--gguf is for --backend ollama, sim or llamacpp")
	}
	for _, f := range []struct{ flag, path string }{{"--key-file", r.KeyFile}, {"--llamacpp", r.LlamaServer}, {"--pricing", r.Pricing}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return badInput("%s: %v", f.flag, err)
		}
	}
	return nil
}

// simOK is v, or "" for the sim backend (which takes the flag of v).
func simOK(o *runOptions, v string) string {
	if o.Backend == "sim" {
		return ""
	}
	return v
}

// runBackend is what a backend's factory hands [runConfig], the one builder of a run's
// configuration: the client, what the manifest records about the server, and what to release
// when the run ends.
type runBackend struct {
	client         harness.Backend
	tok            harness.Tokenizer
	model          string
	url            string
	serverVersion  string
	numCtx         int
	window         cachesim.Window
	nonce          func(string) string
	price          func(*chat.Usage) (float64, bool)
	constantCached string
	settings       map[string]string
	// slots are the clients of llama-server's slots when sessions run at once (--parallel N),
	// the k-th pinned to slot k ([harness.RunConfig].SlotBackends); nil otherwise.
	slots []harness.Backend
	// hostCache models llama-server's host-memory prompt cache where the lab started the server
	// with one ([harness.RunConfig].HostCache); nil otherwise.
	hostCache *cachesim.HostCache
	// cacheReuse is llama-server's --cache-reuse where the lab knows it (it started the server);
	// nil otherwise ([harness.RunConfig].CacheReuse).
	cacheReuse *int
	// freshCache says the server's cache is empty when the run starts and only the run uses it
	// (the sim, made for the run): [harness.RunConfig].FreshCache.
	freshCache bool
	// order is the sim's cache model's provider order of system prompt and tools
	// ([harness.RunConfig].RenderOrder); the zero value, Qwen3's, for the servers.
	order cachesim.RenderOrder
	// gguf is the model file the lab knows ("" when it does not): its digest is recorded.
	gguf string
	// stops release what the factory started (a server, a folder), last first.
	stops []func()
}

// close runs b's stops, last first.
func (b *runBackend) close() {
	for i := len(b.stops) - 1; i >= 0; i-- {
		b.stops[i]()
	}
}

// backendFactory fills b for the checked options o: it starts or reaches the server and makes
// the client. What it started is in b.stops also when it returns an error.
type backendFactory func(ctx context.Context, s *streams, o *runOptions, r checkedRun, b *runBackend) error

// backendFactories are the --backend values and their factories: adding a backend is its
// package and one entry here.
var backendFactories = map[string]backendFactory{
	"ollama":    openOllama,
	"sim":       openSim,
	"llamacpp":  openRemote,
	"openai":    openRemote,
	"anthropic": openRemote,
}

// openRemote opens llama-server, an OpenAI-compatible API or the Anthropic Messages API. Each
// session starts cold: llama-server's slots are erased (its Reset); a cloud API, whose cache
// cannot be emptied, gets a nonce unique to the session first in the system prompt. Cloud
// requests are priced from the pricing table.
func openRemote(ctx context.Context, s *streams, o *runOptions, r checkedRun, b *runBackend) error {
	ro := &o.Remote
	b.url, b.model, b.settings = ro.BaseURL, o.ModelName, map[string]string{}
	switch o.Backend {
	case "llamacpp":
		started := false
		if ro.BaseURL == "" {
			// The lab's own llama-server (the shared one, locked for the run, or one of the run's
			// own), or the user's --llamacpp binary serving --gguf.
			cache, err := cacheDir(s, o.CacheDir)
			if err != nil {
				return err
			}
			// llama-server's chunk reuse after the common prefix: --cache-reuse N (default 0, off).
			var args []string
			if ro.CacheReuse > 0 {
				args = []string{"--cache-reuse", strconv.Itoa(int(ro.CacheReuse))}
			}
			// Several slots, one per session at once: -np N (each slot keeps --num-ctx tokens).
			if ro.Parallel > 1 {
				args = append(args, "-np", strconv.Itoa(ro.Parallel))
			}
			// The host-memory prompt cache: --cache-ram MiB (the lab's default, 0, is off).
			if ro.CacheRAM >= 0 {
				args = append(args, "--cache-ram", strconv.Itoa(int(ro.CacheRAM)))
			}
			so := localserver.ServerOptions{Setup: setup(cache, o.GenericBuild, o.Model, o.ModelName, r.progress),
				LlamaBinary: ro.LlamaServer, LlamaModel: o.GGUF, CtxSize: o.NumCtx, LlamaArgs: args}
			rl, err := localserver.OpenRunLlama(ctx, so, s.err) // the waiting line, also with --quiet
			if err != nil {
				return err
			}
			srv := rl.Server
			b.stops = append(b.stops, func() {
				if err := rl.Release(); err != nil {
					fmt.Fprintln(s.err, "lab: stop llama-server:", err)
				}
				if !rl.Shared {
					fmt.Fprintln(s.err, "lab: llama-server log:", srv.LogPath)
				}
			})
			if rl.Shared {
				fmt.Fprintf(r.progress, "using the llama-server at %s (lab server start --server llamacpp), log %s\n", srv.URL, srv.LogPath)
			} else {
				fmt.Fprintf(r.progress, "llama-server log: %s\n", srv.LogPath)
			}
			b.url, started = srv.URL, true
			b.settings["llama_server"] = srv.Binary
			// The server's own arguments say its --cache-reuse, the shared server's included.
			reuse := localserver.CacheReuseOf(srv.Args)
			b.settings["cache_reuse"] = strconv.Itoa(reuse)
			b.cacheReuse = &reuse
			// And its --cache-ram: the lab starts every server with one (0 unless --cache-ram) where
			// the build has the prompt cache; a build without it has none.
			ram := lastArg(srv.Args, "--cache-ram", "-cram")
			if ram == "" {
				ram = "0"
			}
			b.settings["cache_ram"] = ram
			if ram != "0" {
				// The size limit in MiB is not modelled: the lab's model and window fit in any.
				b.hostCache = &cachesim.HostCache{}
			}
			if p, ok := localserver.PreparedOf(srv.Binary); ok {
				// Debian unstable's package version and what its --version says.
				b.settings["llama_cpp_package"] = p.Version
				b.settings["llama_server_version"] = p.ServerVersion
			}
			// The model file is known when the lab starts llama-server: its tokenizer and digest.
			b.gguf = srv.ModelPath
			if o.GGUF != "" {
				b.gguf = o.GGUF
			}
			if fam := o.Model.Family; otherFamily(fam) {
				// Another family's synthetic model (lab run --family): llama-server renders its
				// GGUF's own template and counts with its own tokenizer (/tokenize), so the expected
				// cached tokens are the family's.
				b.settings[settingFamily], b.settings[settingChatTemplate] = string(fam), localserver.LlamaChatTemplateOf(fam)
			}
		}
		if !started && loopback(ro.BaseURL) {
			// One run at a time on a llama-server, as on the lab's own: the lock is the address's.
			cache, err := cacheDir(s, o.CacheDir)
			if err != nil {
				return err
			}
			unlock, err := localserver.LockURL(ctx, cache, ro.BaseURL, s.err)
			if err != nil {
				return err
			}
			b.stops = append(b.stops, unlock)
		}
		newClient := func(slot int) (*llamacpp.Client, error) {
			return llamacpp.New(llamacpp.Options{BaseURL: b.url, Slot: slot, OwnSlot: ro.Parallel > 1,
				APIKey: s.getenv("LLAMA_API_KEY"), KeyFile: ro.KeyFile, Temperature: &o.Live.Temperature})
		}
		c, err := newClient(0)
		if err != nil {
			return &usageError{err}
		}
		if b.serverVersion, err = c.Version(ctx); err != nil {
			return fmt.Errorf("reach llama-server: %w", err)
		}
		if p, err := c.Props(ctx); err == nil && p.ModelPath != "" {
			b.model = filepath.Base(p.ModelPath)
		}
		if b.cacheReuse == nil {
			// A running server's --cache-reuse is in neither /props nor /slots (b11669): unknown,
			// and its chunk reuse is not modelled; nor is its host-memory prompt cache.
			b.settings["cache_reuse"] = "unknown"
			b.settings["cache_ram"] = "unknown"
		}
		// The token the server adds before every prompt (a BOS: Llama 3.1, Gemma 3, DeepSeek V3;
		// none for Qwen3) starts every rendered prompt the lab counts. A server that does not
		// say (an older build without pieces) is counted as before, without one.
		startTokenUnknown := func(err error) {
			fmt.Fprintf(s.err, "lab: warning: llama-server's start token is unknown (%v): where its model adds a BOS, the expected cached tokens are one short\n", err)
		}
		if _, err := c.ReadStartToken(ctx); err != nil {
			startTokenUnknown(err)
		}
		b.client, b.tok = c, c.Tokenizer()
		// The server's own tokenizer (/tokenize), not the lab's reading of the same GGUF: on
		// the midnight scenario the latter counted one token more than llama.cpp from its 20th
		// request on.
		props, err := c.Props(ctx)
		b.numCtx = llamaNumCtx(props, err, started, o.NumCtx)
		if ro.Parallel > 1 {
			// One session per slot: the server must have them (/props total_slots).
			if err != nil || props.TotalSlots < ro.Parallel {
				slots := "unknown"
				if err == nil {
					slots = strconv.Itoa(props.TotalSlots)
				}
				return fmt.Errorf("--parallel %d: the llama-server at %s has %s slots (-np)", ro.Parallel, b.url, slots)
			}
			b.slots = []harness.Backend{c}
			for k := 1; k < ro.Parallel; k++ {
				ck, err := newClient(k)
				if err != nil {
					return &usageError{err}
				}
				if _, err := ck.ReadStartToken(ctx); err != nil {
					startTokenUnknown(err)
				}
				b.slots = append(b.slots, ck)
			}
		}
		b.settings["parallel"] = strconv.Itoa(max(ro.Parallel, 1))
		return nil
	case "openai":
		profile := ro.Profile
		if profile != "ollama" && loopbackOllama(ctx, ro.BaseURL) {
			// Ollama answers cached_tokens 0 whatever it reused: that field is never a measurement.
			fmt.Fprintf(s.err, "lab run: %s is Ollama, whose cached_tokens is always 0: using --profile ollama (cached tokens unknown; --backend ollama reads them from its log)\n", chat.RedactedURL(ro.BaseURL))
			profile = "ollama"
		}
		if profile == "ollama" {
			fmt.Fprintln(s.err, ollamaWindowNote)
		}
		c, err := openai.New(openai.Options{Profile: profile, BaseURL: ro.BaseURL, Model: o.ModelName,
			API: ro.API, KeyFile: ro.KeyFile, Getenv: s.getenv, Temperature: &o.Live.Temperature})
		if err != nil {
			return &usageError{err}
		}
		b.client, b.url = c, chat.RedactedURL(c.URL())
		b.settings["profile"] = c.Profile().Name
		if ro.API != "" {
			b.settings["api"] = ro.API // chat or responses: another wire API, another setup
		}
		b.nonce = func(session string) string { return openai.Nonce(session) + "\n" }
	case "anthropic":
		var bps []anthropic.Breakpoint
		if ro.Breakpoints != "" {
			var err error
			if bps, err = anthropic.ParseBreakpoints(ro.Breakpoints); err != nil {
				return badInput("--cache-breakpoints: %v", err)
			}
		}
		c, err := anthropic.New(anthropic.Options{BaseURL: ro.BaseURL, Model: o.ModelName, KeyFile: ro.KeyFile, Breakpoints: bps, Thinking: ro.Thinking,
			Temperature: &o.Live.Temperature})
		if err != nil {
			return &usageError{err}
		}
		b.client, b.url = c, chat.RedactedURL(c.URL())
		if ro.Breakpoints != "" {
			b.settings["cache_breakpoints"] = ro.Breakpoints
		}
		if ro.Thinking != "" {
			b.settings["thinking"] = ro.Thinking
		}
		if loopbackOllama(ctx, ro.BaseURL) {
			b.constantCached = "the server is Ollama, whose /v1/messages always answers 0 cache_read_input_tokens"
			fmt.Fprintf(s.err, "lab run: %s is Ollama, whose cache_read_input_tokens is always 0: cached tokens unknown (--backend ollama reads them from its log)\n", chat.RedactedURL(ro.BaseURL))
			fmt.Fprintln(s.err, ollamaWindowNote)
		}
		b.nonce = func(session string) string { return openai.Nonce(session) + "\n" }
	}
	// A cloud API: its window is the model's, not the lab's to pin (b.numCtx stays 0).
	table, err := pricingTable(ro.Pricing)
	if err != nil {
		return err
	}
	model := b.model
	b.price = func(u *chat.Usage) (float64, bool) { return table.Cost(model, u) }
	if ro.Pricing != "" {
		b.settings["pricing"] = ro.Pricing
	}
	if b.tok == nil {
		fmt.Fprintf(s.err, "lab: note: %s does not render or tokenize prompts for the lab: expected cached tokens, the divergence and the re-read split are null (unknown)\n", o.Backend)
	}
	return nil
}

// llamaNumCtx is the context size the manifest records for a llama-server: a slot's context as
// the server reports it (GET /props default_generation_settings.n_ctx, answer p or error err),
// which can differ from the -c asked for; when it does not say, the -c the lab gave (flag) if the
// lab started it, else 0 (unknown).
func llamaNumCtx(p *llamacpp.Props, err error, started bool, flag int) int {
	switch {
	case err == nil && p != nil && p.NCtx > 0:
		return int(p.NCtx)
	case started:
		return flag
	}
	return 0
}

// ollamaWindowNote is what lab run says before it measures Ollama through its OpenAI- or
// Anthropic-compatible endpoints, which take no num_ctx.
const ollamaWindowNote = "lab run: warning: Ollama's /v1 endpoints take no num_ctx: the model runs at the server's default context window (4,096 tokens unless OLLAMA_CONTEXT_LENGTH or the model sets one) and longer prompts are cut without an error; such rows warn \"" + harness.WarningPromptShrank + "\" (--backend ollama pins num_ctx)"

// loopbackOllama reports whether base (a --base-url) names a loopback server that answers
// Ollama's /api/version ([capture.IsOllama]); it asks nothing of a server elsewhere.
func loopbackOllama(ctx context.Context, base string) bool {
	u, err := neturl.Parse(base)
	if err != nil || base == "" || capture.CheckLoopback(net.JoinHostPort(u.Hostname(), "0")) != nil {
		return false
	}
	return capture.IsOllama(ctx, &http.Client{}, base)
}

// lastArg returns the value of the last of the flags in a command line, "" when none is there.
func lastArg(args []string, flags ...string) string {
	v := ""
	for i := 0; i+1 < len(args); i++ {
		for _, f := range flags {
			if args[i] == f {
				v = args[i+1]
			}
		}
	}
	return v
}

// loopback reports whether base (a --base-url) names a loopback host.
func loopback(base string) bool {
	u, err := neturl.Parse(base)
	return err == nil && base != "" && capture.CheckLoopback(net.JoinHostPort(u.Hostname(), "0")) == nil
}

// pricingTable is the embedded pricing table, or the file given with --pricing.
func pricingTable(path string) (*pricing.Table, error) {
	if path == "" {
		return pricing.Default()
	}
	t, err := pricing.Load(path)
	if err != nil {
		return nil, &usageError{err}
	}
	return t, nil
}
