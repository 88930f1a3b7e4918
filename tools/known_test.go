package tools_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/hygiene"
)

// rememberCalls are tool calls that read, list, search, write, edit, patch and delete, each
// seeing what the ones before left, with errors among them (missing files, folders read, text
// not found, a patch that fails whole).
var rememberCalls = []struct{ tool, args string }{
	{"list", `{}`},
	{"glob", `{"pattern":"**/*.go"}`},
	{"grep", `{"pattern":"func [A-Z]"}`},
	{"grep", `{"pattern":"package","path":"cmd"}`},
	{"grep", `{"pattern":"x","path":"nothing"}`},
	{"read", `{"path":"a.go"}`},
	{"read", `{"path":"cmd"}`},
	{"read", `{"path":"missing.go"}`},
	{"read", `{"path":"a.go/x"}`},
	{"edit", `{"path":"a.go","old_string":"func A()","new_string":"func A2()"}`},
	{"edit", `{"path":"a.go","old_string":"no such text","new_string":"x"}`},
	{"grep", `{"pattern":"func [A-Z]"}`},
	{"write", `{"path":"cmd/sub/new.go","content":"package sub\n\nfunc New() {}\n"}`},
	{"write", `{"path":"cmd","content":"x"}`},
	{"list", `{"path":"cmd"}`},
	{"glob", `{"pattern":"cmd/**"}`},
	{"multiedit", `{"path":"cmd/b.go","edits":[{"old_string":"package main","new_string":"package main // b"},{"old_string":"func B()","new_string":"func B2()"}]}`},
	{"apply_patch", `{"patch":"*** Begin Patch\n*** Delete File: docs/x.md\n*** Add File: docs/y.md\n+# y\n*** End Patch"}`},
	{"apply_patch", `{"patch":"*** Begin Patch\n*** Delete File: no/such.md\n*** End Patch"}`},
	{"list", `{}`},
	{"grep", `{"pattern":"#"}`},
	{"glob", `{"pattern":"docs/*"}`},
	{"read", `{"path":"docs/x.md"}`},
	{"read", `{"path":"cmd/b.go"}`},
	{"grep", `{"pattern":"B2|New","path":"cmd/sub/new.go"}`},
	{"apply_patch", `{"patch":"*** Begin Patch\n*** Delete File: cmd/sub/c.go\n*** Delete File: cmd/sub/new.go\n*** End Patch"}`},
	{"list", `{}`},
	{"glob", `{"pattern":"**"}`},
	{"grep", `{"pattern":"package","path":"cmd/sub"}`},
}

// TestRememberAnswersAsTheFolder runs the same calls in two workspaces made from the same files,
// one remembering what it wrote (Workspace.Remember), one reading its folder each time: every
// answer is the same, byte for byte (with the root's path replaced), and so are the folders
// after.
func TestRememberAnswersAsTheFolder(t *testing.T) {
	files := []string{"a.go", "package a\n\nfunc A() {}\n", "cmd/b.go", "package main\n\nfunc B() {}\n",
		"cmd/sub/c.go", "package sub\n", "docs/x.md", "# x\n", "README.md", "# p\n"}
	plain, hsPlain := newWS(t, hygiene.Spec(), files...)
	remembering, hsRem := newWS(t, hygiene.Spec(), files...)
	remembering.Remember()
	for _, c := range rememberCalls {
		want := strings.ReplaceAll(plain.Run(hsPlain, c.tool, json.RawMessage(c.args)), plain.Root, "ROOT")
		got := strings.ReplaceAll(remembering.Run(hsRem, c.tool, json.RawMessage(c.args)), remembering.Root, "ROOT")
		if got != want {
			t.Errorf("%s %s remembering:\n%s\nreading the folder:\n%s", c.tool, c.args, got, want)
		}
	}
	if got, want := tree(t, remembering.Root), tree(t, plain.Root); got != want {
		t.Errorf("folder remembering:\n%s\nreading the folder:\n%s", got, want)
	}
	// The calls above were answered from memory to the end (none made it forget): a change
	// behind its back, which nothing in a session makes, is not seen.
	if err := os.WriteFile(filepath.Join(remembering.Root, "a.go"), []byte("package behind\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := remembering.Run(hsRem, "grep", json.RawMessage(`{"pattern":"package behind"}`)); !strings.Contains(got, "No matches.") {
		t.Errorf("the remembering workspace read its folder again: %s", got)
	}
}

// TestRememberForgetsForAShell checks that a workspace that made a shell reads its folder again:
// a command may have changed anything.
func TestRememberForgetsForAShell(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.go", "package a\n")
	ws.Remember()
	if _, err := ws.ShellHome(); err != nil {
		t.Fatal(err)
	}
	// What a command would do.
	if err := os.WriteFile(filepath.Join(ws.Root, "a.go"), []byte("package changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ws.Run(hs, "grep", json.RawMessage(`{"pattern":"changed"}`)); !strings.Contains(got, "a.go:1: package changed") {
		t.Errorf("grep after a shell's change: %s", got)
	}
}

// tree lists the files below root with their contents, and the folders, one per line.
func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			b.WriteString(rel + "/\n")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.WriteString(rel + ": " + string(data) + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
