package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// A run writes the same rows whatever the machine's temporary folder: the sandbox is a private
// folder under TMPDIR, but every answer names it /tmp/lab-sandbox/<scenario>, so a long TMPDIR
// (which changed the absolute paths in the answers, and with them the prompt and cached tokens)
// writes the rows of TMPDIR=/tmp, column for column.
func TestRowsIgnoreTMPDIR(t *testing.T) {
	needTokenizer(t)
	rows := func(tmp string) []byte {
		t.Setenv("TMPDIR", tmp)
		results := t.TempDir()
		code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "absolute-paths", "--arm", "all",
			"--results", results, "--run-id", "tmpdir", "--quiet")
		if code != exitOK {
			t.Fatalf("TMPDIR %s: exit %d\nstdout:\n%s\nstderr:\n%s", tmp, code, out, errOut)
		}
		parts, err := filepath.Glob(filepath.Join(metrics.RunDir(results, "tmpdir"), "part-*.parquet"))
		if err != nil || len(parts) != 1 {
			t.Fatalf("parts %v (%v): want one", parts, err)
		}
		samples, _, err := metrics.ReadSamples(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		return matrixDigests(t, samples)
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("a-long-temporary-folder-", 6))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	atTmp, atLong := rows("/tmp"), rows(long)
	if len(atTmp) == 0 || !bytes.Equal(atTmp, atLong) {
		t.Errorf("rows under TMPDIR=/tmp:\n%s\nunder TMPDIR=%s:\n%s", atTmp, long, atLong)
	}
}
