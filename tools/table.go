package tools

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"lab/chat"
	"lab/hygiene"
)

// Tool is one tool of the harness, everything the lab knows of it in one place: what the model
// is told (name, description, JSON schema), the argument rules a scenario's scripted calls are
// checked against, whether it changes files (a read-only permission mode forbids it), how a
// scripted call uses the workspace's paths, and how it runs in the sandbox. [Table] lists them;
// every other part of the lab reads the table.
type Tool struct {
	// Name is the tool's name, as the model calls it.
	Name string
	// Describe returns the tool's description as the session's measures make it answer.
	Describe func(m hygiene.Measures) string
	// Schema is the JSON schema of its arguments ([chat.Tool].Parameters).
	Schema string
	// Args are its arguments, in the schema's order: each one's name, whether a call must give
	// it, and the kind of value a scripted call must give.
	Args []Arg
	// ChangesFiles says that the tool changes the workspace's files: a read-only permission
	// mode forbids it ([Allowed]).
	ChangesFiles bool
	// Offered says whether a session's fixed tool list has the tool (spec 3.2.0 §10.4: only what
	// is fixed for the session leaves a tool out), given its measures and whether the scenario
	// has a shell; nil means always.
	Offered func(m hygiene.Measures, shell bool) bool
	// Check checks a scripted call's argument values beyond their kinds (a pattern that
	// compiles, a patch that parses); args is the call's JSON object decoded. nil checks
	// nothing more. The error is the message a scenario error shows after the tool's name.
	Check func(args map[string]any) error
	// Replay checks one scripted call against the workspace's files as a scripted session
	// leaves them at that point, and applies what it creates, moves or deletes; it returns what
	// is wrong ("" when nothing is). nil for a tool that names no path.
	Replay func(t *Tree, a CallArgs) string
	// Run runs one call for real in the sandbox: its answer, or the error the model reads as
	// "Error: …". nil for bash, which the session answers (scripted outputs, or the live
	// driver's shell: [Shell]).
	Run func(w *Workspace, s *hygiene.Session, raw json.RawMessage, a CallArgs) (string, error)
}

// Arg is one argument of a tool.
type Arg struct {
	// Name is the argument's JSON key.
	Name string
	// Required says that a call must give it.
	Required bool
	// Kind is the value a scripted call must give.
	Kind ArgKind
}

// ArgKind is the kind of value a scripted call gives an argument; scenario validation checks it.
type ArgKind int

const (
	// AnyArg is a value the tool's own Check (or the scenario's scripted commands) checks.
	AnyArg ArgKind = iota
	// StringArg is a JSON string.
	StringArg
	// CountArg is a whole number ≥ 0 (a line offset, a number of lines).
	CountArg
	// PathArg is a string naming a path inside the workspace ([Inside]).
	PathArg
)

