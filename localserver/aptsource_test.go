package localserver

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A machine's sources in both formats: the Debian entry of the release is found, the
// -security, -updates and -backports suites and other archives are not taken.
const (
	oneLineSources = `# the main archive
deb-src http://mirror.invalid/debian bookworm main
deb http://mirror.invalid/debian bookworm-updates main
deb [arch=amd64 signed-by=/usr/share/keyrings/one.gpg] http://mirror.invalid/debian bookworm main contrib
deb http://security.invalid/debian-security bookworm-security main
`
	deb822Sources = `Types: deb
# a comment inside the stanza
URIs: http://mirror.invalid/debian
Suites: bookworm-updates bookworm-backports
Components: main

Types: deb deb-src
URIs: http://other.invalid/node_20.x
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/node.gpg

Types: deb
URIs: http://mirror.invalid/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.invalid/debian-security
Suites: bookworm-security
Components: main
`
)

func TestParseAptSourcesOneLine(t *testing.T) {
	e, err := ParseAptSources("x.list", []byte(oneLineSources))
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 3 {
		t.Fatalf("%d entries, want 3 (deb-src skipped): %+v", len(e), e)
	}
	want := AptSource{URI: "http://mirror.invalid/debian", Suite: "bookworm", Components: []string{"main", "contrib"},
		SignedBy: "/usr/share/keyrings/one.gpg", File: "x.list", Line: 4}
	if !reflect.DeepEqual(e[1], want) {
		t.Errorf("entry = %+v, want %+v", e[1], want)
	}
	got, err := DebianSource(e, "bookworm", []string{"x.list"})
	if err != nil {
		t.Fatal(err)
	}
	want.Suite, want.Components = "unstable", []string{"main"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DebianSource = %+v, want %+v", got, want)
	}
}

func TestParseAptSourcesDeb822(t *testing.T) {
	e, err := ParseAptSources("debian.sources", []byte(deb822Sources))
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != 5 {
		t.Fatalf("%d entries, want 5 (one per URI and suite): %+v", len(e), e)
	}
	got, err := DebianSource(e, "bookworm", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := AptSource{URI: "http://mirror.invalid/debian", Suite: "unstable", Components: []string{"main"},
		SignedBy: "/usr/share/keyrings/debian-archive-keyring.gpg", File: "debian.sources", Line: 13}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DebianSource = %+v, want %+v", got, want)
	}
	if s := got.deb822(); !strings.Contains(s, "Suites: unstable\n") || !strings.Contains(s, "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n") {
		t.Errorf("deb822 =\n%s", s)
	}
}

func TestDebianSourceNone(t *testing.T) {
	// Only updates, security and another archive: no entry to take.
	e, err := ParseAptSources("d.sources", []byte(strings.Split(deb822Sources, "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm\n")[0]))
	if err != nil {
		t.Fatal(err)
	}
	_, err = DebianSource(e, "bookworm", []string{"/etc/apt/sources.list", "/etc/apt/sources.list.d/d.sources"})
	if err == nil || !strings.Contains(err.Error(), "/etc/apt/sources.list.d/d.sources") || !strings.Contains(err.Error(), `"bookworm"`) {
		t.Errorf("err = %v, want one naming the release and the files read", err)
	}
	if _, err := DebianSource(nil, "", nil); err == nil || !strings.Contains(err.Error(), "VERSION_CODENAME") {
		t.Errorf("unknown release: err = %v", err)
	}
}

func TestParseAptSourcesErrors(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"a.list", "deb http://mirror.invalid/debian\n", "a.list:1"},
		{"a.list", "# x\nrpm http://mirror.invalid/debian bookworm main\n", "a.list:2"},
		{"a.sources", "Types: deb\nSuites: bookworm\n", "a.sources:1"},
		{"a.sources", "Types: deb\nnot a field\n", "a.sources:2"},
	} {
		if _, err := ParseAptSources(c.name, []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: err = %v, want one naming %s", c.name, c.data, err, c.want)
		}
	}
}

func TestMachineDebianSource(t *testing.T) {
	etc := t.TempDir()
	os.MkdirAll(filepath.Join(etc, "sources.list.d"), 0o755)
	os.WriteFile(filepath.Join(etc, "sources.list.d", "debian.sources"), []byte(deb822Sources), 0o644)
	os.WriteFile(filepath.Join(etc, "sources.list.d", "off.list.disabled"), []byte("deb http://x.invalid/debian bookworm main\n"), 0o644)
	got, err := MachineDebianSource(etc, "bookworm")
	if err != nil {
		t.Fatal(err)
	}
	if got.URI != "http://mirror.invalid/debian" || got.File != filepath.Join(etc, "sources.list.d", "debian.sources") {
		t.Errorf("got %+v", got)
	}
	empty := t.TempDir()
	if _, err := MachineDebianSource(empty, "bookworm"); err == nil || !strings.Contains(err.Error(), filepath.Join(empty, "sources.list")) {
		t.Errorf("no sources: err = %v, want one naming %s", err, filepath.Join(empty, "sources.list"))
	}
}

