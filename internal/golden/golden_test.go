package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		want, got string
		diff      string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{
			"one line changed",
			"1\n2\n3\n4\n5\n6\n7\n8\n",
			"1\n2\n3\n4\nfive\n6\n7\n8\n",
			"--- want\n+++ got\n@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n",
		},
		{
			"two hunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
			"x\n2\n3\n4\n5\n6\n7\n8\n9\ny\n",
			"--- want\n+++ got\n@@ -1,3 +1,3 @@\n-1\n+x\n 2\n 3\n@@ -8,3 +8,3 @@\n 8\n 9\n-10\n+y\n",
		},
		{
			"nearby changes share a hunk",
			"1\n2\n3\n4\n5\n6\n",
			"x\n2\n3\n4\n5\ny\n",
			"--- want\n+++ got\n@@ -1,6 +1,6 @@\n-1\n+x\n 2\n 3\n 4\n 5\n-6\n+y\n",
		},
		{"insert into empty", "", "a\n", "--- want\n+++ got\n@@ -1,0 +1,1 @@\n+a\n"},
		{"final line end", "a\n", "a", "--- want\n+++ got\n(the lines are equal; the files differ in their final line end)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Diff("want", "got", []byte(tc.want), []byte(tc.got)); got != tc.diff {
				t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tc.want, tc.got, got, tc.diff)
			}
		})
	}
}

func TestDiffCut(t *testing.T) {
	t.Parallel()
	var a, b strings.Builder
	for i := range 500 {
		a.WriteString("a" + string(rune('0'+i%10)) + "\n")
		b.WriteString("b" + string(rune('0'+i%10)) + "\n")
	}
	d := Diff("want", "got", []byte(a.String()), []byte(b.String()))
	if n := strings.Count(d, "\n"); n > maxDiffLines+5 {
		t.Errorf("Diff of 500 changed lines has %d lines; want at most about %d", n, maxDiffLines)
	}
	if !strings.HasSuffix(d, "... (diff cut)\n") {
		t.Errorf("Diff does not say it was cut:\n%s", d)
	}
}

// fakeTB records failures instead of failing the test.
type fakeTB struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = true
	f.msg = format
}
func (f *fakeTB) Logf(string, ...any) {}

func TestCheck(t *testing.T) {
	// Not parallel: it changes the working directory.
	t.Chdir(t.TempDir())
	if err := os.Mkdir("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "x.golden"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	ft := &fakeTB{TB: t}
	Check(ft, "x.golden", []byte("a\nc\n"))
	if !ft.failed {
		t.Fatalf("Check(mismatch) did not fail")
	}
	got, err := os.ReadFile(filepath.Join("testdata", "x.golden.got"))
	if err != nil || string(got) != "a\nc\n" {
		t.Errorf("x.golden.got = %q, %v; want %q", got, err, "a\nc\n")
	}

	ft = &fakeTB{TB: t}
	Check(ft, "x.golden", []byte("a\nb\n"))
	if ft.failed {
		t.Errorf("Check(match) failed")
	}
	if _, err := os.Stat(filepath.Join("testdata", "x.golden.got")); !os.IsNotExist(err) {
		t.Errorf("stale .got file not removed: %v", err)
	}

	ft = &fakeTB{TB: t}
	Check(ft, "missing.golden", []byte("new\n"))
	if !ft.failed {
		t.Errorf("Check(missing golden) did not fail")
	}

	*update = true
	defer func() { *update = false }()
	ft = &fakeTB{TB: t}
	Check(ft, "sub/new.golden", []byte("fresh\n"))
	if ft.failed {
		t.Errorf("Check with -update failed")
	}
	if got, err := os.ReadFile(filepath.Join("testdata", "sub", "new.golden")); err != nil || string(got) != "fresh\n" {
		t.Errorf("-update wrote %q, %v; want %q", got, err, "fresh\n")
	}
}
