package metrics

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// writeScanRun writes a closed part of n rows, each with its own cached tokens (its index) and a
// scenario of three, and returns the run folder.
func writeScanRun(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	sink, err := CreatePart(dir, Shard{}, FileMeta{RunID: "scan"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	for i := range n {
		s := &Sample{RunID: "scan", Scenario: "scenario-" + strconv.Itoa(i%3), Arm: SpecArm, Repetition: 1, RequestIndex: int32(i),
			StartedAt: at.Add(time.Duration(i) * time.Second), PromptTokens: int64(1000 + i), CachedTokens: new(int64(i)),
			DivergenceSegment: "message " + strconv.Itoa(i%5), Warnings: "warning " + strconv.Itoa(i)}
		if err := sink.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	m := &Manifest{RunID: "scan", Scenarios: []string{"scenario-0"}, Arms: []string{SpecArm}, Repetitions: 1, Complete: true, Samples: n, StartedAt: at}
	if err := WriteManifest(filepath.Join(dir, PartManifestFile(Shard{})), m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Rows read in batches into a reused buffer keep their own values: every row of several batches
// reads back as written, none sharing a pointer field with a row of another batch.
func TestReadRunStreamsBatchesIntact(t *testing.T) {
	n := 3*RowGroupRows + 17
	dir := writeScanRun(t, n)
	_, rows, err := ReadRun(dir)
	if err != nil || len(rows) != n {
		t.Fatalf("ReadRun: %d rows, %v; want %d", len(rows), err, n)
	}
	for i := range rows {
		if c := rows[i].CachedTokens; c == nil || *c != int64(i) || rows[i].RequestIndex != int32(i) || rows[i].Warnings != "warning "+strconv.Itoa(i) {
			t.Fatalf("row %d: request %d, cached %v, warnings %q", i, rows[i].RequestIndex, c, rows[i].Warnings)
		}
	}
}

// The string columns that repeat from row to row are one copy per value, not one per row.
func TestReadRunInternsRepeatingStrings(t *testing.T) {
	dir := writeScanRun(t, 2*RowGroupRows)
	_, rows, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	distinct := func(get func(*Sample) string) int {
		ptrs := map[*byte]bool{}
		for i := range rows {
			ptrs[unsafe.StringData(get(&rows[i]))] = true
		}
		return len(ptrs)
	}
	for _, c := range []struct {
		name string
		get  func(*Sample) string
		want int
	}{
		{"run_id", func(s *Sample) string { return s.RunID }, 1},
		{"scenario", func(s *Sample) string { return s.Scenario }, 3},
		{"arm", func(s *Sample) string { return s.Arm }, 1},
		{"divergence_segment", func(s *Sample) string { return s.DivergenceSegment }, 5},
	} {
		if got := distinct(c.get); got != c.want {
			t.Errorf("%s: %d copies in memory over %d rows; want %d (one per value)", c.name, got, len(rows), c.want)
		}
	}
}

// A killed part's rows come from its journal, and RowsRead names that journal: the reader of
// the run needs no second look at the part's footer to say so.
func TestReadRunNamesTheJournalsItRead(t *testing.T) {
	dir := writeScanRun(t, 10)
	part := filepath.Join(dir, PartFile(Shard{}))
	rows, err := ReadParquet(part)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJournal(JournalPath(part), rows); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(part); err != nil {
		t.Fatal(err)
	}
	m, got, err := ReadRun(dir)
	if err != nil || len(got) != 10 {
		t.Fatalf("ReadRun: %d rows, %v", len(got), err)
	}
	if j := m.RowsRead.Journals; len(j) != 1 || j[0] != JournalPath(part) || m.RowsRead.Journal != 10 {
		t.Errorf("RowsRead %+v; want the journal %s with 10 rows", m.RowsRead, JournalPath(part))
	}
}
