package metrics_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"lab/metrics"
	"lab/metrics/metricstest"
)

var repairTime = time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC)

// killedPart writes shard s of a run into dir as a run killed with SIGKILL leaves it: its manifest
// (incomplete, counting counted rows), and rows written through the part's sink, which is never
// closed (a partial file without footer and the journal). The sink's process still holds the
// journal's lock, as a running run does; copy the folder (copyDir) for what a killed one leaves.
// It returns the sink, still open: a test of a part being written keeps it alive (an
// unreferenced sink's file is closed by the garbage collector, which drops its journal's lock).
func killedPart(t *testing.T, dir string, s metrics.Shard, rows []metrics.Sample, counted int) *metrics.ParquetSink {
	t.Helper()
	m := testManifest()
	m.Shard, m.Complete, m.EndedAt, m.Samples = &s, false, time.Time{}, counted
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s)), m); err != nil {
		t.Fatal(err)
	}
	sink, err := metrics.CreatePart(dir, s, m.FileMeta())
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := sink.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	return sink
}

// files returns the names in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// editJournal replaces the journal's lines (each with its newline) with what edit returns.
func editJournal(t *testing.T, path string, edit func(lines []string) []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if err := os.WriteFile(path, []byte(strings.Join(edit(lines), "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A killed run (rows written through the sink, nothing closed) is repaired into a whole part
// file whose rows are the journal's, zstd-compressed, with the run's metadata and the repair's;
// the manifest records the repair and stays incomplete; the journal and the partial file go;
// repairing again finds the run whole. Also for more rows than one row group.
func TestRepairKilledRun(t *testing.T) {
	t.Parallel()
	s := metrics.Shard{Index: 1, Count: 1}
	for _, n := range []int{5, metrics.RowGroupRows + 7} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(t.TempDir(), "run_id=r")
			os.MkdirAll(src, 0o755)
			killedPart(t, src, s, testSamples(n), 2)
			dir := metricstest.CopyRun(t, src, t.TempDir())
			journal, err := metrics.ReadJournal(filepath.Join(dir, metrics.JournalPath(metrics.PartFile(s))))
			if err != nil || len(journal) != n {
				t.Fatalf("journal: %d rows, %v", len(journal), err)
			}
			if u := metrics.UnclosedParts(dir); len(u) != 1 || u[0] != filepath.Join(dir, metrics.JournalPath(metrics.PartFile(s))) {
				t.Errorf("UnclosedParts of the killed run = %v; want its journal", u)
			}
			got, err := metrics.RepairRun(dir, "v9.9.9", repairTime)
			if err != nil || len(got) != 1 {
				t.Fatalf("RepairRun = %+v, %v", got, err)
			}
			r := got[0]
			part := filepath.Join(dir, metrics.PartFile(s))
			if r.Action != metrics.RepairWritten || r.Rows != n || r.LostRows() || r.Err != nil || r.File != part {
				t.Errorf("repair: %+v; want %s written with %d rows, nothing lost", r, part, n)
			}
			rows, err := metrics.ReadParquet(part)
			if err != nil {
				t.Fatalf("the repaired part does not read: %v", err)
			}
			if diff := cmp.Diff(journal, rows); diff != "" {
				t.Errorf("repaired rows differ from the journal's (-journal +part):\n%s", diff)
			}
			pf := openParquet(t, part)
			checkZstd(t, "repaired", pf, (n+metrics.RowGroupRows-1)/metrics.RowGroupRows)
			checkMeta(t, "repaired", pf, map[string]string{
				metrics.MetaRunID: testManifest().RunID, metrics.MetaLabVersion: testManifest().LabVersion,
				metrics.MetaSchemaVersion: strconv.Itoa(metrics.SchemaVersion), metrics.MetaPart: "1/1",
				metrics.MetaRepairedAt: "2026-12-01T20:30:00Z", metrics.MetaRepairedBy: "v9.9.9", metrics.MetaRepairedLostLines: "0",
			})
			man, err := metrics.ReadManifest(filepath.Join(dir, metrics.PartManifestFile(s)))
			if err != nil {
				t.Fatal(err)
			}
			want := []metrics.RepairRecord{{Part: "1/1", At: repairTime, LabVersion: "v9.9.9", From: "part-0001-of-0001.journal.jsonl", Rows: n}}
			if diff := cmp.Diff(want, man.Repairs); diff != "" || man.Complete || man.Samples != n || man.Error == "" {
				t.Errorf("manifest after repair: complete %v, samples %d, error %q, repairs (-want +got):\n%s", man.Complete, man.Samples, man.Error, diff)
			}
			if diff := cmp.Diff([]string{metrics.PartManifestFile(s), metrics.PartFile(s)}, files(t, dir)); diff != "" {
				t.Errorf("files after repair (-want +got):\n%s", diff)
			}
			if u := metrics.UnclosedParts(dir); len(u) != 0 {
				t.Errorf("UnclosedParts of the repaired run = %v; want none", u)
			}
			again, err := metrics.RepairRun(dir, "v9.9.9", repairTime.Add(time.Hour))
			if err != nil || len(again) != 1 || again[0].Action != metrics.RepairWhole || again[0].Rows != n || again[0].LostRows() {
				t.Errorf("repair of the repaired run: %+v, %v; want it whole", again, err)
			}
			if man2, _ := metrics.ReadManifest(filepath.Join(dir, metrics.PartManifestFile(s))); len(man2.Repairs) != 1 {
				t.Errorf("a second repair of a whole run recorded %d repairs; want the one", len(man2.Repairs))
			}
		})
	}
}

// Journal lines that hold no sample, a corrupt one in the middle or the last one cut short by
// the kill, are named (file:line) and skipped; every other row is kept in the repaired part, and
// the manifest and the file's metadata count the lost lines.
func TestRepairCorruptJournal(t *testing.T) {
	t.Parallel()
	s := metrics.Shard{Index: 1, Count: 1}
	for _, tc := range []struct {
		name string
		edit func([]string) []string
		line int
		cut  bool
		kept []int // indexes into the rows written
	}{
		{"middle", func(l []string) []string { l[3] = `{"run_id":"run-1","prompt_tokens":"many"}` + "\n"; return l }, 4, false, []int{0, 1, 2, 4, 5}},
		{"half-written middle", func(l []string) []string { l[1] = l[1][:20] + "\n"; return l }, 2, false, []int{0, 2, 3, 4, 5}},
		{"cut last", func(l []string) []string { l[5] = l[5][:len(l[5])/2]; return l }, 6, true, []int{0, 1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(t.TempDir(), "run_id=r")
			os.MkdirAll(src, 0o755)
			written := testSamples(6)
			killedPart(t, src, s, written, 0)
			dir := metricstest.CopyRun(t, src, t.TempDir())
			jpath := filepath.Join(dir, metrics.JournalPath(metrics.PartFile(s)))
			editJournal(t, jpath, tc.edit)

			// Before the repair, readers read every good line and name the bad one.
			_, before, err := metrics.ReadRun(dir)
			var je *metrics.JournalError
			if !errors.As(err, &je) || len(before) != len(tc.kept) || !strings.Contains(err.Error(), fmt.Sprintf("%s:%d:", jpath, tc.line)) {
				t.Errorf("ReadRun before the repair: %d rows, %v; want %d and an error naming %s:%d", len(before), err, len(tc.kept), jpath, tc.line)
			}

			got, err := metrics.RepairRun(dir, "v9", repairTime)
			if err != nil || len(got) != 1 {
				t.Fatalf("RepairRun = %+v, %v", got, err)
			}
			r := got[0]
			if r.Action != metrics.RepairWritten || r.Rows != len(tc.kept) || !r.LostRows() || len(r.Lost) != 1 ||
				r.Lost[0].Line != tc.line || r.Lost[0].Cut != tc.cut || r.Lost[0].Path != jpath {
				t.Errorf("repair: %+v; want %d rows kept and line %d (cut %v) lost", r, len(tc.kept), tc.line, tc.cut)
			}
			var want []metrics.Sample
			for _, i := range tc.kept {
				want = append(want, written[i])
			}
			rows, err := metrics.ReadParquet(filepath.Join(dir, metrics.PartFile(s)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(utc(want), rows); diff != "" {
				t.Errorf("repaired rows (-want +got):\n%s", diff)
			}
			if v, _ := openParquet(t, filepath.Join(dir, metrics.PartFile(s))).Lookup(metrics.MetaRepairedLostLines); v != "1" {
				t.Errorf("%s = %q; want 1", metrics.MetaRepairedLostLines, v)
			}
			man, _ := metrics.ReadManifest(filepath.Join(dir, metrics.PartManifestFile(s)))
			if len(man.Repairs) != 1 || man.Repairs[0].LostLines != 1 || man.Repairs[0].Rows != len(tc.kept) {
				t.Errorf("manifest repairs %+v; want one with 1 lost line and %d rows", man.Repairs, len(tc.kept))
			}
			if _, after, err := metrics.ReadRun(dir); err != nil || len(after) != len(tc.kept) {
				t.Errorf("ReadRun after the repair: %d rows, %v; want %d, no error", len(after), err, len(tc.kept))
			}
		})
	}
}

// A run that closed its parts is left alone: nothing is written, and the files are unchanged.
func TestRepairWholeRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run_id=r")
	os.MkdirAll(dir, 0o755)
	s := metrics.Shard{Index: 1, Count: 1}
	m := testManifest()
	m.Shard, m.Complete, m.Samples = &s, true, 4
	metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s)), m)
	sink, err := metrics.CreatePart(dir, s, m.FileMeta())
	if err != nil {
		t.Fatal(err)
	}
	rows := testSamples(4)
	for i := range rows {
		sink.Write(&rows[i])
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, metrics.PartFile(s))
	before, _ := os.ReadFile(part)
	manBefore, _ := os.ReadFile(filepath.Join(dir, metrics.PartManifestFile(s)))
	got, err := metrics.RepairRun(dir, "v9", repairTime)
	if err != nil || len(got) != 1 || got[0].Action != metrics.RepairWhole || got[0].Rows != 4 || got[0].LostRows() || got[0].Note != "" {
		t.Fatalf("RepairRun of a whole run = %+v, %v; want whole, 4 rows", got, err)
	}
	after, _ := os.ReadFile(part)
	manAfter, _ := os.ReadFile(filepath.Join(dir, metrics.PartManifestFile(s)))
	if string(before) != string(after) || string(manBefore) != string(manAfter) {
		t.Errorf("the repair of a whole run changed its files")
	}
}

