//go:build unix

package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/hygiene"
)

// A named pipe in the workspace never hangs a tool: read, edit, write and grep of it answer an
// error naming it, and list, glob and grep of its folder leave it out. Each call is bounded by a
// deadline that fails the test instead of hanging it.
func TestNamedPipeNeverHangsATool(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "needle\n", "sub/b.txt", "needle too\n")
	fifo := filepath.Join(ws.Root, "sub", "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	run := func(tool, args string) string {
		t.Helper()
		done := make(chan string, 1)
		go func() { done <- ws.Run(hs, tool, []byte(args)) }()
		select {
		case got := <-done:
			return got
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %s still runs after 5s: it waits on the named pipe", tool, args)
			return ""
		}
	}
	for _, tc := range []struct{ tool, args string }{
		{"read", `{"path":"sub/pipe"}`},
		{"edit", `{"path":"sub/pipe","old_string":"a","new_string":"b"}`},
		{"multiedit", `{"path":"sub/pipe","edits":[{"old_string":"a","new_string":"b"}]}`},
		{"write", `{"path":"sub/pipe","content":"x"}`},
		{"grep", `{"pattern":"x","path":"sub/pipe"}`},
		{"list", `{"path":"sub/pipe"}`},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Update File: sub/pipe\n@@\n-a\n+b\n*** End Patch"}`},
	} {
		got := run(tc.tool, tc.args)
		if !strings.Contains(got, "Error: ") || !strings.Contains(got, fifo) || !strings.Contains(got, "a named pipe") {
			t.Errorf("%s %s = %q; want an error naming %s as a named pipe", tc.tool, tc.args, got, fifo)
		}
	}
	if got := run("grep", `{"pattern":"needle"}`); !strings.Contains(got, filepath.Join(ws.Root, "sub", "b.txt")+":1: needle too") || strings.Contains(got, "Error") {
		t.Errorf("grep of the project = %q; want the matches, the pipe left out", got)
	}
	if got := run("glob", `{"pattern":"**/*"}`); strings.Contains(got, "pipe") || !strings.Contains(got, "b.txt") {
		t.Errorf("glob = %q; want the files, the pipe left out", got)
	}
	if got := run("list", `{}`); strings.Contains(got, "pipe") || !strings.Contains(got, "b.txt") {
		t.Errorf("list = %q; want the files, the pipe left out", got)
	}
	// A link to the pipe is no way round.
	if err := os.Symlink("sub/pipe", filepath.Join(ws.Root, "pipe-link")); err != nil {
		t.Fatal(err)
	}
	if got := run("read", `{"path":"pipe-link"}`); !strings.Contains(got, "a named pipe") {
		t.Errorf("read through a link to the pipe = %q; want an error", got)
	}
	if got := run("grep", `{"pattern":"needle"}`); strings.Contains(got, "Error") {
		t.Errorf("grep with a link to the pipe = %q; want the matches", got)
	}
}

// grep and glob follow a link to a folder inside the project, naming the files through the
// link, and never loop on a link back up; grep of the whole project answers its matches instead
// of failing with "is a directory".
func TestGrepAndGlobFollowLinksInsideTheProject(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "pkg/real/x.go", "package real // needle\n", "a.go", "package a\n")
	if err := os.Symlink("real", filepath.Join(ws.Root, "pkg", "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(ws.Root, "pkg", "real", "up")); err != nil { // a cycle
		t.Fatal(err)
	}
	alias, real := filepath.Join(ws.Root, "pkg", "alias", "x.go"), filepath.Join(ws.Root, "pkg", "real", "x.go")
	got := ws.Run(hs, "grep", []byte(`{"pattern":"needle"}`))
	if strings.Contains(got, "Error") || !strings.Contains(got, alias+":1: ") || !strings.Contains(got, real+":1: ") {
		t.Errorf("grep of the project = %q; want the match through the link and in the folder", got)
	}
	if got := ws.Run(hs, "grep", []byte(`{"pattern":"needle","path":"pkg/alias"}`)); !strings.Contains(got, real+":1: ") {
		t.Errorf("grep of the link = %q; want the match (the path resolved)", got)
	}
	got = ws.Run(hs, "glob", []byte(`{"pattern":"pkg/*/x.go"}`))
	if want := alias + "\n" + real; !strings.HasSuffix(got, "]\n"+want) {
		t.Errorf("glob pkg/*/x.go = %q; want\n%s", got, want)
	}
	got = ws.Run(hs, "glob", []byte(`{"pattern":"**/*.go"}`))
	if n := strings.Count(got, "\n"); n != 3 || !strings.Contains(got, alias) {
		t.Errorf("glob **/*.go = %q; want a.go, x.go through the link and x.go (no loop through up)", got)
	}
}
