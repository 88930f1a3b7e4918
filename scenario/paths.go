package scenario

import (
	"fmt"
	"path"
	"strings"

	"golang.org/x/tools/txtar"

	"lab/tools"
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

// checkPaths replays the scenario's scripted tool calls against its workspace, as it stands at
// each call (the archive, then the earlier scripted writes, patches and outside changes), and
// refuses a call that names a path the workspace does not hold at that point (a read, edit or
// multiedit of no file, a list, glob or grep of no folder, a patch updating or deleting no file,
// a write where a folder is): such a session measures error answers its author did not mean. A
// call marked expect_error is not checked and changes nothing. A call in a read-only permission
// mode answers unavailable (§10.4) and changes nothing either. Each error names the call's line.
func checkPaths(s *Scenario) error {
	t := tools.NewTree(s.Files)
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
			p := tools.ScriptPath(st.Outside.Path)
			if st.Outside.Delete {
				if why := t.NeedFile(p); why != "" {
					return bad(st.Line, "outside: delete %q: %s", st.Outside.Path, why)
				}
				t.Remove(p)
			} else {
				if why := t.CanCreate(p); why != "" && !t.IsFile(p) {
					return bad(st.Line, "outside: %q: %s", st.Outside.Path, why)
				}
				t.Add(p)
			}
		case st.Instructions != nil:
			// The arm names the file; the check counts the default one.
			if p := tools.ScriptPath(DefaultInstructionsFile); t.CanCreate(p) == "" {
				t.Add(p)
			}
		case st.Assistant != nil:
			for _, c := range st.Assistant.Calls {
				if c.ExpectError || c.Answer != nil || mcp[c.Tool] || !tools.Allowed(mode, c.Tool) {
					continue
				}
				if err := t.Replay(c.Tool, c.Args); err != "" {
					return bad(c.Line, "%s (a call whose error is the point says expect_error: true)", err)
				}
			}
		}
	}
	return nil
}
