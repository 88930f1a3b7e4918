package hygiene

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestResolvePath(t *testing.T) {
	const root, home = "/home/ann/app", "/home/ann"
	for _, tc := range []struct{ in, want string }{
		{"", "/home/ann/app"},
		{".", "/home/ann/app"},
		{"src/app.ts", "/home/ann/app/src/app.ts"},
		{"./src//app.ts", "/home/ann/app/src/app.ts"},
		{"src/../docs/a.md", "/home/ann/app/docs/a.md"},
		{"../other/x", "/home/ann/other/x"},
		{"../../../../etc/passwd", "/etc/passwd"},
		{"~", "/home/ann"},
		{"~/", "/home/ann"},
		{"~/.config/lembas/AGENTS.md", "/home/ann/.config/lembas/AGENTS.md"},
		{"~/app/x", "/home/ann/app/x"},
		{"~bob/x", "/home/ann/app/~bob/x"},
		{"~x", "/home/ann/app/~x"},
		{"/etc/hosts", "/etc/hosts"},
		{"/home/ann/app/src/", "/home/ann/app/src"},
		{"/home/ann/app/../app/a", "/home/ann/app/a"},
	} {
		if got := ResolvePath(tc.in, root, home); got != tc.want {
			t.Errorf("ResolvePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDisplayPath(t *testing.T) {
	for _, tc := range []struct{ abs, root, home, want string }{
		{"/home/ann/app/docs/AGENTS.md", "/home/ann/app", "/home/ann", "docs/AGENTS.md"},
		{"/home/ann/app", "/home/ann/app", "/home/ann", "."},
		{"/home/ann/.config/lembas/AGENTS.md", "/home/ann/app", "/home/ann", "~/.config/lembas/AGENTS.md"},
		{"/home/ann", "/home/ann/app", "/home/ann", "~"},
		{"/home/ann/app2/x", "/home/ann/app", "/home/ann", "~/app2/x"},
		{"/home/annie/x", "/home/ann/app", "/home/ann", "/home/annie/x"},
		{"/etc/lembas/AGENTS.md", "/home/ann/app", "/home/ann", "/etc/lembas/AGENTS.md"},
		// The project is the home directory, or lies above it: the project wins.
		{"/home/ann/.config/x", "/home/ann", "/home/ann", ".config/x"},
		{"/home/ann/.config/x", "/home", "/home/ann", "ann/.config/x"},
		{"/etc/x", "/", "/home/ann", "etc/x"},
		// A project directory literally named "~" stays a project path.
		{"/home/ann/app/~/x", "/home/ann/app", "/home/ann", "./~/x"},
		{"/home/ann/app/~", "/home/ann/app", "/home/ann", "./~"},
		{"/home/ann/app/~x", "/home/ann/app", "/home/ann", "~x"},
		// Uncleaned input.
		{"/home/ann/app/./a/../b//c/", "/home/ann/app/", "/home/ann/", "b/c"},
		{"/home/ann/x", "/srv/app", "", "/home/ann/x"},
	} {
		if got := DisplayPath(tc.abs, tc.root, tc.home); got != tc.want {
			t.Errorf("DisplayPath(%q, root %q, home %q) = %q, want %q", tc.abs, tc.root, tc.home, got, tc.want)
		}
	}
}

func TestEnvironment(t *testing.T) {
	c := testConfig(t)
	for _, tc := range []struct{ root, start, want string }{
		{"/home/ann/app", "/home/ann/app", "Project: app (paths are relative to its root)"},
		{"/home/ann/app/", "/home/ann/app/packages/web", "Project: app (paths are relative to its root)\nStarted in: packages/web (relative to the project root)"},
		{"/srv/mono", "/srv/mono/a/b/c", "Project: mono (paths are relative to its root)\nStarted in: a/b/c (relative to the project root)"},
	} {
		got, err := c.Environment(tc.root, tc.start)
		if err != nil || got != tc.want {
			t.Errorf("Environment(%q, %q) = %q, %v; want %q", tc.root, tc.start, got, err, tc.want)
		}
	}
	if _, err := c.Environment("/home/ann/app", "/home/ann/app2"); err == nil || !strings.Contains(err.Error(), "/home/ann/app2 is outside the project root /home/ann/app") {
		t.Errorf("Environment(start outside) error = %v", err)
	}
	if _, err := c.Environment("/", "/x"); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("Environment(root /) error = %v", err)
	}
}

// FuzzPaths: ResolvePath gives an absolute clean path for any input, and DisplayPath never
// names an absolute path inside the project or home, and ResolvePath takes it back.
func FuzzPaths(f *testing.F) {
	for _, s := range []string{"", ".", "~", "~/", "~/x", "~x", "../x", "/etc/x", "a/../../b", "./~/x", "~/../..", "//a//b/", "a\x00b"} {
		f.Add(s)
	}
	const root, home = "/home/ann/app", "/home/ann"
	f.Fuzz(func(t *testing.T, p string) {
		abs := ResolvePath(p, root, home)
		if !filepath.IsAbs(abs) || filepath.Clean(abs) != abs {
			t.Fatalf("ResolvePath(%q) = %q: not absolute and clean", p, abs)
		}
		d := DisplayPath(abs, root, home)
		if strings.HasPrefix(abs, home+"/") && filepath.IsAbs(d) {
			t.Fatalf("DisplayPath(%q) = %q: absolute under home", abs, d)
		}
		if back := ResolvePath(d, root, home); back != abs {
			t.Fatalf("ResolvePath(DisplayPath(%q) = %q) = %q", abs, d, back)
		}
	})
}
