package scriptmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"lab/chat"
)

// Env is what [Map] knows of the agent beyond its tool list.
type Env struct {
	// Project is the agent's working directory, an absolute path: the root a script's relative
	// paths are joined to where a tool wants an absolute path (Claude Code's file_path, Qwen
	// Code's read_file) and the working directory a shell tool is given where one is filled.
	Project string
	// Agent is the agent's name as lab agents knows it (codex, claude, opencode, pi, qwen), or ""
	// when unknown: it picks what the tool schemas leave open ([knownAgents]). A name the table
	// does not hold counts as "".
	Agent string
}

// agentQuirks is what one agent needs that its tool schemas do not say.
type agentQuirks struct {
	// absolutePaths: every file tool's path argument is absolute, whatever its description.
	absolutePaths bool
	// workdir names the shell tool's working-directory parameter that is filled with
	// Env.Project even though it is optional ("" none).
	workdir string
}

// knownAgents is what the schemas leave open, per agent (the names of agents/agents.json):
//
//   - codex: exec_command's `cmd` is one string the user's shell runs (a PTY); its optional
//     `workdir` ("Defaults to the turn cwd") is given as Env.Project so that a resumed session
//     run elsewhere still works in the project. Codex sends no file tools: reads, edits and
//     writes go through the shell.
//   - claude: Claude Code's Read, Edit and Write take an absolute file_path ("`file_path` must
//     be an absolute path"); its Bash runs in the project.
//   - opencode: read, edit and write take an absolute filePath.
//   - qwen: Qwen Code's read_file, write_file and edit take an absolute file_path ("Relative
//     paths are not supported").
//   - pi: paths are "relative or absolute", resolved against the working directory.
var knownAgents = map[string]agentQuirks{
	"codex":    {workdir: "workdir"},
	"claude":   {absolutePaths: true},
	"opencode": {absolutePaths: true},
	"qwen":     {absolutePaths: true},
	"pi":       {},
}

// The names and parameter names Map looks for, in order of preference. A name matches a tool's
// name case-insensitively.
var (
	readTools  = []string{"Read", "read_file", "read", "view"}
	listTools  = []string{"LS", "list_directory", "ls", "list", "list_dir"}
	globTools  = []string{"glob", "Glob"}
	grepTools  = []string{"Grep", "grep_search", "grep", "search_file_content"}
	editTools  = []string{"Edit", "edit", "replace", "edit_file"}
	writeTools = []string{"Write", "write_file", "write", "create_file"}
	shellTools = []string{"Bash", "bash", "shell", "shell_command", "run_shell_command", "exec_command", "run_command", "execute_command"}

	filePathParams = []string{"file_path", "path", "filePath", "absolute_path"}
	dirPathParams  = []string{"path", "dir_path", "directory", "dir", "absolute_path", "dirPath"}
	oldParams      = []string{"old_string", "oldString", "oldText", "old_str"}
	newParams      = []string{"new_string", "newString", "newText", "new_str"}
	contentParams  = []string{"content", "contents", "file_text", "text"}
	commandParams  = []string{"command", "cmd"}
	workdirParams  = []string{"workdir", "cwd", "directory", "working_directory", "dir"}
)

