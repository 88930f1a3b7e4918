package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LAB_TRACE writes an execution trace that go tool trace reads (its header, "go 1.N trace"), and
// an unwritable path is reported with the command running on.
func TestTraceWritesAnExecutionTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.trace")
	env := func(k string) string {
		if k == "LAB_TRACE" {
			return path
		}
		return ""
	}
	stop := startTrace(env, io.Discard)
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b[:min(len(b), 16)], []byte(" trace")) {
		t.Errorf("the trace starts %q; want an execution trace's header", b[:min(len(b), 16)])
	}
	var stderr strings.Builder
	bad := func(k string) string {
		if k == "LAB_TRACE" {
			return filepath.Join(t.TempDir(), "no-such-folder", "lab.trace")
		}
		return ""
	}
	startTrace(bad, &stderr)()
	if !strings.Contains(stderr.String(), "LAB_TRACE") || !strings.Contains(stderr.String(), "running without a trace") {
		t.Errorf("stderr %q; want the failure named", stderr.String())
	}
}
