package tools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	lab "lab"
	"lab/hygiene"
	"lab/tools"
)

// newWS makes a sandbox "p" with files (name, content pairs) and a session with measures m.
func newWS(t *testing.T, m hygiene.Measures, files ...string) (*tools.Workspace, *hygiene.Session) {
	t.Helper()
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hygiene.NewSession(loop, m)
	if err != nil {
		t.Fatal(err)
	}
	var tf []txtar.File
	for i := 0; i+1 < len(files); i += 2 {
		tf = append(tf, txtar.File{Name: files[i], Data: []byte(files[i+1])})
	}
	ws, err := tools.NewWorkspace(tf, t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	return ws, hs
}

func fileIs(t *testing.T, ws *tools.Workspace, name, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(ws.Root, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if string(got) != want {
		t.Errorf("%s = %q, want %q", name, got, want)
	}
}

func noFile(t *testing.T, ws *tools.Workspace, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(ws.Root, name)); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v), want none", name, err)
	}
}

func TestResolveRelativeHomeAbsolute(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n")
	if ws.Home != filepath.Dir(ws.Root) {
		t.Fatalf("Home = %q, want the sandbox's parent %q", ws.Home, filepath.Dir(ws.Root))
	}
	for _, tc := range []struct{ args, want string }{
		{`{"path":"./a.txt"}`, "[#0001 ./a.txt lines 1-1 of 1 sha 73cb3858]\n1: x"},
		{`{"path":"~/p/a.txt"}`, "[#0002 ~/p/a.txt lines 1-1 of 1 sha 73cb3858] Unchanged since #0001, which already shows lines 1-1."},
		{`{"path":"` + ws.Root + `/a.txt"}`, "[#0003 " + ws.Root + "/a.txt lines 1-1 of 1 sha 73cb3858] Unchanged since #0001, which already shows lines 1-1."},
		{`{"path":"~/a.txt"}`, "[#0004]\nError: " + ws.Home + "/a.txt is outside the project"},
		{`{"path":"../../etc/passwd"}`, "[#0005]\nError: " + filepath.Dir(ws.Home) + "/etc/passwd is outside the project"},
	} {
		if got := ws.Run(hs, "read", []byte(tc.args)); got != tc.want {
			t.Errorf("read %s =\n%q\nwant\n%q", tc.args, got, tc.want)
		}
	}
}

func TestWrite(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "one\n2\nthree\n")
	if got, want := ws.Run(hs, "write", []byte(`{"path":"docs/new.md","content":"a\nb\n"}`)), "[#0001 docs/new.md sha 911169dd] Created, 2 lines."; got != want {
		t.Errorf("write new = %q, want %q", got, want)
	}
	fileIs(t, ws, "docs/new.md", "a\nb\n")
	want := "[#0002 a.txt sha b2ef07f1]\n@@ -1,3 +1,3 @@\n one\n-2\n+TWO\n three"
	if got := ws.Run(hs, "write", []byte(`{"path":"a.txt","content":"one\nTWO\nthree\n"}`)); got != want {
		t.Errorf("write existing =\n%q\nwant\n%q", got, want)
	}
	fileIs(t, ws, "a.txt", "one\nTWO\nthree\n")
	if got, want := ws.Run(hs, "write", []byte(`{"path":"docs","content":"x"}`)), "[#0003]\nError: write "+ws.Root+"/docs: is a directory"; got != want {
		t.Errorf("write onto a folder = %q, want %q", got, want)
	}
	if got, want := ws.Run(hs, "write", []byte(`{"path":"b.txt"}`)), "[#0004]\nError: write: content is required"; got != want {
		t.Errorf("write without content = %q, want %q", got, want)
	}
	noFile(t, ws, "b.txt")
	// Measures off: the plain confirmation.
	ws, hs = newWS(t, hygiene.Measures{}, "a.txt", "x\n")
	if got, want := ws.Run(hs, "write", []byte(`{"path":"a.txt","content":"y\n"}`)), "Edited a.txt."; got != want {
		t.Errorf("write, measures off = %q, want %q", got, want)
	}
}

