package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"lab/cachesim"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	Arms      []Arm
	// Repeat is the number of repetitions of each scenario × arm; 0 means 1.
	Repeat int
	// ResultsDir is the folder that receives run_id=<run-id>/ ("results").
	ResultsDir string
	// RunID names the run and its folder, run_id=<run-id> ([metrics.RunDir]); "" makes one from
	// the start time, such as 20261129-224501 (not with a Shard: every shard must name the same
	// run). With Resume, a RunID of "run_id=<id>" names the folder itself, and a RunID whose
	// folder ResultsDir/<id> holds a run of the old layout resumes that one in place.
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
	// SaveRequests writes every request body to requests.jsonl beside the samples.
	SaveRequests bool
	// SandboxDir is where each session's workspace is written (into SandboxDir/<project>); ""
	// means <temp>/lab-sandbox/<scenario>, held by the session while it runs (a session of the
	// same scenario in another lab process waits for it) and emptied after: the same path in
	// every run, whatever else runs on the machine.
	SandboxDir string
	// Settings are recorded in the manifest as they are (flags, model options).
	Settings map[string]string
	// Progress, when set, is called after each request with the requests done and the total.
	Progress func(done, total int, s *metrics.Sample)
	// Warn receives problems that do not stop the run.
	Warn func(error)
	// Nonce, when set, gives the text written first in every system prompt of a session, from
	// the session's name "<run-id>/<scenario>/<arm>/<repetition>": a nonce unique to the
	// session starts a cloud API's prompt cache cold (it cannot be emptied). Each session needs
	// its own: a second repetition would otherwise find the first one's prefix cached.
	Nonce func(session string) string
	// Warm and Price are passed to every session (SessionConfig).
	Warm  bool
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
}

// Requests returns the number of requests the matrix's sessions of c's shard send (every
// session's without a shard): one per assistant step and one per compaction (its summary
// request, §7, as the next turn or separate).
func (c *RunConfig) Requests() int {
	n := 0
	for _, ms := range c.Sessions() {
		n += sessionRequests(c.Scenarios[ms.Scenario])
	}
	return n
}

