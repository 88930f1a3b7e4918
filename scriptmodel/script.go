// Package scriptmodel is the scripted model: an HTTP endpoint that real coding agents (Codex,
// Claude Code, opencode, Qwen Code, pi) talk to as if it were a model server. It answers each
// request with the next step of a script, a tool call the agent then runs for real on a scratch
// workspace or the turn's final text reply, so that a run measures the agent's own prompt-cache
// reuse over a conversation that does the same work for every agent.
//
// A script is written as intents (read a file, run a command, …) that any agent can follow;
// [Map] turns one intent into a call of a tool from the tool list the agent itself sent.
package scriptmodel

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"lab/internal/fileerr"
)

// The intent kinds: the first word of a step.
const (
	// KindRead reads the file Path.
	KindRead = "read"
	// KindList lists the directory Path.
	KindList = "list"
	// KindGrep searches the project's files for Pattern (a regular expression).
	KindGrep = "grep"
	// KindEdit replaces the one occurrence of Old in the file Path by New.
	KindEdit = "edit"
	// KindWrite writes Text to the file Path, replacing what it held.
	KindWrite = "write"
	// KindRun runs Command with a shell in the project's directory.
	KindRun = "run"
	// KindAnswer is the turn's final text reply, Text; it is no tool call.
	KindAnswer = "answer"
)

// Kinds lists the intent kinds in the order the script format's documentation gives them.
var Kinds = []string{KindRead, KindList, KindGrep, KindEdit, KindWrite, KindRun, KindAnswer}

// Script is a scripted conversation: turns of a user prompt and the steps the model takes to
// answer it. Its file format is YAML:
//
//	name: fix-greeting
//	turns:
//	  - user: "The greeting is wrong. Fix it."
//	    steps:
//	      - read greet.go
//	      - edit greet.go "Hello, " → "Hi, "
//	      - do: run go test ./...
//	        reasoning: The tests check the greeting.
//	      - answer "Fixed."
//
// See [Step] for a step's forms and [ParseIntent] for the intents. A step that holds ": " or
// " #" is quoted for YAML as a whole, best in single quotes, which keep backslashes as they
// are: - 'answer "Done: all tests pass."'.
type Script struct {
	// Name identifies the script in results: lower-case letters, digits, '.', '_' and '-'.
	Name string `yaml:"name"`
	// Turns are the conversation's turns, in order; at least one.
	Turns []Turn `yaml:"turns"`
	// Midnight is the 1-based turn before which the agent's clock crosses midnight: the turns
	// before it run late in the evening of one day and it and those after it early on the next
	// (lab agents sets each turn's local time zone, agents.MidnightZones), as when a user comes
	// back to a session after midnight. 0 (the field left out) keeps the machine's clock; else 2
	// to the number of turns.
	Midnight int `yaml:"midnight"`
}

// Turn is one turn of a script: the prompt the agent is given (lab agents passes it on the
// agent's command line) and the model's steps until its final answer.
type Turn struct {
	// User is the user's prompt for this turn; not empty.
	User string
	// Steps are the model's steps, in order: tool-call intents, the last one (and only it) an
	// answer.
	Steps []Step
	// Line is the turn's 1-based line in the script file.
	Line int
}

// Step is one reply of the scripted model. In the script file it is either a string, the
// intent ("read greet.go"), or a mapping {do: INTENT, reasoning: TEXT} that also carries the
// reasoning text the reply gives before the call or answer.
type Step struct {
	// Intent is what the step does.
	Intent Intent
	// Reasoning is the model's reasoning text for this reply; "" for none.
	Reasoning string
	// Line is the step's 1-based line in the script file.
	Line int
}

// Intent is one step's action, independent of any agent's tool names: Kind is one of
// [Kinds], and the fields that kind uses are set (paths relative to the project's root, with
// '/' separators).
type Intent struct {
	// Kind is the intent's kind, such as [KindRead].
	Kind string
	// Path is the file of read, edit and write, or the directory of list ("." the root).
	Path string
	// Pattern is grep's regular expression.
	Pattern string
	// Old and New are edit's texts: Old (not empty) occurs exactly once in the file and is
	// replaced by New.
	Old, New string
	// Text is write's content (may be empty) or answer's reply (not empty).
	Text string
	// Command is run's shell command line, exactly as written.
	Command string
}

// SyntaxError is a problem in a script file, at a line: it prints as "file:line: message". It
// is [fileerr.SyntaxError], the lab's one type for a wrong file the user wrote.
type SyntaxError = fileerr.SyntaxError

// LoadScript reads and checks the script file at path: see [ParseScript]. A file that cannot be
// read is an error that is no *SyntaxError.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("load script %s: %w", path, err)
	}
	return ParseScript(path, data)
}

//go:embed scripts/default.yaml
var defaultScript []byte

