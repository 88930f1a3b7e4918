// Package fakellama holds stand-ins for llama.cpp's llama-server for tests. [Build] compiles a
// process one: `--help` lists the flags of a 2026 build; otherwise it prints its arguments and
// FAKE_MARK, serves /health (503 for the first three requests, as while a model loads, then 200)
// and /props on --host:--port (default_generation_settings.n_ctx is -c, or FAKE_N_CTX when set: a
// server whose slot context differs from the flag). [Start] serves an in-process one with a slot,
// a chat template and the wire behaviour of a real build ([Server]).
package fakellama

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// source is the fake server's program.
const source = `package main

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
)

func main() {
	var host, port, model, nctx string
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
		case "-c":
			nctx = os.Args[i+1]
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
	if v := os.Getenv("FAKE_N_CTX"); v != "" {
		nctx = v
	}
	if nctx == "" {
		nctx = "0"
	}
	http.HandleFunc("/props", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, ` + "`" + `{"build_info":"b9999-fake","model_path":%q,"total_slots":1,"default_generation_settings":{"n_ctx":%s}}` + "`" + `, model, nctx)
	})
	if err := http.ListenAndServe(host+":"+port, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// Build compiles the fake llama-server into dir and returns the binary's path; it skips the test
// when Go cannot build it.
func Build(t testing.TB, dir string) string {
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
	os.WriteFile(filepath.Join(src, "main.go"), []byte(source), 0o644)
	bin := filepath.Join(dir, "llama-server")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake llama-server: %v\n%s", err, out)
	}
	return bin
}

// Files makes a test's temporary folder dir with the fake llama-server built in it (bin, as
// [Build]) and a model file for it to serve, <dir>/model.gguf (the four bytes "GGUF": the fake
// server does not read it). It skips the test when Go cannot build the server.
func Files(t testing.TB) (dir, bin, model string) {
	t.Helper()
	dir = t.TempDir()
	bin = Build(t, dir)
	model = filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(model, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, bin, model
}
