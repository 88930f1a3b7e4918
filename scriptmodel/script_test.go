package scriptmodel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/scorecard"
)

// Every form of the script format parses into the intents it names.
func TestParseScriptForms(t *testing.T) {
	src := `name: all-forms
turns:
  - user: "Do everything."
    steps:
      - read greet.go
      - list ./sub/
      - grep func Greet\(
      - grep "a \"b\""
      - do: edit "dir name/x.go" "Hello, " → "Hi, "
        reasoning: The greeting is wrong.
      - 'edit x.go "a\n\tb" -> ""'
      - write notes.txt "line 1\nline 2\n"
      - write empty.txt ""
      - write plain.txt some words
      - run go test ./... | tail -3
      - 'answer "Done: \"all\"."'
  - user: Next.
    steps:
      - answer plain text answer
`
	s, err := ParseScript("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Script{Name: "all-forms", Turns: []Turn{
		{User: "Do everything.", Line: 3, Steps: []Step{
			{Line: 5, Intent: Intent{Kind: KindRead, Path: "greet.go"}},
			{Line: 6, Intent: Intent{Kind: KindList, Path: "sub"}},
			{Line: 7, Intent: Intent{Kind: KindGrep, Pattern: `func Greet\(`}},
			{Line: 8, Intent: Intent{Kind: KindGrep, Pattern: `a "b"`}},
			{Line: 9, Reasoning: "The greeting is wrong.", Intent: Intent{Kind: KindEdit, Path: "dir name/x.go", Old: "Hello, ", New: "Hi, "}},
			{Line: 11, Intent: Intent{Kind: KindEdit, Path: "x.go", Old: "a\n\tb", New: ""}},
			{Line: 12, Intent: Intent{Kind: KindWrite, Path: "notes.txt", Text: "line 1\nline 2\n"}},
			{Line: 13, Intent: Intent{Kind: KindWrite, Path: "empty.txt", Text: ""}},
			{Line: 14, Intent: Intent{Kind: KindWrite, Path: "plain.txt", Text: "some words"}},
			{Line: 15, Intent: Intent{Kind: KindRun, Command: "go test ./... | tail -3"}},
			{Line: 16, Intent: Intent{Kind: KindAnswer, Text: `Done: "all".`}},
		}},
		{User: "Next.", Line: 17, Steps: []Step{{Line: 19, Intent: Intent{Kind: KindAnswer, Text: "plain text answer"}}}},
	}}
	if d := cmp.Diff(want, s); d != "" {
		t.Fatalf("ParseScript (-want +got):\n%s", d)
	}
	// String writes each intent back in a form that parses to the same intent.
	for _, tr := range s.Turns {
		for _, st := range tr.Steps {
			back, err := ParseIntent(st.Intent.String())
			if err != nil || back != st.Intent {
				t.Errorf("ParseIntent(%q) = %+v, %v; want %+v", st.Intent.String(), back, err, st.Intent)
			}
		}
	}
}

