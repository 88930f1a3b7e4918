package harness_test

import (
	"context"
	"errors"
	"fmt"
	"lab/arms"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

// tinyRunConfig is a run of the tiny scenario (7 requests a session) with 2 arms × repeat
// repetitions (spec, date-in-system-prompt), shard s, into results with run id "r".
func tinyRunConfig(t *testing.T, results string, repeat int, s metrics.Shard, be harness.Backend) harness.RunConfig {
	t.Helper()
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	return harness.RunConfig{
		Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec"), arm(t, "date-in-system-prompt")}, Repeat: repeat,
		ResultsDir: results, RunID: "r", Loop: loop, Backend: be, Tokenizer: tinytokenizer.Bytes{}, SandboxDir: t.TempDir(), Shard: s,
	}
}

// The n shards of a matrix are disjoint and together the whole matrix, in run order, for n
// below, equal to and above the number of sessions; each shard's request count is its sessions'.
func TestShardSessionsPartitionTheMatrix(t *testing.T) {
	t.Parallel()
	sc := load(t, "testdata/tiny.yaml")
	other := *sc
	other.Name = "tiny-2"
	cfg := harness.RunConfig{Scenarios: []*scenario.Scenario{sc, &other}, Arms: []arms.Arm{arm(t, "spec"), arm(t, "plain"), arm(t, "no-stubs")}, Repeat: 2}
	all := cfg.Sessions()
	if len(all) != 12 || cfg.Requests() != 12*7 {
		t.Fatalf("whole matrix: %d sessions, %d requests; want 12, 84", len(all), cfg.Requests())
	}
	// Run order: repetition, then scenario, then arm.
	if s := all[4]; s.Number != 4 || s.Repetition != 1 || s.Scenario != 1 || s.Arm != 1 {
		t.Errorf("session 4 = %+v; want repetition 1, scenario 1, arm 1", s)
	}
	for _, n := range []int{1, 2, 3, 5, 12, 13, 20} {
		seen := map[int]int{}
		requests := 0
		for i := 1; i <= n; i++ {
			c := cfg
			c.Shard = metrics.Shard{Index: i, Count: n}
			got := c.Sessions()
			if want := (12 - i + n) / n; len(got) != want {
				t.Errorf("shard %d/%d: %d sessions; want %d", i, n, len(got), want)
			}
			for _, s := range got {
				seen[s.Number]++
				if all[s.Number] != s {
					t.Errorf("shard %d/%d: session %+v; the matrix has %+v", i, n, s, all[s.Number])
				}
			}
			requests += c.Requests()
		}
		for k := range 12 {
			if seen[k] != 1 {
				t.Errorf("n=%d: session %d in %d shards; want 1", n, k, seen[k])
			}
		}
		if len(seen) != 12 || requests != 84 {
			t.Errorf("n=%d: %d sessions, %d requests over the shards; want 12, 84", n, len(seen), requests)
		}
	}
}

// Shards written into one folder read back as the unsharded run's rows; until the last shard is
// there the run is incomplete and names it; a shard with no session writes an empty, complete part.
func TestShardsMergeIntoTheWholeRun(t *testing.T) {
	t.Parallel()
	whole := t.TempDir()
	if _, man, err := harness.Run(context.Background(), tinyRunConfig(t, whole, 2, metrics.Shard{}, newFault(nil))); err != nil || !man.Complete {
		t.Fatalf("unsharded run: %v", err)
	}
	wdir := metrics.RunDir(whole, "r")
	if _, err := os.Stat(filepath.Join(wdir, "part-0001-of-0001.parquet")); err != nil {
		t.Fatalf("an unsharded run writes part 1 of 1: %v", err)
	}
	_, want, err := metrics.ReadRun(wdir)
	if err != nil || len(want) != 28 {
		t.Fatalf("unsharded run: %d rows, %v", len(want), err)
	}

	results := t.TempDir()
	dir := metrics.RunDir(results, "r")
	for i := 1; i <= 3; i++ {
		be := newFault(nil)
		d, man, err := harness.Run(context.Background(), tinyRunConfig(t, results, 2, metrics.Shard{Index: i, Count: 3}, be))
		if err != nil || d != dir || !man.Complete || man.Shard == nil || *man.Shard != (metrics.Shard{Index: i, Count: 3}) {
			t.Fatalf("shard %d/3: %v, folder %s, manifest %+v", i, err, d, man)
		}
		// 4 sessions dealt round robin to 3 shards: 2, 1, 1.
		if want := []int{14, 7, 7}[i-1]; be.calls != want || man.Samples != want {
			t.Errorf("shard %d/3 sent %d requests, manifest samples %d; want %d", i, be.calls, man.Samples, want)
		}
		merged, got, err := metrics.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			if merged.Complete || !strings.Contains(merged.Error, "3/3") {
				t.Errorf("after shard %d/3: complete %v, error %q; want incomplete naming 3/3", i, merged.Complete, merged.Error)
			}
			continue
		}
		if !merged.Complete || merged.Error != "" || merged.Samples != 28 {
			t.Errorf("all shards: complete %v, error %q, samples %d", merged.Complete, merged.Error, merged.Samples)
		}
		if !slices.Equal(rowKeys(got), rowKeys(want)) {
			t.Errorf("merged rows\n%v\nwant\n%v", rowKeys(got), rowKeys(want))
		}
	}

	// n above the number of sessions: shard 6/6 runs nothing and writes a valid empty part.
	empty := t.TempDir()
	be := newFault(nil)
	d, man, err := harness.Run(context.Background(), tinyRunConfig(t, empty, 1, metrics.Shard{Index: 6, Count: 6}, be))
	if err != nil || !man.Complete || man.Samples != 0 || be.calls != 0 {
		t.Fatalf("empty shard: %v, complete %v, samples %d, %d requests", err, man.Complete, man.Samples, be.calls)
	}
	if rows, err := metrics.ReadParquet(filepath.Join(d, metrics.PartFile(metrics.Shard{Index: 6, Count: 6}))); err != nil || len(rows) != 0 {
		t.Errorf("empty part: %d rows, %v", len(rows), err)
	}
	m, _, err := metrics.ReadRun(d)
	if err != nil || m.Complete || !strings.Contains(m.Error, "missing shards 1/6, 2/6, 3/6, 4/6, 5/6") {
		t.Errorf("one of six shards: %v, error %q", err, m.Error)
	}
}

