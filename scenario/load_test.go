package scenario_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/scenario"
)

// A scenario file's errors name the file and the line: "file:line: message".
func TestScenarioErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown field", "name: x\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\ncolour: red\nsteps: []\n", ":5: field colour not found"},
		{"unknown tool", base + "  - assistant:\n      calls:\n        - shell: {cmd: ls}\n", ":9: shell: unknown tool"},
		{"outside", base + "  - assistant:\n      calls:\n        - read: {path: ../etc/passwd}\n", ":9: read: path \"../etc/passwd\" is outside the workspace"},
		{"backwards", base + "  - clock: \"2026-11-05T21:00:00Z\"\n  - assistant:\n      text: hi\n", ":7: clock goes backwards"},
		{"missing arg", base + "  - assistant:\n      calls:\n        - edit: {path: a}\n", `:9: edit: missing argument "new_string", "old_string"`},
		{"unknown step key", base + "  - asistant:\n      text: hi\n", `:7: unknown step "asistant"`},
		{"number pattern", base + "  - assistant:\n      calls:\n        - grep: {pattern: 12}\n", ":9: grep: pattern: want a string"},
		{"empty user", base + "  - assistant:\n      text: hi\n  - user:\n  - assistant:\n      text: x\n", ":9: user: empty message"},
		{"second document", base + "  - assistant:\n      text: hi\n---\nname: y\n", ":9: a second YAML document"},
		{"name with a slash", "project: p\nname: team/midnight v2\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: hi\n", `:2: name "team/midnight v2": want lower-case`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.yaml")
			os.WriteFile(p, []byte(tc.yaml), 0o644)
			os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a --\nx\n"), 0o644)
			_, err := scenario.LoadScenario(p)
			var se *scenario.SyntaxError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadScenario = %v; want a *SyntaxError %s%s", err, p, tc.want)
			}
		})
	}
}

const base = "name: x\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: hi\n"

func TestAliasesLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte(base[:len(base)-len("  - user: hi\n")]+"  - user: &q Where is it?\n  - assistant:\n      calls:\n        - read: &r {path: a}\n  - assistant:\n      calls:\n        - read: *r\n  - assistant:\n      text: *q\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a --\nx\n"), 0o644)
	sc, err := scenario.LoadScenario(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sc.Steps[2].Assistant.Calls[0].Args); got != `{"path":"a"}` || sc.Steps[3].Assistant.Text != "Where is it?" {
		t.Fatalf("aliases: args %s, text %q", got, sc.Steps[3].Assistant.Text)
	}
}

// clock_per_request is a duration of 0 or more, and a wrong one names its line.
func TestClockPerRequestField(t *testing.T) {
	base := "name: t\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:05:00+01:00\"\nclock_per_request: %s\nsteps:\n  - user: hi\n  - assistant: {text: ok}\n"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a.txt --\na\n"), 0o644)
	for _, tc := range []struct {
		v    string
		want time.Duration
		err  string
	}{{"20s", 20 * time.Second, ""}, {"soon", 0, ":5: clock_per_request \"soon\""}, {"-1s", 0, ":5: clock_per_request \"-1s\""}} {
		path := filepath.Join(dir, "scenario.yaml")
		os.WriteFile(path, []byte(fmt.Sprintf(base, tc.v)), 0o644)
		sc, err := scenario.LoadScenario(path)
		if tc.err == "" {
			if err != nil || sc.PerRequest != tc.want {
				t.Errorf("%s: %v, %v", tc.v, sc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v; want …%s…", tc.v, err, tc.err)
		}
	}
}

// The instructions, git and rewind steps: a rewind takes back 1 to the turn's replies so far,
// and what follows it is what followed the first reply it took back.
func TestInstructionsGitRewindSteps(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a --\nx\n"), 0o644)
	load := func(steps string) (*scenario.Scenario, error) {
		p := filepath.Join(dir, "s.yaml")
		os.WriteFile(p, []byte(base+steps), 0o644)
		return scenario.LoadScenario(p)
	}
	reads := "  - assistant:\n      calls:\n        - read: {path: a}\n"
	sc, err := load(reads + "  - instructions: Be brief.\n  - git: \"On branch main\\n\"\n" + reads + "  - rewind: 2\n" + reads +
		"  - assistant:\n      calls:\n        - read: {path: AGENTS.md}\n  - assistant: {text: done}\n")
	if err != nil {
		t.Fatal(err)
	}
	if st := sc.Steps[2]; st.Instructions == nil || *st.Instructions != "Be brief." || st.Line != 10 {
		t.Errorf("instructions step %+v", st)
	}
	if st := sc.Steps[3]; st.Git == nil || *st.Git != "On branch main\n" {
		t.Errorf("git step %+v", st)
	}
	if st := sc.Steps[5]; st.Rewind == nil || *st.Rewind != 2 {
		t.Errorf("rewind step %+v", st)
	}
	for _, tc := range []struct{ steps, want string }{
		{reads + "  - rewind: 2\n", ":10: rewind: 2: want 1 to 1"},
		{"  - rewind: 1\n", ":7: rewind: 1: nothing to take back"},
		{reads + "  - rewind: 0\n", ":10: rewind: 0: want 1 to 1"},
		{reads + "  - rewind: two\n", ":10: rewind: want a whole number"},
		{reads + "  - assistant: {text: done}\n  - user: again\n" + reads + "  - rewind: 2\n", ":15: rewind: 2: want 1 to 1"},
		{reads + "  - rewind: 1\n  - user: again\n", ":11: user step right after a rewind: the request taken back is sent again, and an assistant step answers it first"},
		{reads + "  - compact: {summary: s}\n  - rewind: 1\n", ":11: rewind: 1: nothing to take back"},
		{"  - instructions: {text: t}\n", ":7: instructions: want a string"},
	} {
		if _, err := load(tc.steps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %s", tc.steps, err, tc.want)
		}
	}
}
