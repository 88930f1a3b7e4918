package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
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

// LAB_MEMPROFILE's file is made when the command starts, so that an unwritable one is reported
// before the command runs, not after it; at the end the profile (gzipped protocol buffers, as
// runtime/pprof writes it) is written after a collection, so that its live heap is the end's.
func TestAllocProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lab.allocs")
	env := func(k string) string {
		if k == "LAB_MEMPROFILE" {
			return path
		}
		return ""
	}
	write := startAllocProfile(env, io.Discard)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("LAB_MEMPROFILE's file before the command ran: %v; want it made", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	write()
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC {
		t.Error("the profile was written without a collection first")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("the profile starts %q; want gzip's header", b[:min(len(b), 2)])
	}
	var stderr strings.Builder
	bad := func(k string) string {
		if k == "LAB_MEMPROFILE" {
			return filepath.Join(t.TempDir(), "no-such-folder", "lab.allocs")
		}
		return ""
	}
	write = startAllocProfile(bad, &stderr)
	if !strings.Contains(stderr.String(), "LAB_MEMPROFILE") || !strings.Contains(stderr.String(), "running without an allocation profile") {
		t.Errorf("stderr %q before the command ran; want the failure named", stderr.String())
	}
	write()
}
