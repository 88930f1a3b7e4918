package metrics_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/metrics"
	"lab/metrics/metricstest"
)

// utc returns samples with StartedAt in UTC, as every reader returns them.
func utc(samples []metrics.Sample) []metrics.Sample {
	out := make([]metrics.Sample, len(samples))
	for i, s := range samples {
		s.StartedAt = s.StartedAt.UTC()
		out[i] = s
	}
	return out
}

// abandoned writes samples to a sink at dir/samples.parquet and never closes it: the process was
// killed (SIGKILL, a power cut after the OS wrote the journal).
//
// It returns the sink, still open: a test of a journal being written keeps it alive (an
// unreferenced sink's file is closed by the garbage collector, which drops its lock).
func abandoned(t *testing.T, dir string, samples []metrics.Sample) *metrics.ParquetSink {
	t.Helper()
	sink, err := metrics.CreateParquet(filepath.Join(dir, metrics.SamplesFile), metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		if err := sink.Write(&samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	return sink
}

// abandonedJournal leaves the journal of n test samples in a new temporary folder dir, as
// [abandoned] does, and returns dir, the journal's path and its lines (each ending in "\n").
func abandonedJournal(t *testing.T, n int) (dir, jpath string, lines []string) {
	t.Helper()
	dir = t.TempDir()
	abandoned(t, dir, testSamples(n))
	jpath = filepath.Join(dir, metrics.JournalFile)
	data, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	return dir, jpath, strings.SplitAfter(string(data), "\n")
}

// A run killed before it closed its sink: samples.parquet has no footer, but ReadRun returns
// every row written, from the journal; a last line the kill cut short is named and skipped,
// every other row kept.
func TestJournalRecoversAKilledRun(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, metrics.RowGroupRows + 3} {
		src := t.TempDir()
		if err := metrics.WriteManifest(filepath.Join(src, metrics.ManifestFile), testManifest()); err != nil {
			t.Fatal(err)
		}
		want := testSamples(n)
		abandoned(t, src, want)
		dir := metricstest.CopyRun(t, src, t.TempDir()) // as the kill left it: no process holds the journal
		if _, err := metrics.ReadParquet(filepath.Join(dir, metrics.SamplesFile)); err == nil {
			t.Fatalf("%d rows: the unclosed Parquet file reads; the test simulates nothing", n)
		}
		_, got, err := metrics.ReadRun(dir)
		if err != nil {
			t.Fatalf("%d rows: ReadRun of a killed run: %v", n, err)
		}
		if diff := cmp.Diff(utc(want), got); diff != "" {
			t.Errorf("%d rows: rows recovered from the journal (-want +got):\n%s", n, diff)
		}
		if _, rec, _ := metrics.ReadSamples(filepath.Join(dir, metrics.SamplesFile)); !rec {
			t.Errorf("%d rows: ReadSamples says the rows did not come from the journal", n)
		}

		// The kill cut the next line short.
		jpath := filepath.Join(dir, metrics.JournalFile)
		f, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(`{"run_id":"run-1","scenario":"midnight","arm":"spec","repetition":0,"request_ind`)
		f.Close()
		_, got, err = metrics.ReadRun(dir)
		var je *metrics.JournalError
		if !errors.As(err, &je) || len(je.Bad) != 1 || !je.Bad[0].Cut || je.Bad[0].Line != n+1 || je.Kept != n ||
			!strings.Contains(err.Error(), fmt.Sprintf("%s:%d:", jpath, n+1)) {
			t.Errorf("%d rows and a cut line: ReadRun error %v; want a JournalError naming %s:%d, cut, %d rows kept", n, err, jpath, n+1, n)
		}
		if diff := cmp.Diff(utc(want), got); diff != "" {
			t.Errorf("%d rows and a cut line: rows kept (-want +got):\n%s", n, diff)
		}
	}
}

// The journal is removed once the sink closed the Parquet file; readers then use the file.
func TestJournalRemovedOnClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, metrics.SamplesFile)
	if got := metrics.JournalPath(path); got != filepath.Join(dir, metrics.JournalFile) {
		t.Errorf("JournalPath(%s) = %s; want %s", path, got, metrics.JournalFile)
	}
	sink, err := metrics.CreateParquet(path, metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	s := testSamples(3)
	for i := range s {
		sink.Write(&s[i])
	}
	data, err := os.ReadFile(filepath.Join(dir, metrics.JournalFile))
	if err != nil || bytes.Count(data, []byte("\n")) != 3 {
		t.Fatalf("journal before Close: %d lines, %v; want 3 (each row reaches the OS as it is written)", bytes.Count(data, []byte("\n")), err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.JournalFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal after Close: %v; want it removed", err)
	}
	rows, rec, err := metrics.ReadSamples(path)
	if err != nil || rec || len(rows) != 3 {
		t.Errorf("ReadSamples = %d rows, recovered %v, %v; want 3 from the Parquet file", len(rows), rec, err)
	}
	// A journal whose sink was not the one to close: CreateParquet refuses to overwrite it.
	os.WriteFile(filepath.Join(dir, metrics.JournalFile), nil, 0o644)
	if _, err := metrics.CreateParquet(filepath.Join(dir, metrics.SamplesFile), metrics.FileMeta{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateParquet with a journal there = %v; want fs.ErrExist", err)
	}
}

// A line in the middle of the journal that is not a sample is named (file and line) and skipped,
// the other rows kept; a last line without its newline that is whole JSON is kept (the kill came
// between the row and its newline).
func TestReadJournalLines(t *testing.T) {
	t.Parallel()
	dir, jpath, lines := abandonedJournal(t, 3)
	os.WriteFile(jpath, []byte(lines[0]+lines[1]+strings.TrimSuffix(lines[2], "\n")), 0o644)
	if rows, err := metrics.ReadJournal(jpath); err != nil || len(rows) != 3 || rows[2].RequestIndex != 1 {
		t.Errorf("last line without newline: %d rows, %v; want 3", len(rows), err)
	}
	os.WriteFile(jpath, []byte(lines[0]+"{\"run_id\": 7}\n"+lines[2]), 0o644)
	rows, err := metrics.ReadJournal(jpath)
	var je *metrics.JournalError
	if !errors.As(err, &je) || !strings.Contains(err.Error(), jpath+":2:") || len(je.Bad) != 1 || je.Bad[0].Cut || je.Kept != 2 {
		t.Errorf("a bad second line: %v; want a JournalError naming %s:2, not cut, 2 rows kept", err, jpath)
	}
	if len(rows) != 2 || rows[0].RequestIndex != 0 || rows[1].RequestIndex != 1 || rows[1].Arm != "spec" {
		t.Errorf("a bad second line: rows %+v; want the first and the third line's", rows)
	}
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.ManifestFile), testManifest()); err != nil {
		t.Fatal(err)
	}
	if _, got, err := metrics.ReadRun(dir); !errors.As(err, &je) || len(got) != 2 {
		t.Errorf("ReadRun with a bad journal line and no readable Parquet file: %d rows, %v; want 2 and a JournalError", len(got), err)
	}
}