// CheckRunID reports a run id that cannot name a folder inside the results folder.
func CheckRunID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return fmt.Errorf("run id %q: want a single folder name", id)
	}
	return nil
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
// A request that fails with a retryable error is sent again as cfg.Retry says; its row records
// the retries. A session that cannot go on (a request that still failed, with the error in its
// row) ends there and the run goes on with the next session; at the end Run returns a
// *[SessionsError] counting the sessions that failed. An interrupt (ctx canceled) or a samples
// file that cannot be written stops the run at once. On every path the Parquet file is closed
// (its footer written, every row kept) and the manifest says complete false with the error.
//
// With cfg.Resume, Run carries on the run's part (the shard cfg.Shard names) in its folder:
// cfg must describe the same matrix, shard, backend and model as the part's manifest. A run of
// the old layout (results/<id>/manifest.json, samples.parquet) is resumed in place in that
// layout. The rows of the sessions that completed are kept;
// the rows of a session that was cut or failed are dropped and the session is run again whole
// (a scripted session's cache state depends on every request before); samples.parquet is
// rewritten with the kept rows followed by the new ones ([metrics.ReplaceParquet]: an
// interrupted or killed resume loses nothing either), and so is requests.jsonl (the lines of
// the kept sessions, then the new ones).
func Run(ctx context.Context, cfg RunConfig) (dir string, man *metrics.Manifest, err error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if len(cfg.Scenarios) == 0 || len(cfg.Arms) == 0 {
		return "", nil, errors.New("run: no scenario or no arm")
	}
	host, load := cfg.Host, cfg.Load
	if host == nil {
		host = metrics.CurrentHost
	}
	if load == nil {
		load = metrics.CurrentLoad
	}
	start := now()
	runID := cfg.RunID
	if err := cfg.Shard.Check(); err != nil {
		return "", nil, fmt.Errorf("run: %w", err)
	}
	layout := metrics.LayoutParts
	var old *prior
	switch {
	case cfg.Resume:
		if runID == "" {
			return "", nil, errors.New("run: resume needs the run id")
		}
		if dir, runID, layout, err = resumeDir(&cfg); err != nil {
			return "", nil, err
		}
		if old, err = loadPrior(dir, filesOf(dir, layout, cfg.Shard), &cfg); err != nil {
			return "", nil, err
		}
	default:
		if err := CheckNewRun(cfg.ResultsDir, runID, cfg.Shard); err != nil {
			return "", nil, fmt.Errorf("run: %w", err)
		}
		if runID == "" {
			runID = start.Format("20060102-150405")
			if err := CheckNewRun(cfg.ResultsDir, runID, cfg.Shard); err != nil {
				return "", nil, fmt.Errorf("run: %w", err)
			}
		}
		dir = metrics.RunDir(cfg.ResultsDir, runID)
	}
	files := filesOf(dir, layout, cfg.Shard)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("run: %w", err)
	}
	if old != nil {
		man = old.man
		man.EndedAt, man.Complete, man.Error, man.Samples = time.Time{}, false, "", len(old.kept)
		man.Sessions = old.records
		if man.Settings == nil {
			man.Settings = map[string]string{}
		}
		resumed := start.UTC().Format(time.RFC3339)
		if prev := man.Settings[SettingResumedAt]; prev != "" {
			resumed = prev + ", " + resumed
		}
		man.Settings[SettingResumedAt] = resumed
		// A resume may point the run at a new server address (lab run --resume --server or
		// --base-url): the manifest names the one in use, and lists every address the run
		// measured, in order, so the earlier one is kept.
		if cfg.ServerURL != "" && cfg.ServerURL != man.ServerURL {
			urls := man.Settings[SettingServerURLs]
			if urls == "" {
				urls = cmp.Or(man.ServerURL, "unknown")
			}
			man.Settings[SettingServerURLs] = urls + ", " + cfg.ServerURL
			man.ServerURL = cfg.ServerURL
		}
		if v, ok := cfg.Settings[SettingRunFlags]; ok {
			man.Settings[SettingRunFlags] = v
		}
		// A run resumed on another kind of machine ran on both: its host says so, with the
		// cores and loads unknown. A run that recorded no host stays unknown.
		if h := host(); man.Host != nil && !metrics.SameMachine(man.Host, h) {
			man.Host = metrics.MixedHost(man.Host, h)
		}
	} else {
		man = &metrics.Manifest{
			LabVersion: cfg.LabVersion, RunID: runID, Repetitions: max(cfg.Repeat, 1),
			Backend: cfg.BackendName, Model: cfg.Model, ServerVersion: cfg.ServerVersion, ServerURL: cfg.ServerURL,
			NumCtx: cfg.NumCtx, StartedAt: start.UTC(), Settings: cfg.Settings,
			ModelDigest: cfg.ModelDigest, Tags: cfg.Tags, Host: host(),
		}
		if cfg.Warm {
			// Known from the start: a run killed before its end is still a warm one.
			man.CacheState = metrics.CacheWarm
		}
		if cfg.LoopJSON != nil {
			man.ScenarioDigests = map[string]string{}
			for _, sc := range cfg.Scenarios {
				man.ScenarioDigests[sc.Name] = sc.Digest(cfg.LoopJSON)
			}
		}
		if layout == metrics.LayoutParts {
			man.Shard = &files.shard
		}
		for _, sc := range cfg.Scenarios {
			man.Scenarios = append(man.Scenarios, sc.Name)
		}
		for _, a := range cfg.Arms {
			man.Arms = append(man.Arms, a.Name)
		}
	}
	manPath := files.manifest
	if err := metrics.WriteManifest(manPath, man); err != nil {
		return dir, man, err
	}
	reqPath := files.requests
	var psink *metrics.ParquetSink
	if old != nil {
		// The requests of the sessions that run again go, as their rows do.
		if err := keepRequests(reqPath, old.done); err != nil {
			return dir, man, err
		}
		psink, err = files.replace(dir, old.kept, man)
	} else {
		psink, err = files.create(dir, man)
	}
	if err != nil {
		return dir, man, err
	}
	sink := &trackSink{Sink: psink}
	var reqFile *os.File
	if cfg.SaveRequests {
		flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
		if old != nil {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		if reqFile, err = os.OpenFile(reqPath, flags, 0o644); err != nil {
			return dir, man, errors.Join(err, psink.Close())
		}
	}
	// Whatever happens, close the Parquet file (its footer makes it readable) and record in the
	// manifest how far the run got.
	defer func() {
		if cerr := psink.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", filepath.Base(files.samples), cerr))
		}
		if reqFile != nil {
			if cerr := reqFile.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("close %s: %w", filepath.Base(reqPath), cerr))
			}
		}
		man.EndedAt = now().UTC()
		if man.Host != nil && man.Host.LoadStart != nil {
			man.Host.LoadEnd = load()
		}
		man.Complete = err == nil
		if err != nil {
			man.Error = err.Error()
		}
		if werr := metrics.WriteManifest(manPath, man); werr != nil {
			err = errors.Join(err, werr)
		}
	}()

	_, resets := cfg.Backend.(Resetter)
	cold := &coldCheck{controlled: resets || cfg.Nonce != nil, warm: cfg.Warm}
	defer func() { man.CacheState = cold.state() }()
	total, done := cfg.Requests(), 0
	if old != nil {
		// ReplaceParquet wrote the kept rows.
		for i := range old.kept {
			if s := &old.kept[i]; s.RequestIndex == 0 {
				cold.first(s)
			}
			done++
		}
		if old.dropped > 0 && cfg.Warn != nil {
			cfg.Warn(fmt.Errorf("resume %s: kept %d rows of %d completed sessions; dropped %d rows of sessions that did not complete, which run again whole",
				dir, len(old.kept), len(old.done), old.dropped))
		}
	}
	var failed []error
	matrix := cfg.Sessions()
	sessions := len(matrix)
	for _, ms := range matrix {
		scen, arm, rep := cfg.Scenarios[ms.Scenario], cfg.Arms[ms.Arm], ms.Repetition
		if old != nil && old.done[sessionKey{scen.Name, arm.Name, int32(rep)}] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return dir, man, fmt.Errorf("interrupted before %s/%s repetition %d: %w", scen.Name, arm.Name, rep, err)
		}
		// The sandbox's path appears in answers that name absolute paths (errors, search
		// results): the same path for every arm of the run, from run to run, and whatever other
		// lab processes run (tools.ClaimSandbox).
		sandbox, release := cfg.SandboxDir, func() {}
		if sandbox == "" {
			sb, rel, err := tools.ClaimSandbox(ctx, scen.Name, func(sb, lock string) {
				if cfg.Warn != nil {
					cfg.Warn(fmt.Errorf("%s/%s: waiting for the sandbox %s, which another lab process holds (lock %s)", scen.Name, arm.Name, sb, lock))
				}
			})
			if err != nil {
				return dir, man, fmt.Errorf("%s/%s repetition %d: %w", scen.Name, arm.Name, rep, err)
			}
			sandbox, release = sb, rel
		}
		rows := 0
		sc := SessionConfig{
			Scenario: scen, Arm: arm, Repetition: rep, RunID: runID, Loop: cfg.Loop, Backend: cfg.Backend,
			BackendName: cfg.BackendName, Model: cfg.Model, ServerVersion: cfg.ServerVersion,
			Tokenizer: cfg.Tokenizer, Sink: sink, SandboxDir: sandbox, Warn: cfg.Warn, NumCtx: cfg.NumCtx, Window: cfg.Window,
			Warm: cfg.Warm, Price: cfg.Price, Retry: cfg.Retry, Driver: cfg.Driver, ConstantCached: cfg.ConstantCached,
			MaxReplyBytes: cfg.MaxReplyBytes,
			OnSample: func(s *metrics.Sample) {
				if s.RequestIndex == 0 {
					cold.first(s)
				}
				man.Samples++
				rows++
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, total, s)
				}
			},
		}
		if cfg.Nonce != nil {
			sc.PromptPrefix = cfg.Nonce(fmt.Sprintf("%s/%s/%s/%d", runID, sc.Scenario.Name, arm.Name, rep))
		}
		if reqFile != nil {
			sc.Requests = reqFile
		}
		serr := RunSession(ctx, sc)
		release()
		// The session's outcome goes to the manifest at once: a run killed later still
		// says which sessions are whole.
		rec := metrics.SessionRecord{Scenario: sc.Scenario.Name, Arm: arm.Name, Repetition: rep, Requests: rows, Complete: serr == nil}
		if serr != nil {
			rec.Error = serr.Error()
		}
		man.Sessions = append(man.Sessions, rec)
		if werr := metrics.WriteManifest(manPath, man); werr != nil {
			return dir, man, errors.Join(serr, werr)
		}
		if serr == nil {
			continue
		}
		serr = fmt.Errorf("%s/%s repetition %d: %w", sc.Scenario.Name, arm.Name, rep, serr)
		switch {
		case ctx.Err() != nil:
			return dir, man, fmt.Errorf("interrupted: %w", serr)
		case sink.err != nil:
			return dir, man, serr
		}
		// The session cannot go on; the next one starts cold and can.
		failed = append(failed, serr)
		if cfg.Warn != nil {
			cfg.Warn(fmt.Errorf("session failed, going on with the next: %w", serr))
		}
	}
	if len(failed) > 0 {
		return dir, man, &SessionsError{Failed: len(failed), Total: sessions, Errs: failed}
	}
	return dir, man, nil
}