// Map turns one intent into a call of a tool from the agent's own tool list (the request's
// tools, as the lab's decoders read them: openai.DecodeChatRequest, DecodeResponsesRequest,
// anthropic.DecodeRequest). It looks for the intent's dedicated tool by name and parameters
// (read: Read, read_file, read, view with file_path, path, filePath or absolute_path; list: LS,
// list_directory, ls, list or else glob with a pattern; grep: Grep, grep_search, grep,
// search_file_content with pattern; edit: Edit, edit, replace, edit_file with
// old_string/new_string, oldString/newString, oldText/newText or pi's
// edits: [{oldText, newText}]; write: Write, write_file, write with content) and fills the
// required parameters it understands, leaving the optional ones out; a tool that requires a
// parameter Map does not understand is not used. A path parameter whose name or description
// says absolute (and not "relative or absolute") gets env.Project joined with the path.
//
// Without a dedicated tool the intent goes to the shell tool (Bash, bash, shell,
// shell_command, run_shell_command, exec_command with command or cmd) as an equivalent
// command: read `cat PATH`, list `ls -la DIR`, grep `grep -rnE PATTERN .`, edit a perl
// program that replaces the one occurrence of the old text (and fails when there is none or
// more than one), write `printf '%s' TEXT > PATH`. A string parameter gets one command line,
// its arguments in single quotes where they need any; an array parameter (Codex's older shell
// tool, command: [..]) gets the argv, no shell quoting ("bash", "-lc", COMMAND for run).
//
// call's Arguments is a JSON object with its keys in a fixed order (the main argument first);
// its ID is empty, for the caller to give. When the agent has neither a dedicated tool nor a
// shell, skipped says so ("no tool for read in the agent's tool list (…)") and err is nil.
// err is for a bad intent ([Intent.Validate]), an answer (which is the turn's reply, no tool
// call) and an env.Project that is not absolute where an absolute path is needed.
func Map(in Intent, tools []chat.Tool, env Env) (call chat.ToolCall, skipped string, err error) {
	if err := in.Validate(); err != nil {
		return chat.ToolCall{}, "", err
	}
	if in.Kind == KindAnswer {
		return chat.ToolCall{}, "", fmt.Errorf("answer: no tool call: an answer is the turn's final text reply")
	}
	m := mapper{env: env, quirks: knownAgents[env.Agent]}
	for _, t := range tools {
		m.tools = append(m.tools, parseTool(t))
	}
	var name string
	var args obj
	var ok bool
	switch in.Kind {
	case KindRead:
		name, args, ok = m.pick(readTools, func(t *toolSchema) (obj, bool) {
			return m.withPath(t, filePathParams, in.Path, nil)
		})
	case KindList:
		name, args, ok = m.pick(listTools, func(t *toolSchema) (obj, bool) {
			return m.withPath(t, dirPathParams, in.Path, nil)
		})
		if !ok {
			name, args, ok = m.pick(globTools, func(t *toolSchema) (obj, bool) { return m.glob(t, in.Path) })
		}
	case KindGrep:
		name, args, ok = m.pick(grepTools, func(t *toolSchema) (obj, bool) { return m.grep(t, in.Pattern) })
	case KindEdit:
		name, args, ok = m.pick(editTools, func(t *toolSchema) (obj, bool) { return m.edit(t, in) })
	case KindWrite:
		name, args, ok = m.pick(writeTools, func(t *toolSchema) (obj, bool) {
			p := t.param(contentParams, "string")
			if p == nil {
				return nil, false
			}
			return m.withPath(t, filePathParams, in.Path, obj{{p.name, in.Text}})
		})
	case KindRun:
		name, args, ok = m.pick(shellTools, func(t *toolSchema) (obj, bool) {
			return m.shell(t, in.Command, []string{"bash", "-lc", in.Command})
		})
	}
	if !ok && in.Kind != KindRun {
		line, argv := fallback(in)
		name, args, ok = m.pick(shellTools, func(t *toolSchema) (obj, bool) { return m.shell(t, line, argv) })
	}
	if m.err != nil {
		return chat.ToolCall{}, "", m.err
	}
	if !ok {
		return chat.ToolCall{}, fmt.Sprintf("no tool for %s in the agent's tool list (%s)", in.Kind, m.names()), nil
	}
	raw, err := args.MarshalJSON()
	if err != nil {
		return chat.ToolCall{}, "", err
	}
	return chat.ToolCall{Name: name, Arguments: raw}, "", nil
}

// mapper holds one Map call's tools and environment.
type mapper struct {
	env    Env
	quirks agentQuirks
	tools  []*toolSchema
	// err is the first environment error (a relative env.Project where an absolute path is
	// needed).
	err error
}

// pick returns the first tool, in the order of names and then of the tool list, that fit
// fills.
func (m *mapper) pick(names []string, fit func(*toolSchema) (obj, bool)) (string, obj, bool) {
	for _, n := range names {
		for _, t := range m.tools {
			if !strings.EqualFold(t.Name, n) {
				continue
			}
			if args, ok := fit(t); ok && t.fills(args) {
				return t.Name, args, true
			}
		}
	}
	return "", nil, false
}

// names lists the tools' names for a skipped message.
func (m *mapper) names() string {
	if len(m.tools) == 0 {
		return "no tools"
	}
	var ns []string
	for _, t := range m.tools {
		ns = append(ns, t.Name)
	}
	return strings.Join(ns, ", ")
}

// withPath fills t's path parameter (the first of params that t has as a string) with p,
// absolute where the parameter wants it, after the arguments before.
func (m *mapper) withPath(t *toolSchema, params []string, p string, after obj) (obj, bool) {
	pp := t.param(params, "string")
	if pp == nil {
		return nil, false
	}
	return append(obj{{pp.name, m.pathFor(pp, p)}}, after...), true
}

// pathFor is the path p for the parameter pp: joined with the project when pp wants an
// absolute path.
func (m *mapper) pathFor(pp *param, p string) string {
	if !m.quirks.absolutePaths && !pp.absolute() {
		return p
	}
	if !path.IsAbs(m.env.Project) {
		if m.err == nil {
			m.err = fmt.Errorf("scriptmodel: Env.Project %q: want the agent's working directory as an absolute path (tool parameter %s wants one)", m.env.Project, pp.name)
		}
		return p
	}
	return path.Join(m.env.Project, p)
}