// ReplacePart (a resume) keeps the given rows first; killed before Close, the part reads back
// the kept rows and the new ones; closed, the part file holds them and the journal is gone.
func TestReplacePart(t *testing.T) {
	t.Parallel()
	all := testSamples(10)
	s := metrics.Shard{Index: 1, Count: 1}
	for _, old := range []string{"closed", "killed"} {
		t.Run(old, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, metrics.PartFile(s))
			first, err := metrics.CreatePart(dir, s, metrics.FileMeta{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				if err := first.Write(&all[i]); err != nil {
					t.Fatal(err)
				}
			}
			if old == "closed" {
				if err := first.Close(); err != nil {
					t.Fatal(err)
				}
			}
			kept := all[:4]
			sink, err := metrics.ReplacePart(dir, s, kept, metrics.FileMeta{})
			if err != nil {
				t.Fatal(err)
			}
			if sink.Len() != 4 {
				t.Errorf("Len = %d; want the 4 kept rows", sink.Len())
			}
			for i := 6; i < 8; i++ {
				if err := sink.Write(&all[i]); err != nil {
					t.Fatal(err)
				}
			}
			want := utc(append(append([]metrics.Sample{}, kept...), all[6:8]...))
			rows, rec, err := metrics.ReadSamples(path)
			if err != nil || !rec {
				t.Fatalf("killed resume: recovered %v, %v", rec, err)
			}
			if diff := cmp.Diff(want, rows); diff != "" {
				t.Errorf("killed resume (-want +got):\n%s", diff)
			}
			if err := sink.Close(); err != nil {
				t.Fatal(err)
			}
			rows, err = metrics.ReadParquet(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, rows); diff != "" {
				t.Errorf("closed resume (-want +got):\n%s", diff)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("files left: %d; want only %s", len(entries), metrics.PartFile(s))
			}
		})
	}
}

