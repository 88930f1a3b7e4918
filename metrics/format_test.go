package metrics_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"lab/metrics"
)

// openParquet opens the Parquet file at path with parquet-go's own reader.
func openParquet(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return pf
}

// checkZstd fails unless every column chunk of every row group of the file is ZSTD-compressed,
// and the file has rowGroups row groups of all the schema's leaf columns.
func checkZstd(t *testing.T, name string, pf *parquet.File, rowGroups int) {
	t.Helper()
	md := pf.Metadata()
	if len(md.RowGroups) != rowGroups {
		t.Fatalf("%s: %d row groups; want %d", name, len(md.RowGroups), rowGroups)
	}
	leaves := len(pf.Schema().Columns())
	for i, rg := range md.RowGroups {
		if len(rg.Columns) != leaves || leaves < 40 {
			t.Errorf("%s: row group %d has %d column chunks; the schema %d leaf columns", name, i, len(rg.Columns), leaves)
		}
		for _, c := range rg.Columns {
			if c.MetaData.Codec != format.Zstd {
				t.Errorf("%s: row group %d, column %v: codec %v; want ZSTD", name, i, c.MetaData.PathInSchema, c.MetaData.Codec)
			}
		}
	}
}

// checkMeta fails unless the file's key/value metadata holds exactly want among the lab's keys.
func checkMeta(t *testing.T, name string, pf *parquet.File, want map[string]string) {
	t.Helper()
	for _, k := range []string{metrics.MetaRunID, metrics.MetaLabVersion, metrics.MetaSchemaVersion, metrics.MetaPart,
		metrics.MetaRepairedAt, metrics.MetaRepairedBy, metrics.MetaRepairedLostLines} {
		got, ok := pf.Lookup(k)
		w, wok := want[k]
		if ok != wok || got != w {
			t.Errorf("%s: metadata %s = %q (present %v); want %q (present %v)", name, k, got, ok, w, wok)
		}
	}
}

// Every samples file the sink writes, a part new or resumed, or a single file, is zstd-compressed in
// every column chunk and says in its key/value metadata which run, lab version, schema version
// and part it holds; an unknown lab version is left out, not written empty.
func TestSamplesFileFormat(t *testing.T) {
	t.Parallel()
	rows := testSamples(metrics.RowGroupRows + 3)
	schema := strconv.Itoa(metrics.SchemaVersion)
	if metrics.SchemaVersion < 2 {
		t.Errorf("SchemaVersion %d; the nullable schema is version 2", metrics.SchemaVersion)
	}
	meta := metrics.FileMeta{RunID: "run-1", LabVersion: "v1.2.3"}
	write := func(sink *metrics.ParquetSink, err error, rows []metrics.Sample) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if err := sink.Write(&rows[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	s := metrics.Shard{Index: 3, Count: 4}
	sink, err := metrics.CreatePart(dir, s, meta)
	write(sink, err, rows)
	part := filepath.Join(dir, metrics.PartFile(s))
	pf := openParquet(t, part)
	checkZstd(t, "part", pf, 2)
	checkMeta(t, "part", pf, map[string]string{metrics.MetaRunID: "run-1", metrics.MetaLabVersion: "v1.2.3",
		metrics.MetaSchemaVersion: schema, metrics.MetaPart: "3/4"})

	// A resumed part keeps the metadata.
	sink, err = metrics.ReplacePart(dir, s, rows[:2], meta)
	write(sink, err, rows[5:6])
	pf = openParquet(t, part)
	checkZstd(t, "resumed part", pf, 1)
	checkMeta(t, "resumed part", pf, map[string]string{metrics.MetaRunID: "run-1", metrics.MetaLabVersion: "v1.2.3",
		metrics.MetaSchemaVersion: schema, metrics.MetaPart: "3/4"})

	// The old layout's samples.parquet is part 1/1; an unknown lab version has no key.
	old := filepath.Join(t.TempDir(), metrics.SamplesFile)
	sink, err = metrics.CreateParquet(old, metrics.FileMeta{RunID: "old-run"})
	write(sink, err, rows[:3])
	pf = openParquet(t, old)
	checkZstd(t, "old layout", pf, 1)
	checkMeta(t, "old layout", pf, map[string]string{metrics.MetaRunID: "old-run", metrics.MetaSchemaVersion: schema, metrics.MetaPart: "1/1"})
}
