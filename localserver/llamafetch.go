package localserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"lab/localserver/supervise"
)

// The llama-server the lab fetches: Debian's unstable suite packages llama.cpp.
const (
	// LlamaCppPackage is the Debian binary package holding llama-server.
	LlamaCppPackage = "llama.cpp-tools"
	// LlamaCppVersion is the package version the lab was tested with (llama.cpp build b11669),
	// as [OllamaVersion] pins Ollama's. The unstable suite moves: when it no longer has this
	// version, [PrepareLlamaServer] takes the suite's current one and says so.
	LlamaCppVersion = "1:0.7.0+dfsg-2"
)

// ErrArchiveUnreachable wraps the error of a [PrepareLlamaServer] whose `apt-get update` of the
// Debian archive failed (no network, or the archive refused).
var ErrArchiveUnreachable = errors.New("the Debian archive could not be read")

// LlamaSetup says where [PrepareLlamaServer] fetches llama-server from and keeps it. Fields may
// be added.
type LlamaSetup struct {
	// CacheDir is the lab's cache folder (see [DefaultCacheDir]); llama-server goes to
	// <CacheDir>/llama.cpp/<version>/. Required.
	CacheDir string
	// Version is the package version to fetch; empty means [LlamaCppVersion].
	Version string
	// AptEtc is the apt configuration folder whose sources name the Debian archive; empty means
	// /etc/apt.
	AptEtc string
	// Release is the machine's Debian codename, the suite of the archive entry to take; empty
	// means VERSION_CODENAME of /etc/os-release.
	Release string
	// Log receives progress lines; nil means io.Discard.
	Log io.Writer
}

// PreparedLlama is a llama-server [PrepareLlamaServer] made ready.
type PreparedLlama struct {
	// Binary is the wrapper script <Root>/bin/llama-server, which runs the server through the
	// suite's own loader; give it to [LlamaStartOptions].Binary.
	Binary string
	// Root is the folder the packages were unpacked into, <CacheDir>/llama.cpp/<key>.
	Root string
	// Version is the Debian package version unpacked ("1:0.7.0+dfsg-2").
	Version string
	// ServerVersion is the first line `llama-server --version` printed
	// ("version: 0.7.0 (build 11669, commit Debian)").
	ServerVersion string
}

// llamaManifest is <Root>/prepared.json: what a later PrepareLlamaServer needs to reuse Root
// without asking the network.
type llamaManifest struct {
	// Version is [PreparedLlama].Version.
	Version string `json:"version"`
	// Requested is the version that was asked for (differs from Version when the suite no
	// longer had it).
	Requested string `json:"requested"`
	// ServerVersion is [PreparedLlama].ServerVersion.
	ServerVersion string `json:"server_version"`
	// Packages are the .deb files unpacked.
	Packages []string `json:"packages"`
}

// debVersionRE is what a Debian version may hold ([epoch:]upstream[-revision]).
var debVersionRE = regexp.MustCompile(`^[0-9A-Za-z.+~:-]+$`)

// LlamaCacheKey returns the folder name, under <CacheDir>/llama.cpp, of the package version v:
// v with its epoch colon written %3a, as apt names its downloaded files ("1%3a0.7.0+dfsg-2"). A
// version holding anything a Debian version cannot (a slash, a space, "..") is an error.
func LlamaCacheKey(v string) (string, error) {
	if !debVersionRE.MatchString(v) || strings.Contains(v, "..") || !strings.ContainsAny(v[:1], "0123456789") {
		return "", fmt.Errorf("llama.cpp package version %q is not a Debian version", v)
	}
	return strings.ReplaceAll(v, ":", "%3a"), nil
}

