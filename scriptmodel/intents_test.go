package scriptmodel

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/chat"
)

// Each agent's own tool list (as it sent it, decoded by the lab's decoders) maps every intent of
// the default script onto a call; the read, edit, run (and more) calls are exactly these.
func TestMapAgents(t *testing.T) {
	read := Intent{Kind: KindRead, Path: "greet.go"}
	edit := Intent{Kind: KindEdit, Path: "greet.go", Old: "Hello, ", New: "Hi, "}
	run := Intent{Kind: KindRun, Command: "go test ./..."}
	list := Intent{Kind: KindList, Path: "."}
	grep := Intent{Kind: KindGrep, Pattern: "Greet"}
	write := Intent{Kind: KindWrite, Path: "NOTES.md", Text: "a > b\n"}
	perl := func(args string) string {
		return "perl -e '" + perlEdit + "' " + args
	}
	type call struct{ name, args string }
	var codexEdit bytes.Buffer
	encode(&codexEdit, perl("greet.go 'Hello, ' 'Hi, '"))
	want := map[string]map[Intent]call{
		"codex": {
			read:  {"exec_command", `{"cmd":"cat greet.go","workdir":"/proj"}`},
			edit:  {"exec_command", `{"cmd":` + codexEdit.String() + `,"workdir":"/proj"}`},
			run:   {"exec_command", `{"cmd":"go test ./...","workdir":"/proj"}`},
			list:  {"exec_command", `{"cmd":"ls -la .","workdir":"/proj"}`},
			grep:  {"exec_command", `{"cmd":"grep -rnE Greet .","workdir":"/proj"}`},
			write: {"exec_command", `{"cmd":"printf '%s' 'a > b\n' > NOTES.md","workdir":"/proj"}`},
		},
		"claude": {
			read:  {"Read", `{"file_path":"/proj/greet.go"}`},
			edit:  {"Edit", `{"file_path":"/proj/greet.go","old_string":"Hello, ","new_string":"Hi, "}`},
			run:   {"Bash", `{"command":"go test ./..."}`},
			list:  {"Bash", `{"command":"ls -la ."}`},
			grep:  {"Bash", `{"command":"grep -rnE Greet ."}`},
			write: {"Write", `{"file_path":"/proj/NOTES.md","content":"a > b\n"}`},
		},
		"opencode": {
			read:  {"read", `{"filePath":"/proj/greet.go"}`},
			edit:  {"edit", `{"filePath":"/proj/greet.go","oldString":"Hello, ","newString":"Hi, "}`},
			run:   {"bash", `{"command":"go test ./..."}`},
			list:  {"glob", `{"pattern":"*"}`},
			grep:  {"grep", `{"pattern":"Greet"}`},
			write: {"write", `{"filePath":"/proj/NOTES.md","content":"a > b\n"}`},
		},
		"pi": {
			read:  {"read", `{"path":"greet.go"}`},
			edit:  {"edit", `{"path":"greet.go","edits":[{"oldText":"Hello, ","newText":"Hi, "}]}`},
			run:   {"bash", `{"command":"go test ./..."}`},
			list:  {"bash", `{"command":"ls -la ."}`},
			grep:  {"bash", `{"command":"grep -rnE Greet ."}`},
			write: {"write", `{"path":"NOTES.md","content":"a > b\n"}`},
		},
		"qwen": {
			read:  {"read_file", `{"file_path":"/proj/greet.go"}`},
			edit:  {"edit", `{"file_path":"/proj/greet.go","old_string":"Hello, ","new_string":"Hi, "}`},
			run:   {"run_shell_command", `{"command":"go test ./..."}`},
			list:  {"glob", `{"pattern":"*"}`},
			grep:  {"grep_search", `{"pattern":"Greet"}`},
			write: {"write_file", `{"file_path":"/proj/NOTES.md","content":"a > b\n"}`},
		},
	}
	for _, a := range captured {
		t.Run(a.name, func(t *testing.T) {
			tools := agentTools(t, a.name, a.index)
			env := Env{Project: "/proj", Agent: a.name}
			for in, w := range want[a.name] {
				c, skipped, err := Map(in, tools, env)
				if err != nil || skipped != "" || c.Name != w.name || string(c.Arguments) != w.args {
					t.Errorf("Map(%s) = %s %s (skipped %q, err %v)\nwant %s %s", in, c.Name, c.Arguments, skipped, err, w.name, w.args)
				}
			}
			// Every step of the default script has a call, its arguments a JSON object that
			// gives every parameter the tool requires.
			byName := map[string]chat.Tool{}
			for _, tl := range tools {
				byName[tl.Name] = tl
			}
			for _, tr := range DefaultScript().Turns {
				for _, st := range tr.Steps {
					if st.Intent.Kind == KindAnswer {
						continue
					}
					c, skipped, err := Map(st.Intent, tools, env)
					if err != nil || skipped != "" {
						t.Errorf("line %d: Map(%s): skipped %q, err %v", st.Line, st.Intent, skipped, err)
						continue
					}
					var args map[string]any
					var schema struct{ Required []string }
					json.Unmarshal(byName[c.Name].Parameters, &schema)
					if err := json.Unmarshal(c.Arguments, &args); err != nil {
						t.Errorf("line %d: %s arguments %s: %v", st.Line, c.Name, c.Arguments, err)
					}
					for _, r := range schema.Required {
						if _, ok := args[r]; !ok {
							t.Errorf("line %d: %s %s lacks the required %q", st.Line, c.Name, c.Arguments, r)
						}
					}
				}
			}
		})
	}
}

