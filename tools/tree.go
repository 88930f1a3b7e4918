package tools

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

// Tree is the workspace's files as a scripted session leaves them at one point: the archive's
// files, then what the session's scripted writes, patches and outside changes created, moved or
// deleted. Paths are cleaned and relative to the project root.
type Tree struct {
	files map[string]bool
	// dirs holds every folder that ever held a file ("." is the root, always a folder): the
	// tools delete and move files, never folders, so a folder whose last file went stays, empty.
	dirs map[string]bool
}

// NewTree is the tree of a workspace archive's files.
func NewTree(files []txtar.File) *Tree {
	t := &Tree{files: map[string]bool{}, dirs: map[string]bool{}}
	for _, f := range files {
		t.Add(path.Clean(f.Name))
	}
	return t
}

// IsFile reports whether p (cleaned, relative to the root) is a file of the tree.
func (t *Tree) IsFile(p string) bool { return t.files[p] }

// IsDir reports whether p is a folder of the tree ("." always is).
func (t *Tree) IsDir(p string) bool { return p == "." || t.dirs[p] }

// Add creates the file p, and its folders.
func (t *Tree) Add(p string) {
	t.files[p] = true
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		t.dirs[d] = true
	}
}

// Remove deletes the file p; its folders stay.
func (t *Tree) Remove(p string) { delete(t.files, p) }

// CanCreate says why a file cannot be created at p ("" when it can): p is a folder, or one of
// its folders is a file.
func (t *Tree) CanCreate(p string) string {
	if t.IsDir(p) {
		return "the workspace holds a folder there"
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if t.IsFile(d) {
			return fmt.Sprintf("%q is a file, not a folder", d)
		}
	}
	return ""
}

// NeedFile says why p is not a file of the workspace ("" when it is).
func (t *Tree) NeedFile(p string) string {
	switch {
	case t.IsFile(p):
		return ""
	case t.IsDir(p):
		return "a folder, not a file"
	}
	return "the workspace holds no such file"
}

// NeedDir says why p is not a folder of the workspace ("" when it is).
func (t *Tree) NeedDir(p string) string {
	switch {
	case t.IsDir(p):
		return ""
	case t.IsFile(p):
		return "a file, not a folder"
	}
	return "the workspace holds no such folder"
}

// Replay checks one scripted call of the built-in tool named tool against the tree and applies
// what it creates, moves or deletes ([Tool].Replay); it returns what is wrong, "" when nothing
// is (also for a tool that names no path, or none the table holds).
func (t *Tree) Replay(tool string, raw []byte) string {
	tl := Lookup(tool)
	if tl == nil || tl.Replay == nil {
		return ""
	}
	var a CallArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Sprintf("%s: arguments: %v", tool, err)
	}
	a.tool = tool
	return tl.Replay(t, a)
}

// needFile is the replay of a tool that reads or changes one existing file (read, edit,
// multiedit).
func needFile(t *Tree, a CallArgs) string {
	if why := t.NeedFile(ScriptPath(a.Path)); why != "" {
		return fmt.Sprintf("%s %s: %s", a.tool, strconv.Quote(a.Path), why)
	}
	return ""
}

// replayGlob checks that the folder a glob call searches (its path, joined with the folder its
// pattern starts with) is a folder of the workspace.
func replayGlob(t *Tree, a CallArgs) string {
	p := ScriptPath(a.Path)
	q := strconv.Quote(a.Path)
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
	if why := t.NeedDir(dir); why != "" {
		in := ""
		if a.Path != "" {
			in = " in " + q
		}
		return fmt.Sprintf("glob %s%s: folder %q: %s", strconv.Quote(a.Pattern), in, dir, why)
	}
	return ""
}

// replayPatch checks an apply_patch call's operations in order, all or nothing: the ops are
// checked on a copy, which replaces the tree only whole.
func replayPatch(t *Tree, a CallArgs) string {
	ops, err := ParsePatch(a.Patch)
	if err != nil {
		return "apply_patch: " + err.Error()
	}
	// All or nothing: the ops are checked on a copy, which replaces the tree only whole.
	n := t.clone()
	for _, op := range ops {
		from := ScriptPath(op.Path)
		where := fmt.Sprintf("apply_patch: patch line %d", op.Line)
		switch op.Kind {
		case PatchAdd:
			if n.IsFile(from) {
				return fmt.Sprintf("%s: Add File %q: the file exists at this point (Update File changes it)", where, op.Path)
			}
			if why := n.CanCreate(from); why != "" {
				return fmt.Sprintf("%s: Add File %q: %s", where, op.Path, why)
			}
			n.Add(from)
		case PatchDelete, PatchUpdate:
			if why := n.NeedFile(from); why != "" {
				return fmt.Sprintf("%s: %s %q: %s", where, op.Kind, op.Path, why)
			}
			if op.Kind == PatchDelete {
				n.Remove(from)
			} else if op.MoveTo != "" {
				if to := ScriptPath(op.MoveTo); to != from {
					if n.IsFile(to) {
						return fmt.Sprintf("%s: Move to %q: the file exists at this point", where, op.MoveTo)
					}
					if why := n.CanCreate(to); why != "" {
						return fmt.Sprintf("%s: Move to %q: %s", where, op.MoveTo, why)
					}
					n.Remove(from)
					n.Add(to)
				}
			}
		}
	}
	*t = *n
	return ""
}

func (t *Tree) clone() *Tree {
	return &Tree{files: maps.Clone(t.files), dirs: maps.Clone(t.dirs)}
}