// Table is every built-in tool, in the order of a session's tool list (spec 3.2.0 §10.4): read,
// list, glob, grep and edit, then write, multiedit, apply_patch, bash when the scenario has a
// shell and recall when the session's measures have it (§4).
var Table = []*Tool{
	{
		Name: "read", Describe: readDescription,
		Schema: `{"type":"object","properties":{"path":{"type":"string","description":"File path, relative to the project root"},"offset":{"type":"integer","description":"First line to show, 1-based"},"limit":{"type":"integer","description":"Number of lines to show"}},"required":["path"]}`,
		Args:   []Arg{{"path", true, PathArg}, {"offset", false, CountArg}, {"limit", false, CountArg}},
		Replay: needFile,
		Run: func(w *Workspace, s *hygiene.Session, _ json.RawMessage, a CallArgs) (string, error) {
			return w.read(s, a)
		},
	},
	{
		Name: "list", Describe: fixed("List a directory of the project recursively, one absolute path per line; directories end with /."),
		Schema: `{"type":"object","properties":{"path":{"type":"string","description":"Directory, relative to the project root; default the root"}}}`,
		Args:   []Arg{{"path", false, PathArg}},
		Replay: func(t *Tree, a CallArgs) string {
			if why := t.NeedDir(ScriptPath(a.Path)); why != "" {
				return fmt.Sprintf("list %s: %s", strconv.Quote(a.Path), why)
			}
			return ""
		},
		Run: (*Workspace).list,
	},
	{
		Name: "glob", Describe: fixed("Find the project's files whose path matches a glob pattern: * and ? within a path component, ** across folders, {a,b} and [abc]. Answers one absolute path per line, sorted."),
		Schema: `{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern, such as **/*.go, relative to path"},"path":{"type":"string","description":"Directory to search, relative to the project root; default the root"}},"required":["pattern"]}`,
		Args:   []Arg{{"pattern", true, StringArg}, {"path", false, PathArg}},
		Check: func(args map[string]any) error {
			if p := args["pattern"].(string); !doublestar.ValidatePattern(p) {
				return fmt.Errorf("pattern: %q is not a valid glob pattern", p)
			}
			return nil
		},
		Replay: replayGlob,
		Run:    (*Workspace).glob,
	},
	{
		Name: "grep", Describe: fixed("Search the project's files for a regular expression (RE2 syntax). Answers path:line: text for each matching line."),
		Schema: `{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression"},"path":{"type":"string","description":"File or directory to search; default the root"}},"required":["pattern"]}`,
		Args:   []Arg{{"pattern", true, StringArg}, {"path", false, PathArg}},
		Check: func(args map[string]any) error {
			if _, err := regexp.Compile(args["pattern"].(string)); err != nil {
				return fmt.Errorf("pattern: %v", err)
			}
			return nil
		},
		Replay: func(t *Tree, a CallArgs) string {
			if p := ScriptPath(a.Path); !t.IsFile(p) && !t.IsDir(p) {
				return fmt.Sprintf("grep %s: the workspace holds no such file or folder", strconv.Quote(a.Path))
			}
			return ""
		},
		Run: (*Workspace).grep,
	},
	{
		Name: "edit",
		Describe: func(m hygiene.Measures) string {
			return "Replace old_string, which must occur exactly once in the file, with new_string." + answers(m, " Answers with the unified diff of the change.", " Answers Edited and the path.")
		},
		Schema:       `{"type":"object","properties":{"path":{"type":"string","description":"File path, relative to the project root"},"old_string":{"type":"string","description":"Exact text to replace"},"new_string":{"type":"string","description":"Replacement text"}},"required":["path","old_string","new_string"]}`,
		Args:         []Arg{{"path", true, PathArg}, {"old_string", true, StringArg}, {"new_string", true, StringArg}},
		ChangesFiles: true,
		Replay:       needFile,
		Run: func(w *Workspace, s *hygiene.Session, _ json.RawMessage, a CallArgs) (string, error) {
			return w.edit(s, a)
		},
	},
	{
		Name: "write",
		Describe: func(m hygiene.Measures) string {
			return "Write a file whole: create it (and its folders) or replace its content." + answers(m, " A new file answers Created with its line count; an existing one answers with the unified diff of the change.", " Answers Created or Edited and the path.")
		},
		Schema:       `{"type":"object","properties":{"path":{"type":"string","description":"File path, relative to the project root"},"content":{"type":"string","description":"The file's complete new content"}},"required":["path","content"]}`,
		Args:         []Arg{{"path", true, PathArg}, {"content", true, StringArg}},
		ChangesFiles: true,
		Replay: func(t *Tree, a CallArgs) string {
			p := ScriptPath(a.Path)
			if t.IsFile(p) {
				return ""
			}
			if why := t.CanCreate(p); why != "" {
				return fmt.Sprintf("write %s: %s", strconv.Quote(a.Path), why)
			}
			t.Add(p)
			return ""
		},
		Run: func(w *Workspace, s *hygiene.Session, _ json.RawMessage, a CallArgs) (string, error) {
			return w.write(s, a)
		},
	},
	{
		Name: "multiedit", Describe: fixed("Make several replacements in one file, in order: each old_string must occur exactly once in the file as the earlier edits left it. All or nothing: if one edit fails, the file is unchanged. Answers with the unified diff of the whole change."),
		Schema:       `{"type":"object","properties":{"path":{"type":"string","description":"File path, relative to the project root"},"edits":{"type":"array","minItems":1,"description":"The replacements, applied in order","items":{"type":"object","properties":{"old_string":{"type":"string","description":"Exact text to replace"},"new_string":{"type":"string","description":"Replacement text"}},"required":["old_string","new_string"]}}},"required":["path","edits"]}`,
		Args:         []Arg{{"path", true, PathArg}, {"edits", true, AnyArg}},
		ChangesFiles: true,
		Check:        func(args map[string]any) error { return checkEdits(args["edits"]) },
		Replay:       needFile,
		Run: func(w *Workspace, s *hygiene.Session, _ json.RawMessage, a CallArgs) (string, error) {
			return w.multiedit(s, a)
		},
	},
	{
		Name: "apply_patch", Describe: fixed("Add, delete, update and move files with one patch, all or nothing. Format:\n*** Begin Patch\n*** Add File: path\n+each line of the new file\n*** Delete File: path\n*** Update File: path\n*** Move to: new/path (optional)\n@@ a line just before the change (optional)\n context line\n-removed line\n+added line\n*** End Patch\nPaths are relative to the project root. Give about three lines of context around each change. Answers with each file's change in the patch's order."),
		Schema:       `{"type":"object","properties":{"patch":{"type":"string","description":"The whole patch, from *** Begin Patch to *** End Patch"}},"required":["patch"]}`,
		Args:         []Arg{{"patch", true, StringArg}},
		ChangesFiles: true,
		Check:        checkPatch,
		Replay:       replayPatch,
		Run: func(w *Workspace, s *hygiene.Session, _ json.RawMessage, a CallArgs) (string, error) {
			return w.applyPatch(s, a)
		},
	},
	{
		Name: "bash", Describe: fixed("Run a shell command in the project (or in cwd, relative to the project root) and answer what it prints, with its exit status when not 0."),
		Schema:  `{"type":"object","properties":{"command":{"type":"string","description":"The command line"},"cwd":{"type":"string","description":"Directory to run in, relative to the project root; default the root"}},"required":["command"]}`,
		Args:    []Arg{{"command", true, AnyArg}, {"cwd", false, AnyArg}},
		Offered: func(_ hygiene.Measures, shell bool) bool { return shell },
		Replay: func(t *Tree, a CallArgs) string {
			if a.Cwd != "" {
				if why := t.NeedDir(ScriptPath(a.Cwd)); why != "" {
					return fmt.Sprintf("bash: cwd %s: %s", strconv.Quote(a.Cwd), why)
				}
			}
			return ""
		},
	},
	{
		Name: "recall", Describe: fixed("Show a stored tool result again, in full, by its id (the #… at the start of its bracket): up to 2000 lines from offset. Use it for output that was cut short, or a result from before a summary."),
		Schema:  `{"type":"object","properties":{"id":{"type":"string","description":"The result's id, such as #0012"},"offset":{"type":"integer","description":"First line to show, 1-based"},"limit":{"type":"integer","description":"Number of lines to show"}},"required":["id"]}`,
		Args:    []Arg{{"id", true, StringArg}, {"offset", false, CountArg}, {"limit", false, CountArg}},
		Offered: func(m hygiene.Measures, _ bool) bool { return m.Recall },
		Run: func(_ *Workspace, s *hygiene.Session, _ json.RawMessage, a CallArgs) (string, error) {
			if a.ID == "" {
				return "", fmt.Errorf("recall: id is required")
			}
			return s.Recall(a.ID, a.Offset, a.Limit), nil
		},
	},
}