// An agent without a tool for an intent, nor a shell, skips it with a message naming the
// tools; that is no error. Qwen Code's side request (a subagent's tool list: read_file, glob,
// grep_search, no shell, no edit) is such a list.
func TestMapSkipped(t *testing.T) {
	tools := agentTools(t, "qwen", 0)
	c, skipped, err := Map(Intent{Kind: KindEdit, Path: "a.go", Old: "x", New: "y"}, tools, Env{Project: "/proj", Agent: "qwen"})
	want := "no tool for edit in the agent's tool list (agent, get_goal, glob, grep_search, list_agents, read_file, skill, tool_call, tool_search, update_goal)"
	if err != nil || skipped != want || c.Name != "" {
		t.Fatalf("Map(edit) = %+v, %q, %v; want skipped %q", c, skipped, err, want)
	}
	if _, skipped, _ := Map(Intent{Kind: KindRun, Command: "ls"}, nil, Env{}); skipped != "no tool for run in the agent's tool list (no tools)" {
		t.Fatalf("Map(run, no tools) skipped %q", skipped)
	}
	// The same list still reads.
	if c, skipped, err := Map(Intent{Kind: KindRead, Path: "a.go"}, tools, Env{Project: "/proj", Agent: "qwen"}); c.Name != "read_file" || string(c.Arguments) != `{"file_path":"/proj/a.go"}` {
		t.Fatalf("Map(read) = %s %s, %q, %v", c.Name, c.Arguments, skipped, err)
	}
}