// PrepareLlamaServer fetches (or reuses) Debian unstable's [LlamaCppPackage] and everything it
// depends on, libc6 included (27 packages, about 20 s and 75 MB), with the machine's own apt-get
// and dpkg-deb and no root: a private apt state under <CacheDir>/llama.cpp/apt whose one source
// is the machine's Debian archive entry ([MachineDebianSource]) with the suite changed to
// unstable; the Release file's Valid-Until is not checked (the suite's can read as expired on a
// machine whose clock is ahead of the mirror). The packages are unpacked into a temporary folder,
// the ggml CPU backends linked next to the loader (ggml looks for them there), the wrapper
// <Root>/bin/llama-server written (bash, `exec -a "$0"`, so a process check by command line finds
// the server), `--version` run, and the folder renamed to <CacheDir>/llama.cpp/<LlamaCacheKey of
// the version>. When the suite no longer has the pinned version, the current one is taken with a
// warning line naming both. A later call finds the folder and does no network work at all.
// Concurrent calls, from any process, fetch once (a lock file). Errors: no Debian entry in the
// machine's apt sources (naming the files read), apt-get or dpkg-deb missing or failing (with
// their output's last lines), a machine other than x86-64 Linux.
func PrepareLlamaServer(ctx context.Context, s LlamaSetup) (*PreparedLlama, error) {
	cache, err := folder("prepare llama-server", "cache", s.CacheDir, "")
	if err != nil {
		return nil, err
	}
	if s.Log == nil {
		s.Log = io.Discard
	}
	if s.Version == "" {
		s.Version = LlamaCppVersion
	}
	base := filepath.Join(cache, "llama.cpp")
	if p, ok := findPreparedLlama(base, s.Version); ok {
		return p, nil
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("prepare llama-server: the lab fetches Debian's amd64 packages, which need x86-64 Linux (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("prepare llama-server: %s not found: the lab fetches llama-server with the machine's own apt (a Debian or Ubuntu machine): %w", tool, err)
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(base, "prepare.lock"), func() {
		fmt.Fprintln(s.Log, "waiting for another process fetching llama-server...")
	})
	if err != nil {
		return nil, err
	}
	defer unlock()
	if p, ok := findPreparedLlama(base, s.Version); ok {
		return p, nil
	}
	if s.AptEtc == "" {
		s.AptEtc = "/etc/apt"
	}
	if s.Release == "" {
		s.Release = osRelease("/etc/os-release")
	}
	src, err := MachineDebianSource(s.AptEtc, s.Release)
	if err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	start := time.Now()
	apt, err := newPrivateApt(filepath.Join(base, "apt"), src)
	if err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	fmt.Fprintf(s.Log, "fetching llama-server: apt-get update of Debian unstable (the archive of %s:%d)...\n", src.File, src.Line)
	if _, err := apt.run(ctx, "apt-get", "update"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArchiveUnreachable, err)
	}
	out, err := apt.run(ctx, "apt-cache", "madison", LlamaCppPackage)
	if err != nil {
		return nil, err
	}
	versions := madisonVersions(out, LlamaCppPackage)
	version := s.Version
	if len(versions) == 0 {
		return nil, fmt.Errorf("prepare llama-server: Debian unstable lists no %s (apt-cache madison printed %q)", LlamaCppPackage, strings.TrimSpace(string(out)))
	}
	if !contains(versions, version) {
		fmt.Fprintf(s.Log, "lab: warning: Debian unstable no longer has %s %s (the version the lab was tested with): taking its current %s\n", LlamaCppPackage, version, versions[0])
		version = versions[0]
	}
	key, err := LlamaCacheKey(version)
	if err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	root := filepath.Join(base, key)
	if p, ok := readPreparedLlama(root); ok {
		return p, writeLlamaAlias(base, s.Version, key)
	}
	archives := filepath.Join(apt.dir, "cache", "archives")
	old, _ := filepath.Glob(filepath.Join(archives, "*.deb"))
	for _, f := range old {
		os.Remove(f) // the folder is to hold exactly this version's closure
	}
	fmt.Fprintf(s.Log, "downloading %s=%s and its dependencies...\n", LlamaCppPackage, version)
	if _, err := apt.run(ctx, "apt-get", "--no-install-recommends", "--download-only", "-y", "install", LlamaCppPackage+"="+version); err != nil {
		return nil, err
	}
	debs, _ := filepath.Glob(filepath.Join(archives, "*.deb"))
	sort.Strings(debs)
	if len(debs) == 0 {
		return nil, fmt.Errorf("prepare llama-server: apt-get downloaded no packages into %s", archives)
	}
	tmp, err := os.MkdirTemp(base, ".unpack-")
	if err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	defer os.RemoveAll(tmp)
	m := llamaManifest{Version: version, Requested: s.Version}
	for _, d := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", d, tmp).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("prepare llama-server: dpkg-deb -x %s: %w\n%s", d, err, supervise.Tail(out, 10))
		}
		m.Packages = append(m.Packages, filepath.Base(d))
	}
	if err := finishLlamaRoot(tmp); err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	vout, err := exec.CommandContext(vctx, filepath.Join(tmp, "bin", "llama-server"), "--version").CombinedOutput()
	cancel()
	if m.ServerVersion = serverVersionLine(string(vout)); err != nil || m.ServerVersion == "" {
		return nil, fmt.Errorf("prepare llama-server: the unpacked llama-server --version failed (%v):\n%s", err, supervise.Tail(vout, 10))
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, "prepared.json"), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("prepare llama-server: %w", err)
	}
	if err := os.Rename(tmp, root); err != nil {
		return nil, fmt.Errorf("prepare llama-server: install %s: %w", root, err)
	}
	for _, f := range debs {
		os.Remove(f) // unpacked: 40 MB the cache need not keep
	}
	if err := writeLlamaAlias(base, s.Version, key); err != nil {
		return nil, err
	}
	fmt.Fprintf(s.Log, "llama-server %s (%s, %d packages) ready in %s: %s\n", version, m.ServerVersion, len(debs), time.Since(start).Round(time.Second), root)
	return readPreparedOrErr(root)
}

