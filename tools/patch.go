package tools

import (
	"fmt"
	"sort"
	"strings"
)

// The apply_patch tool's patch format is the Codex/OpenAI one (openai/codex, codex-rs/apply-patch,
// apply_patch_tool_instructions.md), whose grammar is:
//
//	Patch      := Begin { FileOp } End
//	Begin      := "*** Begin Patch" NEWLINE
//	End        := "*** End Patch" NEWLINE
//	FileOp     := AddFile | DeleteFile | UpdateFile
//	AddFile    := "*** Add File: " path NEWLINE { "+" line NEWLINE }
//	DeleteFile := "*** Delete File: " path NEWLINE
//	UpdateFile := "*** Update File: " path NEWLINE [ MoveTo ] { Hunk }
//	MoveTo     := "*** Move to: " newPath NEWLINE
//	Hunk       := "@@" [ header ] NEWLINE { HunkLine } [ "*** End of File" NEWLINE ]
//	HunkLine   := (" " | "-" | "+") text NEWLINE
//
// As in Codex: the patch is trimmed of surrounding white space and "\r\n" reads as "\n"; the
// Begin and End lines and the "*** " marker lines are compared with surrounding white space
// trimmed; an empty line inside a hunk is an empty context line; the first hunk of an Update may
// leave out its "@@" line; a hunk's header text (after "@@ ") is a line searched for before the
// hunk's own lines. An Update with neither hunks nor Move to is an error, and so is a hunk with
// no lines.

// PatchKind is what a patch does to one file.
type PatchKind int

const (
	// PatchAdd creates a file ("*** Add File:").
	PatchAdd PatchKind = iota + 1
	// PatchDelete deletes a file ("*** Delete File:").
	PatchDelete
	// PatchUpdate changes a file in place, and moves it when MoveTo is set ("*** Update File:").
	PatchUpdate
)

// String names the kind as the patch's header does ("Add File").
func (k PatchKind) String() string {
	switch k {
	case PatchAdd:
		return "Add File"
	case PatchDelete:
		return "Delete File"
	case PatchUpdate:
		return "Update File"
	}
	return fmt.Sprintf("PatchKind(%d)", int(k))
}

// PatchOp is one file operation of a patch, in the patch's order.
type PatchOp struct {
	// Kind is what the operation does.
	Kind PatchKind
	// Path is the file's path as the patch gives it (trimmed of surrounding white space).
	Path string
	// MoveTo is an Update's new path ("*** Move to:"); "" when the file stays where it is.
	MoveTo string
	// Lines are an Add's lines, without their "+" and without line ends.
	Lines []string
	// Hunks are an Update's hunks, in order.
	Hunks []PatchHunk
	// Line is the 1-based line of the operation's header in the patch.
	Line int
}

// PatchHunk is one hunk of an Update: the lines it expects (context and "-" lines, in order) and
// the lines that replace them (context and "+" lines, in order).
type PatchHunk struct {
	// Header is the text after "@@ " (a line to find before Old); "" when the hunk has none.
	Header string
	// Old are the lines the hunk replaces: its " " and "-" lines without their prefix.
	Old []string
	// New are the lines that replace them: its " " and "+" lines without their prefix.
	New []string
	// EOF is set by "*** End of File": Old ends at the file's end.
	EOF bool
	// Line is the 1-based line in the patch where the hunk starts.
	Line int
}

// PatchError is a patch that does not parse: the line (1-based, of the trimmed patch; 0 when the
// problem has no single line) and what is wrong.
type PatchError struct {
	// Line is the 1-based line of the patch at fault; 0 for the patch as a whole.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error: "patch line 3: …" or "patch: …".
func (e *PatchError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("patch line %d: %s", e.Line, e.Msg)
	}
	return "patch: " + e.Msg
}

const (
	patchBegin   = "*** Begin Patch"
	patchEnd     = "*** End Patch"
	patchAdd     = "*** Add File:"
	patchDelete  = "*** Delete File:"
	patchUpdate  = "*** Update File:"
	patchMoveTo  = "*** Move to:"
	patchEOF     = "*** End of File"
	patchHunk    = "@@"
	patchHunkSep = "@@ "
)

