package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lab/metrics"
	"lab/scenario"
)

// MatrixSession is one session of a run's matrix: a scenario × arm × repetition, with its number
// in the matrix's run order.
type MatrixSession struct {
	// Number is the session's 0-based place in the run order: repetition by repetition, each
	// with every scenario in order, each with every arm in order.
	Number int
	// Scenario and Arm index RunConfig.Scenarios and RunConfig.Arms; Repetition is 1-based.
	Scenario, Arm, Repetition int
}

// Sessions returns the sessions of the matrix that cfg's shard runs, in run order: every
// session of the matrix for the zero Shard; for shard i of n, round robin, the sessions whose
// Number mod n is i−1 (shard 1/2 runs sessions 0, 2, 4, …, shard 2/2 sessions 1, 3, 5, …). The
// n shards together run every session exactly once; a shard with a higher index than the matrix
// has sessions runs none.
func (c *RunConfig) Sessions() []MatrixSession {
	var out []MatrixSession
	k := 0
	for rep := 1; rep <= max(c.Repeat, 1); rep++ {
		for si := range c.Scenarios {
			for ai := range c.Arms {
				if c.Shard.Has(k) {
					out = append(out, MatrixSession{Number: k, Scenario: si, Arm: ai, Repetition: rep})
				}
				k++
			}
		}
	}
	return out
}

// sessionRequests is the number of requests one session of sc sends: one per assistant step and
// one per compaction.
func sessionRequests(sc *scenario.Scenario) int {
	n := 0
	for _, st := range sc.Steps {
		if st.Assistant != nil || st.Compact != nil {
			n++
		}
	}
	return n
}

// runFiles are the files of one run folder that one Run writes: a part of the part layout, or the
// old layout's single files (a resumed old run).
type runFiles struct {
	layout metrics.Layout
	shard  metrics.Shard
	// manifest, samples and requests are paths; samples is the final name of the part's file.
	manifest, samples, requests string
}

func filesOf(dir string, layout metrics.Layout, s metrics.Shard) runFiles {
	if layout == metrics.LayoutSingle {
		return runFiles{layout: layout, manifest: filepath.Join(dir, metrics.ManifestFile),
			samples: filepath.Join(dir, metrics.SamplesFile), requests: filepath.Join(dir, RequestsFile)}
	}
	s = s.Norm()
	return runFiles{layout: metrics.LayoutParts, shard: s, manifest: filepath.Join(dir, metrics.PartManifestFile(s)),
		samples: filepath.Join(dir, metrics.PartFile(s)), requests: filepath.Join(dir, metrics.PartRequestsFile(s))}
}

// create opens a new samples sink for the files, the run's id and lab version (man's) in its
// file metadata.
func (f runFiles) create(dir string, man *metrics.Manifest) (*metrics.ParquetSink, error) {
	if f.layout == metrics.LayoutSingle {
		return metrics.CreateParquet(f.samples, man.FileMeta())
	}
	return metrics.CreatePart(dir, f.shard, man.FileMeta())
}

// replace opens a samples sink whose first rows are kept (a resume), with man's file metadata.
func (f runFiles) replace(dir string, kept []metrics.Sample, man *metrics.Manifest) (*metrics.ParquetSink, error) {
	if f.layout == metrics.LayoutSingle {
		return metrics.ReplaceParquet(f.samples, kept, man.FileMeta())
	}
	return metrics.ReplacePart(dir, f.shard, kept, man.FileMeta())
}

// CheckNewRun reports why shard s of the run id cannot be written into resultsDir: a run id that
// cannot name a folder ([CheckRunID]), a shard without a run id, or a run folder
// (resultsDir/run_id=<id>, [metrics.RunDir]) that already holds this shard, shards of another
// count, or a run of the old layout. A folder holding other shards of the same count is fine:
// shards of one run are written side by side. It returns nil for an empty runID without a shard
// (the run id is then made from the start time).
func CheckNewRun(resultsDir, runID string, s metrics.Shard) error {
	if runID == "" {
		if s != (metrics.Shard{}) {
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
	dir := metrics.RunDir(resultsDir, runID)
	layout, err := metrics.DetectLayout(dir)
	if err != nil {
		return err
	}
	switch layout {
	case metrics.LayoutSingle:
		return fmt.Errorf("%s already holds a run: choose another run id", dir)
	case metrics.LayoutNone:
		// A folder without manifest, but with this part's samples (a part killed before its
		// manifest was written is impossible; a folder copied by hand is not).
		for _, name := range []string{metrics.PartFile(s), metrics.PartFile(s) + metrics.PartialSuffix, metrics.JournalPath(metrics.PartFile(s))} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return fmt.Errorf("%s already exists: choose another run id", filepath.Join(dir, name))
			}
		}
		return nil
	}
	parts, err := metrics.ReadParts(dir)
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
			return fmt.Errorf("%s already holds shard %s (%s): choose another run id, or --resume it", dir, s, metrics.PartManifestFile(s))
		}
	}
	return nil
}

// resumeDir returns the folder and run id a resume of cfg works on, and the folder's layout: a
// RunID that starts with "run_id=" names the folder itself (lab run --resume results/run_id=X);
// otherwise the old layout's results/<id>/ when it holds a run of that layout, else
// results/run_id=<id>/.
func resumeDir(cfg *RunConfig) (dir, runID string, layout metrics.Layout, err error) {
	runID = cfg.RunID
	if id, ok := strings.CutPrefix(runID, metrics.RunDirPrefix); ok {
		dir, runID = filepath.Join(cfg.ResultsDir, cfg.RunID), id
	} else if l, _ := metrics.DetectLayout(filepath.Join(cfg.ResultsDir, runID)); l == metrics.LayoutSingle {
		dir = filepath.Join(cfg.ResultsDir, runID)
	} else {
		dir = metrics.RunDir(cfg.ResultsDir, runID)
	}
	if err := CheckRunID(runID); err != nil {
		return "", "", 0, err
	}
	layout, err = metrics.DetectLayout(dir)
	if err != nil {
		return "", "", 0, fmt.Errorf("resume %s: %w", dir, err)
	}
	if layout == metrics.LayoutSingle && cfg.Shard.Norm() != (metrics.Shard{Index: 1, Count: 1}) {
		return "", "", 0, fmt.Errorf("resume %s: a run of the old layout is not split into shards: resume it without --shard", dir)
	}
	if layout == metrics.LayoutNone {
		layout = metrics.LayoutParts
	}
	return dir, runID, layout, nil
}
