package metrics_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"lab/metrics"
	"lab/metrics/metricstest"
)

// columns is the results schema of DESIGN.md, in file order.
var columns = []string{
	"run_id", "scenario", "arm", "repetition", "backend", "model", "server_version",
	"request_index", "turn", "step", "kind", "started_at",
	"prompt_tokens", "cached_tokens", "cached_source", "cache_write_tokens",
	"expected_cached_tokens", "divergence_token", "divergence_segment",
	"reread_tokens", "reread_reasoning_tokens", "reasoning_tokens_sent", "completion_tokens",
	"reasoning_tokens_generated", "ttft_ns", "prefill_ns", "total_ns", "load_ns", "request_bytes",
	"cost_usd", "error",
	"reread_system_tokens", "reread_tools_tokens", "reread_message_tokens", "reread_tool_result_tokens",
	"reread_note_tokens", "reread_other_tokens", "context_overflow", "warnings",
	"cache_write_5m_tokens", "cache_write_1h_tokens", "usage_fields",
	"retries", "retry_wait_ns",
	"driver", "end_reason", "repeated_call", "expected_unknown", "reread_unattributed_tokens",
	"chunk_reused_tokens", "side_request", "divergence_excerpt", "scenario_event",
}

// optionalColumns are the nullable columns.
var optionalColumns = map[string]bool{
	"cached_tokens": true, "cache_write_tokens": true, "divergence_token": true, "cost_usd": true,
	"cache_write_5m_tokens": true, "cache_write_1h_tokens": true,
	// Unmeasured is null: pointers, and figures never 0 when measured (0 written as null).
	"error": true, "cached_source": true, "prompt_tokens": true, "completion_tokens": true, "reasoning_tokens_generated": true,
	"ttft_ns": true, "prefill_ns": true, "total_ns": true, "load_ns": true, "expected_cached_tokens": true,
	"reread_tokens": true, "reasoning_tokens_sent": true, "reread_reasoning_tokens": true,
	"reread_system_tokens": true, "reread_tools_tokens": true, "reread_message_tokens": true,
	"reread_tool_result_tokens": true, "reread_note_tokens": true, "reread_other_tokens": true,
	"reread_unattributed_tokens": true,
	"chunk_reused_tokens":        true,
	"divergence_excerpt":         true,
	"scenario_event":             true,
}

// testSamples returns n samples in which every fourth has unknown cached tokens and the others
// carry every optional field. StartedAt is in a non-UTC zone on purpose.
func testSamples(n int) []metrics.Sample {
	zone := time.FixedZone("CEST", 2*60*60)
	start := time.Date(2025, 3, 9, 23, 59, 30, 123456789, zone)
	out := make([]metrics.Sample, n)
	for i := range out {
		s := metrics.Sample{
			RunID:                    "run-1",
			Scenario:                 "midnight",
			Arm:                      []string{metrics.SpecArm, "date-in-system-prompt"}[i%2],
			Repetition:               0,
			Backend:                  "ollama",
			Model:                    "qwen3-synth",
			ServerVersion:            "0.17.4",
			RequestIndex:             int32(i / 2),
			Turn:                     int32(1 + i/10),
			Step:                     int32(1 + i%10),
			Kind:                     metrics.KindStep,
			StartedAt:                start.Add(time.Duration(i) * time.Second),
			PromptTokens:             int64(1000 + 100*i),
			ExpectedCachedTokens:     new(int64(900 + 100*i)),
			ReasoningTokensSent:      new(int64(2 * i)),
			CompletionTokens:         new(int64(50)),
			ReasoningTokensGenerated: new(int64(20)),
			TTFTNs:                   int64(i) * 1e6,
			PrefillNs:                int64(i) * 2e6,
			TotalNs:                  int64(i) * 3e6,
			LoadNs:                   new(int64(0)),
			RequestBytes:             int64(4096 + i),
		}
		if i%4 != 3 {
			s.RereadTokens, s.RereadReasoningTokens = new(int64(100)), new(int64(i))
			s.CachedTokens = new(int64(900 + 100*i))
			s.CachedSource = metrics.CachedSourceServerLog
			s.CacheWriteTokens = new(int64(100))
			s.DivergenceToken = new(int64(42))
			s.DivergenceSegment = "message 3"
			s.CostUSD = new(0.0125)
		} else {
			s.Error = "server closed the stream"
		}
		out[i] = s
	}
	return out
}