// glob lists dir with a glob tool: pattern "*" for the root, "DIR/*" otherwise.
func (m *mapper) glob(t *toolSchema, dir string) (obj, bool) {
	pat := t.param([]string{"pattern"}, "string")
	if pat == nil {
		return nil, false
	}
	g := "*"
	if dir != "." {
		g = dir + "/*"
	}
	args := obj{{pat.name, g}}
	if pp := t.param(dirPathParams, "string"); pp != nil && t.required[pp.name] {
		args = append(args, kv{pp.name, m.pathFor(pp, ".")})
	}
	return args, true
}

// grep searches the project with a grep tool; a required path parameter gets the root.
func (m *mapper) grep(t *toolSchema, pattern string) (obj, bool) {
	pat := t.param([]string{"pattern"}, "string")
	if pat == nil {
		return nil, false
	}
	args := obj{{pat.name, pattern}}
	if pp := t.param(dirPathParams, "string"); pp != nil && t.required[pp.name] {
		args = append(args, kv{pp.name, m.pathFor(pp, ".")})
	}
	return args, true
}

// edit fills an edit tool: old and new texts as parameters of their own, or as the one entry
// of an `edits` array of objects (pi).
func (m *mapper) edit(t *toolSchema, in Intent) (obj, bool) {
	if o, n := t.param(oldParams, "string"), t.param(newParams, "string"); o != nil && n != nil {
		return m.withPath(t, filePathParams, in.Path, obj{{o.name, in.Old}, {n.name, in.New}})
	}
	e := t.param([]string{"edits"}, "array")
	if e == nil || e.items == nil {
		return nil, false
	}
	o, n := e.items.param(oldParams, "string"), e.items.param(newParams, "string")
	if o == nil || n == nil {
		return nil, false
	}
	entry := obj{{o.name, in.Old}, {n.name, in.New}}
	if !e.items.fills(entry) {
		return nil, false
	}
	return m.withPath(t, filePathParams, in.Path, obj{{e.name, []any{entry}}})
}

// shell fills a shell tool with a command: line for a string parameter, argv for an array one;
// a working directory where the agent's quirks name one or the tool requires it.
func (m *mapper) shell(t *toolSchema, line string, argv []string) (obj, bool) {
	var args obj
	if p := t.param(commandParams, "string"); p != nil {
		args = obj{{p.name, line}}
	} else if p := t.param(commandParams, "array"); p != nil {
		args = obj{{p.name, argv}}
	} else {
		return nil, false
	}
	for _, name := range workdirParams {
		p := t.props[name]
		if p == nil || !p.is("string") || (!t.required[name] && name != m.quirks.workdir) {
			continue
		}
		if !path.IsAbs(m.env.Project) {
			if m.err == nil {
				m.err = fmt.Errorf("scriptmodel: Env.Project %q: want the agent's working directory as an absolute path (tool parameter %s wants one)", m.env.Project, name)
			}
			return nil, false
		}
		args = append(args, kv{name, m.env.Project})
		break
	}
	return args, true
}

// perlEdit replaces the one occurrence of the old text in a file: perl -e PROGRAM FILE OLD NEW.
// It works on bytes, dies (exit status 255, a message on stderr) when the text is not in the
// file or is there more than once, and holds no single quote, so that it goes between single
// quotes as it is.
const perlEdit = `my ($f, $o, $n) = @ARGV; open(my $h, "<", $f) or die "$f: $!\n"; my $s = do { local $/; <$h> }; close $h; ` +
	`my $i = index($s, $o); die "$f: the old text is not in the file\n" if $i < 0; ` +
	`die "$f: the old text is in the file more than once\n" if index($s, $o, $i + 1) >= 0; ` +
	`substr($s, $i, length $o) = $n; open($h, ">", $f) or die "$f: $!\n"; print $h $s; close $h or die "$f: $!\n"; print "edited $f\n";`

// writeScript writes $2 to the file $1 exactly: sh -c writeScript sh FILE TEXT.
const writeScript = `printf '%s' "$2" > "$1"`

