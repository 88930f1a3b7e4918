package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"lab/arms"
	"lab/cachesim"
	"lab/chat"
	"lab/hygiene"
	"lab/metrics"
	"lab/scenario"
	"lab/tools"
)

// RunConfig is a matrix of scenarios × arms × repetitions against one backend.
type RunConfig struct {
	// Scenarios and Arms are the matrix, run scenario by scenario, each with every arm in order.
	Scenarios []*scenario.Scenario
	Arms      []arms.Arm
	// Repeat is the number of repetitions of each scenario × arm; 0 means 1.
	Repeat int
	// ResultsDir is the folder that receives run_id=<run-id>/ ("results").
	ResultsDir string
	// RunID names the run and its folder, run_id=<run-id> ([metrics.RunDir]); "" makes one from
	// the start time, such as 20261129-224501 (not with a Shard: every shard must name the same
	// run). With Resume, a RunID of "run_id=<id>" names the folder itself; a RunID whose folder
	// ResultsDir/<id> holds a run of the old layout is refused ([metrics.ErrOldLayout]: that
	// layout is read only).
	RunID string
	// Shard is the part of the matrix this Run runs (lab run --shard i/n): the sessions
	// [RunConfig.Sessions] lists, written as the run folder's part i of n
	// (part-000i-of-000n.parquet, manifest-000i-of-000n.json); the zero Shard is the whole
	// matrix, written as part 1 of 1.
	Shard metrics.Shard
	// LabVersion is recorded in the manifest.
	LabVersion string
	// Loop is loop.json's context section.
	Loop *hygiene.Config
	// Backend sends every request of the run.
	Backend Backend
	// BackendName, Model, ServerVersion, ServerURL and NumCtx are recorded in the manifest.
	BackendName, Model, ServerVersion, ServerURL string
	NumCtx                                       int
	// Tokenizer is the served model's tokenizer, for the expected cached tokens.
	Tokenizer Tokenizer
	// Window is what the server keeps of a sequence longer than NumCtx, for the expected cached
	// tokens after an overflow ([cachesim.Attributor].Window): Ollama's runner, or the sim that
	// models it; the zero value models none.
	Window cachesim.Window
	// CacheReuse is llama-server's --cache-reuse for the expected cached tokens
	// ([cachesim.Attributor].CacheReuse): nil where the server has no chunk reuse or its setting
	// is unknown.
	CacheReuse *int
	// RenderOrder is the order of system prompt and tool list in the server's prompt, for the
	// segments of the expected cached tokens ([cachesim.Attributor].Order): the sim's cache
	// model's provider order ([cachesim.OrderOf]); the zero value is Qwen3's template's.
	RenderOrder cachesim.RenderOrder
	// HostCache is llama-server's host-memory prompt cache (--cache-ram) for the expected cached
	// tokens, shared by every session of the run ([cachesim.Attributor].HostCache), which run one
	// at a time; nil where the server has none or it is not modelled. Not with SlotBackends.
	HostCache *cachesim.HostCache
	// SlotBackends, when it holds two or more, runs that many sessions at once, each on its own
	// slot of one llama-server (lab run --parallel N, llama-server -np N): the sessions of the
	// matrix in order, in waves of len(SlotBackends), the k-th session of a wave sent through
	// SlotBackends[k] (a client pinned to slot k, whose Reset erases that slot alone), in a
	// sandbox of its own. Each session's cache is modelled on its own, as always (a slot holds
	// one session's prompt). A wave's rows are kept in memory until its last session ends and
	// then written in the matrix's order, so the rows are the same whatever session finished
	// first; a run killed during a wave loses that wave's rows (a resume runs its sessions
	// again). Backend must be SlotBackends[0]. Nil, or one backend, runs the sessions one at a
	// time through Backend.
	SlotBackends []Backend
	// SaveRequests writes every request body to requests.jsonl beside the samples.
	SaveRequests bool
	// SandboxDir is where each session's workspace is written (into SandboxDir/<project>, and
	// shown there); "" means a private folder of the session's own ([tools.PrivateSandbox]),
	// shown in every tool answer as /tmp/lab-sandbox/<scenario> ([tools.ShownSandbox]) and
	// removed after: the same path in every run, whatever TMPDIR and whatever else runs on the
	// machine, and sessions of one scenario run at once. A live shell that may run outside its
	// view (Driver.UnsandboxedShell, or no view on the system) takes the fixed folder itself,
	// held while the session runs ([tools.ClaimSandbox]: a session of the same scenario in
	// another lab process waits for it).
	SandboxDir string
	// Settings are recorded in the manifest as they are (flags, model options).
	Settings map[string]string
	// Progress, when set, is called after each request with the requests done and the total.
	Progress func(done, total int, s *metrics.Sample)
	// SessionDone, when set, is called as each session ends, with its outcome as the manifest
	// records it (after the Progress calls of its requests).
	SessionDone func(metrics.SessionRecord)
	// Warn receives problems that do not stop the run.
	Warn func(error)
	// Nonce, when set, gives the text written first in every system prompt of a session, from
	// the session's name "<run-id>/<scenario>/<arm>/<repetition>": a nonce unique to the
	// session starts a cloud API's prompt cache cold (it cannot be emptied). Each session needs
	// its own: a second repetition would otherwise find the first one's prefix cached.
	Nonce func(session string) string
	// Warm keeps the server's cache as each session finds it: no reset ([SessionConfig].Warm).
	// A server reuses a prompt as far as it is the same from the first byte as what it holds
	// (spec 3.2.0 §10), whichever session left it: the sessions then run one after another
	// share one expected-cache model ([cachesim.Attributor]) in run order, so a session's first
	// request is expected to find what the previous session's last request left (its cached
	// tokens and their divergence, such as "tools" where the tool order differs between
	// sessions). Where the lab cannot know what the server held when a session starts, that
	// session's first request's expected cached tokens and divergence are null and its warnings
	// say why ([WarningCacheUnknown]): every session of a run with two or more SlotBackends, the
	// first session this call runs unless FreshCache, and the session after one that failed.
	Warm bool
	// FreshCache says the server's prompt cache is empty when [RunMatrix] starts and only this
	// run uses it (the sim backend, made for the run, a resumed one included): a warm run's
	// first session is then expected to find an empty cache. Without it a warm run cannot know
	// what the server held before its first session (an earlier run's prompt, another client's).
	FreshCache bool
	// Price is passed to every session ([SessionConfig].Price).
	Price func(u *chat.Usage) (usd float64, ok bool)
	// Now is the clock for the run id and the manifest; nil means time.Now.
	Now func() time.Time
	// Retry says how often a request that failed with a retryable error is sent again, after
	// how long, and how long each attempt may take; the zero value is the default policy.
	Retry RetryPolicy
	// Resume carries on the run in ResultsDir/RunID, which stopped early (an interrupt, failed
	// sessions), instead of starting a new one: see [Run].
	Resume bool
	// Driver is every session's driver: scripted (the zero value) or live, with its bounds.
	Driver Driver
	// ModelDigest is recorded in the manifest: "sha256:<hex>" of the model file the server
	// serves ([metrics.DigestFile]), "" when the lab does not know the file.
	ModelDigest string
	// LoopJSON is loop.json's bytes as Loop was parsed from, for each scenario's content digest
	// ([Scenario.Digest], recorded in the manifest's scenario_digests); nil records none
	// (unknown).
	LoopJSON []byte
	// Tags are the user's labels of the run (lab run --tag key=value), recorded in the manifest.
	Tags map[string]string
	// Host, when set, returns the machine the run runs on, read at the start; nil means
	// [metrics.CurrentHost]. Load, when set, returns the load average at the end; nil means
	// [metrics.CurrentLoad].
	Host func() *metrics.Host
	Load func() *metrics.LoadAverage
	// ConstantCached, when set, says why the server's cached count is a constant and not a
	// measurement (Ollama's /v1/messages answers cache_read_input_tokens 0 whatever it reused):
	// every result's cached tokens are then dropped ([row.DropConstantCached]) and stay null.
	ConstantCached string
	// MaxReplyBytes is the most bytes one answer's reply may hold (lab run --max-reply-bytes),
	// passed to every session ([SessionConfig].MaxReplyBytes); 0 means
	// [chat.DefaultMaxReplyBytes].
	MaxReplyBytes int64
	// DecodeRequest is passed to every session ([SessionConfig].DecodeRequest): the decoder of
	// captured requests the [CaptureAsSent] arm sends.
	DecodeRequest func(api string, body []byte) (*chat.Request, error)
	// RequestsAPI is passed to every session ([SessionConfig].RequestsAPI): the API of the
	// request bodies SaveRequests writes.
	RequestsAPI string
}

