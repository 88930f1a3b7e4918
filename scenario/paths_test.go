package scenario_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/scenario"
)

// The workspace of the path checks: a.go and src/b.go (so src is a folder).
const pathsArchive = "-- a.go --\npackage a\n-- src/b.go --\npackage src\n"

// calls wraps scripted calls into a scenario: base's user step, one assistant step with the calls
// (line 9 on), and a final answer.
func calls(lines ...string) string {
	return base + "  - assistant:\n      calls:\n" + strings.Join(lines, "\n") + "\n  - assistant:\n      text: done\n"
}

// A scripted call naming a path the workspace does not hold at that point of the session is
// refused when the scenario loads, at the call's line, unless the call says expect_error;
// earlier scripted writes, patches and outside changes count.
func TestScenarioPathsMustExist(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		// want is the error after "file:"; "" means the scenario loads.
		want string
	}{
		{"read of no file", calls(`        - read: {path: foo.go}`), `9: read "foo.go": the workspace holds no such file`},
		{"read of a folder", calls(`        - read: {path: src}`), `9: read "src": a folder, not a file`},
		{"edit of no file", calls(`        - edit: {path: src/c.go, old_string: a, new_string: b}`), `9: edit "src/c.go": the workspace holds no such file`},
		{"multiedit of no file", calls(`        - multiedit: {path: x.go, edits: [{old_string: a, new_string: b}]}`), `9: multiedit "x.go": the workspace holds no such file`},
		{"grep of no folder", calls(`        - grep: {pattern: x, path: internal}`), `9: grep "internal": the workspace holds no such file or folder`},
		{"list of no folder", calls(`        - list: {path: docs}`), `9: list "docs": the workspace holds no such folder`},
		{"list of a file", calls(`        - list: {path: a.go}`), `9: list "a.go": a file, not a folder`},
		{"glob of no folder", calls(`        - glob: {pattern: "lib/**/*.go"}`), `9: glob "lib/**/*.go": folder "lib": the workspace holds no such folder`},
		{"glob in no folder", calls(`        - glob: {pattern: "*.go", path: lib}`), `9: glob "*.go" in "lib": folder "lib": the workspace holds no such folder`},
		{"write over a folder", calls(`        - write: {path: src, content: x}`), `9: write "src": the workspace holds a folder there`},
		{"write under a file", calls(`        - write: {path: a.go/x, content: x}`), `9: write "a.go/x": "a.go" is a file, not a folder`},
		{"patch updating no file", calls(`        - apply_patch: {patch: "*** Begin Patch\n*** Update File: nope.go\n@@\n-x\n+y\n*** End Patch"}`), `9: apply_patch: patch line 2: Update File "nope.go": the workspace holds no such file`},
		{"patch adding a file that exists", calls(`        - apply_patch: {patch: "*** Begin Patch\n*** Add File: a.go\n+x\n*** End Patch"}`), `9: apply_patch: patch line 2: Add File "a.go": the file exists`},
		{"patch deleting twice", calls(`        - apply_patch: {patch: "*** Begin Patch\n*** Delete File: a.go\n*** Delete File: a.go\n*** End Patch"}`), `9: apply_patch: patch line 3: Delete File "a.go": the workspace holds no such file`},
		{"bash cwd no folder", "commands:\n  - {command: ls, output: x}\n" + calls(`        - bash: {command: ls, cwd: web}`), `11: bash: cwd "web": the workspace holds no such folder`},
		{"read after a patch deleted it", calls(
			`        - apply_patch: {patch: "*** Begin Patch\n*** Delete File: a.go\n*** End Patch"}`,
			`        - read: {path: a.go}`), `10: read "a.go": the workspace holds no such file`},
		{"read of the old name after a move", calls(
			`        - apply_patch: {patch: "*** Begin Patch\n*** Update File: a.go\n*** Move to: lib/a.go\n@@\n-package a\n+package lib\n*** End Patch"}`,
			`        - read: {path: lib/a.go}`,
			`        - read: {path: a.go}`), `11: read "a.go": the workspace holds no such file`},
		{"read after an outside delete", base + "  - assistant:\n      text: ok\n  - outside: {path: a.go, delete: true}\n  - user: again\n  - assistant:\n      calls:\n        - read: {path: a.go}\n  - assistant:\n      text: done\n",
			`13: read "a.go": the workspace holds no such file`},
		{"outside delete of no file", base + "  - assistant:\n      text: ok\n  - outside: {path: gone.go, delete: true}\n", `9: outside: delete "gone.go": the workspace holds no such file`},

		// What loads: the paths exist at that point, or the call expects its error.
		{"existing paths", calls(`        - read: {path: ./src/b.go}`, `        - grep: {pattern: x, path: src}`, `        - grep: {pattern: x, path: a.go}`,
			`        - list: {}`, `        - glob: {pattern: "src/*.go"}`, `        - glob: {pattern: "{{root}}/src/*.go", path: nowhere}`, `        - read: {path: "{{root}}/a.go"}`), ""},
		{"expect_error", calls(`        - read: {path: foo.go}`, `          expect_error: true`, `        - expect_error: true`, `          edit: {path: nope, old_string: a, new_string: b}`), ""},
		{"created earlier", calls(
			`        - write: {path: docs/new.md, content: x}`,
			`        - read: {path: docs/new.md}`, `        - list: {path: docs}`,
			`        - apply_patch: {patch: "*** Begin Patch\n*** Add File: lib/c.go\n+x\n*** Update File: a.go\n*** Move to: lib/a.go\n@@\n-package a\n+package lib\n*** End Patch"}`,
			`        - edit: {path: lib/c.go, old_string: x, new_string: y}`, `        - read: {path: lib/a.go}`), ""},
		{"outside write creates", base + "  - assistant:\n      text: ok\n  - outside: {path: new/n.txt, content: x}\n  - user: again\n  - assistant:\n      calls:\n        - read: {path: new/n.txt}\n  - assistant:\n      text: done\n", ""},
		{"plan mode answers unavailable", "mode: plan\n" + calls(`        - edit: {path: nope.go, old_string: a, new_string: b}`), ""},
		// A folder stays when its last file is deleted or moved away (the tools remove files,
		// never folders): it can still be listed, globbed and searched, and is no place for a file.
		{"folder emptied by a patch", calls(
			`        - apply_patch: {patch: "*** Begin Patch\n*** Delete File: src/b.go\n*** End Patch"}`,
			`        - list: {path: src}`, `        - glob: {pattern: "src/*.go"}`, `        - grep: {pattern: x, path: src}`), ""},
		{"write over a folder emptied by a move", calls(
			`        - apply_patch: {patch: "*** Begin Patch\n*** Update File: src/b.go\n*** Move to: b.go\n@@\n-package src\n+package b\n*** End Patch"}`,
			`        - write: {path: src, content: x}`), `10: write "src": the workspace holds a folder there`},
		{"folder emptied outside", base + "  - assistant:\n      text: ok\n  - outside: {path: src/b.go, delete: true}\n  - user: again\n  - assistant:\n      calls:\n        - list: {path: src}\n  - assistant:\n      text: done\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadWithPathsArchive(t, tc.yaml)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("LoadScenario = %v; want it to load", err)
				}
				return
			}
			var se *scenario.SyntaxError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), p+":"+tc.want) {
				t.Fatalf("LoadScenario = %v; want a *SyntaxError %s:%s", err, p, tc.want)
			}
			if !strings.Contains(err.Error(), "expect_error: true") && !strings.Contains(tc.name, "outside") {
				t.Errorf("the error %q does not say how to mark an error on purpose", err)
			}
		})
	}
}