// fallback is the shell command for an intent without a dedicated tool: a command line for a
// shell, and the argv for a tool that takes one.
func fallback(in Intent) (line string, argv []string) {
	switch in.Kind {
	case KindRead:
		argv = []string{"cat", in.Path}
	case KindList:
		argv = []string{"ls", "-la", in.Path}
	case KindGrep:
		argv = []string{"grep", "-rnE", in.Pattern, "."}
		if strings.HasPrefix(in.Pattern, "-") {
			argv = []string{"grep", "-rnE", "-e", in.Pattern, "."}
		}
	case KindEdit:
		argv = []string{"perl", "-e", perlEdit, in.Path, in.Old, in.New}
	case KindWrite:
		line = "printf '%s' " + shellQuote(in.Text) + " > " + shellQuote(in.Path)
		argv = []string{"sh", "-c", writeScript, "sh", in.Path, in.Text}
		if d := path.Dir(in.Path); d != "." {
			line = "mkdir -p " + shellQuote(d) + " && " + line
			argv = []string{"sh", "-c", `mkdir -p "$(dirname "$1")" && ` + writeScript, "sh", in.Path, in.Text}
		}
		return line, argv
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " "), argv
}

// shellSafe is what a shell word can hold without quotes, in sh, bash and zsh alike (no '=',
// which zsh expands at a word's start, no '^', a pipe in the Bourne shell).
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:,+@%-]+$`)

// shellQuote quotes s for a POSIX shell: as it is when it needs no quotes, else between single
// quotes, each single quote inside written as the four bytes quote, backslash, quote, quote.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// toolSchema is a tool with its JSON-schema parameters read.
type toolSchema struct {
	chat.Tool
	*schema
}

// schema is the part of a JSON Schema object that Map reads.
type schema struct {
	props    map[string]*param
	required map[string]bool
}

// param is one property of a schema.
type param struct {
	name  string
	types []string
	desc  string
	items *schema
}

// is reports whether the parameter takes JSON type typ.
func (p *param) is(typ string) bool {
	for _, t := range p.types {
		if t == typ {
			return true
		}
	}
	return false
}

// absolute reports whether the parameter wants an absolute path: its name or description says
// so, and the description does not allow a relative one ("relative or absolute").
func (p *param) absolute() bool {
	d := strings.ToLower(p.desc)
	if strings.Contains(d, "relative or absolute") || strings.Contains(d, "absolute or relative") {
		return false
	}
	return strings.Contains(strings.ToLower(p.name), "absolute") || strings.Contains(d, "absolute")
}

// param returns the first of names that the schema has as a property taking typ, nil if none.
func (s *schema) param(names []string, typ string) *param {
	if s == nil {
		return nil
	}
	for _, n := range names {
		if p := s.props[n]; p != nil && p.is(typ) {
			return p
		}
	}
	return nil
}

// fills reports whether args gives every required property.
func (s *schema) fills(args obj) bool {
	if s == nil {
		return false
	}
	for r := range s.required {
		if !args.has(r) {
			return false
		}
	}
	return true
}

// parseTool reads a tool's parameters; a tool whose parameters are no JSON Schema object (a
// custom tool's grammar, a web_search tool's own JSON) gets an empty schema, which fits no
// intent.
func parseTool(t chat.Tool) *toolSchema {
	s, _ := parseSchema(t.Parameters)
	if s == nil {
		s = &schema{}
	}
	return &toolSchema{Tool: t, schema: s}
}

// rawSchema is a JSON Schema as sent.
type rawSchema struct {
	Type        json.RawMessage            `json:"type"`
	Description string                     `json:"description"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Required    []string                   `json:"required"`
	Items       json.RawMessage            `json:"items"`
	AnyOf       []json.RawMessage          `json:"anyOf"`
	OneOf       []json.RawMessage          `json:"oneOf"`
}

func parseSchema(raw json.RawMessage) (*schema, error) {
	var r rawSchema
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	s := &schema{props: map[string]*param{}, required: map[string]bool{}}
	for _, n := range r.Required {
		s.required[n] = true
	}
	for name, pr := range r.Properties {
		var p rawSchema
		if err := json.Unmarshal(pr, &p); err != nil {
			continue
		}
		par := &param{name: name, desc: p.Description, types: types(p)}
		if len(p.Items) > 0 {
			par.items, _ = parseSchema(p.Items)
		}
		s.props[name] = par
	}
	return s, nil
}

// types lists the JSON types a schema allows: its "type" (a string or an array of them), else
// the types of its anyOf or oneOf branches.
func types(r rawSchema) []string {
	var one string
	var many []string
	if json.Unmarshal(r.Type, &one) == nil && one != "" {
		return []string{one}
	}
	if json.Unmarshal(r.Type, &many) == nil && len(many) > 0 {
		return many
	}
	var out []string
	for _, b := range append(r.AnyOf, r.OneOf...) {
		var br rawSchema
		if json.Unmarshal(b, &br) == nil {
			out = append(out, types(br)...)
		}
	}
	return out
}

// has reports whether o holds key k.
func (o obj) has(k string) bool {
	for _, e := range o {
		if e.k == k {
			return true
		}
	}
	return false
}

// encode writes v as JSON without HTML escaping and without the encoder's newline.
func encode(b *bytes.Buffer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}
