//go:build unix

package localserver

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLockTakesTurns(t *testing.T) {
	s := &Server{Dir: t.TempDir(), URL: "http://127.0.0.1:1"}
	unlock, err := s.Lock(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder (flock locks belong to the open file, so a second open in the same process
	// contends like another process would) waits, and gives up when its context ends.
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, &log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v, want the context's deadline", err)
	}
	if !strings.Contains(log.String(), "waiting for another lab process") {
		t.Errorf("no waiting line: %q", log.String())
	}
	unlock()
	unlock2, err := s.Lock(context.Background(), nil)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()
}

// The llama-server's use lock is keyed by its address: a second holder of the same address
// waits, another address does not.
func TestLockURLTakesTurns(t *testing.T) {
	cache := t.TempDir()
	unlock, err := LockURL(context.Background(), cache, "http://127.0.0.1:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := LockURL(ctx, cache, "http://127.0.0.1:2/", &log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second LockURL while held: %v, want the context's deadline", err)
	}
	if !strings.Contains(log.String(), "http://127.0.0.1:2") {
		t.Errorf("waiting line does not name the server: %q", log.String())
	}
	other, err := LockURL(context.Background(), cache, "http://127.0.0.1:3", nil)
	if err != nil {
		t.Fatalf("another address: %v", err)
	}
	other()
	unlock()
	if _, err := LockURL(context.Background(), cache, "/no/host", nil); err == nil {
		t.Error("an address without a host: no error")
	}
}

func TestModelFile(t *testing.T) {
	s := &Server{Dir: t.TempDir(), URL: "http://127.0.0.1:1"}
	if _, err := s.ModelFile("m"); err == nil {
		t.Fatal("ModelFile without created.json: no error")
	}
	gguf := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(gguf, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := map[string]created{
		"m:latest":   {GGUF: "sha256:aa", Manifest: "bb", Path: gguf},
		"old:latest": {GGUF: "sha256:cc", Manifest: "dd"},
		"gone:v1":    {GGUF: "sha256:ee", Manifest: "ff", Path: filepath.Join(t.TempDir(), "gone.gguf")},
	}
	if err := writeRecords(filepath.Join(s.Dir, "created.json"), recs, "m"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ModelFile("m"); err != nil || got != gguf {
		t.Errorf("ModelFile(m) = %q, %v; want %q", got, err, gguf)
	}
	for name, want := range map[string]string{"old": "registered before the lab kept model paths", "gone:v1": "no such file", "other": "not registered by the lab"} {
		if _, err := s.ModelFile(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ModelFile(%s) = %v; want an error with %q", name, err, want)
		}
	}
}
