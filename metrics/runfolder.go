package metrics

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// This file is the write side of a run folder (results/run_id=<id>/, see the package doc): a new
// part created, or a part reopened for a resume (its manifest checked against the run that
// resumes it, the rows of its complete sessions kept, the rest dropped), the manifest written
// as each session ends and when the part ends. A run of the old layout (manifest.json,
// samples.parquet) is read only: it is never written or resumed.

// SettingResumedAt is the manifest setting that lists, comma-separated, when the run was resumed
// (RFC 3339, UTC).
const SettingResumedAt = "resumed_at"

// SettingServerURLs is the manifest setting that lists, comma-separated in the order used, the
// model server addresses a run measured against when a resume changed it (the first run's
// address, "unknown" when it recorded none, then each new one); absent while the run kept one
// address. [Manifest].ServerURL is the last.
const SettingServerURLs = "server_urls"

// SettingRunFlags is the manifest setting that records the flags of lab run as a JSON object
// (flag name → value), for lab run --resume. On a resume, the resuming run's value replaces the
// manifest's: a resume may change the server's address, and the next resume uses the new one.
// Every other setting keeps its first value.
const SettingRunFlags = "lab_run_flags"

// ErrNothingToResume is returned by [OpenRun] with Resume for a part whose manifest says it
// completed.
var ErrNothingToResume = errors.New("the run is complete; nothing to resume")

// ErrOldLayout is returned (wrapped, naming the folder and what to do) for a write to or a
// resume of a run folder of the old layout ([LayoutSingle]), which is read only: for reports
// and comparisons.
var ErrOldLayout = errors.New("a run of the old layout (manifest.json, samples.parquet) is read only")

// oldLayoutError is [ErrOldLayout] for dir, with what to do instead.
func oldLayoutError(dir string) error {
	return fmt.Errorf("%s: %w: lab report and comparisons read it, but it is not resumed or written in place; start a new run (lab run with the same flags and a new --run-id) to measure its missing sessions", dir, ErrOldLayout)
}

// CheckRunID reports a run id that cannot name a folder inside the results folder.
func CheckRunID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return fmt.Errorf("run id %q: want a single folder name", id)
	}
	return nil
}

// CheckNewRun reports why shard s of the run id cannot be written into resultsDir: a run id that
// cannot name a folder ([CheckRunID]), a shard without a run id, or a run folder
// (resultsDir/run_id=<id>, [RunDir]) that already holds this shard, shards of another count, or
// a run of the old layout. A folder holding other shards of the same count is fine: shards of
// one run are written side by side. It returns nil for an empty runID without a shard (the run
// id is then made from the start time).
func CheckNewRun(resultsDir, runID string, s Shard) error {
	if runID == "" {
		if s != (Shard{}) {
			return errors.New("a shard needs the run id (--run-id): every shard, on whatever machine, must name the same run, and the default (the start time) differs between them")
		}
		return nil
	}
	if err := CheckRunID(runID); err != nil {
		return err
	}
	if err := s.Check(); err != nil {
		return err
	}
	s = s.Norm()
	dir := RunDir(resultsDir, runID)
	layout, err := DetectLayout(dir)
	if err != nil {
		return err
	}
	switch layout {
	case LayoutSingle:
		return fmt.Errorf("%s already holds a run: choose another run id", dir)
	case LayoutNone:
		// A folder without manifest, but with this part's samples (a part killed before its
		// manifest was written is impossible; a folder copied by hand is not).
		for _, name := range []string{PartFile(s), PartFile(s) + PartialSuffix, JournalPath(PartFile(s))} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return fmt.Errorf("%s already exists: choose another run id", filepath.Join(dir, name))
			}
		}
		return nil
	}
	parts, err := ReadParts(dir)
	if err != nil {
		return err
	}
	if n := parts[0].Shard.Count; n != s.Count {
		if n == 1 {
			return fmt.Errorf("%s already holds the run %s, not split into shards: choose another run id", dir, runID)
		}
		return fmt.Errorf("%s holds shards of %d parts; this is shard %s: the shards of one run are split one way (choose another run id, or --shard i/%d)", dir, n, s, n)
	}
	for _, p := range parts {
		if p.Shard == s {
			if s.Count == 1 {
				return fmt.Errorf("%s already exists: choose another run id", dir)
			}
			return fmt.Errorf("%s already holds shard %s (%s): choose another run id, or --resume it", dir, s, PartManifestFile(s))
		}
	}
	return nil
}

