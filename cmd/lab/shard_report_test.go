package main

import (
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// One run named twice (its folder, the same with a trailing slash or ./) is read once: lab
// report gives what it gives for the folder named once, not a "same run id" error.
func TestReportReadsARunNamedTwiceOnce(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	base := []string{"run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec", "--run-id", "twice", "--results", results, "--quiet"}
	for _, shard := range []string{"1/2", "2/2"} {
		if code, out, errOut := runLab(t, append(base, "--shard", shard)...); code != exitOK {
			t.Fatalf("shard %s: exit %d\n%s\n%s", shard, code, out, errOut)
		}
	}
	dir := metrics.RunDir(results, "twice")
	code, once, errOut := runLab(t, "report", "--format", "csv", dir)
	if code != exitOK {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	rel, err := filepath.Rel(".", dir)
	if err != nil {
		rel = dir
	}
	code, twice, errOut := runLab(t, "report", "--format", "csv", dir, dir+"/", filepath.Join(results, ".", "run_id=twice"), rel)
	if code != exitOK || twice != once {
		t.Errorf("report of the folder named four ways: exit %d, stderr %q\n%s\nwant\n%s", code, errOut, twice, once)
	}
}

// The results folder itself is not a run: the error names how to report every run in it.
func TestReportOnTheResultsFolder(t *testing.T) {
	results := t.TempDir()
	if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "r1", "--quiet"); code != 0 {
		t.Fatalf("lab run: exit %d: %s", code, errOut)
	}
	code, _, errOut := runLab(t, "report", results)
	want := "holds 1: name one, or all of them with \"" + filepath.Join(results, "run_id=*") + "\""
	if code != exitBadInput || !strings.Contains(errOut, want) {
		t.Fatalf("lab report %s: exit %d, stderr %q; want exit 2 with %q", results, code, errOut, want)
	}
}