// A run of the old layout (results/<run-id>/samples.parquet, written in place without footer
// until Close) killed: the old layout is read only, so RepairRun refuses it with ErrOldLayout,
// naming the folder, and writes nothing into it: every file is as it was, and ReadRun still
// reads every row from the journal.
func TestRepairOldLayout(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "20250309-235900")
	os.MkdirAll(src, 0o755)
	m := testManifest()
	metrics.WriteManifest(filepath.Join(src, metrics.ManifestFile), m)
	want := testSamples(7)
	abandoned(t, src, want)
	dir := metricstest.CopyRun(t, src, t.TempDir())
	if _, err := metrics.ReadParquet(filepath.Join(dir, metrics.SamplesFile)); err == nil {
		t.Fatal("the killed run's samples.parquet reads; the test simulates nothing")
	}
	before := map[string]string{}
	for _, f := range files(t, dir) {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		before[f] = string(b)
	}
	got, err := metrics.RepairRun(dir, "v9", repairTime)
	if !errors.Is(err, metrics.ErrOldLayout) || !strings.Contains(err.Error(), dir) || got != nil {
		t.Fatalf("RepairRun = %+v, %v; want nothing done and an error wrapping ErrOldLayout naming %s", got, err, dir)
	}
	after := map[string]string{}
	for _, f := range files(t, dir) {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		after[f] = string(b)
	}
	if !maps.Equal(before, after) {
		t.Errorf("the refused repair changed the folder: files %v, then %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(utc(want), rows); diff != "" {
		t.Errorf("rows read from the journal (-want +got):\n%s", diff)
	}
}