func TestMultiedit(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "a\nb\nc\n")
	args := `{"path":"a.txt","edits":[{"old_string":"a\n","new_string":"A\n"},{"old_string":"A\nb\nc","new_string":"A\nb\nC"}]}`
	want := "[#0001 a.txt sha 627ab6a6]\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n-c\n+C"
	if got := ws.Run(hs, "multiedit", []byte(args)); got != want {
		t.Errorf("multiedit =\n%q\nwant\n%q", got, want)
	}
	fileIs(t, ws, "a.txt", "A\nb\nC\n")
	// All or nothing: the second edit fails, the first is not written.
	args = `{"path":"a.txt","edits":[{"old_string":"C","new_string":"c"},{"old_string":"zzz","new_string":"y"}]}`
	if got, want := ws.Run(hs, "multiedit", []byte(args)), "[#0002]\nError: multiedit "+ws.Root+"/a.txt: edit 2: old_string not found; the file is unchanged"; got != want {
		t.Errorf("multiedit failing = %q, want %q", got, want)
	}
	fileIs(t, ws, "a.txt", "A\nb\nC\n")
	// Each old_string must occur once in the content as the earlier edits left it.
	args = `{"path":"a.txt","edits":[{"old_string":"C","new_string":"b"},{"old_string":"b","new_string":"x"}]}`
	if got, want := ws.Run(hs, "multiedit", []byte(args)), "[#0003]\nError: multiedit "+ws.Root+"/a.txt: edit 2: old_string occurs 2 times; give more context so it occurs once; the file is unchanged"; got != want {
		t.Errorf("multiedit ambiguous = %q, want %q", got, want)
	}
	if got, want := ws.Run(hs, "multiedit", []byte(`{"path":"a.txt","edits":[]}`)), "[#0004]\nError: multiedit "+ws.Root+"/a.txt: no edits"; got != want {
		t.Errorf("multiedit empty = %q, want %q", got, want)
	}
	fileIs(t, ws, "a.txt", "A\nb\nC\n")
}

func TestApplyPatchSeveralFiles(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "src/a.txt", "one\n2\nthree\n", "old.md", "bye\n")
	patch := "*** Begin Patch\n*** Update File: src/a.txt\n@@\n one\n-2\n+TWO\n three\n*** Add File: docs/new.md\n+a\n+b\n*** Delete File: old.md\n*** End Patch"
	args, _ := jsonString("patch", patch)
	want := "[#0001]\n[src/a.txt sha b2ef07f1]\n@@ -1,3 +1,3 @@\n one\n-2\n+TWO\n three\n[docs/new.md sha 911169dd] Created, 2 lines.\n[old.md deleted]"
	if got := ws.Run(hs, "apply_patch", args); got != want {
		t.Errorf("apply_patch =\n%q\nwant\n%q", got, want)
	}
	fileIs(t, ws, "src/a.txt", "one\nTWO\nthree\n")
	fileIs(t, ws, "docs/new.md", "a\nb\n")
	noFile(t, ws, "old.md")
}

func TestApplyPatchOneFileAndMove(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n", "b.txt", "keep\n")
	args, _ := jsonString("patch", "*** Begin Patch\n*** Add File: n.txt\n+hello\n*** End Patch")
	if got, want := ws.Run(hs, "apply_patch", args), "[#0001 n.txt sha 5891b5b5] Created, 1 lines."; got != want {
		t.Errorf("apply_patch add = %q, want %q", got, want)
	}
	args, _ = jsonString("patch", "*** Begin Patch\n*** Update File: a.txt\n*** Move to: sub/c.txt\n@@\n-x\n+B\n*** End Patch")
	if got, want := ws.Run(hs, "apply_patch", args), "[#0002 a.txt → sub/c.txt sha c0cde77f]\n@@ -1 +1 @@\n-x\n+B"; got != want {
		t.Errorf("apply_patch move = %q, want %q", got, want)
	}
	noFile(t, ws, "a.txt")
	fileIs(t, ws, "sub/c.txt", "B\n")
	// A move onto an existing file is refused.
	args, _ = jsonString("patch", "*** Begin Patch\n*** Update File: sub/c.txt\n*** Move to: b.txt\n*** End Patch")
	if got, want := ws.Run(hs, "apply_patch", args), "[#0003]\nError: apply_patch: Move to "+ws.Root+"/b.txt: the file exists; no file was changed"; got != want {
		t.Errorf("apply_patch move onto a file = %q, want %q", got, want)
	}
}

