package localserver

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/internal/fakellama"
)

func TestKinds(t *testing.T) {
	for v, want := range map[string][]string{"": {KindOllama, KindLlamaCpp}, "all": {KindOllama, KindLlamaCpp}, "llamacpp": {KindLlamaCpp}, "ollama": {KindOllama}} {
		if got, err := Kinds(v); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Kinds(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := Kinds("vllm"); err == nil {
		t.Error("Kinds(vllm): no error")
	}
}

// A run finds the shared llama-server and holds its use lock: a second run at the same time
// waits (and here gives up when its context ends) instead of measuring on it too.
func TestOpenRunLlamaSharedLocks(t *testing.T) {
	dir, bin, model := fakellama.Files(t)
	cache := filepath.Join(dir, "cache")
	ctx := context.Background()
	o := ServerOptions{Setup: Setup{CacheDir: cache}, LlamaBinary: bin, LlamaModel: model}
	sh, err := StartShared(ctx, o, KindLlamaCpp)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Llama.Stop()
	if sh.Already || sh.Llama.Dir != SharedLlamaDir(cache) {
		t.Errorf("StartShared = %+v", sh)
	}
	run := ServerOptions{Setup: Setup{CacheDir: cache}} // the lab's own: the shared one
	r1, err := OpenRunLlama(ctx, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Shared || r1.Server.URL != sh.Llama.URL {
		t.Fatalf("first run got %+v; want the shared server %s", r1.Server, sh.Llama.URL)
	}
	var log bytes.Buffer
	wctx, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancel()
	if _, err := OpenRunLlama(wctx, run, &log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second run while the first holds the server: %v; want it to wait", err)
	}
	if !strings.Contains(log.String(), "waiting for another lab process") {
		t.Errorf("no waiting line: %q", log.String())
	}
	if err := r1.Release(); err != nil {
		t.Fatal(err)
	}
	r2, err := OpenRunLlama(ctx, run, nil)
	if err != nil {
		t.Fatalf("run after the first released: %v", err)
	}
	r2.Release()
	if err := llamaHealthy(ctx, sh.Llama.URL); err != nil {
		t.Errorf("releasing the shared server stopped it: %v", err)
	}
	stopped, err := StopShared(ctx, cache, []string{KindLlamaCpp})
	if err != nil || len(stopped) != 1 {
		t.Errorf("StopShared = %v, %v", stopped, err)
	}
}

// A run's own llama-server is stopped when the run releases it, and its log is kept.
func TestOpenRunLlamaOwnKeepsLog(t *testing.T) {
	dir, bin, model := fakellama.Files(t)
	cache := filepath.Join(dir, "cache")
	ctx := context.Background()
	r, err := OpenRunLlama(ctx, ServerOptions{Setup: Setup{CacheDir: cache}, LlamaBinary: bin, LlamaModel: model}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Shared || !strings.HasPrefix(r.Server.LogPath, filepath.Join(cache, "llama-server-runs")+string(filepath.Separator)) {
		t.Errorf("run's own server = %+v", r.Server)
	}
	if err := r.Release(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(r.Server.LogPath); err != nil || !strings.Contains(string(b), "args:") {
		t.Errorf("log after release: %v, %q", err, b)
	}
	if _, err := os.Stat(filepath.Join(r.Server.Dir, "slots")); !os.IsNotExist(err) {
		t.Errorf("slot folder kept: %v", err)
	}
	if err := llamaHealthy(ctx, r.Server.URL); err == nil {
		t.Error("the run's own server still answers after release")
	}
}

func TestCacheReuseOf(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"--jinja", "-np", "1"}, 0},
		{[]string{"--jinja", "--cache-reuse", "256", "-c", "4096"}, 256},
		{[]string{"--cache-reuse=128"}, 128},
		{[]string{"--cache-reuse"}, 0},
		{[]string{"--cache-reuse", "x"}, 0},
		{[]string{"--cache-reuse", "64", "--cache-reuse", "32"}, 32}, // the last wins, as in llama.cpp's parser
	} {
		if got := CacheReuseOf(c.args); got != c.want {
			t.Errorf("CacheReuseOf(%q) = %d; want %d", c.args, got, c.want)
		}
	}
}
