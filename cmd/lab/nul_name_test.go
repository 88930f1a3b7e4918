package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace file whose name holds a NUL byte (no file system can create it) is bad input:
// "archive:line: …" naming its marker line, exit code 2, and no results folder.
func TestWorkspaceNameWithNULExits2(t *testing.T) {
	dir := t.TempDir()
	sc := filepath.Join(dir, "scenario.yaml")
	os.WriteFile(sc, []byte("name: x\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: hi\n  - assistant:\n      text: done\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a.go --\nx\n-- b\x00c.go --\ny\n"), 0o644)
	results := filepath.Join(dir, "results")
	code, _, stderr := runLab(t, "run", "--scenario", sc, "--results", results, "--backend", "sim")
	if code != 2 {
		t.Fatalf("exit code %d; want 2 (stderr %q)", code, stderr)
	}
	if want := filepath.Join(dir, "w.txtar") + `:3: file "b\x00c.go"`; !strings.Contains(stderr, want) || !strings.Contains(stderr, "NUL") {
		t.Fatalf("stderr %q; want it to contain %q and name the NUL byte", stderr, want)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Fatalf("results folder exists after bad input: %v", err)
	}
}
