package localserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"lab/gguf"
	"lab/internal/fakellama"
)

func TestStartLlamaServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, bin, model := fakellama.Files(t)
	state := filepath.Join(dir, "state")

	s, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: bin, Model: model, Dir: state, Env: []string{"FAKE_MARK=here", "FAKE_N_CTX=40960"}, Args: []string{"-ngl", "99"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.BuildInfo != "b9999-fake" || s.ModelPath != model || !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("server = %+v; want build b9999-fake, model %s, a loopback URL", s, model)
	}
	// The slot's context is what the server reports, not the -c flag.
	if s.CtxSize != 40960 {
		t.Errorf("CtxSize = %d; want 40960 from /props", s.CtxSize)
	}
	log, _ := os.ReadFile(s.LogPath)
	port := s.URL[strings.LastIndexByte(s.URL, ':')+1:]
	for _, want := range []string{
		`"-m" "` + model + `"`, `"--host" "127.0.0.1"`, `"--port" "` + port + `"`, `"-np" "1"`, `"--jinja"`, `"-c" "` + strconv.Itoa(gguf.DefaultContextLength) + `"`,
		`"--slot-save-path" "` + filepath.Join(state, "slots") + `"`, `"--slots"`, `"--cache-ram" "0"`, `"-ngl" "99"]`, "mark: here",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the server's log lacks %s:\n%s", want, log)
		}
	}
	if fi, err := os.Stat(filepath.Join(state, "slots")); err != nil || !fi.IsDir() {
		t.Errorf("slot-save folder not created: %v", err)
	}

	if _, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: bin, Model: model, Dir: state}); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second StartLlamaServer = %v; want ErrAlreadyRunning", err)
	}
	a, err := AttachLlamaServer(ctx, state)
	if err != nil || a.PID != s.PID || a.URL != s.URL || a.BuildInfo != "b9999-fake" || a.CtxSize != 40960 || !reflect.DeepEqual(a.Args, s.Args) {
		t.Fatalf("AttachLlamaServer = %+v, %v; want the started server", a, err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if !a.proc.Exited() {
		t.Errorf("pid %d still alive after Stop", s.PID)
	}
	if _, err := AttachLlamaServer(ctx, state); !errors.Is(err, ErrNotRunning) {
		t.Errorf("AttachLlamaServer after Stop = %v; want ErrNotRunning", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop of a stopped server = %v; want nil", err)
	}
}

func TestStartLlamaServerFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	os.WriteFile(model, []byte("GGUF"), 0o644)
	bin := filepath.Join(dir, "llama-server")
	os.WriteFile(bin, []byte("#!/bin/sh\necho 'error: failed to load model' >&2\nexit 1\n"), 0o755)
	state := filepath.Join(dir, "state")

	_, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: bin, Model: model, Dir: state})
	if err == nil || !strings.Contains(err.Error(), "failed to load model") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("StartLlamaServer(failing binary) = %v; want an error with the log tail", err)
	}
	if _, err := os.Stat(llamaStatePath(state)); !os.IsNotExist(err) {
		t.Errorf("failed start left llama-server.json: %v", err)
	}
	for _, tc := range []struct {
		name string
		o    LlamaStartOptions
		want string
	}{
		{"no binary", LlamaStartOptions{Binary: filepath.Join(dir, "none"), Model: model, Dir: state}, "binary"},
		{"no model", LlamaStartOptions{Binary: bin, Model: filepath.Join(dir, "none.gguf"), Dir: state}, "none.gguf"},
		{"no folder", LlamaStartOptions{Binary: bin, Model: model}, "state folder"},
		{"negative context", LlamaStartOptions{Binary: bin, Model: model, Dir: state, CtxSize: -1}, "context size"},
	} {
		if _, err := StartLlamaServer(ctx, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: StartLlamaServer = %v; want an error naming %s", tc.name, err, tc.want)
		}
	}
}

func TestAttachLlamaServerNotRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := AttachLlamaServer(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("AttachLlamaServer(empty folder) = %v; want ErrNotRunning", err)
	}
	// This test process is alive but is no llama-server: stale, removed.
	st := `{"pid": ` + strconv.Itoa(os.Getpid()) + `, "url": "http://127.0.0.1:1", "binary": "/usr/local/bin/llama-server"}`
	os.WriteFile(llamaStatePath(dir), []byte(st), 0o644)
	if _, err := AttachLlamaServer(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("AttachLlamaServer(pid of another program) = %v; want ErrNotRunning", err)
	}
	if _, err := os.Stat(llamaStatePath(dir)); !os.IsNotExist(err) {
		t.Errorf("stale llama-server.json not removed: %v", err)
	}
}

func TestLlamaArgs(t *testing.T) {
	t.Parallel()
	base := []string{"-m", "/m.gguf", "--host", "127.0.0.1", "--port", "8081", "-np", "1", "--jinja", "-c", "4096", "--slot-save-path", "/d/slots"}
	for _, tc := range []struct {
		name, help string
		want       []string
	}{
		{"old build", "--slot-save-path PATH\n--slots-endpoint-disable\n-c, --ctx-size N", base},
		{"new build", "| --slots, --no-slots | … |\n| -cram, --cache-ram N | … |", append(append([]string{}, base...), "--slots", "--cache-ram", "0")},
		{"no help", "", base},
	} {
		got := LlamaArgs("/m.gguf", "127.0.0.1", 8081, 4096, "/d/slots", tc.help, nil)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: LlamaArgs = %q; want %q", tc.name, got, tc.want)
		}
	}
	got := LlamaArgs("/m.gguf", "127.0.0.1", 8081, 4096, "/d/slots", "", []string{"--swa-full"})
	if got[len(got)-1] != "--swa-full" {
		t.Errorf("extra arguments not last: %q", got)
	}
	// Three slots of 4096 tokens each: llama-server splits -c between its slots.
	got = LlamaArgs("/m.gguf", "127.0.0.1", 8081, 4096, "/d/slots", "-cram, --cache-ram N", []string{"-np", "3", "--cache-ram", "512"})
	want := []string{"-m", "/m.gguf", "--host", "127.0.0.1", "--port", "8081", "-np", "3", "--jinja", "-c", "12288", "--slot-save-path", "/d/slots", "--cache-ram", "512"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LlamaArgs(-np 3, --cache-ram 512) = %q; want %q", got, want)
	}
}

func TestLlamaEnv(t *testing.T) {
	t.Parallel()
	env := llamaEnv([]string{"HOME=/h", "LLAMA_ARG_CTX_SIZE=99", "LLAMA_API_KEY=k", "LLAMA_ARG_N_PARALLEL=4"}, []string{"LLAMA_ARG_THREADS=2"})
	want := []string{"HOME=/h", "LLAMA_API_KEY=k", "LLAMA_ARG_THREADS=2"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("llamaEnv = %q; want %q", env, want)
	}
}