func writeParquet(t *testing.T, path string, samples []metrics.Sample) {
	t.Helper()
	sink, err := metrics.CreateParquet(path, metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		if err := sink.Write(&samples[i]); err != nil {
			t.Fatalf("Write(sample %d) = %v", i, err)
		}
	}
	if got := sink.Len(); got != len(samples) {
		t.Errorf("Len() = %d; want %d", got, len(samples))
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
}

func TestParquetRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), metrics.SamplesFile)
	want := testSamples(40) // three row groups: 16, 16, 8
	writeParquet(t, path, want)

	got, err := metrics.ReadParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].StartedAt = want[i].StartedAt.UTC()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadParquet mismatch (-want +got):\n%s", diff)
	}
	if got[3].CachedTokens != nil {
		t.Errorf("sample 3: CachedTokens = %d; want nil (unknown)", *got[3].CachedTokens)
	}
	if got[0].StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt location = %v; want UTC", got[0].StartedAt.Location())
	}
	if !got[0].StartedAt.Equal(time.Date(2025, 3, 9, 21, 59, 30, 123456789, time.UTC)) {
		t.Errorf("StartedAt = %v; want nanosecond precision kept", got[0].StartedAt)
	}
}

// TestParquetSchema re-opens the file with parquet-go's generic reader, which knows nothing of
// Sample, and checks the column names, their order, nullability and the timestamp's type.
func TestParquetSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), metrics.SamplesFile)
	writeParquet(t, path, testSamples(40))

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("parquet.OpenFile = %v", err)
	}
	if got := pf.NumRows(); got != 40 {
		t.Errorf("NumRows() = %d; want 40", got)
	}
	if got, want := len(pf.RowGroups()), (40+metrics.RowGroupRows-1)/metrics.RowGroupRows; got != want {
		t.Errorf("row groups = %d; want %d (a row group every %d rows)", got, want, metrics.RowGroupRows)
	}
	elems := pf.Metadata().Schema[1:] // [0] is the root
	var names []string
	for _, e := range elems {
		names = append(names, e.Name)
		col, ok := pf.Schema().Lookup(e.Name)
		if !ok {
			t.Fatalf("Schema().Lookup(%q) not found", e.Name)
		}
		if got := col.Node.Optional(); got != optionalColumns[e.Name] {
			t.Errorf("column %s optional = %v; want %v", e.Name, got, optionalColumns[e.Name])
		}
	}
	ts, _ := pf.Schema().Lookup("started_at")
	const wantTS = "TIMESTAMP(isAdjustedToUTC=true,unit=NANOS)"
	if got := ts.Node.Type().LogicalType().String(); got != wantTS {
		t.Errorf("started_at logical type = %s; want %s", got, wantTS)
	}
	if diff := cmp.Diff(columns, names); diff != "" {
		t.Errorf("columns mismatch (-want +got):\n%s", diff)
	}
}