// A run of two shards: the closed one is left alone, the killed one repaired; the merged
// manifest holds the repair; a part that measured nothing has no rows to repair; a part whose
// manifest counts rows but has no file is a failure naming it.
func TestRepairShards(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "run_id=r")
	os.MkdirAll(src, 0o755)
	s1, s2, s3 := metrics.Shard{Index: 1, Count: 3}, metrics.Shard{Index: 2, Count: 3}, metrics.Shard{Index: 3, Count: 3}
	all := testSamples(9)
	m := testManifest()
	m.Shard, m.Complete, m.Samples = &s1, true, 3
	metrics.WriteManifest(filepath.Join(src, metrics.PartManifestFile(s1)), m)
	sink, _ := metrics.CreatePart(src, s1, m.FileMeta())
	for i := range all[:3] {
		sink.Write(&all[i])
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	killedPart(t, src, s2, all[3:], 0)
	m.Shard, m.Complete, m.Samples = &s3, false, 0
	metrics.WriteManifest(filepath.Join(src, metrics.PartManifestFile(s3)), m)
	dir := metricstest.CopyRun(t, src, t.TempDir())

	got, err := metrics.RepairRun(dir, "v9", repairTime)
	if err != nil || len(got) != 3 {
		t.Fatalf("RepairRun = %+v, %v", got, err)
	}
	if got[0].Action != metrics.RepairWhole || got[1].Action != metrics.RepairWritten || got[1].Rows != 6 || got[2].Action != metrics.RepairNoRows {
		t.Errorf("actions %s, %s (%d rows), %s; want whole, repaired (6), no rows", got[0].Action, got[1].Action, got[1].Rows, got[2].Action)
	}
	man, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 9 {
		t.Fatalf("ReadRun after the repair: %d rows, %v", len(rows), err)
	}
	if len(man.Repairs) != 1 || man.Repairs[0].Part != "2/3" || man.Complete {
		t.Errorf("merged manifest: repairs %+v, complete %v; want shard 2/3's repair, incomplete", man.Repairs, man.Complete)
	}

	// The manifest of shard 3 counts rows no file holds: they are lost, and the repair says so.
	m.Samples = 4
	metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s3)), m)
	got, _ = metrics.RepairRun(dir, "v9", repairTime)
	if r := got[2]; r.Action != metrics.RepairFailed || !r.LostRows() || r.Err == nil || !strings.Contains(r.Err.Error(), "counts 4 rows") {
		t.Errorf("a part whose rows are gone: %+v", r)
	}
}