// A shell tool whose command is an array (Codex's older shell tool) gets the argv, no shell
// quoting; run goes through bash -lc. A tool requiring a parameter Map does not understand is
// not used; a required working directory is filled, an optional one only for the agent whose
// quirks name it.
func TestMapArgvShell(t *testing.T) {
	shell := chat.Tool{Name: "shell", Parameters: json.RawMessage(`{"type":"object","properties":{
		"command":{"type":"array","items":{"type":"string"}},
		"workdir":{"type":"string"},"timeout_ms":{"type":"number"}},"required":["command"]}`)}
	strange := chat.Tool{Name: "Read", Parameters: json.RawMessage(`{"type":"object","properties":{
		"file_path":{"type":"string"},"encoding":{"type":"string"}},"required":["file_path","encoding"]}`)}
	tools := []chat.Tool{strange, shell}
	for _, tc := range []struct {
		in    Intent
		agent string
		want  string
	}{
		{Intent{Kind: KindRun, Command: "go test ./... && echo 'ok'"}, "codex", `{"command":["bash","-lc","go test ./... && echo 'ok'"],"workdir":"/p"}`},
		{Intent{Kind: KindRun, Command: "ls"}, "", `{"command":["bash","-lc","ls"]}`},
		{Intent{Kind: KindRead, Path: "it's.go"}, "", `{"command":["cat","it's.go"]}`},
		{Intent{Kind: KindGrep, Pattern: "-x"}, "", `{"command":["grep","-rnE","-e","-x","."]}`},
		{Intent{Kind: KindWrite, Path: "d/n.txt", Text: "$x"}, "", `{"command":["sh","-c","mkdir -p \"$(dirname \"$1\")\" && printf '%s' \"$2\" > \"$1\"","sh","d/n.txt","$x"]}`},
	} {
		c, skipped, err := Map(tc.in, tools, Env{Project: "/p", Agent: tc.agent})
		if err != nil || skipped != "" || c.Name != "shell" || string(c.Arguments) != tc.want {
			t.Errorf("Map(%s) = %s %s, %q, %v; want shell %s", tc.in, c.Name, c.Arguments, skipped, err, tc.want)
		}
	}
	req := chat.Tool{Name: "bash", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"},"cwd":{"type":"string"}},"required":["cmd","cwd"]}`)}
	if c, _, err := Map(Intent{Kind: KindRun, Command: "ls"}, []chat.Tool{req}, Env{Project: "/p"}); string(c.Arguments) != `{"cmd":"ls","cwd":"/p"}` {
		t.Errorf("required cwd: %s %v", c.Arguments, err)
	}
}

func TestMapErrors(t *testing.T) {
	tools := agentTools(t, "claude", 0)
	for _, tc := range []struct {
		in   Intent
		env  Env
		want string
	}{
		{Intent{Kind: KindRead, Path: "../x"}, Env{Project: "/p"}, `read: path "../x" holds ".."`},
		{Intent{Kind: "delete", Path: "x"}, Env{Project: "/p"}, `unknown intent "delete"`},
		{Intent{Kind: KindEdit, Path: "x", Old: "a", New: "a"}, Env{Project: "/p"}, "edit: the old and the new text are the same"},
		{Intent{Kind: KindAnswer, Text: "hi"}, Env{Project: "/p"}, "answer: no tool call"},
		{Intent{Kind: KindRead, Path: "x"}, Env{Project: "proj", Agent: "claude"}, `Env.Project "proj": want the agent's working directory as an absolute path`},
	} {
		_, _, err := Map(tc.in, tools, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Map(%+v) error %v; want %q", tc.in, err, tc.want)
		}
	}
}

// The shell fallbacks of edit and write, run by a real shell, change the file exactly, with
// text that has quotes, $, backslashes, newlines and a line "EOF"; an edit whose old text is
// not in the file, or is there twice, fails and leaves the file as it was.
func TestShellFallbacksRun(t *testing.T) {
	for _, bin := range []string{"bash", "perl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s: %v", bin, err)
		}
	}
	const before = "start\nsay 'it' \"now\" $HOME \\n \\\\ `x`\nEOF\nend\n"
	old := "'it' \"now\" $HOME \\n \\\\ `x`\nEOF\n"
	neu := "$(rm -rf /) 'q' \"d\" \\t\n%s\n"
	after := "start\nsay " + neu + "end\n"
	str := []chat.Tool{{Name: "bash", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}}
	arr := []chat.Tool{{Name: "shell", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}`)}}
	runCall := func(t *testing.T, dir string, c chat.ToolCall) ([]byte, error) {
		var args struct{ Command json.RawMessage }
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			t.Fatal(err)
		}
		var cmd *exec.Cmd
		var line string
		var argv []string
		if json.Unmarshal(args.Command, &line) == nil {
			cmd = exec.Command("bash", "-c", line)
		} else if err := json.Unmarshal(args.Command, &argv); err == nil {
			cmd = exec.Command(argv[0], argv[1:]...)
		} else {
			t.Fatalf("command %s", args.Command)
		}
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	for _, form := range []struct {
		name  string
		tools []chat.Tool
	}{{"string", str}, {"argv", arr}} {
		t.Run(form.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "f.txt")
			os.WriteFile(f, []byte(before), 0o644)
			c, _, err := Map(Intent{Kind: KindEdit, Path: "f.txt", Old: old, New: neu}, form.tools, Env{Project: dir})
			if err != nil {
				t.Fatal(err)
			}
			if out, err := runCall(t, dir, c); err != nil {
				t.Fatalf("edit: %v: %s", err, out)
			}
			if got, _ := os.ReadFile(f); string(got) != after {
				t.Fatalf("after the edit:\n%q\nwant\n%q", got, after)
			}
			// Not there any more, then there twice: both fail, the file unchanged.
			for _, content := range []string{after, before + before} {
				os.WriteFile(f, []byte(content), 0o644)
				c, _, _ := Map(Intent{Kind: KindEdit, Path: "f.txt", Old: old, New: "x"}, form.tools, Env{Project: dir})
				if out, err := runCall(t, dir, c); err == nil || !bytes.Contains(out, []byte("the old text is")) {
					t.Errorf("edit of a file with the old text %d times: err %v, output %s", strings.Count(content, old), err, out)
				}
				if got, _ := os.ReadFile(f); string(got) != content {
					t.Errorf("a failed edit changed the file to %q", got)
				}
			}
			c, _, _ = Map(Intent{Kind: KindWrite, Path: "sub dir/n.txt", Text: before + neu}, form.tools, Env{Project: dir})
			if out, err := runCall(t, dir, c); err != nil {
				t.Fatalf("write: %v: %s", err, out)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "sub dir", "n.txt")); string(got) != before+neu {
				t.Fatalf("written:\n%q\nwant\n%q", got, before+neu)
			}
			c, _, _ = Map(Intent{Kind: KindRead, Path: "sub dir/n.txt"}, form.tools, Env{Project: dir})
			if out, err := runCall(t, dir, c); err != nil || string(out) != before+neu {
				t.Fatalf("read: %v: %q", err, out)
			}
		})
	}
}

// A path parameter is absolute when its name or description says so, unless the description
// allows a relative one.
func TestParamAbsolute(t *testing.T) {
	for _, tc := range []struct {
		p    param
		want bool
	}{
		{param{name: "file_path", desc: "The absolute path to the file to read"}, true},
		{param{name: "absolute_path"}, true},
		{param{name: "path", desc: "Path to the file to read (relative or absolute)"}, false},
		{param{name: "path", desc: "File or directory to search in."}, false},
	} {
		if got := tc.p.absolute(); got != tc.want {
			t.Errorf("%+v absolute = %v, want %v", tc.p, got, tc.want)
		}
	}
}
