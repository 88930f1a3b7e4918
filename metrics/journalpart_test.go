package metrics_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/metrics"
)

// A part made by CreateJournalPart writes nothing to its Parquet file until Close: while rows
// come, the partial file stays empty (no row group written, so none whose metadata the writer
// would hold until the footer) and readers take every row from the journal; Close writes the
// same rows as CreatePart's sink, in row groups of RowGroupRows, with the same file metadata,
// gives the file its final name and removes the journal.
func TestJournalPartWritesTheFileOnClose(t *testing.T) {
	t.Parallel()
	n := 3*metrics.RowGroupRows + 7
	want := testSamples(n)
	s := metrics.Shard{Index: 1, Count: 1}
	meta := metrics.FileMeta{RunID: "run-1", LabVersion: "v-test"}

	ref := t.TempDir()
	rs, err := metrics.CreatePart(ref, s, meta)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sink, err := metrics.CreateJournalPart(dir, s, meta)
	if err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(dir, metrics.PartFile(s)+metrics.PartialSuffix)
	for i := range want {
		if err := rs.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
		if err := sink.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(partial); err != nil || st.Size() != 0 {
		t.Fatalf("partial file after %d rows: %v, %v; want it there, empty", n, st, err)
	}
	if got := sink.Len(); got != n {
		t.Errorf("Len = %d; want %d", got, n)
	}
	got, recovered, err := metrics.ReadPart(dir, s)
	if err != nil || !recovered {
		t.Fatalf("ReadPart of the open part: recovered %v, %v; want the journal's rows", recovered, err)
	}
	if diff := cmp.Diff(utc(want), got); diff != "" {
		t.Errorf("rows of the open part (-want +got):\n%s", diff)
	}
	if _, err := metrics.CreateJournalPart(dir, s, meta); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second CreateJournalPart in the same folder = %v; want fs.ErrExist", err)
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{partial, metrics.JournalPath(filepath.Join(dir, metrics.PartFile(s)))} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Close: %v; want it removed", filepath.Base(f), err)
		}
	}
	got, recovered, err = metrics.ReadPart(dir, s)
	if err != nil || recovered {
		t.Fatalf("ReadPart after Close: recovered %v, %v; want the part file's rows", recovered, err)
	}
	if diff := cmp.Diff(utc(want), got); diff != "" {
		t.Errorf("rows of the closed part (-want +got):\n%s", diff)
	}
	refRows, err := metrics.ReadParquet(filepath.Join(ref, metrics.PartFile(s)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refRows, got); diff != "" {
		t.Errorf("rows of CreatePart's file and of CreateJournalPart's (-CreatePart +CreateJournalPart):\n%s", diff)
	}
	pf := openParquet(t, filepath.Join(dir, metrics.PartFile(s)))
	checkZstd(t, "journal part", pf, n/metrics.RowGroupRows+1)
	checkMeta(t, "journal part", pf, map[string]string{metrics.MetaRunID: "run-1", metrics.MetaLabVersion: "v-test",
		metrics.MetaSchemaVersion: strconv.Itoa(metrics.SchemaVersion), metrics.MetaPart: "1/1"})
	if err := sink.Write(&want[0]); !errors.Is(err, metrics.ErrClosed) {
		t.Errorf("Write after Close = %v; want ErrClosed", err)
	}
}

// A part made by CreateJournalPart and never closed (the process killed) reads as CreatePart's:
// its rows from the journal, and lab repair writes its file.
func TestJournalPartKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := metrics.Shard{Index: 1, Count: 1}
	man := testManifest()
	man.Shard = &s
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s)), man); err != nil {
		t.Fatal(err)
	}
	sink, err := metrics.CreateJournalPart(dir, s, man.FileMeta())
	if err != nil {
		t.Fatal(err)
	}
	want := testSamples(metrics.RowGroupRows + 2)
	for i := range want {
		if err := sink.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got := metrics.UnclosedParts(dir); len(got) != 1 {
		t.Errorf("UnclosedParts = %v; want the part's journal", got)
	}
	_, got, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(utc(want), got); diff != "" {
		t.Errorf("rows of the killed part (-want +got):\n%s", diff)
	}
}