// Requests returns the number of requests the matrix's sessions of c's shard send (every
// session's without a shard): one per assistant step and one per compaction (its summary
// request, §7, as the next turn or separate).
func (c *RunConfig) Requests() int {
	n := 0
	for _, ms := range c.Sessions() {
		if c.Arms[ms.Arm].Name == CaptureAsSent {
			n += len(c.Scenarios[ms.Scenario].Captured)
			continue
		}
		n += sessionRequests(c.Scenarios[ms.Scenario])
	}
	return n
}

// Run runs the matrix, or its shard's sessions, and writes them as one part of the run folder
// results/run_id=<run-id>/ (see metrics' package doc): part-i-of-n.parquet (one row per request,
// written as measured, named part-i-of-n.parquet.partial until it is closed, with its journal
// part-i-of-n.journal.jsonl until then, so that a killed run loses no row), manifest-i-of-n.json
// (complete: false until every session of the part ended well; written again as each session
// ends, recording its outcome in Sessions; its Shard says i/n) and, with SaveRequests,
// requests-i-of-n.jsonl; i/n is 1/1 without a Shard. Other shards of the run may be written into
// the same folder, at the same time or later, or on other machines and copied in. It returns the
// run's folder and the part's manifest; on an error both are still returned when the folder was
// made, and what was measured is kept and readable.
//
// The folder is opened (created, or reopened for a resume) by [metrics.OpenRun] and the matrix
// run into it by [RunMatrix]. A request that fails with a retryable error is sent again as
// cfg.Retry says; its row records the retries. A session that cannot go on (a request that
// still failed, with the error in its row) ends there and the run goes on with the next
// session; at the end Run returns a *[SessionsError] counting the sessions that failed. An
// interrupt (ctx canceled) or a samples file that cannot be written stops the run at once. On
// every path the Parquet file is closed (its footer written, every row kept) and the manifest
// says complete false with the error.
//
// With cfg.Resume, Run carries on the run's part (the shard cfg.Shard names) in its folder:
// cfg must describe the same matrix, shard, backend and model as the part's manifest. The rows
// of the sessions that completed are kept; the rows of a session that was cut or failed are
// dropped and the session is run again whole (see [metrics.OpenRun]). A run of the old layout
// (results/<id>/manifest.json, samples.parquet) is read only: resuming it is an error
// ([metrics.ErrOldLayout]).
func Run(ctx context.Context, cfg RunConfig) (dir string, man *metrics.Manifest, err error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if len(cfg.Scenarios) == 0 || len(cfg.Arms) == 0 {
		return "", nil, errors.New("run: no scenario or no arm")
	}
	for _, a := range cfg.Arms {
		if err := Supported(a); err != nil {
			return "", nil, err
		}
	}
	host := cfg.Host
	if host == nil {
		host = metrics.CurrentHost
	}
	start := now()
	f, err := metrics.OpenRun(cfg.folder(start, host(), now))
	switch {
	case f == nil:
		return "", nil, err
	case err != nil:
		return f.Dir, f.Manifest, err
	}
	state, err := RunMatrix(ctx, cfg, f.RunID, f.Kept, f)
	return f.Dir, f.Manifest, f.Finish(err, state)
}