// A part whose sink is still open (a run still writing it, in this process or another) is not
// touched: its journal is locked.
func TestRepairLeavesARunningPartAlone(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run_id=r")
	os.MkdirAll(dir, 0o755)
	s := metrics.Shard{Index: 1, Count: 1}
	sink := killedPart(t, dir, s, testSamples(3), 0)
	defer runtime.KeepAlive(sink) // the run still writing the part
	before := files(t, dir)
	got, err := metrics.RepairRun(dir, "v9", repairTime)
	if err != nil || len(got) != 1 || got[0].Action != metrics.RepairFailed || !strings.Contains(fmt.Sprint(got[0].Err), "still writing") {
		t.Fatalf("RepairRun of a part being written = %+v, %v; want it refused", got, err)
	}
	if diff := cmp.Diff(before, files(t, dir)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}
}

// A run folder of the part layout whose journal has a corrupt line: ReadRun returns every good
// row with an error naming the line (it used to return no row and no error, and lab report
// printed "No samples.").
func TestReadRunNamesALostJournalLine(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "run_id=r")
	os.MkdirAll(src, 0o755)
	s := metrics.Shard{Index: 1, Count: 1}
	killedPart(t, src, s, testSamples(5), 0)
	dir := metricstest.CopyRun(t, src, t.TempDir())
	jpath := filepath.Join(dir, metrics.JournalPath(metrics.PartFile(s)))
	editJournal(t, jpath, func(l []string) []string { l[2] = "{not json\n"; return l })
	_, rows, err := metrics.ReadRun(dir)
	var je *metrics.JournalError
	if len(rows) != 4 || !errors.As(err, &je) || je.Kept != 4 || !strings.Contains(err.Error(), jpath+":3:") {
		t.Errorf("ReadRun: %d rows, %v; want 4 and an error naming %s:3", len(rows), err, jpath)
	}
}