// A workspace archive naming a file twice, or a path as a file and as a folder, is refused at
// the archive's line.
func TestWorkspaceArchiveNamesEachFileOnce(t *testing.T) {
	for _, tc := range []struct{ archive, want string }{
		{"comment\n-- a.go --\nx\n-- b.go --\ny\n-- ./a.go --\nz\n", `w.txtar:6: file "./a.go" is named twice (first at line 2 as "a.go")`},
		{"-- src --\nx\n-- src/b.go --\ny\n", `w.txtar:1: file "src" is also the folder of "src/b.go" (line 3)`},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "s.yaml")
		os.WriteFile(p, []byte(base+"  - assistant:\n      text: hi\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "w.txtar"), []byte(tc.archive), 0o644)
		_, err := scenario.LoadScenario(p)
		var se *scenario.SyntaxError
		if want := filepath.Join(dir, tc.want); !errors.As(err, &se) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("archive %q: LoadScenario = %v; want %s", tc.archive, err, want)
		}
	}
}

// A path holding a NUL byte, which no file system can create, is refused when the scenario
// loads at its line: an outside change's path, a scripted call's path, the project's name (the
// sandbox's folder); not met at run time as an error writing the sandbox.
func TestPathWithNULIsRefusedAtLoad(t *testing.T) {
	for _, tc := range []struct{ name, yaml string }{
		{"outside change", base + "  - assistant:\n      text: ok\n  - outside: {path: \"n\\0.txt\", content: x}\n  - user: again\n  - assistant:\n      text: done\n"},
		{"write", calls(`        - write: {path: "n\0.txt", content: x}`)},
		{"project", strings.Replace(base, "project: p", `project: "p\0"`, 1) + "  - assistant:\n      text: done\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadWithPathsArchive(t, tc.yaml)
			var se *scenario.SyntaxError
			if !errors.As(err, &se) || se.Line == 0 || !strings.Contains(err.Error(), "NUL byte") {
				t.Fatalf("LoadScenario = %v; want a *SyntaxError at a line naming the NUL byte", err)
			}
		})
	}
}

// loadWithPathsArchive writes the scenario yaml to a file s.yaml beside w.txtar, which holds
// pathsArchive, and returns the file's path and scenario.LoadScenario's error.
func loadWithPathsArchive(t *testing.T, yaml string) (path string, err error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w.txtar"), []byte(pathsArchive), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = scenario.LoadScenario(p)
	return p, err
}
