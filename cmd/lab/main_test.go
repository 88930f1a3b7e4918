package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/localserver"
)

func runLab(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// A scenario file with an error: "file:line: message", exit code 2, and no results folder.
func TestBadScenarioExits2WithFileAndLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: hi\n  - assistant:\n      calls:\n        - rm: {path: a}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a --\nx\n"), 0o644)
	results := filepath.Join(dir, "results")
	code, _, stderr := runLab(t, "run", "--scenario", bad, "--results", results, "--server", "http://127.0.0.1:9")
	if code != 2 {
		t.Fatalf("exit code %d; want 2 (stderr %q)", code, stderr)
	}
	if want := bad + ":9: rm: unknown tool"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q; want it to contain %q", stderr, want)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Fatalf("results folder exists after bad input: %v", err)
	}
}

func TestBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--repeat", "0"},
		{"run", "--arm", "nope"},
		{"run", "--scenario", "nope"},
		{"run", "--bogus"},
		{"run", "extra-arg"},
		{"bogus"},
		{"run", "--run-id", "../escape"},
		{"run", "--gguf", "/nonexistent.gguf"},
		{"run", "--scenario", "/nonexistent/scenario.yaml"},
	} {
		code, _, stderr := runLab(t, args...)
		if code != 2 {
			t.Errorf("lab %s: exit %d; want 2 (stderr %q)", strings.Join(args, " "), code, stderr)
		}
	}
}

// An unreachable server: a clear error naming the address, exit 1, nothing written.
func TestUnreachableServerNamesTheAddress(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runLab(t, "run", "--server", "http://127.0.0.1:9", "--results", results)
	if code != 1 || !strings.Contains(stderr, "http://127.0.0.1:9") {
		t.Fatalf("exit %d, stderr %q; want 1 and the address", code, stderr)
	}
	if _, err := os.Stat(results); !os.IsNotExist(err) {
		t.Fatalf("results folder exists after a failed start: %v", err)
	}
}

func TestArmsListsBoth(t *testing.T) {
	code, out, _ := runLab(t, "arms")
	if code != 0 || !strings.HasPrefix(out, "spec ") || !strings.Contains(out, "\ndate-in-system-prompt ") || !strings.Contains(out, "\nplain ") {
		t.Fatalf("lab arms = %d %q", code, out)
	}
}

// needTokenizer fetches (once, into the lab's cache) the Qwen3 tokenizer the sim backend needs,
// and skips the test where it cannot be had (no npm, no cache folder).
func needTokenizer(t testing.TB) {
	t.Helper()
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := localserver.FetchTokenizer(ctx, cache, nil); errors.Is(err, localserver.ErrNoNPM) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}