// RunSpec is what [OpenRun] needs of the run that writes a part: where, which part, and, for a
// resume, the matrix the part's manifest must describe and how a session of it is judged
// complete.
type RunSpec struct {
	// ResultsDir is the folder that receives run_id=<run-id>/ ("results").
	ResultsDir string
	// RunID names the run and its folder, run_id=<run-id> ([RunDir]); "" makes one from Start,
	// such as 20261129-224501 (not with a Shard). With Resume, a RunID of "run_id=<id>" names
	// the folder itself.
	RunID string
	// Shard is the part written; the zero Shard is part 1 of 1.
	Shard Shard
	// Resume reopens the part to carry it on instead of creating it.
	Resume bool
	// Start is when the run (or the resume) started: the default run id, and the resume's time
	// in [SettingResumedAt].
	Start time.Time
	// Manifest is the part's manifest as a new run starts it (what the run is, its settings,
	// host, cache state known from the start). Run id and shard are filled by OpenRun. On a
	// resume the part's own manifest is kept; from this one it takes the server address (a new
	// one is added to [SettingServerURLs]), the [SettingRunFlags] setting, and the host (a
	// resume on another kind of machine makes the host a [MixedHost]).
	Manifest *Manifest
	// Planned is, per scenario name, what a complete session of it has, for a resume of a part
	// whose manifest records no session: with Live false, the requests a scripted session sends
	// (request indexes 0 to n−1); with Live true, the turns a live session takes (each ends with
	// a row that has an end_reason).
	Planned map[string]int
	Live    bool
	// SaveRequests opens the part's request bodies file ([PartRequestsFile]) for
	// [RunFolder.Requests].
	SaveRequests bool
	// Warn receives problems that do not stop the run (rows recovered from a journal, rows
	// dropped).
	Warn func(error)
	// Now is the clock for the manifest's ended_at; nil means time.Now. Load, when set, returns
	// the load average at the end (nil: [CurrentLoad]).
	Now  func() time.Time
	Load func() *LoadAverage
}

// RunFolder is one part of a run folder open for writing ([OpenRun]): a [Sink] for its rows,
// its request bodies, and its manifest, written as each session ends ([RunFolder.EndSession])
// and when the part ends ([RunFolder.Finish]).
type RunFolder struct {
	// Dir is the run folder, RunID the run's id.
	Dir, RunID string
	// Manifest is the part's manifest, as last written.
	Manifest *Manifest
	// Kept are the rows of the sessions a resumed part had completed, already in the new
	// samples file, in file order; nil for a new part.
	Kept []Sample

	spec                       RunSpec
	done                       map[sessionKey]bool
	sink                       *ParquetSink
	reqFile                    *os.File
	manifest, samples, reqPath string
}

// sessionKey names one session of a run: a scenario × arm × repetition.
type sessionKey struct {
	scenario, arm string
	repetition    int32
}

