package localserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// fakeLlamaServer is a stand-in for llama-server: `--help` lists the flags of a 2026 build;
// otherwise it prints its arguments and FAKE_MARK, serves /health (503 for the first three
// requests, as while a model loads, then 200) and /props on --host:--port.
const fakeLlamaServer = `package main

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
)

func main() {
	var host, port, model string
	for i, a := range os.Args {
		if i+1 >= len(os.Args) {
			break
		}
		switch a {
		case "--help":
		case "--host":
			host = os.Args[i+1]
		case "--port":
			port = os.Args[i+1]
		case "-m":
			model = os.Args[i+1]
		}
	}
	for _, a := range os.Args[1:] {
		if a == "--help" {
			fmt.Println("| -c, --ctx-size N | size of the prompt context |")
			fmt.Println("| -cram, --cache-ram N | set the maximum cache size in MiB (default: 8192) |")
			fmt.Println("| --slots, --no-slots | expose slots monitoring endpoint (default: enabled) |")
			return
		}
	}
	fmt.Printf("args: %q\nmark: %s\nllama_arg: %s\n", os.Args[1:], os.Getenv("FAKE_MARK"), os.Getenv("LLAMA_ARG_CTX_SIZE"))
	var n atomic.Int32
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 3 {
			w.WriteHeader(503)
			fmt.Fprint(w, ` + "`" + `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}` + "`" + `)
			return
		}
		fmt.Fprint(w, ` + "`" + `{"status":"ok"}` + "`" + `)
	})
	http.HandleFunc("/props", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, ` + "`" + `{"build_info":"b9999-fake","model_path":%q,"total_slots":1}` + "`" + `, model)
	})
	if err := http.ListenAndServe(host+":"+port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// buildFakeLlama compiles fakeLlamaServer into dir and returns the binary's path.
func buildFakeLlama(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module fakellama\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(fakeLlamaServer), 0o644)
	bin := filepath.Join(dir, "llama-server")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake llama-server: %v\n%s", err, out)
	}
	return bin
}

func TestStartLlamaServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	bin := buildFakeLlama(t, dir)
	model := filepath.Join(dir, "model.gguf")
	os.WriteFile(model, []byte("GGUF"), 0o644)
	state := filepath.Join(dir, "state")

	s, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: bin, Model: model, Dir: state, Env: []string{"FAKE_MARK=here"}, Args: []string{"-ngl", "99"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.BuildInfo != "b9999-fake" || s.ModelPath != model || !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("server = %+v; want build b9999-fake, model %s, a loopback URL", s, model)
	}
	log, _ := os.ReadFile(s.LogPath)
	port := s.URL[strings.LastIndexByte(s.URL, ':')+1:]
	for _, want := range []string{
		`"-m" "` + model + `"`, `"--host" "127.0.0.1"`, `"--port" "` + port + `"`, `"-np" "1"`, `"--jinja"`, `"-c" "40960"`,
		`"--slot-save-path" "` + filepath.Join(state, "slots") + `"`, `"--slots"`, `"--cache-ram" "0"`, `"-ngl" "99"]`, "mark: here",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the server's log lacks %s:\n%s", want, log)
		}
	}
	if fi, err := os.Stat(filepath.Join(state, "slots")); err != nil || !fi.IsDir() {
		t.Errorf("slot-save folder not created: %v", err)
	}

	if _, err := StartLlamaServer(ctx, LlamaStartOptions{Binary: bin, Model: model, Dir: state}); !errors.Is(err, ErrLlamaAlreadyRunning) {
		t.Errorf("second StartLlamaServer = %v; want ErrLlamaAlreadyRunning", err)
	}
	a, err := AttachLlamaServer(ctx, state)
	if err != nil || a.PID != s.PID || a.URL != s.URL || a.BuildInfo != "b9999-fake" || !reflect.DeepEqual(a.Args, s.Args) {
		t.Fatalf("AttachLlamaServer = %+v, %v; want the started server", a, err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.PID, 0); err == nil && llamaAlive(s.PID, s.Binary) {
		t.Errorf("pid %d still alive after Stop", s.PID)
	}
	if _, err := AttachLlamaServer(ctx, state); !errors.Is(err, ErrLlamaNotRunning) {
		t.Errorf("AttachLlamaServer after Stop = %v; want ErrLlamaNotRunning", err)
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
	if _, err := AttachLlamaServer(context.Background(), dir); !errors.Is(err, ErrLlamaNotRunning) {
		t.Errorf("AttachLlamaServer(empty folder) = %v; want ErrLlamaNotRunning", err)
	}
	// This test process is alive but is no llama-server: stale, removed.
	st := `{"pid": ` + strconv.Itoa(os.Getpid()) + `, "url": "http://127.0.0.1:1", "binary": "/usr/local/bin/llama-server"}`
	os.WriteFile(llamaStatePath(dir), []byte(st), 0o644)
	if _, err := AttachLlamaServer(context.Background(), dir); !errors.Is(err, ErrLlamaNotRunning) {
		t.Errorf("AttachLlamaServer(pid of another program) = %v; want ErrLlamaNotRunning", err)
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
}

func TestLlamaEnv(t *testing.T) {
	t.Parallel()
	env := llamaEnv([]string{"HOME=/h", "LLAMA_ARG_CTX_SIZE=99", "LLAMA_API_KEY=k", "LLAMA_ARG_N_PARALLEL=4"}, []string{"LLAMA_ARG_THREADS=2"})
	want := []string{"HOME=/h", "LLAMA_API_KEY=k", "LLAMA_ARG_THREADS=2"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("llamaEnv = %q; want %q", env, want)
	}
}