// readPreparedOrErr is readPreparedLlama with an error for a folder that is not complete.
func readPreparedOrErr(root string) (*PreparedLlama, error) {
	p, ok := readPreparedLlama(root)
	if !ok {
		return nil, fmt.Errorf("prepare llama-server: %s is incomplete", root)
	}
	return p, nil
}

// CachedLlamaServer returns the llama-server [PrepareLlamaServer] left in the cache folder cache
// at [LlamaCppVersion], without fetching anything; false when the cache holds none (a live test
// then skips).
func CachedLlamaServer(cache string) (*PreparedLlama, bool) {
	return findPreparedLlama(filepath.Join(cache, "llama.cpp"), LlamaCppVersion)
}

// readPreparedLlama returns the llama-server unpacked at root when its prepared.json and wrapper
// are there.
func readPreparedLlama(root string) (*PreparedLlama, bool) {
	b, err := os.ReadFile(filepath.Join(root, "prepared.json"))
	if err != nil {
		return nil, false
	}
	var m llamaManifest
	if json.Unmarshal(b, &m) != nil || m.Version == "" {
		return nil, false
	}
	bin := filepath.Join(root, "bin", "llama-server")
	if !isFile(bin) {
		return nil, false
	}
	return &PreparedLlama{Binary: bin, Root: root, Version: m.Version, ServerVersion: m.ServerVersion}, true
}

// findPreparedLlama returns the llama-server prepared for the requested version: its own folder,
// or the one an alias file (<base>/<key of requested>.alias) names when the suite had moved on.
func findPreparedLlama(base, requested string) (*PreparedLlama, bool) {
	key, err := LlamaCacheKey(requested)
	if err != nil {
		return nil, false
	}
	if p, ok := readPreparedLlama(filepath.Join(base, key)); ok {
		return p, true
	}
	b, err := os.ReadFile(filepath.Join(base, key+".alias"))
	if err != nil {
		return nil, false
	}
	alias := strings.TrimSpace(string(b))
	if alias == "" || strings.ContainsAny(alias, "/\\") || strings.HasPrefix(alias, ".") {
		return nil, false
	}
	return readPreparedLlama(filepath.Join(base, alias))
}

// writeLlamaAlias records, when the suite gave another version than requested, which folder
// serves the requested one, so that a later call finds it without the network.
func writeLlamaAlias(base, requested, key string) error {
	rk, err := LlamaCacheKey(requested)
	if err != nil || rk == key {
		return err
	}
	if err := supervise.WriteFileAtomic(filepath.Join(base, rk+".alias"), []byte(key+"\n")); err != nil {
		return fmt.Errorf("prepare llama-server: %w", err)
	}
	return nil
}

// llamaLibDir is where the packages put the loader and libraries, relative to the root.
const llamaLibDir = "usr/lib/x86_64-linux-gnu"

// llamaWrapper is <Root>/bin/llama-server: it finds the root from its own path (so the folder
// can be renamed after it is written) and runs the server through the suite's loader, keeping
// the program name.
const llamaWrapper = `#!/bin/bash
# Written by the lab: runs Debian unstable's llama-server with the suite's own loader and
# libraries (they need a newer glibc than the machine's).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
L="$ROOT/` + llamaLibDir + `"
exec -a "$0" "$L/ld-linux-x86-64.so.2" --library-path "$L:$L/llama" "$ROOT/usr/bin/llama-server" "$@"
`

