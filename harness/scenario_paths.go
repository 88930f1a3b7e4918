package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/tools/txtar"
)

// checkArchive refuses a workspace archive that names a file with a NUL byte (no file system
// can create it), names a file twice, or names a path both as a file and as a folder holding
// files: the sandbox could hold only one of them, so the scenario would measure a workspace its
// author did not write. shown is how errors name the archive;
// data is its text, for the line of each file's "-- name --" marker.
func checkArchive(shown string, data []byte, files []txtar.File) error {
	lines := markerLines(data)
	first := map[string]int{} // cleaned name → index in files
	for i, f := range files {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if strings.IndexByte(f.Name, 0) >= 0 {
			return &SyntaxError{File: shown, Line: line, Msg: fmt.Sprintf("file %q: its name holds a NUL byte, which no file name can", f.Name)}
		}
		name := path.Clean(f.Name)
		if j, ok := first[name]; ok {
			return &SyntaxError{File: shown, Line: line, Msg: fmt.Sprintf("file %q is named twice (first at line %d as %q): the workspace can hold one", f.Name, lines[j], files[j].Name)}
		}
		first[name] = i
	}
	for i, f := range files {
		for d := path.Dir(path.Clean(f.Name)); d != "."; d = path.Dir(d) {
			if j, ok := first[d]; ok {
				return &SyntaxError{File: shown, Line: lines[j], Msg: fmt.Sprintf("file %q is also the folder of %q (line %d): a path is a file or a folder", files[j].Name, f.Name, lines[i])}
			}
		}
	}
	return nil
}

// markerLines returns the 1-based line of each file marker of a txtar archive, in order: the
// lines txtar.Parse starts a file at ("-- name --", the name not empty).
func markerLines(data []byte) []int {
	var out []int
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSuffix(l, "\r")
		if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") && len(l) >= 6 && strings.TrimSpace(l[3:len(l)-3]) != "" {
			out = append(out, i+1)
		}
	}
	return out
}

// tree is the workspace's files as a scripted session leaves them at one point: the archive's
// files, then what the session's scripted writes, patches and outside changes created, moved or
// deleted. Paths are cleaned and relative to the project root.
type tree struct {
	files map[string]bool
	// dirs holds every folder that ever held a file ("." is the root, always a folder): the
	// tools delete and move files, never folders, so a folder whose last file went stays, empty.
	dirs map[string]bool
}

func newTree(files []txtar.File) *tree {
	t := &tree{files: map[string]bool{}, dirs: map[string]bool{}}
	for _, f := range files {
		t.add(path.Clean(f.Name))
	}
	return t
}

func (t *tree) isFile(p string) bool { return t.files[p] }
func (t *tree) isDir(p string) bool  { return p == "." || t.dirs[p] }

func (t *tree) add(p string) {
	t.files[p] = true
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		t.dirs[d] = true
	}
}

// remove deletes the file p; its folders stay.
func (t *tree) remove(p string) { delete(t.files, p) }

// canCreate says why a file cannot be created at p ("" when it can): p is a folder, or one of
// its folders is a file.
func (t *tree) canCreate(p string) string {
	if t.isDir(p) {
		return "the workspace holds a folder there"
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if t.isFile(d) {
			return fmt.Sprintf("%q is a file, not a folder", d)
		}
	}
	return ""
}

// needFile says why p is not a file of the workspace ("" when it is).
func (t *tree) needFile(p string) string {
	switch {
	case t.isFile(p):
		return ""
	case t.isDir(p):
		return "a folder, not a file"
	}
	return "the workspace holds no such file"
}

// needDir says why p is not a folder of the workspace ("" when it is).
func (t *tree) needDir(p string) string {
	switch {
	case t.isDir(p):
		return ""
	case t.isFile(p):
		return "a file, not a folder"
	}
	return "the workspace holds no such folder"
}

// scenarioPath turns a scripted path into the cleaned path relative to the root ([inside]);
// checkCall has already refused one outside.
func scenarioPath(p string) string {
	c, _ := inside(p)
	return c
}

