//go:build unix

package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	lab "lab"
	"lab/hygiene"
	"lab/tools"
)

// A relative link's ".." climbs from the folder the link really is in, as the kernel reads it,
// also when the project's own path goes through a link (a temporary folder that is a link, as
// /tmp is on macOS): the tools follow the links the kernel follows, to the files the kernel
// finds, and nothing else.
func TestRelativeLinksClimbFromTheRealFolder(t *testing.T) {
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, "deep", "R"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "deep", "R"), filepath.Join(tmp, "L")); err != nil {
		t.Fatal(err)
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hygiene.NewSession(loop, hygiene.Spec())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace([]txtar.File{{Name: "pkg/a.go", Data: []byte("package needle\n")}}, filepath.Join(tmp, "L"), "p")
	if err != nil {
		t.Fatal(err)
	}
	// From the real folder tmp/deep/R/p, three ".." reach tmp: "up" leads to pkg. Read by the
	// project's path tmp/L/p, two ".." would reach tmp too: "wrong" leads, for the kernel, to
	// tmp/deep/deep/R/p/pkg, which does not exist.
	if err := os.Symlink("../../../deep/R/p/pkg", filepath.Join(ws.Root, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../deep/R/p/pkg", filepath.Join(ws.Root, "wrong")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(ws.Root, "up", "a.go")); err != nil {
		t.Fatalf("the kernel does not find up/a.go: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(ws.Root, "wrong", "a.go")); err == nil {
		t.Fatal("the kernel finds wrong/a.go")
	}
	if got := ws.Run(hs, "read", []byte(`{"path":"up/a.go"}`)); !strings.Contains(got, "package needle") {
		t.Errorf("read up/a.go = %q; want the file, as the kernel finds it", got)
	}
	if got := ws.Run(hs, "read", []byte(`{"path":"wrong/a.go"}`)); strings.Contains(got, "package needle") {
		t.Errorf("read wrong/a.go = %q; want no file, as the kernel finds none", got)
	}
}