// A script file's errors name the file and the line: "file:line: message".
func TestScriptErrorsNameFileAndLine(t *testing.T) {
	const head = "name: x\nturns:\n  - user: hi\n    steps:\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: x\ncolour: red\nturns: []\n", ":2: field colour not found"},
		{"missing name", "turns:\n  - user: hi\n    steps: [answer ok]\n", ": missing field name"},
		{"bad name", "name: Fix Greeting\nturns: []\n", `:1: name "Fix Greeting": want lower-case`},
		{"no turns", "name: x\nturns: []\n", ":2: no turns"},
		{"unknown intent", head + "      - delete x.go\n      - answer ok\n", `:5: unknown intent "delete" (want read, list, grep, edit, write, run, answer)`},
		{"missing path", head + "      - read\n      - answer ok\n", ":5: read: missing argument: the path"},
		{"absolute path", head + "      - read /etc/passwd\n      - answer ok\n", `:5: read: path "/etc/passwd" is absolute`},
		{"dot-dot path", head + "      - list a/../../b\n      - answer ok\n", `:5: list: path "a/../../b" holds ".."`},
		{"dot-dot write", head + "      - answer ok\n  - user: again\n    steps:\n      - write ../x \"t\"\n      - answer ok\n", `:8: write: path "../x" holds ".."`},
		{"text after path", head + "      - read a.go b.go\n      - answer ok\n", `:5: read: unexpected text after the path: "b.go"`},
		{"no arrow", head + "      - edit a.go \"x\" \"y\"\n      - answer ok\n", ":5: edit: want → or -> after the old text"},
		{"unquoted old", head + "      - edit a.go x → y\n      - answer ok\n", ":5: edit: missing argument: the old text, a quoted string"},
		{"empty old", head + "      - edit a.go \"\" → \"y\"\n      - answer ok\n", ":5: edit: the old text is empty"},
		{"unclosed quote", head + "      - write a.go \"abc\n      - answer ok\n", ":5: write: the text: quoted string \"abc has no closing quote"},
		{"bad escape", head + "      - 'write a.go \"a\\qb\"'\n      - answer ok\n", `:5: write: the text: bad quoted string`},
		{"missing write text", head + "      - write a.go\n      - answer ok\n", ":5: write: missing argument: the text"},
		{"missing command", head + "      - run\n      - answer ok\n", ":5: run: missing argument: the command"},
		{"no answer", head + "      - read a.go\n      - run ls\n", ":6: turn 1 ends with run: a turn's last step is an answer"},
		{"answer mid-turn", head + "      - answer early\n      - read a.go\n      - answer ok\n", ":5: answer before the turn's last step"},
		{"empty answer", head + "      - answer \"\"\n", ":5: answer: missing argument: the text"},
		{"unknown step field", head + "      - do: read a.go\n        think: hmm\n      - answer ok\n", `:6: step: unknown field "think" (want do, reasoning)`},
		{"step without do", head + "      - reasoning: hmm\n      - answer ok\n", ":5: step: missing field do"},
		{"null step", head + "      -\n      - answer ok\n", ":5: empty step"},
		{"unknown turn field", "name: x\nturns:\n  - user: hi\n    prompt: hi\n    steps: [answer ok]\n", `:4: turn: unknown field "prompt" (want user, steps)`},
		{"empty user", "name: x\nturns:\n  - user: \" \"\n    steps: [answer ok]\n", ":3: turn: user: empty prompt"},
		{"no steps", "name: x\nturns:\n  - user: hi\n    steps: []\n", ":3: turn 1: no steps"},
		{"midnight before turn 1", "name: x\nmidnight: 1\nturns:\n  - user: hi\n    steps: [answer ok]\n", ":2: midnight 1: a script of one turn has no turn"},
		{"midnight past the end", "name: x\nturns:\n  - user: hi\n    steps: [answer ok]\n  - user: again\n    steps: [answer ok]\nmidnight: 3\n", ":7: midnight 3: want the turn (2 to 2)"},
		{"second document", head + "      - answer ok\n---\nname: y\n", ":6: a second YAML document"},
		{"yaml syntax", "name: x\nturns:\n  - user: [\n", ":3: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadScript(p)
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), p+tc.want) {
				t.Fatalf("LoadScript = %v; want a *SyntaxError %s%s…", err, p, tc.want)
			}
		})
	}
}

func TestLoadScriptMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "none.yaml")
	_, err := LoadScript(p)
	var se *SyntaxError
	if err == nil || errors.As(err, &se) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), p) {
		t.Fatalf("LoadScript(missing) = %v; want a not-exist error naming the file, no *SyntaxError", err)
	}
}