func TestApplyPatchAllOrNothing(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n", "b.txt", "y\n")
	for _, tc := range []struct{ patch, err string }{
		{"*** Begin Patch\n*** Update File: a.txt\n-x\n+X\n*** Update File: b.txt\n-nope\n+Y\n*** End Patch",
			"Error: apply_patch: Update File " + ws.Root + "/b.txt: hunk 1: lines not found (from \"nope\"); no file was changed"},
		{"*** Begin Patch\n*** Delete File: a.txt\n*** Add File: b.txt\n+z\n*** End Patch",
			"Error: apply_patch: Add File " + ws.Root + "/b.txt: the file exists (Update File changes it); no file was changed"},
		{"*** Begin Patch\n*** Delete File: a.txt\n*** Delete File: a.txt\n*** End Patch",
			"Error: apply_patch: Delete File " + ws.Root + "/a.txt: no such file; no file was changed"},
		{"*** Begin Patch\n*** Add File: ../out.txt\n+z\n*** End Patch",
			"Error: apply_patch: " + filepath.Dir(ws.Root) + "/out.txt is outside the project; no file was changed"},
		{"*** Begin Patch\n*** Add File: c.txt\n+z\n", "Error: apply_patch: patch line 3: the last line must be \"*** End Patch\"; no file was changed"},
	} {
		args, _ := jsonString("patch", tc.patch)
		got := ws.Run(hs, "apply_patch", args)
		if _, rest, _ := strings.Cut(got, "\n"); rest != tc.err {
			t.Errorf("apply_patch %q =\n%q\nwant the error\n%q", tc.patch, got, tc.err)
		}
		fileIs(t, ws, "a.txt", "x\n")
		fileIs(t, ws, "b.txt", "y\n")
		noFile(t, ws, "c.txt")
	}
	// Later operations see what earlier ones did: add then update the same file.
	args, _ := jsonString("patch", "*** Begin Patch\n*** Add File: c.txt\n+a\n*** Update File: c.txt\n-a\n+B\n*** End Patch")
	if got, want := ws.Run(hs, "apply_patch", args), "[#0006]\n[c.txt sha 87428fc5] Created, 1 lines.\n[c.txt sha c0cde77f]\n@@ -1 +1 @@\n-a\n+B"; got != want {
		t.Errorf("apply_patch add+update =\n%q\nwant\n%q", got, want)
	}
	fileIs(t, ws, "c.txt", "B\n")
}

func TestRecallTool(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\ny\n")
	ws.Run(hs, "read", []byte(`{"path":"a.txt"}`))
	if got, want := ws.Run(hs, "recall", []byte(`{"id":"0001","offset":2}`)), "[#0002 recall #0001 lines 2-2 of 2]\n2: y"; got != want {
		t.Errorf("recall = %q, want %q", got, want)
	}
	if got, want := ws.Run(hs, "recall", []byte(`{}`)), "[#0003]\nError: recall: id is required"; got != want {
		t.Errorf("recall without id = %q, want %q", got, want)
	}
	m := hygiene.Spec()
	m.Recall = false
	ws, hs = newWS(t, m, "a.txt", "x\n")
	if got, want := ws.Run(hs, "recall", []byte(`{"id":"#0001"}`)), "[#0001]\nError: unknown tool \"recall\""; got != want {
		t.Errorf("recall with the measure off = %q, want %q", got, want)
	}
}

func TestListAndGrepDedupe(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.txt", "x\n")
	ws.Run(hs, "list", []byte(`{"path":"."}`))
	if got, want := ws.Run(hs, "list", []byte(`{ "path" : "." }`)), "[#0002] Same result as #0001."; got != want {
		t.Errorf("list twice = %q, want %q", got, want)
	}
	ws.Run(hs, "grep", []byte(`{"pattern":"x","path":"."}`))
	if got, want := ws.Run(hs, "grep", []byte(`{"path":".","pattern":"x"}`)), "[#0004] Same result as #0003."; got != want {
		t.Errorf("grep twice = %q, want %q", got, want)
	}
}