// OpenRun creates spec's part in its run folder, or with spec.Resume reopens it, and writes its
// manifest (complete: false).
//
// A new part: the run id must be free for it ([CheckNewRun]); the folder is made, and the
// part's samples file ([CreatePart]) and, with SaveRequests, its request bodies file are created.
//
// A resume: the part's manifest must describe the same scenarios, arms, repetitions, backend,
// model and shard as spec.Manifest, and the same scenario contents and model file where both
// recorded their digests. The rows of the sessions that completed are kept ([RunFolder.Done]
// says which; [RunFolder.Kept]); the rows of a session that was cut or failed are dropped and
// the session runs again whole (a scripted session's cache state depends on every request
// before). The samples file is rewritten with the kept rows ([ReplacePart]: an interrupted or
// killed resume loses nothing either), and so is the requests file (the lines of the kept
// sessions). When the manifest records how sessions ended ([Manifest].Sessions), a session is
// complete when its last record says so and its rows are request indexes 0 to n−1, n the
// record's request count; without records, as spec.Planned says. A samples file no reader
// can open and without a journal is set aside as <name>.unreadable-<time> and every session
// runs again. A run of the old layout is refused ([ErrOldLayout]); a complete part is
// [ErrNothingToResume].
//
// On an error after the folder was made, the RunFolder is returned with Dir and Manifest set
// (nothing to close); before, it is nil.
func OpenRun(spec RunSpec) (*RunFolder, error) {
	if spec.Now == nil {
		spec.Now = time.Now
	}
	if spec.Load == nil {
		spec.Load = CurrentLoad
	}
	if err := spec.Shard.Check(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	f := &RunFolder{spec: spec, RunID: spec.RunID}
	var old *prior
	if spec.Resume {
		if f.RunID == "" {
			return nil, errors.New("run: resume needs the run id")
		}
		if id, ok := strings.CutPrefix(f.RunID, RunDirPrefix); ok {
			f.Dir, f.RunID = filepath.Join(spec.ResultsDir, spec.RunID), id
		} else if l, _ := DetectLayout(filepath.Join(spec.ResultsDir, f.RunID)); l == LayoutSingle {
			return nil, fmt.Errorf("resume %w", oldLayoutError(filepath.Join(spec.ResultsDir, f.RunID)))
		} else {
			f.Dir = RunDir(spec.ResultsDir, f.RunID)
		}
		if err := CheckRunID(f.RunID); err != nil {
			return nil, err
		}
		layout, err := DetectLayout(f.Dir)
		if err != nil {
			return nil, fmt.Errorf("resume %s: %w", f.Dir, err)
		}
		if layout == LayoutSingle {
			return nil, fmt.Errorf("resume %w", oldLayoutError(f.Dir))
		}
		f.setPaths()
		if old, err = f.loadPrior(); err != nil {
			return nil, err
		}
	} else {
		if err := CheckNewRun(spec.ResultsDir, f.RunID, spec.Shard); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		if f.RunID == "" {
			f.RunID = spec.Start.Format("20060102-150405")
			if err := CheckNewRun(spec.ResultsDir, f.RunID, spec.Shard); err != nil {
				return nil, fmt.Errorf("run: %w", err)
			}
		}
		f.Dir = RunDir(spec.ResultsDir, f.RunID)
		f.setPaths()
	}
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if old != nil {
		f.Manifest = old.resumed(spec)
	} else {
		f.Manifest = spec.Manifest
		f.Manifest.RunID = f.RunID
		sh := spec.Shard.Norm()
		f.Manifest.Shard = &sh
	}
	if err := WriteManifest(f.manifest, f.Manifest); err != nil {
		return f, err
	}
	var err error
	if old != nil {
		// The requests of the sessions that run again go, as their rows do.
		if err := keepRequests(f.reqPath, old.done); err != nil {
			return f, err
		}
		f.sink, err = ReplacePart(f.Dir, spec.Shard, old.kept, f.Manifest.FileMeta())
	} else {
		f.sink, err = CreatePart(f.Dir, spec.Shard, f.Manifest.FileMeta())
	}
	if err != nil {
		return f, err
	}
	if spec.SaveRequests {
		flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
		if old != nil {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		if f.reqFile, err = os.OpenFile(f.reqPath, flags, 0o644); err != nil {
			err = errors.Join(err, f.sink.Close())
			f.sink = nil
			return f, err
		}
	}
	f.done = map[sessionKey]bool{}
	if old != nil {
		f.Kept, f.done = old.kept, old.done
		if old.dropped > 0 && spec.Warn != nil {
			spec.Warn(fmt.Errorf("resume %s: kept %d rows of %d completed sessions; dropped %d rows of sessions that did not complete, which run again whole",
				f.Dir, len(old.kept), len(old.done), old.dropped))
		}
	}
	return f, nil
}

// setPaths names the part's files in f.Dir.
func (f *RunFolder) setPaths() {
	s := f.spec.Shard.Norm()
	f.manifest = filepath.Join(f.Dir, PartManifestFile(s))
	f.samples = filepath.Join(f.Dir, PartFile(s))
	f.reqPath = filepath.Join(f.Dir, PartRequestsFile(s))
}

// Write implements the write half of [Sink]: the row goes to the part's samples file (and its
// journal).
func (f *RunFolder) Write(s *Sample) error { return f.sink.Write(s) }

// Requests returns the part's request bodies file (one JSON object a line with scenario, arm,
// repetition, request_index and body), or nil without RunSpec.SaveRequests.
func (f *RunFolder) Requests() io.Writer {
	if f.reqFile == nil {
		return nil
	}
	return f.reqFile
}

// Done reports whether the session scenario × arm × repetition (1-based) completed in the part
// a resume reopened: it is not run again, its rows are in Kept.
func (f *RunFolder) Done(scenario, arm string, repetition int) bool {
	return f.done[sessionKey{scenario, arm, int32(repetition)}]
}

// EndSession records a session's outcome in the manifest, its rows counted in the manifest's
// samples, and writes the manifest at once: a run killed later still says which sessions are
// whole. The manifest is replaced atomically (a rename) but not synced, as the journal's rows
// are synced only every row group (ParquetSink.Write): a machine that loses power may lose the
// sessions since, rows and records alike; [RunFolder.Finish] syncs both. A sync each session
// was some 3 % of the sim matrix's CPU time and 8 % of its wall time.
func (f *RunFolder) EndSession(rec SessionRecord) error {
	f.Manifest.Samples += rec.Requests
	f.Manifest.Sessions = append(f.Manifest.Sessions, rec)
	return writeManifest(f.manifest, f.Manifest, replaceFile)
}

// Finish ends the part, on every path: it closes the samples file (its footer makes it
// readable) and the requests file, and writes the manifest with ended_at, the end load, the
// cache state (cacheState, [CacheWarm] and the others) and whether the run completed (runErr
// nil; else its error). It returns runErr joined with any error closing or writing.
func (f *RunFolder) Finish(runErr error, cacheState string) error {
	err := runErr
	man := f.Manifest
	man.CacheState = cacheState
	if f.sink != nil {
		if cerr := f.sink.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", filepath.Base(f.samples), cerr))
		}
	}
	if f.reqFile != nil {
		if cerr := f.reqFile.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", filepath.Base(f.reqPath), cerr))
		}
	}
	man.EndedAt = f.spec.Now().UTC()
	if man.Host != nil && man.Host.LoadStart != nil {
		man.Host.LoadEnd = f.spec.Load()
	}
	man.Complete = err == nil
	if err != nil {
		man.Error = err.Error()
	}
	if werr := WriteManifest(f.manifest, man); werr != nil {
		err = errors.Join(err, werr)
	}
	return err
}