// TestParquetIndependentReader reads the file with DuckDB or pyarrow when either is installed.
func TestParquetIndependentReader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), metrics.SamplesFile)
	writeParquet(t, path, testSamples(40))
	query := "SELECT count(*), count(cached_tokens), sum(prompt_tokens), min(started_at) FROM '" + path + "'"
	var out []byte
	var err error
	switch {
	case lookPath("duckdb"):
		out, err = exec.Command("duckdb", "-csv", "-noheader", "-c", query).CombinedOutput()
	case exec.Command("python3", "-c", "import pyarrow.parquet").Run() == nil:
		script := `import sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
c = t.column("cached_tokens")
print(f"{t.num_rows},{t.num_rows - c.null_count},{sum(t.column('prompt_tokens').to_pylist())},{t.column('started_at').type}")`
		out, err = exec.Command("python3", "-c", script, path).CombinedOutput()
	default:
		t.Skip("no independent Parquet reader (duckdb, python3 with pyarrow) installed")
	}
	if err != nil {
		t.Fatalf("independent reader: %v\n%s", err, out)
	}
	// 40 rows, 30 with known cached tokens, sum of prompt tokens 40*1000 + 100*(0+…+39).
	if got := string(out); !strings.HasPrefix(got, "40,30,118000,") {
		t.Errorf("independent reader = %q; want prefix %q", got, "40,30,118000,")
	}
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func TestParquetSinkErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, metrics.SamplesFile)
	sink, err := metrics.CreateParquet(path, metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.CreateParquet(path, metrics.FileMeta{}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateParquet(existing) = %v; want fs.ErrExist", err)
	}
	s := testSamples(20)
	for i := range s {
		if err := sink.Write(&s[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Write(nil); err == nil {
		t.Errorf("Write(nil) = nil; want error")
	}
	// Before Close the file has no footer: no reader can open it.
	if _, err := metrics.ReadParquet(path); err == nil {
		t.Errorf("ReadParquet(unclosed) = nil error; want error")
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := sink.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
	if err := sink.Write(&s[0]); !errors.Is(err, metrics.ErrClosed) {
		t.Errorf("Write after Close = %v; want ErrClosed", err)
	}
	got, err := metrics.ReadParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Errorf("ReadParquet = %d rows; want 20", len(got))
	}
	if _, err := metrics.ReadParquet(filepath.Join(dir, "missing.parquet")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadParquet(missing) = %v; want fs.ErrNotExist", err)
	}
}

func TestMemorySink(t *testing.T) {
	t.Parallel()
	var m metrics.MemorySink
	s := testSamples(2)
	for i := range s {
		if err := m.Write(&s[i]); err != nil {
			t.Fatal(err)
		}
	}
	*s[0].CachedTokens = -1 // the sink must have copied the value
	got := m.Samples()
	if *got[0].CachedTokens != 900 {
		t.Errorf("Samples()[0].CachedTokens = %d; want 900 (a copy)", *got[0].CachedTokens)
	}
	*got[0].CachedTokens = -2
	if again := m.Samples(); *again[0].CachedTokens != 900 {
		t.Errorf("Samples() shares memory with an earlier result")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(&s[1]); !errors.Is(err, metrics.ErrClosed) {
		t.Errorf("Write after Close = %v; want ErrClosed", err)
	}
	if m.Len() != 2 {
		t.Errorf("Len() = %d; want 2", m.Len())
	}
}

func testManifest() *metrics.Manifest {
	m := metricstest.Manifest()
	m.Samples = 40
	m.Settings = map[string]string{"keep_alive": "30m"}
	m.Sessions = []metrics.SessionRecord{
		{Scenario: "midnight", Arm: "spec", Repetition: 1, Requests: 20, Complete: true},
		{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, Requests: 3, Error: "HTTP 500"},
	}
	return m
}

func TestManifestRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, metrics.ManifestFile)
	want := testManifest()
	if err := metrics.WriteManifest(path, want); err != nil {
		t.Fatal(err)
	}
	// Overwrite: still atomic, no temporary file left behind.
	want.Samples = 41
	if err := metrics.WriteManifest(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := metrics.ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadManifest mismatch (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries; want only %s", len(entries), metrics.ManifestFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"lab_version": "v0.1.0"`, `"num_ctx": 32768`, `"server_url"`, `"ended_at"`, `"complete": true`, `"requests": 3`, `"error": "HTTP 500"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("manifest.json lacks %s:\n%s", key, data)
		}
	}
	if strings.Contains(string(data), "\n  \"error\"") {
		t.Errorf("manifest.json has an error key for a run without error:\n%s", data)
	}
}

func TestManifestUnfinished(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), metrics.ManifestFile)
	m := testManifest()
	m.EndedAt, m.Complete, m.Error = time.Time{}, false, "interrupted"
	if err := metrics.WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "ended_at") {
		t.Errorf("manifest.json has ended_at for a run that did not end:\n%s", data)
	}
	got, err := metrics.ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.EndedAt.IsZero() || got.Error != "interrupted" {
		t.Errorf("ReadManifest = EndedAt %v, Error %q; want zero, %q", got.EndedAt, got.Error, "interrupted")
	}
}

func TestReadRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.ManifestFile), testManifest()); err != nil {
		t.Fatal(err)
	}
	// No samples yet: the manifest comes back with the error.
	m, _, err := metrics.ReadRun(dir)
	if err == nil || m == nil {
		t.Fatalf("ReadRun(without samples) = %v, %v; want manifest and error", m, err)
	}
	writeParquet(t, filepath.Join(dir, metrics.SamplesFile), testSamples(5))
	m, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.RunID != "20250309-235900-midnight" || len(samples) != 5 {
		t.Errorf("ReadRun = %q, %d samples; want %q, 5", m.RunID, len(samples), "20250309-235900-midnight")
	}
	if _, _, err := metrics.ReadRun(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRun(empty dir) = %v; want fs.ErrNotExist", err)
	}
}

func TestSortArms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"empty", nil, nil},
		{"spec first", []string{"b", "spec", "a"}, []string{"spec", "a", "b"}},
		{"no spec", []string{"date-in-system-prompt", "absolute-paths"}, []string{"absolute-paths", "date-in-system-prompt"}},
		{"duplicates", []string{"spec", "a", "spec"}, []string{"spec", "spec", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := append([]string(nil), tc.in...)
			metrics.SortArms(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SortArms(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// A manifest that is not JSON, or holds a field of the wrong type, is an error naming the file
// and the line (and the field, for a wrong type).
func TestManifestErrorNamesTheLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, want string }{
		{"syntax", "{\n  \"run_id\": \"r\",\n  \"samples\": 3,,\n}\n", ":3: invalid character ','"},
		{"type", "{\n  \"run_id\": \"r\",\n\n  \"samples\": \"48\"\n}\n", ":4: json: cannot unmarshal string into Go struct field Manifest.samples"},
	} {
		path := filepath.Join(dir, tc.name+".json")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := metrics.ReadManifest(path)
		if err == nil || !strings.Contains(err.Error(), path+tc.want) {
			t.Errorf("%s: ReadManifest = %v; want an error naming %s%s", tc.name, err, path, tc.want)
		}
	}
}