// ParsePatch parses a patch in the apply_patch format (grammar above) into its file operations,
// in order. It only parses: whether the files exist and the hunks match is for the applier. A
// patch that does not parse is a *PatchError naming the line. It never panics.
func ParsePatch(text string) ([]PatchOp, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if strings.TrimSpace(lines[0]) != patchBegin {
		return nil, &PatchError{Line: 1, Msg: fmt.Sprintf("the first line must be %q", patchBegin)}
	}
	last := len(lines) - 1
	if last == 0 || strings.TrimSpace(lines[last]) != patchEnd {
		return nil, &PatchError{Line: last + 1, Msg: fmt.Sprintf("the last line must be %q", patchEnd)}
	}
	var ops []PatchOp
	i := 1
	for i < last {
		line := strings.TrimSpace(lines[i])
		n := i + 1
		switch {
		case strings.HasPrefix(line, patchAdd):
			op := PatchOp{Kind: PatchAdd, Path: strings.TrimSpace(line[len(patchAdd):]), Line: n, Lines: []string{}}
			i++
			for i < last && strings.HasPrefix(lines[i], "+") {
				op.Lines = append(op.Lines, lines[i][1:])
				i++
			}
			if i < last && !isMarker(lines[i]) {
				return nil, &PatchError{Line: i + 1, Msg: fmt.Sprintf("Add File %s: every line of a new file starts with +", op.Path)}
			}
			ops = append(ops, op)
		case strings.HasPrefix(line, patchDelete):
			ops = append(ops, PatchOp{Kind: PatchDelete, Path: strings.TrimSpace(line[len(patchDelete):]), Line: n})
			i++
		case strings.HasPrefix(line, patchUpdate):
			op := PatchOp{Kind: PatchUpdate, Path: strings.TrimSpace(line[len(patchUpdate):]), Line: n}
			i++
			if i < last && strings.HasPrefix(strings.TrimSpace(lines[i]), patchMoveTo) {
				op.MoveTo = strings.TrimSpace(strings.TrimSpace(lines[i])[len(patchMoveTo):])
				if op.MoveTo == "" {
					return nil, &PatchError{Line: i + 1, Msg: "Move to: no path"}
				}
				i++
			}
			var err error
			op.Hunks, i, err = parseHunks(lines, i, last, op.Path)
			if err != nil {
				return nil, err
			}
			if len(op.Hunks) == 0 && op.MoveTo == "" {
				return nil, &PatchError{Line: n, Msg: fmt.Sprintf("Update File %s: no hunks", op.Path)}
			}
			ops = append(ops, op)
		default:
			return nil, &PatchError{Line: n, Msg: fmt.Sprintf("want *** Add File:, *** Delete File:, *** Update File: or *** End Patch, got %q", clip(lines[i]))}
		}
		if p := ops[len(ops)-1].Path; p == "" {
			return nil, &PatchError{Line: n, Msg: ops[len(ops)-1].Kind.String() + ": no path"}
		}
	}
	if len(ops) == 0 {
		return nil, &PatchError{Line: last + 1, Msg: "no file operations"}
	}
	return ops, nil
}

// parseHunks reads an Update's hunks from lines[i:] up to the next "***" marker line (or the End
// line at index last) and returns them with the index of the first line after them.
func parseHunks(lines []string, i, last int, path string) ([]PatchHunk, int, error) {
	var hunks []PatchHunk
	for i < last {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == patchEOF {
			return nil, i, &PatchError{Line: i + 1, Msg: fmt.Sprintf("Update File %s: %s before any hunk line", path, patchEOF)}
		}
		if isMarker(line) {
			break
		}
		h := PatchHunk{Line: i + 1}
		switch {
		case trimmed == patchHunk:
			i++
		case strings.HasPrefix(trimmed, patchHunkSep):
			h.Header = strings.TrimSpace(trimmed[len(patchHunkSep):])
			i++
		case len(hunks) > 0:
			return nil, i, &PatchError{Line: i + 1, Msg: fmt.Sprintf("Update File %s: want a hunk line (space, - or +), @@ or ***, got %q", path, clip(line))}
		}
		// The hunk's lines, up to the next @@ or *** line.
		for i < last {
			line := lines[i]
			trimmed := strings.TrimSpace(line)
			if trimmed == patchEOF {
				h.EOF = true
				i++
				break
			}
			if isMarker(line) || strings.HasPrefix(line, patchHunk) {
				break
			}
			switch {
			case line == "":
				h.Old = append(h.Old, "")
				h.New = append(h.New, "")
			case line[0] == ' ':
				h.Old = append(h.Old, line[1:])
				h.New = append(h.New, line[1:])
			case line[0] == '-':
				h.Old = append(h.Old, line[1:])
			case line[0] == '+':
				h.New = append(h.New, line[1:])
			default:
				return nil, i, &PatchError{Line: i + 1, Msg: fmt.Sprintf("Update File %s: a hunk line starts with a space, - or +, got %q", path, clip(line))}
			}
			i++
		}
		if len(h.Old) == 0 && len(h.New) == 0 {
			return nil, i, &PatchError{Line: h.Line, Msg: fmt.Sprintf("Update File %s: empty hunk", path)}
		}
		hunks = append(hunks, h)
	}
	return hunks, i, nil
}

