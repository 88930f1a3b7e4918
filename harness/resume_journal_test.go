package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/harness"
	"lab/metrics"
)

// A killed run whose journal has a line that holds no sample (here the second row of the first
// session, which had ended): the resume keeps every other row, runs that session again whole with
// the ones that did not end, and warns naming the line.
func TestResumeOverACorruptJournalLine(t *testing.T) {
	t.Parallel()
	results, killed := t.TempDir(), t.TempDir()
	c := tinyRunConfig(t, results, 2, metrics.Shard{}, newFault(nil))
	c.Progress = func(done, total int, s *metrics.Sample) {
		if done == 10 {
			snapshot(t, metrics.RunDir(results, "r"), metrics.RunDir(killed, "r"))
		}
	}
	if _, _, err := harness.Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	dir := metrics.RunDir(killed, "r")
	jpath := filepath.Join(dir, metrics.JournalPath(metrics.PartFile(metrics.Shard{})))
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = lines[1][:len(lines[1])/2] + "\n"
	if err := os.WriteFile(jpath, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}

	be := newFault(nil)
	c = tinyRunConfig(t, killed, 2, metrics.Shard{}, be)
	c.Resume = true
	var warnings []string
	c.Warn = func(err error) { warnings = append(warnings, err.Error()) }
	_, man, err := harness.Run(context.Background(), c)
	if err != nil || !man.Complete {
		t.Fatalf("resume over a corrupt journal line: %v", err)
	}
	if be.calls != 28 {
		t.Errorf("resume sent %d requests; want 28: the session of the lost row runs again with the three that did not end", be.calls)
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, jpath+":2:") }) {
		t.Errorf("warnings %q; want one naming %s:2", warnings, jpath)
	}
	sameRows(t, dir, metrics.RunDir(results, "r"))
}