// folder is what [metrics.OpenRun] needs of the run: where, which part, the manifest a new run
// starts with (read on the host h at start), and how a session of the matrix is judged
// complete on a resume.
func (c *RunConfig) folder(start time.Time, h *metrics.Host, now func() time.Time) metrics.RunSpec {
	man := &metrics.Manifest{
		LabVersion: c.LabVersion, RunID: c.RunID, Repetitions: max(c.Repeat, 1),
		Backend: c.BackendName, Model: c.Model, ServerVersion: c.ServerVersion, ServerURL: c.ServerURL,
		NumCtx: c.NumCtx, StartedAt: start.UTC(), Settings: c.Settings,
		ModelDigest: c.ModelDigest, Tags: c.Tags, Host: h,
	}
	if c.Warm {
		// Known from the start: a run killed before its end is still a warm one.
		man.CacheState = metrics.CacheWarm
	}
	if c.LoopJSON != nil {
		man.ScenarioDigests = map[string]string{}
		for _, sc := range c.Scenarios {
			man.ScenarioDigests[sc.Name] = sc.Digest(c.LoopJSON)
		}
	}
	for _, sc := range c.Scenarios {
		man.Scenarios = append(man.Scenarios, sc.Name)
		for _, st := range sc.RecordedSteps() {
			if man.RecordedAnswers == nil {
				man.RecordedAnswers = map[string][]metrics.RecordedStep{}
			}
			man.RecordedAnswers[sc.Name] = append(man.RecordedAnswers[sc.Name], metrics.RecordedStep{Turn: st.Turn, Step: st.Step, Calls: st.Calls})
		}
	}
	for _, a := range c.Arms {
		man.Arms = append(man.Arms, a.Name)
		man.ArmDefinitions = append(man.ArmDefinitions, a.JSON())
	}
	// planned is, per scenario, the requests a scripted session sends, or the turns a live one
	// takes (each ends with a row that says why: its end_reason).
	planned := map[string]int{}
	live := c.Driver.Live()
	for _, sc := range c.Scenarios {
		turnOpen := false
		for _, st := range sc.Steps {
			switch {
			case live && st.User != nil:
				turnOpen = false
			case live && st.Assistant != nil && !turnOpen:
				turnOpen = true
				planned[sc.Name]++
			case !live && (st.Assistant != nil || st.Compact != nil):
				planned[sc.Name]++
			}
		}
	}
	return metrics.RunSpec{
		ResultsDir: c.ResultsDir, RunID: c.RunID, Shard: c.Shard, Resume: c.Resume, Start: start,
		Manifest: man, Planned: planned, Live: live, SaveRequests: c.SaveRequests, Warn: c.Warn,
		Now: now, Load: c.Load,
	}
}

