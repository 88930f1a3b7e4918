package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A scenario that reads a file its workspace does not hold is bad input: "file:line: …", exit
// code 2, and no results folder (nothing is measured).
func TestScenarioReadingNoFileExits2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "scenario.yaml")
	os.WriteFile(bad, []byte("name: x\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: hi\n  - assistant:\n      calls:\n        - read: {path: foo.go}\n  - assistant:\n      text: done\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a.go --\nx\n"), 0o644)
	results := filepath.Join(dir, "results")
	code, _, stderr := runLab(t, "run", "--scenario", bad, "--results", results, "--server", "http://127.0.0.1:9")
	if code != 2 {
		t.Fatalf("exit code %d; want 2 (stderr %q)", code, stderr)
	}
	if want := bad + `:9: read "foo.go": the workspace holds no such file`; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q; want it to contain %q", stderr, want)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Fatalf("results folder exists after bad input: %v", err)
	}
}
