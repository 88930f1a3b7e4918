//go:build unix

package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/hygiene"
)

// A folder of the workspace swapped again and again for a link to a folder outside, while the
// tools read, write, grep, glob and list through it, never lets a tool see or change anything
// outside: the path is checked and opened as one step, so there is no moment between the check
// and the open for the swap to win. Bounded by iterations: the swapper stops when the tools'
// loop ends (and after at most maxSwaps swaps).
func TestSandboxSurvivesASymlinkSwapRace(t *testing.T) {
	const rounds = 1500
	const maxSwaps = 1 << 20
	ws, hs := newWS(t, hygiene.Spec(), "d/f.txt", "INSIDE\n")
	outside := filepath.Join(filepath.Dir(ws.Root), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("OUTSIDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "outside-name.txt"), []byte("OUTSIDE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, link := filepath.Join(ws.Root, "d"), filepath.Join(ws.Root, "d.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	swap := swapFolder(d, link)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < maxSwaps; i++ {
			select {
			case <-stop:
				return
			default:
			}
			swap() // d becomes a link to outside, or the real folder again
		}
	}()

	var leaks []string
	insideReads := 0 // reads that found the project's own file: the tools still work meanwhile
	for i := 0; i < rounds && len(leaks) < 10; i++ {
		for _, c := range []struct{ tool, args string }{
			{"read", `{"path":"d/f.txt"}`},
			{"write", `{"path":"d/w.txt","content":"WRITTEN\n"}`},
			{"edit", `{"path":"d/f.txt","old_string":"OUTSIDE","new_string":"EDITED"}`},
			{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: d/p.txt\n+PATCHED\n*** End Patch"}`},
			{"apply_patch", `{"patch":"*** Begin Patch\n*** Delete File: d/p.txt\n*** End Patch"}`},
			{"grep", `{"pattern":"OUTSIDE"}`},
			{"grep", `{"pattern":"OUTSIDE","path":"d"}`},
			{"glob", `{"pattern":"**/outside-name.txt"}`},
			{"list", `{"path":"d"}`},
		} {
			got := ws.Run(hs, c.tool, []byte(c.args))
			if c.tool == "read" && strings.Contains(got, "INSIDE") {
				insideReads++
			}
			if strings.Contains(got, "OUTSIDE\n") || strings.Contains(got, ":1: OUTSIDE") || strings.Contains(got, "/outside-name.txt") {
				leaks = append(leaks, c.tool+" "+c.args+" = "+got)
			}
		}
	}
	close(stop)
	wg.Wait()
	if insideReads == 0 {
		t.Errorf("no read of d/f.txt found INSIDE in %d rounds: the tools stopped working", rounds)
	}
	for _, l := range leaks {
		t.Errorf("a tool showed a file outside the project: %s", l)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "f.txt outside-name.txt" {
		t.Errorf("files outside after the race: %v; want only f.txt outside-name.txt (a write landed outside)", names)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "OUTSIDE\n" {
		t.Errorf("the file outside was changed: %q", b)
	}
}

// Links to folders inside the project keep working once every open goes through the project
// folder: an absolute link naming the project's own path, and a relative one that climbs out of
// the project and back in by its name, are followed by read, write, grep and glob like any
// link inside; the files below are named through the link.
func TestLinksInsideTheProjectStillFollowed(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "pkg/a.go", "package needle\n")
	if err := os.Symlink(filepath.Join(ws.Root, "pkg"), filepath.Join(ws.Root, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", filepath.Base(ws.Root), "pkg"), filepath.Join(ws.Root, "around")); err != nil {
		t.Fatal(err)
	}
	// The same file through either link: the second read is a stub of the first (§2).
	if got := ws.Run(hs, "read", []byte(`{"path":"abs/a.go"}`)); !strings.Contains(got, "package needle") {
		t.Errorf("read abs/a.go = %q; want the file", got)
	}
	if got := ws.Run(hs, "read", []byte(`{"path":"around/a.go"}`)); !strings.Contains(got, "Unchanged since #0001") {
		t.Errorf("read around/a.go = %q; want a stub of #0001 (the same file)", got)
	}
	grep := ws.Run(hs, "grep", []byte(`{"pattern":"needle"}`))
	glob := ws.Run(hs, "glob", []byte(`{"pattern":"**/a.go"}`))
	for _, link := range []string{"abs", "around"} {
		if want := filepath.Join(ws.Root, link, "a.go") + ":1: package needle"; !strings.Contains(grep, want) {
			t.Errorf("grep = %q; want a line %q", grep, want)
		}
		if want := filepath.Join(ws.Root, link, "a.go"); !strings.Contains(glob, want) {
			t.Errorf("glob = %q; want %q", glob, want)
		}
		if got := ws.Run(hs, "write", []byte(`{"path":"`+link+`/new-`+link+`.txt","content":"x\n"}`)); strings.Contains(got, "Error") {
			t.Errorf("write %s/new-%s.txt = %q", link, link, got)
		}
		fileIs(t, ws, "pkg/new-"+link+".txt", "x\n")
	}
}
