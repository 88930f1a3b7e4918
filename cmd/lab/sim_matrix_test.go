package main

import (
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/golden"
	"lab/internal/rowdigest"
	"lab/metrics"
)

// The whole sim matrix (every scenario of the library under every arm) writes the same rows,
// column for column, as when the golden digests were recorded: a change of the harness, the
// hygiene measures, the sim's cache model or the row's author that changes any figure, any
// divergence, any warning shows here, named by scenario, arm and repetition. The columns that
// depend on the clock (started_at and the durations) and the run's id are left out. After a
// change that should alter rows, `go test ./cmd/lab -run TestSimMatrixRowsUnchanged -update`
// rewrites testdata/TestSimMatrixRowsUnchanged.golden; review its diff.
func TestSimMatrixRowsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole sim matrix takes some 15 s")
	}
	needTokenizer(t)
	results := t.TempDir()
	// The sandbox path (<temp>/lab-sandbox/<scenario>) is in answers that name absolute paths,
	// so the rows depend on the temporary folder: the same one on every machine.
	t.Setenv("TMPDIR", "/tmp")
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "all", "--arm", "all",
		"--results", results, "--run-id", "matrix", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	parts, err := filepath.Glob(filepath.Join(metrics.RunDir(results, "matrix"), "part-*.parquet"))
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts %v (%v): want one", parts, err)
	}
	samples, _, err := metrics.ReadSamples(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "TestSimMatrixRowsUnchanged.golden", matrixDigests(t, samples))

	// The run's summary stays readable: within summaryLines lines in all, each claim's verdict
	// there, and the arms it leaves out counted, with where they are.
	if n := strings.Count(out, "\n"); n > summaryLines {
		t.Errorf("the sim matrix's summary has %d lines; want at most %d:\n%s", n, summaryLines, out)
	}
	for _, want := range []string{"midnight cliff (§10", "reasoning sent back (§8", "templates drop earlier turns' reasoning",
		"more arms within spec's interval", "more arms that differ from spec: see report.html", "  report.html"} {
		if !strings.Contains(out, want) {
			t.Errorf("the sim matrix's summary lacks %q:\n%s", want, out)
		}
	}
	golden.Check(t, "TestSimMatrixSummary.golden", []byte(moreFiles.ReplaceAllString(strings.ReplaceAll(out, results, "RESULTS"), "(and N more files")))
}

// matrixDigests is rowdigest.Sessions without the divergence excerpt, a view of the texts these
// digests predate; it is checked where it is made (cachesim.ExcerptAt) and read (report).
func matrixDigests(t *testing.T, samples []metrics.Sample) []byte {
	out, err := rowdigest.Sessions(samples, false)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
