// Package golden compares test output with golden files under testdata/.
//
//  1. A test renders its output to bytes and calls [Check] with a file name, by convention
//     <TestName>.golden or <TestName>.golden.<ext> (for example TestCachedShare.golden.svg).
//  2. Check compares the bytes with testdata/<name>. On a mismatch it fails the test with a
//     short unified diff and writes what it got to testdata/<name>.got (gitignored), for a
//     closer look or an image viewer.
//  3. `go test ./... -update` rewrites the golden files instead; review them with git diff.
//
// The package is for tests only: it registers the -update flag on the command line of every
// test binary that imports it.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is the -update flag. It is registered once, when the test binary initialises this
// package.
var update = flag.Bool("update", false, "rewrite golden files under testdata/ with the output the tests got")

// maxDiffLines caps the diff printed on a mismatch.
const maxDiffLines = 60

// Check compares got with the golden file testdata/<name>, relative to the test's package
// directory. With -update it writes got to the file instead (creating testdata/ if needed) and
// passes. On a mismatch, or when the golden file is missing, it reports the test as failed
// (t.Errorf, the test goes on) with a short diff, and writes got to testdata/<name>.got; on a
// match it removes a stale .got file. name must be a relative path inside testdata/.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	if name == "" || filepath.IsAbs(name) || !filepath.IsLocal(name) {
		t.Fatalf("golden.Check: name %q must be a relative path inside testdata/", name)
	}
	path := filepath.Join("testdata", name)
	gotPath := path + ".got"
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		_ = os.Remove(gotPath)
		t.Logf("golden: wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeGot(t, gotPath, got)
		t.Errorf("golden file %s does not exist; run go test -update to create it (output written to %s)", path, gotPath)
		return
	case err != nil:
		t.Fatalf("golden: %v", err)
	}
	if bytes.Equal(want, got) {
		if err := os.Remove(gotPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Logf("golden: remove stale %s: %v", gotPath, err)
		}
		return
	}
	writeGot(t, gotPath, got)
	t.Errorf("output differs from %s (got written to %s; rerun with -update to accept):\n%s",
		path, gotPath, Diff(path, gotPath, want, got))
}

func writeGot(t testing.TB, path string, got []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Logf("golden: %v", err)
		return
	}
	if err := os.WriteFile(path, got, 0o644); err != nil {
		t.Logf("golden: %v", err)
	}
}

// Diff returns a unified diff of want and got, line by line, with two lines of context, cut after
// about 60 lines. It returns "" when they are equal. oldName and newName label the two sides.
func Diff(oldName, newName string, want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	ops := diffLines(a, b)

	const context = 2
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	lines := 0
	changed := false
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		changed = true
		// A hunk runs from context lines before its first change to context lines after its
		// last, where changes less than 2*context equal lines apart share a hunk.
		start := max(i-context, 0)
		last := i
		for j := i + 1; j < len(ops) && j-last-1 <= 2*context; j++ {
			if ops[j].kind != ' ' {
				last = j
			}
		}
		end := min(last+context+1, len(ops))
		var an, bn int
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				an++
			}
			if op.kind != '-' {
				bn++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ops[start].a+1, an, ops[start].b+1, bn)
		for _, op := range ops[start:end] {
			if lines >= maxDiffLines {
				out.WriteString("... (diff cut)\n")
				return out.String()
			}
			text := op.text
			if len(text) > 200 {
				text = text[:200] + "…"
			}
			fmt.Fprintf(&out, "%c%s\n", op.kind, text)
			lines++
		}
		i = end
	}
	if !changed {
		out.WriteString("(the lines are equal; the files differ in their final line end)\n")
	}
	return out.String()
}

// splitLines splits data into lines without their line ends; a final line end adds no line.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// op is one line of an edit script: ' ' kept, '-' only in a, '+' only in b; a and b are the
// 0-based line numbers where the op stands in each input.
type op struct {
	kind rune
	text string
	a, b int
}

// diffLines returns an edit script turning a into b: the common prefix and suffix are kept, and
// the middle is aligned by a longest common subsequence when it is small enough (else replaced
// whole).
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := range pre {
		ops = append(ops, op{' ', a[i], i, i})
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(am)*len(bm) <= 4_000_000 {
		// lcs[i][j] = length of the LCS of am[i:] and bm[j:].
		lcs := make([][]int32, len(am)+1)
		for i := range lcs {
			lcs[i] = make([]int32, len(bm)+1)
		}
		for i := len(am) - 1; i >= 0; i-- {
			for j := len(bm) - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(am) || j < len(bm) {
			switch {
			case i < len(am) && j < len(bm) && am[i] == bm[j]:
				ops = append(ops, op{' ', am[i], pre + i, pre + j})
				i++
				j++
			case i < len(am) && (j == len(bm) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', am[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, op{'+', bm[j], pre + i, pre + j})
				j++
			}
		}
	} else {
		for i, s := range am {
			ops = append(ops, op{'-', s, pre + i, pre})
		}
		for j, s := range bm {
			ops = append(ops, op{'+', s, pre + len(am), pre + j})
		}
	}
	for k := range suf {
		ops = append(ops, op{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}
