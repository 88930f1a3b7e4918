package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"lab/metrics"
)

// sessionKey names one session of a run: a scenario × arm × repetition.
type sessionKey struct {
	scenario, arm string
	repetition    int32
}

// prior is what an earlier attempt at a run left in its folder, for [Run] with Resume.
type prior struct {
	// man is the run's manifest as it was left.
	man *metrics.Manifest
	// kept are the rows of the sessions that completed, in file order.
	kept []metrics.Sample
	// done are the sessions that completed: every planned request has a row, none with an error.
	done map[sessionKey]bool
	// dropped is the number of rows of sessions that did not complete.
	dropped int
	// records are the manifest's records of the sessions that completed (made from their rows
	// for a run whose manifest has none), in the order they ended.
	records []metrics.SessionRecord
}

// ErrNothingToResume is returned by [Run] with Resume for a run whose manifest says it completed.
var ErrNothingToResume = errors.New("harness: the run is complete; nothing to resume")

// loadPrior reads the run's part in dir for a resume (files: the part's manifest and samples, or
// the old layout's): its manifest, which must describe the matrix, shard, backend and model of
// cfg, and its samples ([metrics.ReadSamples]: the journal's rows when a killed run left the
// samples file unreadable or, for a part, still partial).
//
// When the manifest records how sessions ended ([metrics.Manifest].Sessions), a session is
// complete when its last record says so and its rows are request indexes 0 to n−1, n the record's
// request count. For a run without records: a session is complete when none of its rows carries an
// error (a live turn's row that ends it at its time limit, end_reason "timeout", is a normal turn
// end) and, with the scripted driver, its rows are request indexes 0 to n−1, n being the requests
// its scenario plans ([RunConfig.Requests]'s count for one session); with the live driver, its
// rows are request indexes 0 to some m and every turn of the scenario ended (a row with an
// end_reason per turn). A samples file no reader can open and without a journal (a run killed
// before the journal existed) is set aside as <name>.unreadable-<time> and every session
// runs again.
func loadPrior(dir string, files runFiles, cfg *RunConfig) (*prior, error) {
	manFile := filepath.Base(files.manifest)
	man, err := metrics.ReadManifest(files.manifest)
	if errors.Is(err, fs.ErrNotExist) {
		if files.layout == metrics.LayoutParts && metrics.IsRunDir(dir) {
			return nil, fmt.Errorf("resume %s: no %s: the run has no shard %s", dir, manFile, files.shard)
		}
		return nil, fmt.Errorf("resume %s: no %s: not a run folder", dir, manFile)
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if man.Complete {
		return nil, fmt.Errorf("resume %s: %w", dir, ErrNothingToResume)
	}
	var scs, arms []string
	for _, sc := range cfg.Scenarios {
		scs = append(scs, sc.Name)
	}
	for _, a := range cfg.Arms {
		arms = append(arms, a.Name)
	}
	runShard, thisShard := "", ""
	if files.layout == metrics.LayoutParts {
		runShard, thisShard = "1/1", files.shard.String()
		if man.Shard != nil {
			runShard = man.Shard.String()
		}
	}
	for _, c := range []struct {
		field     string
		run, this any
		same      bool
	}{
		{"scenarios", man.Scenarios, scs, slices.Equal(man.Scenarios, scs)},
		{"arms", man.Arms, arms, slices.Equal(man.Arms, arms)},
		{"repetitions", man.Repetitions, max(cfg.Repeat, 1), man.Repetitions == max(cfg.Repeat, 1)},
		{"backend", man.Backend, cfg.BackendName, man.Backend == cfg.BackendName},
		{"model", man.Model, cfg.Model, man.Model == cfg.Model},
		{"shard", runShard, thisShard, runShard == thisShard},
	} {
		if !c.same {
			return nil, fmt.Errorf("resume %s: the run's %s are %v, this one's %v: a resumed run must be the same run", dir, c.field, c.run, c.this)
		}
	}
	// The same content too, where the run recorded it: a scenario or model file changed since
	// the run started would mix two experiments in one run.
	if cfg.LoopJSON != nil {
		for _, sc := range cfg.Scenarios {
			if was, now := man.ScenarioDigests[sc.Name], sc.Digest(cfg.LoopJSON); was != "" && was != now {
				return nil, fmt.Errorf("resume %s: scenario %s's content changed since the run started (digest %s, now %s: its file, workspace, prompts or loop.json): a resumed run must be the same run", dir, sc.Name, was, now)
			}
		}
	}
	if man.ModelDigest != "" && cfg.ModelDigest != "" && man.ModelDigest != cfg.ModelDigest {
		return nil, fmt.Errorf("resume %s: the model file changed since the run started (digest %s, now %s): a resumed run must be the same run", dir, man.ModelDigest, cfg.ModelDigest)
	}
	p := &prior{man: man, done: map[sessionKey]bool{}}
	path := files.samples
	rows, recovered, err := metrics.ReadSamples(path)
	var lost *metrics.JournalError
	if errors.As(err, &lost) {
		// A journal line that holds no sample lost its row: the session it belonged to lacks a
		// request index, so it is judged incomplete below and runs again whole.
		if cfg.Warn != nil {
			cfg.Warn(fmt.Errorf("resume %s: %w: the sessions of the rows lost run again", dir, err))
		}
		err = nil
	}
	if _, jerr := os.Stat(metrics.JournalPath(path)); err != nil && jerr == nil {
		// A journal that cannot be read: say so rather than measure its sessions again over it.
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if recovered && cfg.Warn != nil {
		cfg.Warn(fmt.Errorf("resume %s: %s is unreadable or missing (the run was killed): recovered %d rows from %s", dir, filepath.Base(path), len(rows), filepath.Base(metrics.JournalPath(path))))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil
	case err != nil:
		aside := path + ".unreadable-" + time.Now().UTC().Format("20060102-150405")
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("resume %s: %w; and set it aside: %w", dir, err, rerr)
		}
		if cfg.Warn != nil {
			cfg.Warn(fmt.Errorf("resume %s: %w: set aside as %s; every session runs again", dir, err, filepath.Base(aside)))
		}
		return p, nil
	}
	// planned is, per scenario, the requests a scripted session sends, or the turns a live one
	// takes (each ends with a row that says why: its end_reason).
	planned := map[string]int{}
	live := cfg.Driver.Live()
	for _, sc := range cfg.Scenarios {
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
	if len(man.Sessions) > 0 {
		p.fromRecords(rows)
		return p, nil
	}
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
	// Records for the kept sessions, in the order their rows came.
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
		p.records = append(p.records, metrics.SessionRecord{Scenario: k.scenario, Arm: k.arm, Repetition: int(k.repetition), Requests: counted[k], Complete: true})
	}
	return p, nil
}

// fromRecords marks done the sessions the manifest records as complete whose rows are all there
// (request indexes 0 to n−1, n the record's count), and keeps their rows and records.
func (p *prior) fromRecords(rows []metrics.Sample) {
	last := map[sessionKey]metrics.SessionRecord{}
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
func (p *prior) keep(rows []metrics.Sample) {
	for _, r := range rows {
		if p.done[sessionKey{r.Scenario, r.Arm, r.Repetition}] {
			p.kept = append(p.kept, r)
		} else {
			p.dropped++
		}
	}
}

// keepRequests rewrites the requests file at path (requests.jsonl) keeping only the lines of the
// sessions in keep, in order, atomically (a temporary file renamed over it). A missing file is
// nothing to do; a last line cut short (a killed run) is dropped; any other line that is not a
// JSON object with scenario, arm and repetition is an error naming the file and line.
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
	if err := metrics.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(out.Bytes())
		return err
	}); err != nil {
		return fmt.Errorf("resume: rewrite %s: %w", path, err)
	}
	return nil
}
