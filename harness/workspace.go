package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"golang.org/x/tools/txtar"

	"lab/chat"
	"lab/hygiene"
)

// Workspace is a sandboxed copy of a scenario's workspace: the tools read and change it for real,
// and nothing outside Root. Not safe for concurrent use.
type Workspace struct {
	// Root is the project root, an absolute path ending in the project's name.
	Root string
}

// NewWorkspace writes files into dir/project (created; an existing dir/project is replaced) and
// returns the sandbox.
func NewWorkspace(files []txtar.File, dir, project string) (*Workspace, error) {
	root, err := filepath.Abs(filepath.Join(dir, project))
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("create sandbox: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return nil, fmt.Errorf("create sandbox: %w", err)
		}
	}
	return &Workspace{Root: root}, nil
}

// Remove deletes the sandbox.
func (w *Workspace) Remove() error { return os.RemoveAll(w.Root) }

// resolve resolves a path the model gave: a relative path against the project root, an absolute
// one as it is (spec 3.2.0 §11), refusing anything outside the root. The error names the
// absolute path (§1: "Every other answer (an error, a refusal…) names the absolute path").
func (w *Workspace) resolve(p string) (string, error) {
	if p == "" {
		p = "."
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(w.Root, p)
	}
	abs = filepath.Clean(abs)
	if abs != w.Root && !strings.HasPrefix(abs, w.Root+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the project", abs)
	}
	return abs, nil
}

// ToolList is the fixed tool list of a session (spec 3.2.0 §10.4): the same for every request.
func ToolList() []chat.Tool {
	return []chat.Tool{
		{Name: "read", Description: "Read a file of the project. Shows up to 2000 lines from offset, each as `N: text`, under a bracket with the result's id, the path, the lines shown, the file's length and its content hash.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path, relative to the project root"},"offset":{"type":"integer","description":"First line to show, 1-based"},"limit":{"type":"integer","description":"Number of lines to show"}},"required":["path"]}`)},
		{Name: "list", Description: "List a directory of the project recursively, one entry per line; directories end with /.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Directory, relative to the project root; default the root"}}}`)},
		{Name: "grep", Description: "Search the project's files for a regular expression (RE2 syntax). Answers path:line: text for each matching line.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","description":"Regular expression"},"path":{"type":"string","description":"File or directory to search; default the root"}},"required":["pattern"]}`)},
		{Name: "edit", Description: "Replace old_string, which must occur exactly once in the file, with new_string. Answers with the unified diff of the change.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"File path, relative to the project root"},"old_string":{"type":"string","description":"Exact text to replace"},"new_string":{"type":"string","description":"Replacement text"}},"required":["path","old_string","new_string"]}`)},
	}
}

type callArgs struct {
	Path      string `json:"path"`
	Offset    int    `json:"offset"`
	Limit     int    `json:"limit"`
	Pattern   string `json:"pattern"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

// Run runs one tool call for real in the sandbox and returns its result as the session inserts
// it (ids, brackets, stubs, diffs: spec 3.2.0 §1, §2, §5). A failing call is an error answer, not
// a Go error: the model sees it.
func (w *Workspace) Run(s *hygiene.Session, tool string, raw json.RawMessage) string {
	var a callArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return s.Result("Error: arguments: " + err.Error())
	}
	var out string
	var err error
	switch tool {
	case "read":
		out, err = w.read(s, a)
	case "list":
		out, err = w.list(s, a)
	case "grep":
		out, err = w.grep(s, a)
	case "edit":
		out, err = w.edit(s, a)
	default:
		err = fmt.Errorf("unknown tool %q", tool)
	}
	if err != nil {
		return s.Result("Error: " + err.Error())
	}
	return out
}

func (w *Workspace) read(s *hygiene.Session, a callArgs) (string, error) {
	abs, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", abs, unwrapPathError(err))
	}
	return s.Read(hygiene.ReadRequest{Path: a.Path, AbsPath: abs, Content: data, Offset: a.Offset, Limit: a.Limit}), nil
}

func (w *Workspace) list(s *hygiene.Session, a callArgs) (string, error) {
	abs, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("list %s: %w", abs, unwrapPathError(err))
	} else if !fi.IsDir() {
		return "", fmt.Errorf("list %s: not a directory (read shows a file)", abs)
	}
	var lines []string
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == abs {
			return nil
		}
		rel, _ := filepath.Rel(w.Root, p)
		if d.IsDir() {
			rel += "/"
		}
		lines = append(lines, rel)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", abs, unwrapPathError(err))
	}
	if len(lines) == 0 {
		return s.Result(fmt.Sprintf("%s is empty.", abs)), nil
	}
	return s.Result(strings.Join(lines, "\n")), nil
}

// grep names each match by its absolute path (spec 3.2.0 §1: a search's results name the
// absolute path).
func (w *Workspace) grep(s *hygiene.Session, a callArgs) (string, error) {
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	abs, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	var out []string
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range hygiene.Lines(string(data)) {
			if re.MatchString(line) {
				out = append(out, fmt.Sprintf("%s:%d: %s", p, i+1, line))
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("grep %s: %w", abs, unwrapPathError(err))
	}
	if len(out) == 0 {
		return s.Result("No matches."), nil
	}
	return s.Result(strings.Join(out, "\n")), nil
}

func (w *Workspace) edit(s *hygiene.Session, a callArgs) (string, error) {
	abs, err := w.resolve(a.Path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("edit %s: %w", abs, unwrapPathError(err))
	}
	old := string(data)
	switch n := strings.Count(old, a.OldString); {
	case a.OldString == "":
		return "", fmt.Errorf("edit %s: old_string is empty", abs)
	case n == 0:
		return "", fmt.Errorf("edit %s: old_string not found", abs)
	case n > 1:
		return "", fmt.Errorf("edit %s: old_string occurs %d times; give more context so it occurs once", abs, n)
	}
	updated := strings.Replace(old, a.OldString, a.NewString, 1)
	if err := os.WriteFile(abs, []byte(updated), 0o644); err != nil {
		return "", fmt.Errorf("edit %s: %w", abs, err)
	}
	return s.Edited(a.Path, []byte(updated), Hunks(old, updated)), nil
}

// Hunks returns the unified diff of old → new with three lines of context, hunks only: no
// ---/+++ header, since the path is in the result's bracket (spec 3.2.0 §5).
func Hunks(old, new string) string {
	d := udiff.Unified("a", "b", old, new)
	if i := strings.Index(d, "@@"); i >= 0 {
		d = d[i:]
	}
	return strings.TrimSuffix(d, "\n")
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// joinDir joins a base folder and a relative one; "" and "." mean base itself.
func joinDir(base, rel string) string {
	if rel == "" || rel == "." {
		return base
	}
	return filepath.Join(base, rel)
}