func TestToolList(t *testing.T) {
	names := func(m hygiene.Measures, shell bool) string {
		var out []string
		for _, tl := range tools.ToolList(m, shell) {
			out = append(out, tl.Name)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		m     hygiene.Measures
		shell bool
		want  string
	}{
		{hygiene.Spec(), true, "read,list,glob,grep,edit,write,multiedit,apply_patch,bash,recall"},
		{hygiene.Spec(), false, "read,list,glob,grep,edit,write,multiedit,apply_patch,recall"},
		{hygiene.Measures{}, true, "read,list,glob,grep,edit,write,multiedit,apply_patch,bash"},
		{hygiene.Measures{}, false, "read,list,glob,grep,edit,write,multiedit,apply_patch"},
	} {
		if got := names(c.m, c.shell); got != c.want {
			t.Errorf("ToolList(recall %v, shell %v) = %s, want %s", c.m.Recall, c.shell, got, c.want)
		}
	}
}

func TestGlob(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "a.go", "package a\n")
	for name, data := range map[string]string{"cmd/b.go": "package main\n", "cmd/sub/c.go": "package sub\n", "docs/x.md": "# x\n"} {
		p := filepath.Join(ws.Root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link to a folder outside the project is not followed: no name from outside shows.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.go"), []byte("package s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "deep", "d.go"), []byte("package d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Root, "cmd", "out")); err != nil {
		t.Fatal(err)
	}
	outsideReal, err := filepath.EvalSymlinks(outside)
	if err != nil {
		t.Fatal(err)
	}
	abs := func(names ...string) string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(ws.Root, filepath.FromSlash(n)))
		}
		return strings.Join(out, "\n")
	}
	for _, c := range []struct{ args, want string }{
		{`{"pattern":"**/*.go"}`, "[#0001]\n" + abs("a.go", "cmd/b.go", "cmd/sub/c.go")},
		{`{"pattern":"*.go","path":"cmd"}`, "[#0002]\n" + abs("cmd/b.go")},
		{`{"pattern":"cmd/**/*.go"}`, "[#0003]\n" + abs("cmd/b.go", "cmd/sub/c.go")},
		{`{"pattern":"` + ws.Root + `/docs/*.{md,txt}"}`, "[#0004]\n" + abs("docs/x.md")},
		{`{"pattern":"*.rs"}`, "[#0005]\nNo files match."},
		// §6: the same glob with the same result is a stub.
		{`{ "pattern": "*.rs" }`, "[#0006] Same result as #0005."},
		{`{"pattern":"../*"}`, "[#0007]\nError: " + filepath.Dir(ws.Root) + " is outside the project"},
		{`{"pattern":"[a"}`, `[#0008]` + "\n" + `Error: glob: "[a" is not a valid pattern`},
		// A link named after a brace or a wildcard is not followed either (doublestar follows a
		// literal component after a meta character).
		{`{"pattern":"cmd/{out,sub}/*.go"}`, "[#0009]\n" + abs("cmd/sub/c.go")},
		{`{"pattern":"{cmd/out,cmd/sub}/*.go"}`, "[#000a]\n" + abs("cmd/sub/c.go")},
		{`{"pattern":"*/{out,sub}/**/*.go"}`, "[#000b]\n" + abs("cmd/sub/c.go")},
		{`{"pattern":"cmd/out/*"}`, "[#000c]\nError: " + abs("cmd/out") + " leads to " + outsideReal + ", outside the project"},
	} {
		if got := ws.Run(hs, "glob", []byte(c.args)); got != c.want {
			t.Errorf("glob %s =\n%s\nwant\n%s", c.args, got, c.want)
		}
	}
}

// jsonString returns the JSON object {key: value}.
func jsonString(key, value string) ([]byte, error) {
	return json.Marshal(map[string]string{key: value})
}