// RequestsFile is the name of the file, beside the samples, that receives every request body
// with RunConfig.SaveRequests in a run of the old layout: one JSON object a line with scenario,
// arm, repetition, request_index and body. A part's is [metrics.PartRequestsFile]
// (requests-0001-of-0001.jsonl).
const RequestsFile = "requests.jsonl"

// SettingResumedAt is the manifest setting that lists, comma-separated, when the run was resumed
// (RFC 3339, UTC).
const SettingResumedAt = "resumed_at"

// SettingServerURLs is the manifest setting that lists, comma-separated in the order used, the
// model server addresses a run measured against when a resume changed it (the first run's
// address, "unknown" when it recorded none, then each new one); absent while the run kept one
// address. [metrics.Manifest].ServerURL is the last.
const SettingServerURLs = "server_urls"

// SettingRunFlags is the manifest setting that records the flags of lab run as a JSON object
// (flag name → value), for lab run --resume. On a resume, RunConfig.Settings' value replaces
// the manifest's: a resume may change the server's address, and the next resume uses the new
// one. Every other setting keeps its first value.
const SettingRunFlags = "lab_run_flags"

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
	metrics.Sink
	err error
}

func (t *trackSink) Write(s *metrics.Sample) error {
	err := t.Sink.Write(s)
	if err != nil && t.err == nil {
		t.err = err
	}
	return err
}

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
