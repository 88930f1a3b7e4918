package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPathsCases runs every paths.json case through checkPaths.
func TestPathsCases(t *testing.T) {
	cases, err := Load("paths")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Errorf("paths.json has %d cases, want at least 20", len(cases))
	}
	ops := map[string]int{}
	for _, c := range cases {
		var op pathsOp
		_ = json.Unmarshal(c.Input, &op)
		ops[op.Op]++
		if err := checkPaths(c); err != nil {
			t.Errorf("%s (%s) %s\n%v", c.ID, c.Section, c.Description, err)
		}
	}
	for _, op := range []string{"env", "resolve", "display"} {
		if ops[op] < 4 {
			t.Errorf("paths.json has %d %s cases, want at least 4", ops[op], op)
		}
	}
}

// TestPathsCheckerFails: a wrong want fails naming the first differing line or field, and a
// case that does not decode strictly or misses a field fails.
func TestPathsCheckerFails(t *testing.T) {
	for _, tc := range []struct{ input, want, err string }{
		{`{"op":"env","root":"/h/app","start":"/h/app/a/b"}`, `{"text":"Project: app (paths are relative to its root)\nStarted in: a (relative to the project root)"}`,
			`environment lines: line 2: want "Started in: a (relative to the project root)", got "Started in: a/b (relative to the project root)"`},
		{`{"op":"env","root":"/h/app","start":"/h/app/a"}`, `{"text":"Project: app (paths are relative to its root)"}`,
			`environment lines: got 2 lines, want 1: extra line 2: "Started in: a (relative to the project root)"`},
		{`{"op":"env","root":"/h/app","start":"/h/other"}`, `{"text":""}`,
			`env: hygiene: start directory /h/other is outside the project root /h/app (§11)`},
		{`{"op":"resolve","path":"../x","root":"/h/app","home":"/h"}`, `{"abs":"/h/x","in_project":true}`,
			`in_project: want true, got false`},
		{`{"op":"resolve","path":"~/x","root":"/h/app","home":"/h"}`, `{"abs":"/h/app/x","in_project":true}`,
			`abs: line 1: want "/h/app/x", got "/h/x"`},
		{`{"op":"display","abs":"/h/x","root":"/h/app","home":"/h"}`, `{"path":"/h/x"}`,
			`path: line 1: want "/h/x", got "~/x"`},
		{`{"op":"display","abs":"/h/x","root":"/h/app","home":"/h","cwd":"/h"}`, `{"path":"~/x"}`,
			`input: json: unknown field "cwd"`},
		{`{"op":"display","abs":"/h/x","root":"/h/app","home":"/h"}`, `{}`,
			`display: input needs abs, root and home, want needs path`},
		{`{"op":"move"}`, `{}`, `input: op "move", want env, resolve or display`},
	} {
		err := checkPaths(Case{ID: "t", Section: "§11", Input: json.RawMessage(tc.input), Want: json.RawMessage(tc.want)})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("checkPaths(%s → %s) = %v, want %s", tc.input, tc.want, err, tc.err)
		}
	}
}