// prior is what an earlier attempt at a part left in its folder, for a resume.
type prior struct {
	// man is the part's manifest as it was left.
	man *Manifest
	// kept are the rows of the sessions that completed, in file order.
	kept []Sample
	// done are the sessions that completed: every planned request has a row, none with an error.
	done map[sessionKey]bool
	// dropped is the number of rows of sessions that did not complete.
	dropped int
	// records are the manifest's records of the sessions that completed (made from their rows
	// for a run whose manifest has none), in the order they ended.
	records []SessionRecord
}

// resumed returns the part's manifest as the resume goes on with it: not ended, not complete,
// the kept rows and sessions, the resume's time, address, run flags and host added.
func (p *prior) resumed(spec RunSpec) *Manifest {
	man := p.man
	now := spec.Manifest
	man.EndedAt, man.Complete, man.Error, man.Samples = time.Time{}, false, "", len(p.kept)
	man.Sessions = p.records
	if man.Settings == nil {
		man.Settings = map[string]string{}
	}
	resumed := spec.Start.UTC().Format(time.RFC3339)
	if prev := man.Settings[SettingResumedAt]; prev != "" {
		resumed = prev + ", " + resumed
	}
	man.Settings[SettingResumedAt] = resumed
	// A resume may point the run at a new server address (lab run --resume --server or
	// --base-url): the manifest names the one in use, and lists every address the run
	// measured, in order, so the earlier one is kept.
	if now.ServerURL != "" && now.ServerURL != man.ServerURL {
		urls := man.Settings[SettingServerURLs]
		if urls == "" {
			urls = cmp.Or(man.ServerURL, "unknown")
		}
		man.Settings[SettingServerURLs] = urls + ", " + now.ServerURL
		man.ServerURL = now.ServerURL
	}
	if v, ok := now.Settings[SettingRunFlags]; ok {
		man.Settings[SettingRunFlags] = v
	}
	// A run resumed on another kind of machine ran on both: its host says so, with the
	// cores and loads unknown. A run that recorded no host stays unknown.
	if h := now.Host; man.Host != nil && !SameMachine(man.Host, h) {
		man.Host = MixedHost(man.Host, h)
	}
	return man
}

