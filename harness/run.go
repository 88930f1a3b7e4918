package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lab/chat"
	"lab/hygiene"
	"lab/metrics"
)

// RunConfig is a matrix of scenarios × arms × repetitions against one backend.
type RunConfig struct {
	// Scenarios and Arms are the matrix, run scenario by scenario, each with every arm in order.
	Scenarios []*Scenario
	Arms      []Arm
	// Repeat is the number of repetitions of each scenario × arm; 0 means 1.
	Repeat int
	// ResultsDir is the folder that receives <run-id>/ ("results").
	ResultsDir string
	// RunID names the run's folder; "" makes one from the start time, such as 20261129-224501.
	RunID string
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
	// SaveRequests writes every request body to requests.jsonl beside the samples.
	SaveRequests bool
	// SandboxDir is where each session's workspace is written (into SandboxDir/<project>); ""
	// means <temp>/lab-sandbox/s<N>, the first slot no other lab process holds (so the same for
	// every run made one at a time), emptied at the end.
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
}

// Requests returns the number of requests the matrix sends: one per assistant step and one per
// compaction (its summary request, §7, as the next turn or separate).
func (c *RunConfig) Requests() int {
	n := 0
	for _, sc := range c.Scenarios {
		for _, st := range sc.Steps {
			if st.Assistant != nil || st.Compact != nil {
				n++
			}
		}
	}
	return n * len(c.Arms) * max(c.Repeat, 1)
}

// CheckRunID reports a run id that cannot name a folder inside the results folder.
func CheckRunID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return fmt.Errorf("run id %q: want a single folder name", id)
	}
	return nil
}

// Run runs the matrix and writes results/<run-id>/: samples.parquet (one row per request, written
// as measured), manifest.json (complete: false until every session ended well) and, with
// SaveRequests, requests.jsonl. It returns the run's folder and manifest; on an error both are
// still returned when the folder was made, and what was measured is kept and readable.
func Run(ctx context.Context, cfg RunConfig) (dir string, man *metrics.Manifest, err error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if len(cfg.Scenarios) == 0 || len(cfg.Arms) == 0 {
		return "", nil, errors.New("run: no scenario or no arm")
	}
	start := now()
	runID := cfg.RunID
	if runID == "" {
		runID = start.Format("20060102-150405")
	}
	if err := CheckRunID(runID); err != nil {
		return "", nil, err
	}
	dir = filepath.Join(cfg.ResultsDir, runID)
	if _, err := os.Stat(dir); err == nil {
		return "", nil, fmt.Errorf("run: %s already exists; choose another --run-id", dir)
	}
	// The sandbox's path appears in answers that name absolute paths (errors, search results):
	// the same path for every arm of the run, and from run to run.
	sandbox := cfg.SandboxDir
	if sandbox == "" {
		sb, release, err := claimSandbox()
		if err != nil {
			return "", nil, err
		}
		defer release()
		sandbox = sb
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("run: %w", err)
	}
	man = &metrics.Manifest{
		LabVersion: cfg.LabVersion, RunID: runID, Repetitions: max(cfg.Repeat, 1),
		Backend: cfg.BackendName, Model: cfg.Model, ServerVersion: cfg.ServerVersion, ServerURL: cfg.ServerURL,
		NumCtx: cfg.NumCtx, StartedAt: start.UTC(), Settings: cfg.Settings,
	}
	for _, sc := range cfg.Scenarios {
		man.Scenarios = append(man.Scenarios, sc.Name)
	}
	for _, a := range cfg.Arms {
		man.Arms = append(man.Arms, a.Name)
	}
	manPath := filepath.Join(dir, metrics.ManifestFile)
	if err := metrics.WriteManifest(manPath, man); err != nil {
		return dir, man, err
	}
	sink, err := metrics.CreateParquet(filepath.Join(dir, metrics.SamplesFile))
	if err != nil {
		return dir, man, err
	}
	var reqFile *os.File
	if cfg.SaveRequests {
		if reqFile, err = os.Create(filepath.Join(dir, "requests.jsonl")); err != nil {
			return dir, man, errors.Join(err, sink.Close())
		}
	}
	// Whatever happens, close the Parquet file (its footer makes it readable) and record in the
	// manifest how far the run got.
	defer func() {
		if cerr := sink.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", metrics.SamplesFile, cerr))
		}
		if reqFile != nil {
			if cerr := reqFile.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("close requests.jsonl: %w", cerr))
			}
		}
		man.EndedAt = now().UTC()
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
	for rep := 1; rep <= max(cfg.Repeat, 1); rep++ {
		for _, sc := range cfg.Scenarios {
			for _, arm := range cfg.Arms {
				sc := SessionConfig{
					Scenario: sc, Arm: arm, Repetition: rep, RunID: runID, Loop: cfg.Loop, Backend: cfg.Backend,
					BackendName: cfg.BackendName, Model: cfg.Model, ServerVersion: cfg.ServerVersion,
					Tokenizer: cfg.Tokenizer, Sink: sink, SandboxDir: sandbox, Warn: cfg.Warn, NumCtx: cfg.NumCtx,
					Warm: cfg.Warm, Price: cfg.Price,
					OnSample: func(s *metrics.Sample) {
						if s.RequestIndex == 0 {
							cold.first(s)
						}
						man.Samples++
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
				if err := RunSession(ctx, sc); err != nil {
					return dir, man, fmt.Errorf("%s/%s repetition %d: %w", sc.Scenario.Name, arm.Name, rep, err)
				}
			}
		}
	}
	return dir, man, nil
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