// Lookup returns the built-in tool named name, nil when there is none.
func Lookup(name string) *Tool {
	for _, t := range Table {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Names returns the built-in tools' names, in [Table]'s order.
func Names() []string {
	out := make([]string, len(Table))
	for i, t := range Table {
		out[i] = t.Name
	}
	return out
}

// readOnlyModes are the permission modes in which a tool that changes files may not run.
var readOnlyModes = map[string]bool{"plan": true}

// Allowed reports whether the permission mode lets the tool named name run: a read-only mode
// ("plan") forbids the tools that change files ([Tool].ChangesFiles); every other tool, MCP
// tools among them, runs in every mode (spec 3.2.0 §10.4: the tool answers unavailable).
func Allowed(mode, name string) bool {
	t := Lookup(name)
	return !readOnlyModes[mode] || t == nil || !t.ChangesFiles
}

// ToolList is the fixed tool list of a session (spec 3.2.0 §10.4): the same for every request.
// It is [Table]'s tools the session offers ([Tool].Offered: bash when the scenario has a shell,
// its scripted commands or a real shell for the live driver; recall when m.Recall is on, §4), in
// the table's order. Only what is fixed for the session leaves a tool out (§10.4: "what the
// project's configuration … switched off before the session began").
func ToolList(m hygiene.Measures, shell bool) []chat.Tool {
	var list []chat.Tool
	for _, t := range Table {
		if t.Offered == nil || t.Offered(m, shell) {
			list = append(list, chat.Tool{Name: t.Name, Description: t.Describe(m), Parameters: json.RawMessage(t.Schema)})
		}
	}
	return list
}

// CallArgs is every built-in tool's arguments decoded from a call's JSON object; a tool reads
// the ones its [Tool].Args name.
type CallArgs struct {
	Path      string     `json:"path"`
	Offset    int        `json:"offset"`
	Limit     int        `json:"limit"`
	Pattern   string     `json:"pattern"`
	OldString string     `json:"old_string"`
	NewString string     `json:"new_string"`
	Content   *string    `json:"content"`
	Edits     []EditArgs `json:"edits"`
	Patch     string     `json:"patch"`
	ID        string     `json:"id"`
	Command   string     `json:"command"`
	Cwd       string     `json:"cwd"`

	// tool is the tool's name, set by [Tree.Replay] for the replays several tools share.
	tool string
}

// EditArgs is one replacement of a multiedit call.
type EditArgs struct {
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

// run runs one call through the table: its answer, or the error the model reads as "Error: …".
// A tool the table does not hold, one it runs elsewhere (bash) and one the session's measures
// leave out of the tool list (recall without §4) are unknown tools (§10.4).
func (w *Workspace) run(s *hygiene.Session, tool string, raw json.RawMessage) (string, error) {
	var a CallArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	if err := w.alive(); err != nil {
		return "", err
	}
	t := Lookup(tool)
	if t == nil || t.Run == nil || (t.Offered != nil && !t.Offered(s.Measures(), true)) {
		return "", fmt.Errorf("unknown tool %q", tool)
	}
	return t.Run(w, s, raw, a)
}

// fixed is a description that does not depend on the measures.
func fixed(d string) func(hygiene.Measures) string {
	return func(hygiene.Measures) string { return d }
}

// readDescription describes the read tool as the session's measures make it answer (§1, §2).
func readDescription(m hygiene.Measures) string {
	d := "Read a file of the project. Shows up to 2000 lines from offset, each as `N: text`"
	if m.ResultIDs {
		d += ", under a bracket with the result's id, the path, the lines shown, the file's length and its content hash"
	}
	d += "."
	if m.Stubs {
		d += " A re-read of lines an earlier result in front of you already shows, of an unchanged file, answers with that result's id instead."
	}
	return d
}

// answers picks a tool description's last sentence by whether edits answer with diffs (§5).
func answers(m hygiene.Measures, diff, plain string) string {
	if m.Diffs {
		return diff
	}
	return plain
}

// RootPlaceholder in a call's arguments stands for the sandbox's absolute project root, so a
// scenario can write the absolute paths models often write (spec 3.2.0 §11: "Absolute paths are
// still accepted").
const RootPlaceholder = "{{root}}"

// Inside checks that a scripted path stays inside the workspace and returns it cleaned, relative
// to the project root ("." for the root, and for ""); [RootPlaceholder] at its start names the
// root. The error says why not: a NUL byte, an absolute or "~" path, a path climbing out.
func Inside(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q holds a NUL byte, which no file name can", p)
	}
	if p == "" {
		return ".", nil
	}
	if rest, ok := strings.CutPrefix(p, RootPlaceholder); ok {
		if rest == "" {
			return ".", nil
		}
		if !strings.HasPrefix(rest, "/") {
			return "", fmt.Errorf("path %q: %s must be followed by / or nothing", p, RootPlaceholder)
		}
		return Inside(strings.TrimLeft(rest, "/"))
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return "", fmt.Errorf("path %q is outside the workspace: scenario paths are relative to the project root", p)
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", p)
	}
	return c, nil
}

// ScriptPath turns a scripted path into the cleaned path relative to the root ([Inside]); the
// scenario's validation has already refused one outside.
func ScriptPath(p string) string {
	c, _ := Inside(p)
	return c
}

// checkEdits checks multiedit's edits: a non-empty list of {old_string, new_string} strings with
// a non-empty old_string.
func checkEdits(v any) error {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return fmt.Errorf("edits: want a non-empty list of {old_string, new_string}")
	}
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("edits[%d]: want {old_string, new_string}", i)
		}
		for k := range m {
			if k != "old_string" && k != "new_string" {
				return fmt.Errorf("edits[%d]: unknown argument %q", i, k)
			}
		}
		for _, k := range []string{"old_string", "new_string"} {
			s, isStr := m[k].(string)
			if !isStr {
				return fmt.Errorf("edits[%d].%s: want a string", i, k)
			}
			if k == "old_string" && s == "" {
				return fmt.Errorf("edits[%d].old_string: empty", i)
			}
		}
	}
	return nil
}

// checkPatch checks apply_patch's patch: it parses ([ParsePatch]) and names only paths inside
// the workspace.
func checkPatch(args map[string]any) error {
	ops, err := ParsePatch(args["patch"].(string))
	if err != nil {
		return err
	}
	for _, op := range ops {
		for _, ps := range []string{op.Path, op.MoveTo} {
			if _, err := Inside(ps); ps != "" && err != nil {
				return fmt.Errorf("patch line %d: %v", op.Line, err)
			}
		}
	}
	return nil
}
