package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/tools/txtar"

	lab "lab"
	"lab/hygiene"
)

// lines splits a text as hygiene.Lines does, a string or bytes alike, and numbers the lines
// from 1.
func TestLinesAsHygieneLines(t *testing.T) {
	for _, text := range []string{"", "\n", "\n\n", "a", "a\n", "a\n\n", "a\nb", "a\nb\n", "\na\n", "a\r\nb\r\n", "x\n\n\ny"} {
		want := hygiene.Lines(text)
		var got, gotBytes []string
		for n, l := range lines(text, strings.IndexByte) {
			if n != len(got)+1 {
				t.Errorf("lines(%q): line %q numbered %d; want %d", text, l, n, len(got)+1)
			}
			got = append(got, l)
		}
		for _, l := range lines([]byte(text), bytes.IndexByte) {
			gotBytes = append(gotBytes, string(l))
		}
		if !slices.Equal(got, want) || !slices.Equal(gotBytes, want) {
			t.Errorf("lines(%q) = %q (string), %q (bytes); want %q", text, got, gotBytes, want)
		}
	}
	// A loop that stops early stops the lines.
	n := 0
	for range lines("a\nb\nc", strings.IndexByte) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("lines went on after the loop stopped: %d lines", n)
	}
}

// A search of a content copies neither the content nor its lines: every matching line it
// answers (and remembers) is a part of the content's own data.
func TestContentGrepSharesItsData(t *testing.T) {
	c := intern([]byte("package a\n\nfunc A() {}\nfunc B() {}\n// tail"))
	re := regexp.MustCompile(`func [A-Z]|tail`)
	prefix, _ := re.LiteralPrefix()
	got := c.grep(re, prefix)
	if want := []grepLine{{3, "func A() {}"}, {4, "func B() {}"}, {5, "// tail"}}; !slices.Equal(got, want) {
		t.Fatalf("grep = %v; want %v", got, want)
	}
	start := uintptr(unsafe.Pointer(unsafe.StringData(c.data)))
	end := start + uintptr(len(c.data))
	for _, l := range got {
		p := uintptr(unsafe.Pointer(unsafe.StringData(l.text)))
		if p < start || p+uintptr(len(l.text)) > end {
			t.Errorf("line %d %q is a copy, not a part of the content", l.n, l.text)
		}
	}
}

// A grep of a file the workspace remembers allocates about its answer, not the file: no copy of
// the content, no slice of all its lines.
func TestGrepOfAKnownFileAllocatesItsAnswer(t *testing.T) {
	const size = 4 << 20
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString("line of a big file, nothing to find here\n")
	}
	b.WriteString("needle 0 needle 1 needle 2 needle 3 needle 4\n")
	w, err := NewWorkspace([]txtar.File{{Name: "big.txt", Data: []byte(b.String())}}, t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	w.Remember()
	if w.knownFor() == nil || w.knownFor().files["big.txt"] == nil {
		t.Fatal("the workspace does not remember big.txt")
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hygiene.NewSession(loop, hygiene.Spec())
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const calls = 5
	for i := range calls {
		// A pattern of its own each time: the content has not searched for it before.
		got := w.Run(hs, "grep", json.RawMessage(fmt.Sprintf(`{"pattern":"needle %d"}`, i)))
		if !strings.Contains(got, "big.txt:") || !strings.Contains(got, ": needle 0 needle 1") {
			t.Fatalf("grep needle %d = %.300q; want the last line", i, got)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > size/8 {
		t.Errorf("a grep of a %d-byte known file allocated %d bytes; want less than %d (no copy of the file)", size, per, size/8)
	}
}