// A shard needs a run id; a shard already written, or one of another split, is refused before
// anything runs; resuming a shard reruns that shard's failed sessions only.
func TestShardChecksAndResume(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	c := tinyRunConfig(t, results, 2, metrics.Shard{Index: 1, Count: 2}, newFault(nil))
	c.RunID = ""
	if _, _, err := harness.Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "run id") {
		t.Errorf("a shard without run id: %v", err)
	}
	// Shard 2/2 runs the date arm's two repetitions; its second session fails on its first request.
	failing := newFault(func(n int, req *chat.Request) error {
		if n >= 8 {
			return errors.New("boom")
		}
		return nil
	})
	if _, man, err := harness.Run(context.Background(), tinyRunConfig(t, results, 2, metrics.Shard{Index: 2, Count: 2}, failing)); err == nil || man.Complete {
		t.Fatalf("failing shard: %v", err)
	}
	dir := metrics.RunDir(results, "r")
	for _, tc := range []struct {
		shard metrics.Shard
		want  string
	}{
		{metrics.Shard{Index: 2, Count: 2}, "already holds shard 2/2"},
		{metrics.Shard{Index: 1, Count: 3}, "shards of 2 parts"},
		{metrics.Shard{}, "shards of 2 parts"},
	} {
		err := metrics.CheckNewRun(results, "r", tc.shard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckNewRun(%v) = %v; want %q", tc.shard, err, tc.want)
		}
		if _, _, err := harness.Run(context.Background(), tinyRunConfig(t, results, 2, tc.shard, newFault(nil))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%v) = %v; want %q", tc.shard, err, tc.want)
		}
	}
	if err := metrics.CheckNewRun(results, "r", metrics.Shard{Index: 1, Count: 2}); err != nil {
		t.Errorf("CheckNewRun(1/2) beside 2/2 = %v", err)
	}
	if _, man, err := harness.Run(context.Background(), tinyRunConfig(t, results, 2, metrics.Shard{Index: 1, Count: 2}, newFault(nil))); err != nil || !man.Complete {
		t.Fatalf("shard 1/2: %v", err)
	}
	part1, err := os.ReadFile(filepath.Join(dir, metrics.PartFile(metrics.Shard{Index: 1, Count: 2})))
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _ := metrics.ReadRun(dir); m.Complete || !strings.Contains(m.Error, "shard 2/2: ") {
		t.Errorf("with shard 2/2 failed: complete %v, error %q", m.Complete, m.Error)
	}

	// Resume names the folder (lab run --resume results/run_id=r sets RunID to its name).
	be := newFault(nil)
	rc := tinyRunConfig(t, results, 2, metrics.Shard{Index: 2, Count: 2}, be)
	rc.RunID, rc.Resume = metrics.RunDirPrefix+"r", true
	var totals []int
	rc.Progress = func(done, total int, s *metrics.Sample) { totals = append(totals, total) }
	if d, man, err := harness.Run(context.Background(), rc); err != nil || !man.Complete || d != dir {
		t.Fatalf("resume of shard 2/2: %v, folder %s", err, d)
	}
	if be.calls != 7 || len(totals) == 0 || totals[0] != 14 {
		t.Errorf("resume sent %d requests (progress totals %v); want the failed session's 7 of the shard's 14", be.calls, totals)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, metrics.PartFile(metrics.Shard{Index: 1, Count: 2}))); !slices.Equal(again, part1) {
		t.Error("resuming shard 2/2 changed shard 1/2's part")
	}
	m, got, err := metrics.ReadRun(dir)
	if err != nil || !m.Complete || len(got) != 28 {
		t.Errorf("after the resume: %v, complete %v (error %q), %d rows; want 28", err, m.Complete, m.Error, len(got))
	}
	for _, s := range got {
		if s.RunID != "r" {
			t.Fatalf("a row of run id %q; want r", s.RunID)
		}
	}
	// Resuming the other shard, complete, or a shard of another split, is refused.
	rc = tinyRunConfig(t, results, 2, metrics.Shard{Index: 1, Count: 2}, newFault(nil))
	rc.Resume = true
	if _, _, err := harness.Run(context.Background(), rc); !errors.Is(err, metrics.ErrNothingToResume) {
		t.Errorf("resume of the complete shard 1/2: %v", err)
	}
	rc.Shard = metrics.Shard{Index: 1, Count: 3}
	if _, _, err := harness.Run(context.Background(), rc); err == nil || !strings.Contains(err.Error(), fmt.Sprint("no shard 1/3")) {
		t.Errorf("resume of shard 1/3 in a run of 2: %v", err)
	}
}