// A journal a sink still writes (a running run): its last line without newline is the row being
// written, left out without an error; the same bytes after a kill are a row lost.
func TestReadJournalOfARunningSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sink := abandoned(t, dir, testSamples(3))
	defer runtime.KeepAlive(sink) // the run still writing the journal
	jpath := filepath.Join(dir, metrics.JournalFile)
	f, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"run_id":"run-1","scen`)
	f.Close()
	if !metrics.JournalInUse(jpath) {
		t.Errorf("JournalInUse of an open sink's journal = false")
	}
	if rows, err := metrics.ReadJournal(jpath); err != nil || len(rows) != 3 {
		t.Errorf("the journal of a running sink: %d rows, %v; want 3 and no error", len(rows), err)
	}
	killed := metricstest.CopyRun(t, dir, t.TempDir())
	kpath := filepath.Join(killed, metrics.JournalFile)
	if metrics.JournalInUse(kpath) {
		t.Errorf("JournalInUse of a killed run's journal = true")
	}
	var je *metrics.JournalError
	if rows, err := metrics.ReadJournal(kpath); !errors.As(err, &je) || len(rows) != 3 || !je.Bad[0].Cut {
		t.Errorf("the same journal after a kill: %d rows, %v; want 3 and the cut line named", len(rows), err)
	}
}

// A journal line that is JSON but no sample (null, {}, an array, an object without the run id
// and start time every row carries) is a bad line, named with its file and line, not a row of
// zeros that a report would count as a request.
func TestReadJournalLinesThatAreNoSample(t *testing.T) {
	t.Parallel()
	_, jpath, lines := abandonedJournal(t, 2)
	for _, odd := range []string{"null", "{}", " { } ", `{"prompt_tokens": 5}`, `{"run_id":"r"}`, "[]", `"row"`, "0", "true"} {
		os.WriteFile(jpath, []byte(lines[0]+odd+"\n"+lines[1]), 0o644)
		rows, err := metrics.ReadJournal(jpath)
		var je *metrics.JournalError
		if !errors.As(err, &je) || len(je.Bad) != 1 || je.Bad[0].Line != 2 || !strings.Contains(err.Error(), jpath+":2: not a sample") || je.Kept != 2 {
			t.Errorf("line %q: %v; want a JournalError naming %s:2 as not a sample, 2 rows kept", odd, err, jpath)
		}
		if len(rows) != 2 || rows[0].Arm != metrics.SpecArm || rows[1].Arm != "date-in-system-prompt" {
			t.Errorf("line %q: %d rows; want the first and the third line's", odd, len(rows))
		}
	}
}

// A journal line longer than metrics.MaxJournalLine (a zero-filled tail a crash left, or a
// long line before good ones) is a bad line named path:line and skipped without being held
// whole: the rows around it are read, and reading allocates about the bound, not the line.
func TestJournalLineLongerThanAnyRow(t *testing.T) {
	_, jpath, lines := abandonedJournal(t, 3)
	tail := strings.Repeat("\x00", 3*metrics.MaxJournalLine)
	long := strings.Repeat("x", metrics.MaxJournalLine+1)
	for _, tc := range []struct {
		name, journal string
		line, kept    int
		cut           bool
	}{
		{"a zero-filled tail", lines[0] + lines[1] + tail, 3, 2, true},
		{"a long line between rows", lines[0] + long + "\n" + lines[2], 2, 2, false},
	} {
		if err := os.WriteFile(jpath, []byte(tc.journal), 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rows, err := metrics.ReadJournal(jpath)
		runtime.ReadMemStats(&after)
		var je *metrics.JournalError
		if !errors.As(err, &je) || !strings.Contains(err.Error(), fmt.Sprintf("%s:%d:", jpath, tc.line)) || len(je.Bad) != 1 || je.Bad[0].Cut != tc.cut || je.Kept != tc.kept || len(rows) != tc.kept {
			t.Errorf("%s: %d rows, %v; want a JournalError naming %s:%d (cut %v), %d rows kept", tc.name, len(rows), err, jpath, tc.line, tc.cut, tc.kept)
		}
		if alloc, max := after.TotalAlloc-before.TotalAlloc, uint64(metrics.MaxJournalLine)*5/4; alloc > max {
			t.Errorf("%s: reading a %d-byte journal allocated %d MiB; want at most %d MiB (1.25 × MaxJournalLine)", tc.name, len(tc.journal), alloc>>20, max>>20)
		}
	}
}