// loadPrior reads the part in f.Dir for a resume: its manifest, which must describe the matrix,
// shard, backend and model of f.spec.Manifest, and its samples ([ReadSamples]: the journal's
// rows when a killed run left the samples file unreadable or still partial). See [OpenRun] for
// which sessions are complete.
func (f *RunFolder) loadPrior() (*prior, error) {
	dir, spec, want := f.Dir, f.spec, f.spec.Manifest
	manFile := filepath.Base(f.manifest)
	man, err := ReadManifest(f.manifest)
	if errors.Is(err, fs.ErrNotExist) {
		if IsRunDir(dir) {
			return nil, fmt.Errorf("resume %s: no %s: the run has no shard %s", dir, manFile, spec.Shard.Norm())
		}
		return nil, fmt.Errorf("resume %s: no %s: not a run folder", dir, manFile)
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if man.Complete {
		return nil, fmt.Errorf("resume %s: %w", dir, ErrNothingToResume)
	}
	runShard, thisShard := "1/1", spec.Shard.String()
	if man.Shard != nil {
		runShard = man.Shard.String()
	}
	for _, c := range []struct {
		field     string
		run, this any
		same      bool
	}{
		{"scenarios", man.Scenarios, want.Scenarios, slices.Equal(man.Scenarios, want.Scenarios)},
		{"arms", man.Arms, want.Arms, slices.Equal(man.Arms, want.Arms)},
		{"repetitions", man.Repetitions, want.Repetitions, man.Repetitions == want.Repetitions},
		{"backend", man.Backend, want.Backend, man.Backend == want.Backend},
		{"model", man.Model, want.Model, man.Model == want.Model},
		{"shard", runShard, thisShard, runShard == thisShard},
	} {
		if !c.same {
			return nil, fmt.Errorf("resume %s: the run's %s are %v, this one's %v: a resumed run must be the same run", dir, c.field, c.run, c.this)
		}
	}
	// The same content too, where the run recorded it: a scenario or model file changed since
	// the run started would mix two experiments in one run.
	for _, sc := range want.Scenarios {
		if was, now := man.ScenarioDigests[sc], want.ScenarioDigests[sc]; was != "" && now != "" && was != now {
			return nil, fmt.Errorf("resume %s: scenario %s's content changed since the run started (digest %s, now %s: its file, workspace, prompts or loop.json): a resumed run must be the same run", dir, sc, was, now)
		}
	}
	// An arm read from a user's file (lab run --arms) is read again by path on a resume: an
	// edit in between would measure another arm under the same name.
	armWas, armNow := man.ArmDigests(), want.ArmDigests()
	for _, name := range want.Arms {
		if was, now := armWas[name], armNow[name]; was != "" && now != "" && was != now {
			return nil, fmt.Errorf("resume %s: arm %s's definition changed since the run started (digest %s, now %s): a resumed run must be the same run", dir, name, ShortDigest(was), ShortDigest(now))
		}
	}
	if man.ModelDigest != "" && want.ModelDigest != "" && man.ModelDigest != want.ModelDigest {
		return nil, fmt.Errorf("resume %s: the model file changed since the run started (digest %s, now %s): a resumed run must be the same run", dir, man.ModelDigest, want.ModelDigest)
	}
	p := &prior{man: man, done: map[sessionKey]bool{}}
	path := f.samples
	rows, recovered, err := ReadSamples(path)
	var lost *JournalError
	if errors.As(err, &lost) {
		// A journal line that holds no sample lost its row: the session it belonged to lacks a
		// request index, so it is judged incomplete below and runs again whole.
		if spec.Warn != nil {
			spec.Warn(fmt.Errorf("resume %s: %w: the sessions of the rows lost run again", dir, err))
		}
		err = nil
	}
	if _, jerr := os.Stat(JournalPath(path)); err != nil && jerr == nil {
		// A journal that cannot be read: say so rather than measure its sessions again over it.
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if recovered && spec.Warn != nil {
		spec.Warn(fmt.Errorf("resume %s: %s is unreadable or missing (the run was killed): recovered %d rows from %s", dir, filepath.Base(path), len(rows), filepath.Base(JournalPath(path))))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil
	case err != nil:
		aside := path + ".unreadable-" + time.Now().UTC().Format("20060102-150405")
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("resume %s: %w; and set it aside: %w", dir, err, rerr)
		}
		if spec.Warn != nil {
			spec.Warn(fmt.Errorf("resume %s: %w: set aside as %s; every session runs again", dir, err, filepath.Base(aside)))
		}
		return p, nil
	}
	if len(man.Sessions) > 0 {
		p.fromRecords(rows)
		return p, nil
	}
	p.fromRows(rows, spec.Planned, spec.Live)
	return p, nil
}

// fromRows marks done the sessions of a part without session records that rows show complete:
// none of its rows carries an error (a live turn's row that ends it at its time limit,
// end_reason "timeout", is a normal turn end) and, scripted, its rows are request indexes 0 to
// n−1, n = planned[scenario]; live, its rows are request indexes 0 to some m and it has a row
// with an end_reason for each of the planned[scenario] turns. It keeps their rows and makes
// their records, in the order their rows came.
func (p *prior) fromRows(rows []Sample, planned map[string]int, live bool) {
	type tally struct {
		seen       map[int32]bool
		last, ends int32
		bad        bool
	}
	sessions := map[sessionKey]*tally{}
	for _, r := range rows {
		k := sessionKey{r.Scenario, r.Arm, r.Repetition}
		t := sessions[k]
		if t == nil {
			t = &tally{seen: map[int32]bool{}}
			sessions[k] = t
		}
		if r.Failed() || t.seen[r.RequestIndex] || r.RequestIndex < 0 || (!live && int(r.RequestIndex) >= planned[r.Scenario]) {
			t.bad = true
		}
		t.seen[r.RequestIndex] = true
		t.last = max(t.last, r.RequestIndex)
		if r.EndReason != "" {
			t.ends++
		}
	}
	for k, t := range sessions {
		n := planned[k.scenario]
		switch {
		case t.bad || n == 0:
		case !live && len(t.seen) == n:
			p.done[k] = true
		case live && int(t.ends) == n && len(t.seen) == int(t.last)+1:
			p.done[k] = true
		}
	}
	p.keep(rows)
	counted := map[sessionKey]int{}
	var order []sessionKey
	for _, r := range p.kept {
		k := sessionKey{r.Scenario, r.Arm, r.Repetition}
		if counted[k] == 0 {
			order = append(order, k)
		}
		counted[k]++
	}
	for _, k := range order {
		p.records = append(p.records, SessionRecord{Scenario: k.scenario, Arm: k.arm, Repetition: int(k.repetition), Requests: counted[k], Complete: true})
	}
}

// fromRecords marks done the sessions the manifest records as complete whose rows are all there
// (request indexes 0 to n−1, n the record's count), and keeps their rows and records.
func (p *prior) fromRecords(rows []Sample) {
	last := map[sessionKey]SessionRecord{}
	for _, rec := range p.man.Sessions {
		last[sessionKey{rec.Scenario, rec.Arm, int32(rec.Repetition)}] = rec
	}
	seen := map[sessionKey]map[int32]bool{}
	bad := map[sessionKey]bool{}
	for _, r := range rows {
		k := sessionKey{r.Scenario, r.Arm, r.Repetition}
		if seen[k] == nil {
			seen[k] = map[int32]bool{}
		}
		if seen[k][r.RequestIndex] || r.RequestIndex < 0 || int(r.RequestIndex) >= last[k].Requests {
			bad[k] = true
		}
		seen[k][r.RequestIndex] = true
	}
	for k, rec := range last {
		if rec.Complete && !bad[k] && len(seen[k]) == rec.Requests && rec.Requests > 0 {
			p.done[k] = true
		}
	}
	p.keep(rows)
	for _, rec := range p.man.Sessions {
		k := sessionKey{rec.Scenario, rec.Arm, int32(rec.Repetition)}
		if p.done[k] && last[k] == rec {
			p.records = append(p.records, rec)
		}
	}
}

// keep splits rows into those of done sessions, kept in order, and the dropped ones.
func (p *prior) keep(rows []Sample) {
	for _, r := range rows {
		if p.done[sessionKey{r.Scenario, r.Arm, r.Repetition}] {
			p.kept = append(p.kept, r)
		} else {
			p.dropped++
		}
	}
}

// keepRequests rewrites the requests file at path keeping only the lines of the sessions in
// keep, in order, atomically (a temporary file renamed over it). A missing file is nothing to
// do; a last line cut short (a killed run) is dropped; any other line that is not a JSON object
// with scenario, arm and repetition is an error naming the file and line.
func keepRequests(path string, keep map[sessionKey]bool) (err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var out bytes.Buffer
	for n, rest := 1, data; len(rest) > 0; n++ {
		line, tail, whole := bytes.Cut(rest, []byte("\n"))
		rest = tail
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var id struct {
			Scenario   string `json:"scenario"`
			Arm        string `json:"arm"`
			Repetition int32  `json:"repetition"`
		}
		if jerr := json.Unmarshal(line, &id); jerr != nil {
			if !whole {
				break // the last line, cut short by a crash
			}
			return fmt.Errorf("resume: %s:%d: %w", path, n, jerr)
		}
		if keep[sessionKey{id.Scenario, id.Arm, id.Repetition}] {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	if err := WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(out.Bytes())
		return err
	}); err != nil {
		return fmt.Errorf("resume: rewrite %s: %w", path, err)
	}
	return nil
}