// Output is where [RunMatrix] writes a run: the rows, the request bodies, each session's end.
// [metrics.RunFolder] is the run folder's.
type Output interface {
	// Write stores one row (see [metrics.Sink]).
	Write(*metrics.Sample) error
	// Requests receives every request body (nil: none are kept).
	Requests() io.Writer
	// Done reports whether the session scenario × arm × repetition (1-based) is already
	// complete (a resume): it is not run again.
	Done(scenario, arm string, repetition int) bool
	// EndSession records a session's outcome; an error stops the run.
	EndSession(metrics.SessionRecord) error
}

// RunMatrix runs the sessions of cfg's matrix (of its shard) that out has not done, in order,
// writing to out: a loop over the matrix. runID names the sessions ("<run-id>/<scenario>/<arm>/
// <repetition>", for cfg.Nonce); kept are the rows out already holds (a resume's), counted in
// the progress and the cold-start check. It returns the run's cache state for the manifest
// ([metrics.CacheColdVerified] and the others) and the error as [Run] describes it. With two or
// more cfg.SlotBackends the sessions run that many at once, in waves ([RunConfig].SlotBackends).
func RunMatrix(ctx context.Context, cfg RunConfig, runID string, kept []metrics.Sample, out Output) (cacheState string, err error) {
	_, resets := cfg.Backend.(Resetter)
	cold := &coldCheck{controlled: resets || cfg.Nonce != nil, warm: cfg.Warm}
	defer func() { cacheState = cold.state() }()
	sink := &trackSink{out: out}
	total, done := cfg.Requests(), 0
	for i := range kept {
		if s := &kept[i]; s.RequestIndex == 0 {
			cold.first(s)
		}
		done++
	}
	var failed []error
	matrix := cfg.Sessions()
	sessions := len(matrix)
	// mu guards cold, done and the progress when sessions run at once.
	var mu sync.Mutex
	requests := out.Requests()
	if requests != nil && len(cfg.SlotBackends) > 1 {
		requests = &lockedWriter{w: requests}
	}
	// prepare claims ms's sandbox and builds its session's configuration, on backend be writing
	// to to; slot ≥ 0 is the slot of a wave (its own sandbox), -1 a session run alone.
	prepare := func(ms MatrixSession, be Backend, slot int, to metrics.Sink, rows *int) (SessionConfig, func(), error) {
		scen, arm, rep := cfg.Scenarios[ms.Scenario], cfg.Arms[ms.Arm], ms.Repetition
		// The sandbox's path appears in answers that name absolute paths (errors, search
		// results, the shell's output): the same shown path for every arm of the run, from run
		// to run, whatever TMPDIR and whatever other lab processes run (tools.PrivateSandbox;
		// tools.ClaimSandbox where the shell may run outside its view). Sessions at once each
		// have a private folder of their own, shown at the same path; where the fixed folder
		// itself must be claimed, each slot claims one of its own, of the same length.
		sandbox, release := tools.Sandbox{Dir: cfg.SandboxDir, Shown: cfg.SandboxDir}, func() {}
		key := scen.Name
		if slot >= 0 {
			key = fmt.Sprintf("%s.slot%02d", scen.Name, slot)
			if cfg.SandboxDir != "" {
				dir := filepath.Join(cfg.SandboxDir, fmt.Sprintf("slot%02d", slot))
				sandbox = tools.Sandbox{Dir: dir, Shown: dir}
			}
		}
		if cfg.SandboxDir == "" {
			var err error
			if cfg.Driver.Live() && scen.Shell != nil && (cfg.Driver.UnsandboxedShell || !tools.HasShellView) {
				var dir string
				dir, release, err = tools.ClaimSandbox(ctx, key, func(sb, lock string) {
					if cfg.Warn != nil {
						cfg.Warn(fmt.Errorf("%s/%s: waiting for the sandbox %s, which another lab process holds (lock %s)", scen.Name, arm.Name, sb, lock))
					}
				})
				sandbox = tools.Sandbox{Dir: dir, Shown: dir}
			} else {
				// A scripted session's files are the scenario's and its tools' edits: in memory
				// (half the system time of a disk's); a live model's commands may write without
				// bound: on disk.
				sandbox, release, err = tools.PrivateSandbox(scen.Name, !cfg.Driver.Live())
			}
			if err != nil {
				return SessionConfig{}, nil, fmt.Errorf("%s/%s repetition %d: %w", scen.Name, arm.Name, rep, err)
			}
		}
		sc := SessionConfig{
			Scenario: scen, Arm: arm, Repetition: rep, RunID: runID, Session: ms.Number, Loop: cfg.Loop, Backend: be,
			BackendName: cfg.BackendName, Model: cfg.Model, ServerVersion: cfg.ServerVersion,
			Tokenizer: cfg.Tokenizer, Sink: to, SandboxDir: sandbox.Dir, SandboxShown: sandbox.Shown, Warn: cfg.Warn, NumCtx: cfg.NumCtx, Window: cfg.Window, CacheReuse: cfg.CacheReuse,
			RenderOrder: cfg.RenderOrder, HostCache: cfg.HostCache, Warm: cfg.Warm, Price: cfg.Price, Retry: cfg.Retry, Driver: cfg.Driver, ConstantCached: cfg.ConstantCached,
			MaxReplyBytes: cfg.MaxReplyBytes, Requests: requests, DecodeRequest: cfg.DecodeRequest, RequestsAPI: cfg.RequestsAPI,
			OnSample: func(s *metrics.Sample) {
				mu.Lock()
				defer mu.Unlock()
				if s.RequestIndex == 0 {
					cold.first(s)
				}
				*rows++
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, total, s)
				}
			},
		}
		if cfg.Nonce != nil {
			sc.PromptPrefix = cfg.Nonce(fmt.Sprintf("%s/%s/%s/%d", runID, sc.Scenario.Name, arm.Name, rep))
		}
		return sc, release, nil
	}
	// finish records a session's outcome; a non-nil error stops the run.
	finish := func(sc SessionConfig, rows int, serr error) error {
		arm, rep := sc.Arm, sc.Repetition
		// The session's outcome goes to the manifest at once: a run killed later still
		// says which sessions are whole.
		rec := metrics.SessionRecord{Scenario: sc.Scenario.Name, Arm: arm.Name, Repetition: rep, Requests: rows, Complete: serr == nil}
		if serr != nil {
			rec.Error = serr.Error()
		}
		if werr := out.EndSession(rec); werr != nil {
			return errors.Join(serr, werr)
		}
		if cfg.SessionDone != nil {
			cfg.SessionDone(rec)
		}
		if serr == nil {
			return nil
		}
		serr = fmt.Errorf("%s/%s repetition %d: %w", sc.Scenario.Name, arm.Name, rep, serr)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted: %w", serr)
		case sink.err != nil:
			return serr
		}
		// The session cannot go on; the next one starts cold and can.
		failed = append(failed, serr)
		if cfg.Warn != nil {
			cfg.Warn(fmt.Errorf("session failed, going on with the next: %w", serr))
		}
		return nil
	}
	var todo []MatrixSession
	for _, ms := range matrix {
		if !out.Done(cfg.Scenarios[ms.Scenario].Name, cfg.Arms[ms.Arm].Name, ms.Repetition) {
			todo = append(todo, ms)
		}
	}
	wave := max(len(cfg.SlotBackends), 1)
	warm := newWarmChain(cfg, wave)
	for len(todo) > 0 {
		n := min(wave, len(todo))
		if err := ctx.Err(); err != nil {
			ms := todo[0]
			return "", fmt.Errorf("interrupted before %s/%s repetition %d: %w", cfg.Scenarios[ms.Scenario].Name, cfg.Arms[ms.Arm].Name, ms.Repetition, err)
		}
		if wave == 1 {
			rows := 0
			sc, release, err := prepare(todo[0], cfg.Backend, -1, sink, &rows)
			if err != nil {
				return "", err
			}
			warm.start(&sc)
			serr := RunSession(ctx, sc)
			warm.end(serr)
			release()
			if err := finish(sc, rows, serr); err != nil {
				return "", err
			}
			todo = todo[1:]
			continue
		}
		// A wave: n sessions at once, the k-th on slot k, each session's rows kept until the
		// wave ends and then written in the matrix's order.
		scs := make([]SessionConfig, n)
		bufs := make([]*metrics.MemorySink, n)
		rows := make([]int, n)
		errs := make([]error, n)
		var releases []func()
		for k := range n {
			bufs[k] = &metrics.MemorySink{}
			sc, release, err := prepare(todo[k], cfg.SlotBackends[k], k, bufs[k], &rows[k])
			if err != nil {
				for _, r := range releases {
					r()
				}
				return "", err
			}
			warm.start(&sc)
			scs[k] = sc
			releases = append(releases, release)
		}
		var wg sync.WaitGroup
		for k := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = RunSession(ctx, scs[k])
			}()
		}
		wg.Wait()
		for _, r := range releases {
			r()
		}
		for k := range n {
			serr := errs[k]
			for _, s := range bufs[k].Samples() {
				if werr := sink.Write(&s); werr != nil {
					serr = errors.Join(serr, werr)
					break
				}
			}
			if err := finish(scs[k], rows[k], serr); err != nil {
				return "", err
			}
		}
		todo = todo[n:]
	}
	if len(failed) > 0 {
		return "", &SessionsError{Failed: len(failed), Total: sessions, Errs: failed}
	}
	return "", nil
}

