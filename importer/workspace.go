package importer

import (
	"encoding/json"
	"path"
	"regexp"
	"strconv"
	"strings"

	"lab/tools"
	"lab/transcript"
)

// numberedLine is one line of a read's answer with its line number: Claude Code's
// "     1→text", cat -n's "     1\ttext", the lab's own "1: text".
var numberedLine = regexp.MustCompile(`^\s*(\d+)(?:→|\t|: )(.*)$`)

// labRange is the lab's read header's "of TOTAL" (loop.json read.range), when the answer has one.
var labRange = regexp.MustCompile(`lines (\d+)-(\d+) of (\d+)`)

// idBracket is the lab harness's result id line ("[#r3]"), which a captured lab session's
// results start with (spec §1); a replay gives its own.
var idBracket = regexp.MustCompile(`^\[#[^\]\n]*\]\n`)

// shown is what one read's answer shows of a file: its lines from (1-based), and whether that
// is the whole file.
type shown struct {
	from  int
	lines []string
	whole bool
}

// readShown reads a read call's answer: the longest run of consecutively numbered lines.
// whole is true when it starts at line 1, the call asked for no offset past 1 and no limit,
// and nothing says there is more (the lab's "of TOTAL", a run of 2000 lines: the agents'
// default window). ok is false when the answer shows no numbered line.
func readShown(result string, args json.RawMessage) (shown, bool) {
	result = idBracket.ReplaceAllString(result, "")
	var best, cur shown
	next := 0
	for _, l := range strings.Split(result, "\n") {
		m := numberedLine.FindStringSubmatch(l)
		if m == nil {
			if len(cur.lines) > len(best.lines) {
				best = cur
			}
			cur, next = shown{}, 0
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if len(cur.lines) > 0 && n != next {
			if len(cur.lines) > len(best.lines) {
				best = cur
			}
			cur = shown{}
		}
		if len(cur.lines) == 0 {
			cur.from = n
		}
		cur.lines = append(cur.lines, m[2])
		next = n + 1
	}
	if len(cur.lines) > len(best.lines) {
		best = cur
	}
	if len(best.lines) == 0 {
		return best, false
	}
	var a struct {
		Offset *int `json:"offset"`
		Limit  *int `json:"limit"`
	}
	_ = json.Unmarshal(args, &a)
	best.whole = best.from == 1 && (a.Offset == nil || *a.Offset <= 1) && a.Limit == nil && len(best.lines) < 2000
	if m := labRange.FindStringSubmatch(result); m != nil {
		to, _ := strconv.Atoi(m[2])
		total, _ := strconv.Atoi(m[3])
		best.whole = best.whole && to == total
	}
	return best, true
}

// content is the file the lines show (each line ended by a newline).
func (s shown) content() string {
	if len(s.lines) == 0 {
		return ""
	}
	return strings.Join(s.lines, "\n") + "\n"
}

// matches reports whether content holds s's lines at s's place.
func (s shown) matches(content string) bool {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	if content == "" {
		lines = nil
	}
	if s.from < 1 || s.from-1+len(s.lines) > len(lines) {
		return false
	}
	for i, l := range s.lines {
		if lines[s.from-1+i] != l {
			return false
		}
	}
	if s.whole && len(lines) != len(s.lines) {
		return false
	}
	return true
}

// pathArg returns a call's path argument in the lab's form ("" when it has none).
func pathArg(args json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(args, &a)
	if a.Path == "" {
		return ""
	}
	p, err := tools.Inside(a.Path)
	if err != nil {
		return ""
	}
	return path.Clean(p)
}

// edits returns an edit's or a multiedit's replacements, in order.
func edits(tool string, args json.RawMessage) [][2]string {
	var a struct {
		Old   string `json:"old_string"`
		New   string `json:"new_string"`
		Edits []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
		} `json:"edits"`
	}
	_ = json.Unmarshal(args, &a)
	if tool == "edit" {
		return [][2]string{{a.Old, a.New}}
	}
	var out [][2]string
	for _, e := range a.Edits {
		out = append(out, [2]string{e.Old, e.New})
	}
	return out
}