// checkPaths replays the scenario's scripted tool calls against its workspace, as it stands at
// each call (the archive, then the earlier scripted writes, patches and outside changes), and
// refuses a call that names a path the workspace does not hold at that point (a read, edit or
// multiedit of no file, a list, glob or grep of no folder, a patch updating or deleting no file,
// a write where a folder is): such a session measures error answers its author did not mean. A
// call marked expect_error is not checked and changes nothing. A call in a read-only permission
// mode answers unavailable (§10.4) and changes nothing either. Each error names the call's line.
func checkPaths(s *Scenario) error {
	t := newTree(s.Files)
	bad := func(line int, format string, args ...any) error {
		return &SyntaxError{File: s.File, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	mode := s.Mode
	mcp := map[string]bool{}
	for _, st := range s.Steps {
		switch {
		case st.Mode != nil:
			mode = *st.Mode
		case st.MCP != nil:
			for _, tl := range st.MCP.Tools {
				mcp[tl.Name] = true
			}
		case st.Outside != nil:
			p := scenarioPath(st.Outside.Path)
			if st.Outside.Delete {
				if why := t.needFile(p); why != "" {
					return bad(st.Line, "outside: delete %q: %s", st.Outside.Path, why)
				}
				t.remove(p)
			} else {
				if why := t.canCreate(p); why != "" && !t.isFile(p) {
					return bad(st.Line, "outside: %q: %s", st.Outside.Path, why)
				}
				t.add(p)
			}
		case st.Assistant != nil:
			for _, c := range st.Assistant.Calls {
				if c.ExpectError || mcp[c.Tool] || (readOnlyModes[mode] && changesFiles[c.Tool]) {
					continue
				}
				if err := t.call(c); err != "" {
					return bad(c.Line, "%s (a call whose error is the point says expect_error: true)", err)
				}
			}
		}
	}
	return nil
}

// call checks one scripted call against the tree and applies what it creates, moves or deletes;
// it returns what is wrong, "" when nothing is.
func (t *tree) call(c Call) string {
	var a struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
		Patch   string `json:"patch"`
		Cwd     string `json:"cwd"`
	}
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return fmt.Sprintf("%s: arguments: %v", c.Tool, err)
	}
	p := scenarioPath(a.Path)
	q := strconv.Quote(a.Path)
	switch c.Tool {
	case "read", "edit", "multiedit":
		if why := t.needFile(p); why != "" {
			return fmt.Sprintf("%s %s: %s", c.Tool, q, why)
		}
	case "list":
		if why := t.needDir(p); why != "" {
			return fmt.Sprintf("list %s: %s", q, why)
		}
	case "grep":
		if !t.isFile(p) && !t.isDir(p) {
			return fmt.Sprintf("grep %s: the workspace holds no such file or folder", q)
		}
	case "glob":
		pattern := a.Pattern
		dir := p
		if rest, ok := strings.CutPrefix(pattern, RootPlaceholder+"/"); ok {
			pattern, dir = rest, "."
		} else if strings.Contains(pattern, RootPlaceholder) {
			return "" // the pattern names the root elsewhere: the harness resolves it
		}
		if base, _ := doublestar.SplitPattern(pattern); base != "." {
			dir = path.Join(dir, base)
		}
		if why := t.needDir(dir); why != "" {
			in := ""
			if a.Path != "" {
				in = " in " + q
			}
			return fmt.Sprintf("glob %s%s: folder %q: %s", strconv.Quote(a.Pattern), in, dir, why)
		}
	case "write":
		if t.isFile(p) {
			return ""
		}
		if why := t.canCreate(p); why != "" {
			return fmt.Sprintf("write %s: %s", q, why)
		}
		t.add(p)
	case "bash":
		if a.Cwd != "" {
			if why := t.needDir(scenarioPath(a.Cwd)); why != "" {
				return fmt.Sprintf("bash: cwd %s: %s", strconv.Quote(a.Cwd), why)
			}
		}
	case "apply_patch":
		ops, err := ParsePatch(a.Patch)
		if err != nil {
			return "apply_patch: " + err.Error()
		}
		// All or nothing: the ops are checked on a copy, which replaces the tree only whole.
		n := t.clone()
		for _, op := range ops {
			from := scenarioPath(op.Path)
			where := fmt.Sprintf("apply_patch: patch line %d", op.Line)
			switch op.Kind {
			case PatchAdd:
				if n.isFile(from) {
					return fmt.Sprintf("%s: Add File %q: the file exists at this point (Update File changes it)", where, op.Path)
				}
				if why := n.canCreate(from); why != "" {
					return fmt.Sprintf("%s: Add File %q: %s", where, op.Path, why)
				}
				n.add(from)
			case PatchDelete, PatchUpdate:
				if why := n.needFile(from); why != "" {
					return fmt.Sprintf("%s: %s %q: %s", where, op.Kind, op.Path, why)
				}
				if op.Kind == PatchDelete {
					n.remove(from)
				} else if op.MoveTo != "" {
					if to := scenarioPath(op.MoveTo); to != from {
						if n.isFile(to) {
							return fmt.Sprintf("%s: Move to %q: the file exists at this point", where, op.MoveTo)
						}
						if why := n.canCreate(to); why != "" {
							return fmt.Sprintf("%s: Move to %q: %s", where, op.MoveTo, why)
						}
						n.remove(from)
						n.add(to)
					}
				}
			}
		}
		*t = *n
	}
	return ""
}

func (t *tree) clone() *tree {
	return &tree{files: maps.Clone(t.files), dirs: maps.Clone(t.dirs)}
}