// The reasons a warm session's first request has no expected cached tokens
// ([SessionConfig].CacheUnknown).
const (
	cacheUnknownBefore   = "the server's cache before the run's first session is unknown: --warm resets nothing, and the server may hold an earlier run's or another client's prompt"
	cacheUnknownResumed  = "the run was resumed: what the server's cache held after the sessions run before is unknown (--warm resets nothing)"
	cacheUnknownParallel = "sessions run at once on the server's slots (--parallel): with --warm, what a slot held when the session started is not followed"
	cacheUnknownFailed   = "the previous session failed: what its last request left in the server's cache is unknown (--warm resets nothing)"
)

// warmChain follows a warm run's server cache from session to session ([RunConfig].Warm): the
// expected-cache model the sessions run one after another share, and whether what it holds is
// known when the next session starts. Its zero value (nil) does nothing: a run that resets the
// server before every session.
type warmChain struct {
	// attrib is the shared model; nil when the sessions run at once (unknown stays set).
	attrib *cachesim.Attributor
	// unknown is why what the server holds when the next session starts is unknown; "" when
	// attrib holds it.
	unknown string
}

// newWarmChain returns the chain of cfg's run, whose sessions run wave at a time; nil without
// cfg.Warm.
func newWarmChain(cfg RunConfig, wave int) *warmChain {
	if !cfg.Warm {
		return nil
	}
	if wave > 1 {
		return &warmChain{unknown: cacheUnknownParallel}
	}
	w := &warmChain{attrib: newAttributor(cfg.Tokenizer, cfg.NumCtx, cfg.Loop, cfg.Window, cfg.CacheReuse, cfg.HostCache, cfg.RenderOrder)}
	switch {
	case cfg.FreshCache:
	case cfg.Resume:
		w.unknown = cacheUnknownResumed
	default:
		w.unknown = cacheUnknownBefore
	}
	return w
}