// finishLlamaRoot links the ggml CPU backends next to the loader and writes the wrapper.
func finishLlamaRoot(root string) error {
	lib := filepath.Join(root, llamaLibDir)
	if !isFile(filepath.Join(lib, "ld-linux-x86-64.so.2")) {
		return fmt.Errorf("the packages hold no loader %s", filepath.Join(lib, "ld-linux-x86-64.so.2"))
	}
	if !isFile(filepath.Join(root, "usr", "bin", "llama-server")) {
		return fmt.Errorf("the packages hold no usr/bin/llama-server")
	}
	backends, _ := filepath.Glob(filepath.Join(lib, "ggml", "*", "libggml-cpu-*.so"))
	if len(backends) == 0 {
		return fmt.Errorf("the packages hold no ggml CPU backend (%s)", filepath.Join(lib, "ggml", "*", "libggml-cpu-*.so"))
	}
	for _, b := range backends {
		rel, _ := filepath.Rel(lib, b)
		link := filepath.Join(lib, filepath.Base(b))
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(rel, link); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, "bin", "llama-server"), []byte(llamaWrapper), 0o755)
}

// serverVersionLine returns the "version: ..." line of llama-server --version's output.
func serverVersionLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "version:") {
			return l
		}
	}
	return ""
}

// madisonVersions returns the versions of pkg in `apt-cache madison` output
// ("pkg | version | source"), in apt's order (newest first).
func madisonVersions(out []byte, pkg string) []string {
	var vs []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, "|")
		if len(f) >= 2 && strings.TrimSpace(f[0]) == pkg {
			if v := strings.TrimSpace(f[1]); v != "" && !contains(vs, v) {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// privateApt is an apt state folder of the lab's own: its lists, an empty dpkg status, its
// download cache and one source, so that apt-get runs without root and without the machine's
// state.
type privateApt struct {
	dir  string
	opts []string
}

// newPrivateApt makes (or reuses) the folder dir with src as its one source.
func newPrivateApt(dir string, src AptSource) (*privateApt, error) {
	for _, d := range []string{"lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/preferences.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	status := filepath.Join(dir, "status")
	if err := os.WriteFile(status, nil, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "sources.list.d", "unstable.sources"), []byte(src.deb822()), 0o644); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "etc", "apt.conf")
	if err := os.WriteFile(conf, []byte(aptNoHooks), 0o644); err != nil {
		return nil, err
	}
	return &privateApt{dir: dir, opts: append([]string{"-c", conf}, aptOptions(dir)...)}, nil
}

// aptNoHooks is the private apt's own configuration file, read (apt-get -c) after the machine's
// apt.conf.d: it clears the commands the machine's configuration runs around an update or a dpkg
// call (a Debian image's docker-clean, appstream's and PackageKit's refreshes), which would act
// on the machine's own state, as root even write into it. The machine's other settings (its
// proxy, for one) are kept.
const aptNoHooks = `#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear DPkg::Pre-Invoke;
#clear DPkg::Post-Invoke;
#clear DPkg::Pre-Install-Pkgs;
`

// aptOptions are the -o settings that point apt at the private folder dir.
func aptOptions(dir string) []string {
	var o []string
	for _, kv := range []string{
		"Dir::State=" + dir,
		"Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"Dir::State::status=" + filepath.Join(dir, "status"),
		"Dir::Cache=" + filepath.Join(dir, "cache"),
		"Dir::Etc::SourceList=/dev/null",
		"Dir::Etc::SourceParts=" + filepath.Join(dir, "etc", "sources.list.d"),
		"Dir::Etc::Preferences=/dev/null",
		"Dir::Etc::PreferencesParts=" + filepath.Join(dir, "etc", "preferences.d"),
		"Acquire::Check-Valid-Until=false",
		"APT::Architecture=amd64",
		"APT::Architectures=amd64",
		"Debug::NoLocking=1",
	} {
		o = append(o, "-o", kv)
	}
	return o
}

// run runs tool (apt-get or apt-cache) with the private options and args; its output, or an
// error with the output's last lines.
func (a *privateApt) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, tool, append(append([]string{}, a.opts...), args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("prepare llama-server: %s %s: %w\n%s", tool, strings.Join(args, " "), err, supervise.Tail(out, 15))
	}
	return out, nil
}

// PreparedOf returns the fetched llama-server whose wrapper is binary (<Root>/bin/llama-server
// of a [PrepareLlamaServer] folder), for the manifest's package and server versions; false for
// any other binary.
func PreparedOf(binary string) (*PreparedLlama, bool) {
	if filepath.Base(binary) != "llama-server" || filepath.Base(filepath.Dir(binary)) != "bin" {
		return nil, false
	}
	p, ok := readPreparedLlama(filepath.Dir(filepath.Dir(binary)))
	if !ok || p.Binary != binary {
		return nil, false
	}
	return p, true
}
