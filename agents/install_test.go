package agents

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/localserver"
)

// fakeNPM puts an npm on PATH that records its arguments in calls and, unless fail, creates
// <prefix>/node_modules/.bin/<bin> and a 1000-byte file hard-linked twice.
func fakeNPM(t *testing.T, bin string, fail bool) (calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$@" >> ` + calls + `
[ -n "$FAIL" ] && { echo "npm error 404 not found" >&2; exit 1; }
prefix=$3
mkdir -p "$prefix/node_modules/.bin"
printf '#!/bin/sh\n' > "$prefix/node_modules/.bin/` + bin + `"
chmod +x "$prefix/node_modules/.bin/` + bin + `"
head -c 1000 /dev/zero > "$prefix/big"
ln "$prefix/big" "$prefix/big2"
`
	if fail {
		script = strings.Replace(script, "#!/bin/sh\n", "#!/bin/sh\nFAIL=1\n", 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

func TestInstallOnceThenReuse(t *testing.T) {
	a := Agent{Name: "fake", Package: "@x/fake", Version: "1.2.3", Bin: "fake"}
	calls := fakeNPM(t, "fake", false)
	cache := t.TempDir()
	in, err := Install(context.Background(), cache, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Reused || in.Dir != filepath.Join(cache, "agents", "fake-1.2.3") || !isExec(in.Bin) {
		t.Fatalf("first install: %+v", in)
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "install --prefix "+filepath.Join(cache, "agents", ".install-fake-")) || !strings.Contains(string(b), "@x/fake@1.2.3") || strings.Contains(string(b), "-g") {
		t.Fatalf("npm called as %q: want install --prefix <temporary folder beside the final one> @x/fake@1.2.3, never global", b)
	}
	if in.Bytes < 1000 || in.Bytes >= 2000 {
		t.Fatalf("Bytes %d: want the hard-linked 1000-byte file counted once", in.Bytes)
	}
	again, err := Install(context.Background(), cache, a, nil)
	if err != nil || !again.Reused || again.Dir != in.Dir {
		t.Fatalf("second install: %+v, %v; want the first one reused", again, err)
	}
	if b2, _ := os.ReadFile(calls); strings.Count(string(b2), "\n") != 1 {
		t.Fatalf("npm ran %d times, want once", strings.Count(string(b2), "\n"))
	}
}

func TestInstallFailureLeavesNothing(t *testing.T) {
	a := Agent{Name: "fake", Package: "fake", Version: "9.9.9", Bin: "fake"}
	fakeNPM(t, "fake", true)
	cache := t.TempDir()
	_, err := Install(context.Background(), cache, a, nil)
	if err == nil || !strings.Contains(err.Error(), "fake@9.9.9") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err %v: want one naming the package and npm's output", err)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "agents"))
	if len(entries) != 0 {
		t.Fatalf("left %v in the cache", entries)
	}
}

func TestInstallWithoutNPM(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Install(context.Background(), t.TempDir(), Agent{Name: "x", Package: "x", Version: "1.0.0", Bin: "x"}, nil)
	if !errors.Is(err, localserver.ErrNoNPM) {
		t.Fatalf("err %v: want ErrNoNPM", err)
	}
}