// isMarker reports whether a patch line is one of the format's "***" lines (Add, Delete, Update,
// Move to, End of File, End Patch), white space around it ignored. A hunk line whose text starts
// with "***" is a hunk line when it starts with its space, - or +.
func isMarker(line string) bool {
	t := strings.TrimSpace(line)
	if t == patchEOF || t == patchEnd {
		return true
	}
	for _, m := range []string{patchAdd, patchDelete, patchUpdate, patchMoveTo} {
		if strings.HasPrefix(t, m) {
			return true
		}
	}
	return false
}

// clip shortens a patch line quoted in an error to at most 80 characters (runes).
func clip(s string) string {
	r := []rune(s)
	if len(r) <= 80 {
		return s
	}
	return string(r[:80]) + "…"
}

// applyHunks applies an Update's hunks to a file's lines, in order, each searched for from where
// the previous one ended (as Codex does): the header line first when there is one, then the
// hunk's Old lines — exactly, else ignoring white space at line ends, else ignoring white space at
// both ends. A hunk marked EOF is searched for at the file's end first. A hunk with no Old lines
// inserts its New lines after its header line, or at the file's end when it has none. An Old or header that is not found is an error quoting
// its first line.
func applyHunks(lines []string, hunks []PatchHunk) ([]string, error) {
	type repl struct {
		at, n int
		new   []string
	}
	var repls []repl
	pos := 0
	for k, h := range hunks {
		if h.Header != "" {
			at := seekLines(lines, []string{h.Header}, pos, false)
			if at < 0 {
				return nil, fmt.Errorf("hunk %d: context line %q not found", k+1, clip(h.Header))
			}
			pos = at + 1
		}
		if len(h.Old) == 0 {
			// Codex inserts a hunk with no old lines at the file's end; after its header line
			// when it has one.
			at := len(lines)
			if h.Header != "" {
				at = pos
			}
			repls = append(repls, repl{at: at, new: h.New})
			continue
		}
		old := h.Old
		at := seekLines(lines, old, pos, h.EOF)
		if at < 0 && len(old) > 0 && old[len(old)-1] == "" {
			// A trailing empty line in the hunk may stand for the final newline (Codex).
			old = old[:len(old)-1]
			newL := h.New
			if len(newL) > 0 && newL[len(newL)-1] == "" {
				newL = newL[:len(newL)-1]
			}
			h.New = newL
			if len(old) > 0 {
				at = seekLines(lines, old, pos, h.EOF)
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("hunk %d: lines not found (from %q)", k+1, clip(h.Old[0]))
		}
		repls = append(repls, repl{at: at, n: len(old), new: h.New})
		pos = at + len(old)
	}
	sort.SliceStable(repls, func(a, b int) bool { return repls[a].at < repls[b].at })
	out := make([]string, 0, len(lines))
	prev := 0
	for _, r := range repls {
		if r.at < prev {
			return nil, fmt.Errorf("hunks overlap")
		}
		out = append(out, lines[prev:r.at]...)
		out = append(out, r.new...)
		prev = r.at + r.n
	}
	return append(out, lines[prev:]...), nil
}

// seekLines returns the first index ≥ from where want occurs in lines (exactly, else with line
// ends' white space ignored, else with both ends' ignored), or -1. With eof it tries the file's
// end first.
func seekLines(lines, want []string, from int, eof bool) int {
	if len(want) > len(lines) {
		return -1
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t\r\v\f") },
		strings.TrimSpace,
	} {
		match := func(at int) bool {
			for j, w := range want {
				if norm(lines[at+j]) != norm(w) {
					return false
				}
			}
			return true
		}
		if eof {
			if at := len(lines) - len(want); at >= from && match(at) {
				return at
			}
		}
		for at := from; at+len(want) <= len(lines); at++ {
			if match(at) {
				return at
			}
		}
	}
	return -1
}