//go:embed scripts/default-workspace.txtar
var defaultWorkspace []byte

// DefaultScriptName is how errors and results name the embedded default script.
const DefaultScriptName = "scriptmodel/scripts/default.yaml"

// DefaultScript returns the embedded default script (scripts/default.yaml): three turns over
// [DefaultWorkspace], a small Go project, with an unchanged re-read of a file, an edit and a
// re-read after it, the same search twice and a command with a long output. It panics if the
// embedded file does not parse, which the package's tests rule out.
func DefaultScript() *Script {
	s, err := ParseScript(DefaultScriptName, defaultScript)
	if err != nil {
		panic(err)
	}
	return s
}

// DefaultWorkspace returns the files of the default script's workspace, path (relative, '/'
// separators) to content: go.mod, main.go, greet.go (Greet returns "Hello, "+name+"!"),
// greet_test.go and README.md, read from the embedded txtar archive
// scripts/default-workspace.txtar.
func DefaultWorkspace() map[string]string {
	files := map[string]string{}
	for _, f := range txtar.Parse(defaultWorkspace).Files {
		files[f.Name] = string(f.Data)
	}
	return files
}

// scriptName is what a script's name may be: it names result rows and files.
var scriptName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// ParseScript decodes and checks a script file's bytes strictly; name is how errors name the
// file. An unknown field, a turn without a user prompt or steps, a turn that does not end with
// an answer (or answers before its last step), an unknown intent, a missing or malformed
// argument and a path that is absolute or holds ".." are a *SyntaxError "name:line: message".
func ParseScript(name string, data []byte) (*Script, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &SyntaxError{File: name, Msg: "empty file"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fileerr.FromYAML(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, fileerr.FromYAML(name, err)
		}
		return nil, &SyntaxError{File: name, Line: extra.Line, Msg: "a second YAML document: a script file holds one"}
	}
	bad := func(line int, format string, args ...any) error {
		return &SyntaxError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Name == "" {
		return nil, bad(0, "missing field name")
	}
	if !scriptName.MatchString(s.Name) {
		return nil, bad(fileerr.TopKeyLine(data, "name"), "name %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", s.Name)
	}
	if len(s.Turns) == 0 {
		return nil, bad(fileerr.TopKeyLine(data, "turns"), "no turns")
	}
	if s.Midnight != 0 && (s.Midnight < 2 || s.Midnight > len(s.Turns)) {
		if len(s.Turns) < 2 {
			return nil, bad(fileerr.TopKeyLine(data, "midnight"), "midnight %d: a script of one turn has no turn for the clock to cross midnight before; leave it out", s.Midnight)
		}
		return nil, bad(fileerr.TopKeyLine(data, "midnight"), "midnight %d: want the turn (2 to %d) before which the clock crosses midnight, or leave it out", s.Midnight, len(s.Turns))
	}
	for i, t := range s.Turns {
		if len(t.Steps) == 0 {
			return nil, bad(t.Line, "turn %d: no steps (a turn ends with an answer step)", i+1)
		}
		for j, st := range t.Steps {
			last := j == len(t.Steps)-1
			switch {
			case st.Intent.Kind == KindAnswer && !last:
				return nil, bad(st.Line, "answer before the turn's last step: an answer ends the turn")
			case st.Intent.Kind != KindAnswer && last:
				return nil, bad(st.Line, "turn %d ends with %s: a turn's last step is an answer", i+1, st.Intent.Kind)
			}
		}
	}
	return &s, nil
}

// UnmarshalYAML decodes a turn, a mapping of user and steps, keeping its line.
func (t *Turn) UnmarshalYAML(n *yaml.Node) error {
	n = resolve(n)
	t.Line = n.Line
	if n.Kind != yaml.MappingNode {
		return &SyntaxError{Line: n.Line, Msg: "a turn is a mapping of user and steps"}
	}
	var user, steps bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		switch k.Value {
		case "user":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return &SyntaxError{Line: v.Line, Msg: "user: want a string"}
			}
			t.User, user = v.Value, true
		case "steps":
			if v.Kind != yaml.SequenceNode {
				return &SyntaxError{Line: v.Line, Msg: "steps: want a list of steps"}
			}
			t.Steps = make([]Step, len(v.Content))
			for j, sn := range v.Content {
				if err := t.Steps[j].UnmarshalYAML(sn); err != nil {
					return err
				}
			}
			steps = true
		default:
			return &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("turn: unknown field %q (want user, steps)", k.Value)}
		}
	}
	switch {
	case !user:
		return &SyntaxError{Line: n.Line, Msg: "turn: missing field user"}
	case strings.TrimSpace(t.User) == "":
		return &SyntaxError{Line: n.Line, Msg: "turn: user: empty prompt"}
	case !steps:
		return &SyntaxError{Line: n.Line, Msg: "turn: missing field steps"}
	}
	return nil
}