// A workspace in a private folder names only its shown path: search results, errors and the
// target of a link leading out of the project are under the shown root, the real folder never
// appears, and the tools read and write the real folder.
func TestWorkspaceNamesTheShownPath(t *testing.T) {
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hygiene.NewSession(loop, hygiene.Spec())
	if err != nil {
		t.Fatal(err)
	}
	real := t.TempDir()
	shown := "/tmp/lab-sandbox/shown-ws"
	ws, err := tools.NewSandboxWorkspace([]txtar.File{{Name: "a.go", Data: []byte("package a\n")}}, tools.Sandbox{Dir: real, Shown: shown}, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	if err := os.WriteFile(filepath.Join(real, "outside.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside.txt", filepath.Join(real, "p", "out.txt")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, args, want string }{
		{"glob", `{"pattern":"**/*.go"}`, shown + "/p/a.go"},
		{"grep", `{"pattern":"package"}`, shown + "/p/a.go"},
		{"read", `{"path":"missing.txt"}`, shown + "/p/missing.txt"},
		{"read", `{"path":"out.txt"}`, shown + "/p/out.txt leads to " + shown + "/outside.txt, outside the project"},
		{"read", `{"path":"` + filepath.Join(real, "p", "a.go") + `"}`, filepath.Join(real, "p", "a.go") + " is outside the project"},
		{"write", `{"path":"` + shown + `/p/b.txt","content":"b\n"}`, shown + "/p/b.txt"},
	} {
		got := ws.Run(hs, tc.tool, []byte(tc.args))
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s %s = %q; want it to name %q", tc.tool, tc.args, got, tc.want)
		}
		if tc.tool != "read" || !strings.Contains(tc.args, real) {
			if strings.Contains(got, real) {
				t.Errorf("%s %s = %q names the real folder %s", tc.tool, tc.args, got, real)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(real, "p", "b.txt")); err != nil || string(b) != "b\n" {
		t.Errorf("b.txt in the real folder: %q, %v", b, err)
	}
}

// A link that climbs past the sandbox's folder (../../x from the project) is named as the shown
// tree has it: where the link leads from the shown root, never the real folder's parents (the
// machine's TMPDIR, which would change the rows from one machine to another).
func TestWorkspaceLinkPastTheSandboxNamesTheShownPath(t *testing.T) {
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hygiene.NewSession(loop, hygiene.Spec())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(t.TempDir(), "tmpdir", "lab-sandbox-shown-ws-123")
	shown := "/tmp/lab-sandbox/shown-ws"
	ws, err := tools.NewSandboxWorkspace([]txtar.File{{Name: "a.go", Data: []byte("package a\n")}}, tools.Sandbox{Dir: real, Shown: shown}, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	if err := os.WriteFile(filepath.Join(filepath.Dir(real), "elsewhere.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../elsewhere.txt", filepath.Join(real, "p", "up.txt")); err != nil {
		t.Fatal(err)
	}
	got := ws.Run(hs, "read", []byte(`{"path":"up.txt"}`))
	if want := shown + "/p/up.txt leads to /tmp/lab-sandbox/elsewhere.txt, outside the project"; !strings.Contains(got, want) {
		t.Errorf("read up.txt = %q; want it to name %q", got, want)
	}
	if strings.Contains(got, filepath.Dir(real)) || strings.Contains(got, "SECRET") {
		t.Errorf("read up.txt = %q names the real folder %s or reads the file", got, filepath.Dir(real))
	}
}

// A path under the workspace's Alias (the folder the cwd practice told the model it runs in)
// reaches the project; the answer names the project as always, and a path beside the alias is
// still outside.
func TestWorkspaceAlias(t *testing.T) {
	ws, hs := newWS(t, hygiene.Spec(), "main.go", "package main\n")
	ws.Alias = "/tmp/lab-session-3/p"
	out := ws.Run(hs, "read", json.RawMessage(`{"path":"/tmp/lab-session-3/p/main.go"}`))
	if !strings.Contains(out, "package main") {
		t.Errorf("read through the alias: %q; want the file", out)
	}
	out = ws.Run(hs, "read", json.RawMessage(`{"path":"/tmp/lab-session-3/other.go"}`))
	if !strings.Contains(out, "outside the project") {
		t.Errorf("read beside the alias: %q; want outside the project", out)
	}
}

// grep answers the lines a pattern matches whether or not the pattern starts with a literal (the
// files and lines without it are skipped unread by the pattern): anchored, case-folded,
// alternated and literal patterns give every matching line of every file, each file's in order.
func TestGrepLiteralPrefixFindsEveryLine(t *testing.T) {
	files := []string{
		"a.go", "package a\n\nfunc Run() {}\nfunc run() {}\n// Run runs\n",
		"b/b.go", "package b\nvar x = \"func Run\"\n",
		"c.txt", "nothing here\n",
	}
	for _, tc := range []struct{ pattern, want string }{
		{"func Run", "a.go:3: func Run() {}|b/b.go:2: var x = \"func Run\""},
		{"^func", "a.go:3: func Run() {}|a.go:4: func run() {}"},
		{"(?i)func run", "a.go:3: func Run() {}|a.go:4: func run() {}|b/b.go:2: var x = \"func Run\""},
		{"Run|nothing", "a.go:3: func Run() {}|a.go:5: // Run runs|b/b.go:2: var x = \"func Run\"|c.txt:1: nothing here"},
		{"package b$", "b/b.go:1: package b"},
		{"zzz", ""},
	} {
		ws, hs := newWS(t, hygiene.Measures{}, files...)
		args, _ := json.Marshal(map[string]string{"pattern": tc.pattern})
		got := ws.Run(hs, "grep", args)
		var lines []string
		for _, l := range strings.Split(got, "\n") {
			if rel, ok := strings.CutPrefix(l, ws.Root+"/"); ok {
				lines = append(lines, rel)
			}
		}
		if strings.Join(lines, "|") != tc.want {
			t.Errorf("grep %q = %q; want the lines %q", tc.pattern, got, tc.want)
		}
	}
}