// listedPaths returns the project-relative files a list or glob answer names: its lines that
// are paths (absolute ones cut after the project's folder, "…/<project>/"), folders (ending in
// /) left out.
func listedPaths(result, project string) []string {
	result = idBracket.ReplaceAllString(result, "")
	var out []string
	for _, l := range strings.Split(result, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasSuffix(l, "/") || strings.ContainsAny(l, " \t:") {
			continue
		}
		if strings.HasPrefix(l, "/") || strings.HasPrefix(l, "~") {
			i := strings.Index(l, "/"+project+"/")
			if i < 0 {
				continue
			}
			l = l[i+len(project)+2:]
		}
		p, err := tools.Inside(l)
		if err != nil || p == "" || p == "." {
			continue
		}
		out = append(out, path.Clean(p))
	}
	return out
}

// initialFiles is what the session's results show of the files as they were before the
// session changed any: a whole read's content, taken back through the edits the session made
// before it (a read after an edit shows the edited file: each replacement is undone, the new
// text back to the old, when the new text occurs once); the files a list or glob named and
// nothing showed, empty (listed). Files the session wrote before any read are not in it (the
// write creates them).
func initialFiles(events []transcript.Event, project string) (known map[string]string, listed map[string]bool) {
	known, listed = map[string]string{}, map[string]bool{}
	cur := map[string]string{}          // the file as the session left it, when known
	pending := map[string][][2]string{} // edits of a file whose content is unknown, in order
	lost := map[string]bool{}           // the file's first content can no longer be told
	written := map[string]bool{}        // the session wrote it before any read showed it
	for _, ev := range events {
		if ev.Assistant == nil {
			continue
		}
		for _, c := range ev.Assistant.Calls {
			if c.Tool == "" || !c.HasResult || c.IsError {
				continue
			}
			p := pathArg(c.ToolArgs)
			switch c.Tool {
			case "read":
				sh, ok := readShown(c.Result, c.ToolArgs)
				if !ok || !sh.whole || p == "" {
					continue
				}
				content := sh.content()
				if _, ok := cur[p]; !ok && !written[p] && !lost[p] {
					first, ok := content, true
					for i := len(pending[p]) - 1; i >= 0 && ok; i-- {
						e := pending[p][i]
						if strings.Count(first, e[1]) != 1 || e[1] == "" {
							ok = false
							break
						}
						first = strings.Replace(first, e[1], e[0], 1)
					}
					if ok {
						known[p] = first
					}
				}
				cur[p] = content
			case "edit", "multiedit":
				if p == "" {
					continue
				}
				es := edits(c.Tool, c.ToolArgs)
				if content, ok := cur[p]; ok {
					for _, e := range es {
						content = strings.Replace(content, e[0], e[1], 1)
					}
					cur[p] = content
				} else {
					pending[p] = append(pending[p], es...)
				}
			case "write":
				var a struct {
					Content string `json:"content"`
				}
				_ = json.Unmarshal(c.ToolArgs, &a)
				if _, ok := cur[p]; !ok && len(pending[p]) == 0 {
					written[p] = true
				}
				cur[p] = a.Content
			case "apply_patch":
				// What a patch changed is not undone: a file it touched before any read keeps
				// no first content.
				for _, f := range patchFiles(c.ToolArgs) {
					if _, ok := cur[f]; !ok {
						lost[f] = true
					}
					delete(cur, f)
				}
			case "list", "glob":
				for _, f := range listedPaths(c.Result, project) {
					listed[f] = true
				}
			}
		}
	}
	for f := range listed {
		if _, ok := known[f]; ok || written[f] {
			delete(listed, f)
		}
	}
	// A folder listed cannot be a file too.
	for f := range listed {
		for g := range known {
			if strings.HasPrefix(g, f+"/") {
				delete(listed, f)
			}
		}
	}
	return known, listed
}

// patchFiles returns the files an apply_patch names (Add, Delete, Update, Move to).
func patchFiles(args json.RawMessage) []string {
	var a struct {
		Patch string `json:"patch"`
		Input string `json:"input"`
	}
	_ = json.Unmarshal(args, &a)
	text := a.Patch + a.Input
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, pre := range []string{"*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "} {
			if rest, ok := strings.CutPrefix(l, pre); ok {
				if p, err := tools.Inside(strings.TrimSpace(rest)); err == nil {
					out = append(out, path.Clean(p))
				}
			}
		}
	}
	return out
}