// UnmarshalYAML decodes a step, a string (the intent) or a mapping of do (the intent) and
// reasoning, keeping its line.
func (st *Step) UnmarshalYAML(n *yaml.Node) error {
	n = resolve(n)
	st.Line = n.Line
	var do string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return &SyntaxError{Line: n.Line, Msg: "empty step: want an intent such as \"read main.go\""}
		}
		do = n.Value
	case yaml.MappingNode:
		seen := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			if k.Value != "do" && k.Value != "reasoning" {
				return &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("step: unknown field %q (want do, reasoning)", k.Value)}
			}
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return &SyntaxError{Line: v.Line, Msg: "step: " + k.Value + ": want a string"}
			}
			if k.Value == "do" {
				do, seen = v.Value, true
			} else {
				st.Reasoning = v.Value
			}
		}
		if !seen {
			return &SyntaxError{Line: n.Line, Msg: "step: missing field do (the intent)"}
		}
	default:
		return &SyntaxError{Line: n.Line, Msg: "a step is a string (the intent) or a mapping of do and reasoning"}
	}
	in, err := ParseIntent(do)
	if err != nil {
		return &SyntaxError{Line: n.Line, Msg: err.Error()}
	}
	st.Intent = in
	return nil
}

// ParseIntent parses one step's intent: its first word is the kind, the rest its arguments.
//
//	read PATH             list DIR              grep PATTERN
//	edit PATH OLD → NEW   write PATH TEXT       run COMMAND
//	answer TEXT
//
// PATH and DIR are one word or a quoted string. OLD and NEW are quoted strings, joined by "→"
// or "->". PATTERN, TEXT and COMMAND are a quoted string or else the rest of the line as
// written (COMMAND always the rest, quotes and all). A quoted string is a Go double-quoted
// string literal: escapes \n, \t, \", \\ and \uXXXX; a raw newline in it stands for itself.
// Paths are relative to the project's root, without "..". A bad intent is an error naming the
// kind and the argument; the intent is checked with [Intent.Validate].
func ParseIntent(s string) (Intent, error) {
	s = strings.TrimSpace(s)
	kind, rest := s, ""
	if i := strings.IndexAny(s, " \t\n"); i >= 0 {
		kind, rest = s[:i], s[i+1:]
	}
	rest = strings.TrimSpace(rest)
	in := Intent{Kind: kind}
	var err error
	switch kind {
	case KindRead, KindList:
		if in.Path, rest, err = word(rest, kind, "the path"); err == nil && rest != "" {
			err = fmt.Errorf("%s: unexpected text after the path: %q", kind, rest)
		}
	case KindGrep:
		in.Pattern, err = textArg(rest, kind, "the pattern")
	case KindRun:
		in.Command = rest
	case KindAnswer:
		in.Text, err = textArg(rest, kind, "the text")
	case KindWrite:
		if in.Path, rest, err = word(rest, kind, "the path"); err == nil {
			if rest == "" {
				err = fmt.Errorf("write: missing argument: the text (write PATH TEXT; \"\" for an empty file)")
			} else {
				in.Text, err = textArg(rest, kind, "the text")
			}
		}
	case KindEdit:
		in.Path, in.Old, in.New, err = editArgs(rest)
	case "":
		return in, fmt.Errorf("empty step: want an intent such as \"read main.go\"")
	default:
		return in, fmt.Errorf("unknown intent %q (want %s)", kind, strings.Join(Kinds, ", "))
	}
	if err != nil {
		return in, err
	}
	if err := in.Validate(); err != nil {
		return in, err
	}
	if in.Path != "" {
		in.Path = path.Clean(in.Path)
	}
	return in, nil
}

// Validate checks that the intent's kind is known and that it has the arguments its kind needs:
// a relative path without ".." (read, list, edit, write), a pattern, a command, a non-empty old
// text different from the new one (edit), a non-empty answer. The error names the kind and the
// argument.
func (in Intent) Validate() error {
	switch in.Kind {
	case KindRead, KindList, KindEdit, KindWrite:
		if err := checkPath(in.Path); err != nil {
			return fmt.Errorf("%s: %v", in.Kind, err)
		}
	case KindGrep, KindRun, KindAnswer:
	default:
		return fmt.Errorf("unknown intent %q (want %s)", in.Kind, strings.Join(Kinds, ", "))
	}
	switch {
	case in.Kind == KindGrep && in.Pattern == "":
		return fmt.Errorf("grep: missing argument: the pattern")
	case in.Kind == KindRun && strings.TrimSpace(in.Command) == "":
		return fmt.Errorf("run: missing argument: the command")
	case in.Kind == KindAnswer && strings.TrimSpace(in.Text) == "":
		return fmt.Errorf("answer: missing argument: the text")
	case in.Kind == KindEdit && in.Old == "":
		return fmt.Errorf("edit: the old text is empty: it must occur exactly once in the file")
	case in.Kind == KindEdit && in.Old == in.New:
		return fmt.Errorf("edit: the old and the new text are the same")
	}
	return nil
}