// start hands the next session the shared model and, when what it holds is unknown, why.
func (w *warmChain) start(sc *SessionConfig) {
	if w == nil {
		return
	}
	sc.Cache, sc.CacheUnknown = w.attrib, w.unknown
}

// end records how the session ended: after a failure, what the server holds is unknown; after a
// session that ended well, the shared model holds it.
func (w *warmChain) end(err error) {
	if w == nil || w.attrib == nil {
		return
	}
	w.unknown = ""
	if err != nil {
		w.unknown = cacheUnknownFailed
	}
}

// lockedWriter serializes the writes of sessions that run at once (one request body a line).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// SessionsError is [Run]'s error when sessions failed and the run went on without them.
type SessionsError struct {
	// Failed is the number of sessions that failed, Total the number of sessions of the matrix
	// (of the run's shard).
	Failed, Total int
	// Errs are the failures, each naming its session ("scenario/arm repetition N: …").
	Errs []error
}

// Error implements error: the count and the first failures.
func (e *SessionsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d sessions failed", e.Failed, e.Total)
	for i, err := range e.Errs {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more (see the error column)", len(e.Errs)-i)
			break
		}
		b.WriteString("; " + err.Error())
	}
	return b.String()
}

// Unwrap returns the failures, for errors.Is and errors.As.
func (e *SessionsError) Unwrap() []error { return e.Errs }

