package metrics_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"lab/metrics"
	"lab/metrics/metricstest"
)

// ReadRun of a run folder in the part layout opens its manifest and part file once each and
// reads each of their bytes once; a folder outside the watched one is not counted, nor are reads
// after Stop.
func TestWatchReadsCountsEachFile(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	dir := metrics.RunDir(results, "run-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sink, err := metrics.CreatePart(dir, metrics.Shard{}, metrics.FileMeta{RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	rows := testSamples(metrics.RowGroupRows + 7) // two row groups
	for i := range rows {
		if err := sink.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	m := metricstest.Manifest()
	m.RunID = "run-1"
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(metrics.Shard{})), m); err != nil {
		t.Fatal(err)
	}
	other := metricstest.CopyRun(t, dir, t.TempDir()) // outside the watched folder

	stats := metrics.WatchReads(results)
	if _, got, err := metrics.ReadRun(dir); err != nil || len(got) != len(rows) {
		t.Fatalf("ReadRun: %d rows, %v; want %d", len(got), err, len(rows))
	}
	if _, _, err := metrics.ReadRun(other); err != nil {
		t.Fatal(err)
	}
	stats.Stop()
	if _, _, err := metrics.ReadRun(dir); err != nil { // after Stop: not counted
		t.Fatal(err)
	}
	got := stats.Files()
	if len(got) != 2 {
		t.Errorf("files counted: %v; want the manifest and the part of run-1 only", got)
	}
	for _, name := range []string{metrics.PartManifestFile(metrics.Shard{}), metrics.PartFile(metrics.Shard{})} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f := got["run_id=run-1/"+name]
		if f.Opens != 1 || f.Size != info.Size() || f.Bytes != info.Size() || f.Twice != 0 {
			t.Errorf("%s: %+v; want 1 open and each of its %d bytes read once", name, f, info.Size())
		}
	}
}

// A byte read three times counts twice in Twice.
func TestWatchReadsTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, metrics.PartManifestFile(metrics.Shard{}))
	if err := metrics.WriteManifest(path, metricstest.Manifest()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	stats := metrics.WatchReads(dir)
	defer stats.Stop()
	for range 3 {
		if _, err := metrics.ReadManifest(path); err != nil {
			t.Fatal(err)
		}
	}
	f := stats.Files()[filepath.Base(path)]
	if f.Opens != 3 || f.Bytes != 3*info.Size() || f.Twice != 2*info.Size() {
		t.Errorf("three reads of %d bytes: %+v; want 3 opens, %d bytes, %d of them read again", info.Size(), f, 3*info.Size(), 2*info.Size())
	}
}

// A part a running sink still writes is read from its journal, opened once, and RowsRead names
// it in use, so that a caller need not open it again to ask (JournalInUse).
func TestReadRunNamesAJournalInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(metrics.Shard{})), metricstest.Manifest()); err != nil {
		t.Fatal(err)
	}
	sink, err := metrics.CreatePart(dir, metrics.Shard{}, metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.KeepAlive(sink) // the run still writing the part
	rows := testSamples(5)
	for i := range rows {
		if err := sink.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	jpath := metrics.JournalPath(filepath.Join(dir, metrics.PartFile(metrics.Shard{})))
	stats := metrics.WatchReads(dir)
	m, got, err := metrics.ReadRun(dir)
	stats.Stop()
	if err != nil || len(got) != 5 {
		t.Fatalf("ReadRun: %d rows, %v; want 5", len(got), err)
	}
	if !slices.Equal(m.RowsRead.InUse, []string{jpath}) || !slices.Equal(m.RowsRead.Journals, []string{jpath}) {
		t.Errorf("RowsRead %+v; want the journal %s read and in use", m.RowsRead, jpath)
	}
	if f := stats.Files()[filepath.Base(jpath)]; f.Opens != 1 || f.Twice != 0 {
		t.Errorf("the journal: %+v; want 1 open, no byte read twice", f)
	}

	killed := metricstest.CopyRun(t, dir, t.TempDir()) // as a kill leaves it: no process holds it
	m, _, err = metrics.ReadRun(killed)
	if err != nil || len(m.RowsRead.Journals) != 1 || m.RowsRead.InUse != nil {
		t.Errorf("a killed run's journal: RowsRead %+v, %v; want read, not in use", m.RowsRead, err)
	}
}