func TestLlamaCacheKey(t *testing.T) {
	for v, want := range map[string]string{"1:0.7.0+dfsg-2": "1%3a0.7.0+dfsg-2", "0.8.1~rc1-1": "0.8.1~rc1-1"} {
		if got, err := LlamaCacheKey(v); err != nil || got != want {
			t.Errorf("LlamaCacheKey(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	for _, v := range []string{"", "../x", "1:0.7/0", "1 2", "a1", ".1"} {
		if got, err := LlamaCacheKey(v); err == nil {
			t.Errorf("LlamaCacheKey(%q) = %q, want an error", v, got)
		}
	}
}

// A folder prepared earlier, or an alias to the version taken when the suite had moved on, is
// found without apt.
func TestFindPreparedLlama(t *testing.T) {
	base := t.TempDir()
	if _, ok := findPreparedLlama(base, LlamaCppVersion); ok {
		t.Fatal("found a llama-server in an empty cache")
	}
	root := filepath.Join(base, "1%3a0.9.0-1")
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	os.WriteFile(filepath.Join(root, "bin", "llama-server"), []byte(llamaWrapper), 0o755)
	os.WriteFile(filepath.Join(root, "prepared.json"), []byte(`{"version":"1:0.9.0-1","requested":"1:0.7.0+dfsg-2","server_version":"version: 0.9.0"}`), 0o644)
	if _, ok := findPreparedLlama(base, LlamaCppVersion); ok {
		t.Fatal("found another version without an alias")
	}
	if err := writeLlamaAlias(base, LlamaCppVersion, "1%3a0.9.0-1"); err != nil {
		t.Fatal(err)
	}
	p, ok := findPreparedLlama(base, LlamaCppVersion)
	if !ok || p.Version != "1:0.9.0-1" || p.Binary != filepath.Join(root, "bin", "llama-server") || p.ServerVersion != "version: 0.9.0" {
		t.Errorf("findPreparedLlama = %+v, %v", p, ok)
	}
	if p, ok := findPreparedLlama(base, "1:0.9.0-1"); !ok || p.Root != root {
		t.Errorf("own version: %+v, %v", p, ok)
	}
}

func TestMadisonVersions(t *testing.T) {
	out := " llama.cpp-tools | 1:0.8.0-1 | http://mirror.invalid/debian unstable/main amd64 Packages\n" +
		" llama.cpp-tools | 1:0.7.0+dfsg-2 | http://mirror.invalid/debian unstable/main amd64 Packages\n" +
		"llama.cpp | 1:0.8.0-1 | http://mirror.invalid/debian unstable/main Sources\n"
	if got := madisonVersions([]byte(out), LlamaCppPackage); !reflect.DeepEqual(got, []string{"1:0.8.0-1", "1:0.7.0+dfsg-2"}) {
		t.Errorf("madisonVersions = %q", got)
	}
}

func TestPreparedOfOther(t *testing.T) {
	if _, ok := PreparedOf("/usr/bin/llama-server"); ok {
		t.Error("PreparedOf of a binary outside the cache: true")
	}
}

func TestServerVersionLine(t *testing.T) {
	out := "load_backend: loaded CPU backend from /x/libggml-cpu-zen4.so\nversion: 0.7.0 (build 11669, commit Debian)\nbuilt with GNU 15.2.0 for Linux x86_64\n"
	if got := serverVersionLine(out); got != "version: 0.7.0 (build 11669, commit Debian)" {
		t.Errorf("serverVersionLine = %q", got)
	}
}

// A Debian archive entry named by the suite's name rather than the release's codename is the
// archive too: a machine on Debian unstable (its sources say sid or unstable, its os-release a
// codename such as trixie) and one whose sources follow stable.
func TestDebianSourceSuiteName(t *testing.T) {
	for _, c := range []struct{ name, data, release string }{
		{"debian.sources", "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n", "trixie"},
		{"sources.list", "deb http://mirror.invalid/debian unstable main\n", "trixie"},
		{"sources.list", "deb http://mirror.invalid/debian stable main contrib\ndeb http://security.invalid/debian-security stable-security main\n", "bookworm"},
	} {
		e, err := ParseAptSources(c.name, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DebianSource(e, c.release, []string{c.name})
		if err != nil {
			t.Errorf("%s %q (release %s): %v", c.name, c.data, c.release, err)
			continue
		}
		if got.URI != "http://mirror.invalid/debian" || got.Suite != "unstable" || got.Line != 1 {
			t.Errorf("%s %q: got %+v, want the mirror's entry of line 1 as unstable", c.name, c.data, got)
		}
	}
	// An exact codename's entry is still preferred to a suite name's.
	e, _ := ParseAptSources("sources.list", []byte("deb http://other.invalid/debian stable main\ndeb http://mirror.invalid/debian bookworm main\n"))
	if got, err := DebianSource(e, "bookworm", nil); err != nil || got.URI != "http://mirror.invalid/debian" {
		t.Errorf("codename and suite name: got %+v, %v; want the codename's entry", got, err)
	}
}

// A stanza switched off with any of the words apt reads as false (StringToBool: no, false,
// without, off, disable, 0) is skipped, as apt-get skips it; yes keeps it.
func TestParseAptSourcesDisabledWords(t *testing.T) {
	for _, v := range []string{"no", "No", "false", "without", "off", "disable", "0"} {
		data := "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm\nComponents: main\nEnabled: " + v + "\n"
		e, err := ParseAptSources("d.sources", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if len(e) != 0 {
			t.Errorf("Enabled: %s: %d entries, want none (apt skips the stanza)", v, len(e))
		}
	}
	e, err := ParseAptSources("d.sources", []byte("Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm\nComponents: main\nEnabled: yes\n"))
	if err != nil || len(e) != 1 {
		t.Errorf("Enabled: yes: %d entries, %v; want 1", len(e), err)
	}
}