// The default script has what lab agents measures: at least 3 turns and 15 tool steps, an
// unchanged re-read, an edit then a re-read of the edited file, the same search twice, a long
// command output; and it runs on its workspace: every file it reads or lists exists, every
// edit's old text occurs exactly once when it comes.
func TestDefaultScript(t *testing.T) {
	s := DefaultScript()
	files := DefaultWorkspace()
	if got := files["greet.go"]; !strings.Contains(got, `return "Hello, " + name + "!"`) {
		t.Fatalf("greet.go:\n%s", got)
	}
	for _, f := range []string{"go.mod", "main.go", "greet.go", "greet_test.go", "README.md"} {
		if files[f] == "" {
			t.Errorf("the default workspace has no %s", f)
		}
	}
	if len(s.Turns) < 3 {
		t.Fatalf("%d turns, want at least 3", len(s.Turns))
	}
	var tools, unchangedRereads, rereadsAfterEdit, longOutput int
	read := map[string]string{}  // path → content when last read
	edited := map[string]bool{}  // edited since the last read
	searches := map[string]int{} // grep pattern → times
	for i, tr := range s.Turns {
		last := tr.Steps[len(tr.Steps)-1].Intent
		if last.Kind != KindAnswer {
			t.Errorf("turn %d ends with %s", i+1, last.Kind)
		}
		for _, st := range tr.Steps {
			in := st.Intent
			if in.Kind != KindAnswer {
				tools++
			}
			switch in.Kind {
			case KindRead:
				content, ok := files[in.Path]
				if !ok {
					t.Errorf("line %d: read %s: no such file", st.Line, in.Path)
				}
				if prev, seen := read[in.Path]; seen && prev == content {
					unchangedRereads++
				}
				if edited[in.Path] {
					rereadsAfterEdit++
				}
				read[in.Path], edited[in.Path] = content, false
			case KindEdit:
				if n := strings.Count(files[in.Path], in.Old); n != 1 {
					t.Errorf("line %d: edit %s: old text %q occurs %d times, want 1", st.Line, in.Path, in.Old, n)
				}
				files[in.Path] = strings.Replace(files[in.Path], in.Old, in.New, 1)
				edited[in.Path] = true
			case KindWrite:
				files[in.Path] = in.Text
			case KindList:
				if in.Path != "." {
					t.Errorf("line %d: list %s: the workspace has no folders", st.Line, in.Path)
				}
			case KindGrep:
				searches[in.Pattern]++
			case KindRun:
				if in.Command == "seq 1 3000" {
					longOutput++
				}
			}
		}
	}
	twice := 0
	for _, n := range searches {
		if n >= 2 {
			twice++
		}
	}
	if tools < 15 || unchangedRereads == 0 || rereadsAfterEdit == 0 || twice == 0 || longOutput == 0 {
		t.Errorf("tool steps %d (want ≥15), unchanged re-reads %d, re-reads after an edit %d, searches done twice %d, long outputs %d (want each ≥1)",
			tools, unchangedRereads, rereadsAfterEdit, twice, longOutput)
	}
	if s.Midnight < 2 || s.Midnight > len(s.Turns) {
		t.Errorf("midnight %d: want the clock to cross midnight before one of turns 2..%d", s.Midnight, len(s.Turns))
	}
	if strings.Contains(files["greet.go"]+files["greet_test.go"]+files["README.md"], "Hello") {
		t.Errorf("after the script the workspace still says Hello")
	}
}

// The default script's facts: greet.go read again unchanged in turn 2 (of its read in turn 1),
// the re-read after the edit not counted, and the reasoned calls by their ids.
func TestDefaultScriptFacts(t *testing.T) {
	f := DefaultScript().Facts(DefaultWorkspace())
	want := []scorecard.Reread{{Path: "greet.go", Call: "call_2_1", Of: "call_1_4"}}
	if len(f.Rereads) != 1 || f.Rereads[0] != want[0] {
		t.Fatalf("rereads %+v, want %+v", f.Rereads, want)
	}
	if strings.Join(f.Reasoned, ",") != "call_1_1,call_2_1,call_2_6" {
		t.Fatalf("reasoned %v", f.Reasoned)
	}
	if len(f.Calls) != 17 || f.Calls[0] != "call_1_1" || f.Calls[5] != "call_2_1" {
		t.Fatalf("calls %v: want the 17 tool calls, call_1_1 first and call_2_1 sixth", f.Calls)
	}
	if len(f.Prompts) != 3 || !strings.HasPrefix(f.Prompts[1], "The greeting should say") {
		t.Fatalf("prompts %q", f.Prompts)
	}
}