// trackSink remembers the first error writing to its sink: a run whose samples cannot be
// written stops.
type trackSink struct {
	out Output
	err error
}

func (t *trackSink) Write(s *metrics.Sample) error {
	err := t.out.Write(s)
	if err != nil && t.err == nil {
		t.err = err
	}
	return err
}

// Close implements [metrics.Sink]: the run's output is closed by its owner, not by a session.
func (t *trackSink) Close() error { return nil }

// coldCheck follows, session by session, whether each started with an empty prompt cache, for
// the manifest's cache_state.
type coldCheck struct {
	controlled, warm         bool
	sessions, unknown, found int
}

// first records a session's first request, the probe: its cached tokens must be 0.
func (c *coldCheck) first(s *metrics.Sample) {
	c.sessions++
	switch {
	case s.CachedTokens == nil:
		c.unknown++
	case *s.CachedTokens > 0:
		c.found++
	}
}

// state is the manifest's cache_state.
func (c *coldCheck) state() string {
	switch {
	case c.warm:
		return metrics.CacheWarm
	case !c.controlled:
		return metrics.CacheUncontrolled
	case c.found > 0:
		return metrics.CacheColdFailed
	case c.unknown > 0 || c.sessions == 0:
		return metrics.CacheColdUnverified
	default:
		return metrics.CacheColdVerified
	}
}
