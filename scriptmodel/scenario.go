package scriptmodel

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"lab/scenario"
)

// The clock of a script's scenario ([Script.Scenario]): its sessions start late in the
// evening, as the agents' first turns do when the script crosses midnight (lab agents gives
// them a zone reading 22:00–22:59), and a clock step before turn Midnight moves it into the
// next day (the agents' later turns read 00:00–00:59).
const (
	// ScenarioClock is the scenario's start, RFC 3339: 23:50 on a Thursday, UTC+01:00.
	ScenarioClock = "2026-11-05T23:50:00+01:00"
	// ScenarioMidnightStep is the clock step before turn Midnight: 00:10 on the Friday.
	ScenarioMidnightStep = "+20m"
	// ScenarioProject is the scenario's project name, the last component of its root: the
	// folder lab agents runs each agent in.
	ScenarioProject = "project"
)

// scenarioFile and workspaceFile are the names the generated scenario is loaded under.
const (
	scenarioFile  = "scenario.yaml"
	workspaceFile = "workspace.txtar"
)

// Scenario converts s into the lab's own scenario format (package scenario), for the lab's
// own harness to run the session the agents run, over workspace (path → content, as
// [DefaultWorkspace] returns; nil is an empty workspace). It is named "script-" + s.Name, its
// project is [ScenarioProject], and its clock starts at [ScenarioClock], with a clock step of
// [ScenarioMidnightStep] before turn s.Midnight when that is set (none when it is 0).
//
// Each turn is a user step with the turn's prompt, and each step an assistant step with the
// step's reasoning and either one call of the lab's tool for the intent or, for an answer, the
// answer's text:
//
//	read PATH          read {path}
//	list DIR           list {path} ("." lists the root: list {})
//	grep PATTERN       grep {pattern}
//	edit PATH OLD→NEW  edit {path, old_string, new_string}
//	write PATH TEXT    write {path, content}
//	run COMMAND        bash {command}
//
// The scripted driver answers bash from the scenario's commands, which the conversion
// writes: a seq command (seq LAST, seq FIRST LAST or seq FIRST STEP LAST, whole numbers)
// answers what seq prints, and any other command an empty output with exit status 0, since
// what it prints is not known without running it.
//
// The scenario is written as a scenario.yaml and a workspace.txtar and loaded with
// [scenario.LoadScenarioFS], so every check of the scenario format applies: a path the
// workspace does not hold at that step (a read of no file, an edit of one the script never
// created) is an error, as is a workspace file that a txtar archive cannot hold as it is (a
// non-empty file without a final newline, or a line that reads as a file marker), or an
// intent kind the conversion does not know.
func (s *Script) Scenario(workspace map[string]string) (*scenario.Scenario, error) {
	name := "script-" + s.Name
	fail := func(format string, args ...any) error {
		return fmt.Errorf("script %s as a scenario: %s", s.Name, fmt.Sprintf(format, args...))
	}
	arch, err := workspaceArchive(s.Name, workspace)
	if err != nil {
		return nil, fail("%v", err)
	}

	var steps []*yaml.Node
	var commands []string
	for t, tr := range s.Turns {
		if s.Midnight > 0 && t+1 == s.Midnight {
			steps = append(steps, mapping("clock", str(ScenarioMidnightStep)))
		}
		steps = append(steps, mapping("user", str(tr.User)))
		for i, st := range tr.Steps {
			var fields []any
			if st.Reasoning != "" {
				fields = append(fields, "reasoning", str(st.Reasoning))
			}
			in := st.Intent
			if in.Kind == KindAnswer {
				fields = append(fields, "text", str(in.Text))
			} else {
				tool, args, err := scenarioCall(in)
				if err != nil {
					return nil, fail("turn %d step %d (line %d): %v", t+1, i+1, st.Line, err)
				}
				if in.Kind == KindRun && !slices.Contains(commands, in.Command) {
					commands = append(commands, in.Command)
				}
				fields = append(fields, "calls", seq(mapping(tool, args)))
			}
			steps = append(steps, mapping("assistant", mapping(fields...)))
		}
	}

	doc := []any{
		"name", str(name),
		"description", str(fmt.Sprintf("The script %s (package scriptmodel) as the lab's own session: the conversation the agents follow, with the lab's tools.", s.Name)),
		"project", str(ScenarioProject),
		"workspace", str(workspaceFile),
		"clock", str(ScenarioClock),
		"steps", seq(steps...),
	}
	if len(commands) > 0 {
		var cmds []*yaml.Node
		for _, c := range commands {
			cmds = append(cmds, mapping("command", str(c), "output", str(commandOutput(c))))
		}
		doc = append(doc, "commands", seq(cmds...))
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(mapping(doc...)); err != nil {
		return nil, fail("encode the scenario: %v", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fail("encode the scenario: %v", err)
	}
	fsys := fstest.MapFS{
		scenarioFile:  {Data: buf.Bytes()},
		workspaceFile: {Data: arch},
	}
	sc, err := scenario.LoadScenarioFS(fsys, scenarioFile, name+"/"+scenarioFile)
	if err != nil {
		return nil, fail("%v", err)
	}
	return sc, nil
}

// scenarioCall is the lab's tool call for one intent: the tool's name and its arguments as a
// YAML mapping, with the argument names of tools.Table.
func scenarioCall(in Intent) (tool string, args *yaml.Node, err error) {
	switch in.Kind {
	case KindRead:
		return "read", mapping("path", str(in.Path)), nil
	case KindList:
		if path.Clean(in.Path) == "." {
			return "list", mapping(), nil
		}
		return "list", mapping("path", str(in.Path)), nil
	case KindGrep:
		return "grep", mapping("pattern", str(in.Pattern)), nil
	case KindEdit:
		return "edit", mapping("path", str(in.Path), "old_string", str(in.Old), "new_string", str(in.New)), nil
	case KindWrite:
		return "write", mapping("path", str(in.Path), "content", str(in.Text)), nil
	case KindRun:
		return "bash", mapping("command", str(in.Command)), nil
	}
	return "", nil, fmt.Errorf("intent %q has no tool of the lab's harness (want one of %s)", in.Kind, strings.Join(Kinds, ", "))
}

// workspaceArchive writes workspace as a txtar archive, files sorted by path. A file the
// archive would not give back byte for byte is an error naming it.
func workspaceArchive(script string, workspace map[string]string) ([]byte, error) {
	names := make([]string, 0, len(workspace))
	for p := range workspace {
		names = append(names, p)
	}
	slices.Sort(names)
	a := &txtar.Archive{Comment: []byte("The workspace of the script " + script + ".\n")}
	for _, p := range names {
		a.Files = append(a.Files, txtar.File{Name: p, Data: []byte(workspace[p])})
	}
	data := txtar.Format(a)
	// A file a marker line cuts short differs from its content here first, so the file named is
	// the one at fault.
	back := txtar.Parse(data).Files
	for i, p := range names {
		if i >= len(back) || back[i].Name != p || string(back[i].Data) != workspace[p] {
			return nil, fmt.Errorf("workspace file %q: a txtar archive cannot hold it as it is (a non-empty file must end with a newline, and no line may read as a file marker \"-- name --\")", p)
		}
	}
	if len(back) != len(names) {
		return nil, fmt.Errorf("workspace: a txtar archive cannot hold it as it is (a line reads as a file marker \"-- name --\")")
	}
	return data, nil
}

// commandOutput is the scripted output of a run command: what seq prints for a seq command of
// whole numbers, else empty.
func commandOutput(command string) string {
	f := strings.Fields(command)
	if len(f) < 2 || len(f) > 4 || f[0] != "seq" {
		return ""
	}
	var n []int
	for _, w := range f[1:] {
		v, err := strconv.Atoi(w)
		if err != nil {
			return ""
		}
		n = append(n, v)
	}
	first, step, last := 1, 1, n[len(n)-1]
	switch len(n) {
	case 2:
		first = n[0]
	case 3:
		first, step = n[0], n[1]
	}
	if step == 0 {
		return ""
	}
	var b strings.Builder
	for v := first; (step > 0 && v <= last) || (step < 0 && v >= last); v += step {
		b.WriteString(strconv.Itoa(v))
		b.WriteByte('\n')
	}
	return b.String()
}

// str is a YAML string scalar, double-quoted so that any text (leading spaces, a trailing
// newline, "true", "-") keeps its value.
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}

// mapping is a YAML mapping of kv: key strings and value nodes, alternating, in order.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if len(kv) == 0 {
		n.Style = yaml.FlowStyle
	}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[i].(string)}, kv[i+1].(*yaml.Node))
	}
	return n
}

// seq is a YAML sequence of items.
func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}
