package harness

import (
	"errors"
	"fmt"
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
}

// ErrNothingToResume is returned by [Run] with Resume for a run whose manifest says it completed.
var ErrNothingToResume = errors.New("harness: the run is complete; nothing to resume")

// loadPrior reads the run in dir for a resume: its manifest, which must describe the matrix,
// backend and model of cfg, and its samples. A session is complete when none of its rows carries
// an error and, with the scripted driver, its rows are request indexes 0 to n−1, n being the
// requests its scenario plans ([RunConfig.Requests]'s count for one session); with the live
// driver, its rows are request indexes 0 to some m and every turn of the scenario ended (a row
// with an end_reason per turn). A samples file no reader can open (a run killed before it
// closed the file) is set aside as samples.parquet.unreadable and every session runs again.
func loadPrior(dir string, cfg *RunConfig) (*prior, error) {
	man, err := metrics.ReadManifest(filepath.Join(dir, metrics.ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume %s: no %s: not a run folder", dir, metrics.ManifestFile)
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
	} {
		if !c.same {
			return nil, fmt.Errorf("resume %s: the run's %s are %v, this one's %v: a resumed run must be the same run", dir, c.field, c.run, c.this)
		}
	}
	p := &prior{man: man, done: map[sessionKey]bool{}}
	path := filepath.Join(dir, metrics.SamplesFile)
	rows, err := metrics.ReadParquet(path)
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
		if r.Error != "" || t.seen[r.RequestIndex] || r.RequestIndex < 0 || (!live && int(r.RequestIndex) >= planned[r.Scenario]) {
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
	for _, r := range rows {
		if p.done[sessionKey{r.Scenario, r.Arm, r.Repetition}] {
			p.kept = append(p.kept, r)
		} else {
			p.dropped++
		}
	}
	return p, nil
}
