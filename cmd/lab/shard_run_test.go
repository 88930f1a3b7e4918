package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"lab/metrics"
)

// sampleKeys lists each row by scenario/arm/repetition/request with its token figures, sorted.
func sampleKeys(samples []metrics.Sample) []string {
	var out []string
	for _, s := range samples {
		cached := "?"
		if s.CachedTokens != nil {
			cached = fmt.Sprint(*s.CachedTokens)
		}
		out = append(out, fmt.Sprintf("%s/%s/%d/%d prompt %d cached %s expected %v reread %v", s.Scenario, s.Arm, s.Repetition,
			s.RequestIndex, s.PromptTokens, cached, deref(s.ExpectedCachedTokens), deref(s.RereadTokens)))
	}
	slices.Sort(out)
	return out
}

// lab run --shard 1/2 and 2/2 into one results folder give the rows and the report of the
// unsharded run; lab report takes the folder, a quoted glob, and refuses a glob matching nothing.
// Each shard's progress total counts its own requests.
func TestShardedRunReportsLikeTheWholeRun(t *testing.T) {
	needTokenizer(t)
	base := []string{"run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec,date-in-system-prompt", "--repeat", "2", "--run-id", "sw"}
	whole := t.TempDir()
	if code, out, errOut := runLab(t, append(base, "--results", whole, "--quiet")...); code != exitOK {
		t.Fatalf("unsharded: exit %d\n%s\n%s", code, out, errOut)
	}
	results := t.TempDir()
	for i := 1; i <= 2; i++ {
		code, out, errOut := runLab(t, append(base, "--results", results, "--shard", fmt.Sprintf("%d/2", i), "--list-files")...)
		if code != exitOK {
			t.Fatalf("shard %d/2: exit %d\n%s\n%s", i, code, out, errOut)
		}
		part := fmt.Sprintf("part-%04d-of-0002.parquet", i)
		if !strings.Contains(out, "results: "+metrics.RunDir(results, "sw")) || !strings.Contains(out, "  "+part+"\n") {
			t.Errorf("shard %d/2's closing message does not list %s:\n%s", i, part, out)
		}
		// Plain progress lines "[done/total] ...": the total is the shard's requests.
		rows, _, err := metrics.ReadPart(metrics.RunDir(results, "sw"), metrics.Shard{Index: i, Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		totals := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^\[\d+/(\d+)\]`).FindAllStringSubmatch(errOut, -1) {
			totals[m[1]] = true
		}
		if want := fmt.Sprint(len(rows)); len(totals) != 1 || !totals[want] {
			t.Errorf("shard %d/2: progress totals %v; want only %s (the shard's requests)", i, totals, want)
		}
	}
	_, want, err := metrics.ReadRun(metrics.RunDir(whole, "sw"))
	if err != nil {
		t.Fatal(err)
	}
	man, got, err := metrics.ReadRun(metrics.RunDir(results, "sw"))
	if err != nil {
		t.Fatal(err)
	}
	if !man.Complete || len(got) != len(want) || !slices.Equal(sampleKeys(got), sampleKeys(want)) {
		t.Fatalf("merged shards: complete %v (%q), %d rows; want the unsharded run's %d rows", man.Complete, man.Error, len(got), len(want))
	}

	report := func(args ...string) string {
		t.Helper()
		code, out, errOut := runLab(t, append([]string{"report", "--format", "csv"}, args...)...)
		if code != exitOK {
			t.Fatalf("lab report %v: exit %d\n%s", args, code, errOut)
		}
		return out
	}
	wantCSV := report(metrics.RunDir(whole, "sw"))
	if got := report(metrics.RunDir(results, "sw")); got != wantCSV {
		t.Errorf("report of the shards:\n%s\nwant the unsharded run's:\n%s", got, wantCSV)
	}
	if got := report(filepath.Join(results, "run_id=*")); got != wantCSV {
		t.Errorf("report of a glob:\n%s\nwant:\n%s", got, wantCSV)
	}
	if !strings.Contains(wantCSV, "midnight,spec,2,48,") {
		t.Errorf("csv report lacks the spec arm's row with 2 repetitions of 48 requests:\n%s", wantCSV)
	}
	code, _, errOut := runLab(t, "report", "--format", "csv", filepath.Join(results, "run_id=nothing*"))
	if code != exitBadInput || !strings.Contains(errOut, "matches nothing") {
		t.Errorf("a glob matching nothing: exit %d, %s", code, errOut)
	}
	// The old habit, results/<id>: pointed at the folder.
	code, _, errOut = runLab(t, "report", "--format", "csv", filepath.Join(results, "sw"))
	if code != exitBadInput || !strings.Contains(errOut, "run_id=sw") {
		t.Errorf("results/sw: exit %d, %s", code, errOut)
	}
	// A shard already written is refused before anything runs.
	code, _, errOut = runLab(t, append(base, "--results", results, "--shard", "2/2", "--quiet")...)
	if code != exitBadInput || !strings.Contains(errOut, "already holds shard 2/2") {
		t.Errorf("shard 2/2 again: exit %d, %s", code, errOut)
	}
}

// Bad --shard values and a shard without --run-id are bad input (exit 2), before anything runs.
func TestShardFlagIsChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "0/3", "--run-id", "x"}, "--shard: shard 0/3: want i/n with 1 ≤ i ≤ n"},
		{[]string{"--shard", "4/3", "--run-id", "x"}, "--shard: shard 4/3: want i/n"},
		{[]string{"--shard", "a/b", "--run-id", "x"}, `shard "a/b": want i/n`},
		{[]string{"--shard", "1/2"}, "--shard 1/2 needs --run-id"},
	} {
		results := t.TempDir()
		args := append([]string{"run", "--backend", "sim", "--results", results, "--quiet"}, tc.args...)
		code, _, errOut := runLab(t, args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
		if ents, _ := os.ReadDir(results); len(ents) != 0 {
			t.Errorf("lab %v wrote %d entries into the results folder", tc.args, len(ents))
		}
	}
}