// String writes the intent back in the script format of [ParseIntent].
func (in Intent) String() string {
	q := func(s string) string {
		if s != "" && !strings.ContainsAny(s, " \t\n\"\\") {
			return s
		}
		return strconv.Quote(s)
	}
	switch in.Kind {
	case KindRead, KindList:
		return in.Kind + " " + q(in.Path)
	case KindGrep:
		return "grep " + strconv.Quote(in.Pattern)
	case KindEdit:
		return "edit " + q(in.Path) + " " + strconv.Quote(in.Old) + " → " + strconv.Quote(in.New)
	case KindWrite:
		return "write " + q(in.Path) + " " + strconv.Quote(in.Text)
	case KindRun:
		return "run " + in.Command
	case KindAnswer:
		return "answer " + strconv.Quote(in.Text)
	}
	return in.Kind
}

// checkPath refuses a path that is empty, absolute, starts with "~", holds a NUL byte or has a
// ".." component: a script's paths stay inside the project.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("missing argument: the path")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q holds a NUL byte", p)
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':'):
		return fmt.Errorf("path %q is absolute: a script's paths are relative to the project's root", p)
	}
	for _, c := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return fmt.Errorf("path %q holds \"..\": a script's paths stay inside the project", p)
		}
	}
	return nil
}

// word takes one argument off s: a quoted string or a word up to the next white space.
func word(s, kind, what string) (arg, rest string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("%s: missing argument: %s", kind, what)
	}
	if s[0] == '"' {
		arg, rest, err = quoted(s)
		if err != nil {
			return "", "", fmt.Errorf("%s: %s: %v", kind, what, err)
		}
		return arg, strings.TrimSpace(rest), nil
	}
	if i := strings.IndexAny(s, " \t\n"); i >= 0 {
		return s[:i], strings.TrimSpace(s[i:]), nil
	}
	return s, "", nil
}

// textArg is an argument that is the rest of s: a quoted string, or s as written.
func textArg(s, kind, what string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%s: missing argument: %s", kind, what)
	}
	if s[0] != '"' {
		return s, nil
	}
	arg, rest, err := quoted(s)
	if err != nil {
		return "", fmt.Errorf("%s: %s: %v", kind, what, err)
	}
	if rest = strings.TrimSpace(rest); rest != "" {
		return "", fmt.Errorf("%s: unexpected text after the quoted %s: %q", kind, strings.TrimPrefix(what, "the "), rest)
	}
	return arg, nil
}

// editArgs parses edit's arguments: PATH "OLD" → "NEW" (or ->).
func editArgs(s string) (p, old, new string, err error) {
	p, rest, err := word(s, KindEdit, "the path")
	if err != nil {
		return "", "", "", err
	}
	const form = `edit PATH "OLD" → "NEW"`
	if rest == "" || rest[0] != '"' {
		return "", "", "", fmt.Errorf("edit: missing argument: the old text, a quoted string (%s)", form)
	}
	if old, rest, err = quoted(rest); err != nil {
		return "", "", "", fmt.Errorf("edit: the old text: %v", err)
	}
	rest = strings.TrimSpace(rest)
	arrow := ""
	for _, a := range []string{"→", "->"} {
		if strings.HasPrefix(rest, a) {
			arrow = a
		}
	}
	if arrow == "" {
		return "", "", "", fmt.Errorf("edit: want → or -> after the old text (%s)", form)
	}
	rest = strings.TrimSpace(rest[len(arrow):])
	if rest == "" || rest[0] != '"' {
		return "", "", "", fmt.Errorf("edit: missing argument: the new text, a quoted string (%s)", form)
	}
	if new, rest, err = quoted(rest); err != nil {
		return "", "", "", fmt.Errorf("edit: the new text: %v", err)
	}
	if rest = strings.TrimSpace(rest); rest != "" {
		return "", "", "", fmt.Errorf("edit: unexpected text after the new text: %q", rest)
	}
	return p, old, new, nil
}

// quoted takes the Go double-quoted string literal at the start of s (s[0] == '"') off s; raw
// newlines and tabs inside it stand for themselves.
func quoted(s string) (val, rest string, err error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			lit := strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(s[:i+1])
			v, err := strconv.Unquote(lit)
			if err != nil {
				return "", "", fmt.Errorf("bad quoted string %s: want Go escapes such as \\n, \\t, \\\" and \\\\", s[:i+1])
			}
			return v, s[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("quoted string %s has no closing quote", s)
}

// resolve follows a YAML alias (*name) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
