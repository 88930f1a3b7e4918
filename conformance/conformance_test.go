package conformance

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// TestCases runs every case of every area against the lab's implementation, one subtest per case
// (go test -run 'TestCases/context/ctx-012').
func TestCases(t *testing.T) {
	for _, area := range Areas() {
		t.Run(area, func(t *testing.T) {
			cases, err := Load(area)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				t.Run(c.ID, func(t *testing.T) {
					if err := Check(area, c); err != nil {
						t.Errorf("%s (%s) %s\n%v", c.ID, c.Section, c.Description, err)
					}
				})
			}
		})
	}
}

// TestFiles is the meta-test: every embedded file parses strictly and names its own area, every
// case has a section starting with "§", and ids are unique across all files.
func TestFiles(t *testing.T) {
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no embedded case files")
	}
	seen := map[string]string{}
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parseFile(data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := strings.TrimSuffix(name, ".json"); f.Area != want {
			t.Errorf("%s: area %q, want %q", name, f.Area, want)
		}
		if f.Spec != "3.2.0" {
			t.Errorf("%s: spec %q, want 3.2.0", name, f.Spec)
		}
		for _, c := range f.Cases {
			if prev, dup := seen[c.ID]; dup {
				t.Errorf("%s: id %s already used in %s", name, c.ID, prev)
			}
			seen[c.ID] = name
			if c.Description == "" {
				t.Errorf("%s: %s has no description", name, c.ID)
			}
		}
	}
}

// TestContextCoverage pins how many context cases each section has, so a case dropped by mistake
// shows up.
func TestContextCoverage(t *testing.T) {
	cases, err := Load("context")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i, c := range cases {
		got[c.Section]++
		if want := "ctx-" + pad3(i+1); c.ID != want {
			t.Errorf("case %d: id %s, want %s (ids run in file order)", i+1, c.ID, want)
		}
	}
	want := map[string]int{"§1": 19, "§2": 21, "§3": 15, "§4": 14, "§5": 10, "§6": 13, "§7": 13, "§10": 6}
	for sec, n := range want {
		if got[sec] != n {
			t.Errorf("%s: %d cases, want %d", sec, got[sec], n)
		}
	}
	if len(cases) != 111 {
		t.Errorf("%d context cases, want 111", len(cases))
	}
}

func pad3(n int) string {
	s := "00" + itoa(n)
	return s[len(s)-3:]
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestAreas(t *testing.T) {
	got := Areas()
	if len(got) == 0 || got[0] != "context" {
		t.Fatalf("Areas() = %v, want context first", got)
	}
	for _, a := range got {
		if _, ok := checkers[a]; !ok {
			t.Errorf("area %s listed without a checker", a)
		}
	}
}

func TestUnknownArea(t *testing.T) {
	if _, err := Load("nope"); !errors.Is(err, ErrUnknownArea) {
		t.Errorf("Load(nope) = %v, want ErrUnknownArea", err)
	}
	if _, err := Run("nope"); !errors.Is(err, ErrUnknownArea) {
		t.Errorf("Run(nope) = %v, want ErrUnknownArea", err)
	}
	if err := Check("nope", Case{}); !errors.Is(err, ErrUnknownArea) {
		t.Errorf("Check(nope) = %v, want ErrUnknownArea", err)
	}
}

func TestParseFileStrict(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"unknown field", `{"area":"x","spec":"3.2.0","cases":[],"extra":1}`, `unknown field "extra"`},
		{"unknown case field", `{"area":"x","spec":"3.2.0","cases":[{"id":"a","section":"§1","description":"d","input":{},"want":{},"note":1}]}`, `unknown field "note"`},
		{"no section sign", `{"area":"x","spec":"3.2.0","cases":[{"id":"a","section":"1","description":"d","input":{},"want":{}}]}`, `case a: section "1" does not start with §`},
		{"no id", `{"area":"x","spec":"3.2.0","cases":[{"section":"§1","input":{},"want":{}}]}`, `case 1: no id`},
		{"no want", `{"area":"x","spec":"3.2.0","cases":[{"id":"a","section":"§1","input":{}}]}`, `case a: input and want are required`},
		{"trailing", `{"area":"x","spec":"3.2.0","cases":[]} {}`, `trailing data`},
	} {
		_, err := parseFile([]byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestDiffText(t *testing.T) {
	for _, tc := range []struct{ want, got, msg string }{
		{"a\nb", "a\nb", ""},
		{"a\nb\nc", "a\nB\nc", `out: line 2: want "b", got "B"`},
		{"a\nb", "a", `out: got 1 lines, want 2: line 2 missing: want "b"`},
		{"a", "a\nb", `out: got 2 lines, want 1: extra line 2: "b"`},
	} {
		err := diffText("out", tc.want, tc.got)
		if msg := errString(err); msg != tc.msg {
			t.Errorf("diffText(%q, %q) = %q, want %q", tc.want, tc.got, msg, tc.msg)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestExpandText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`["a", "b"]`, "ab"},
		{`[{"line": "x", "lines": 3}]`, "x\nx\nx\n"},
		{`[{"line": "x", "lines": 3, "joined": true}]`, "x\nx\nx"},
		{`[{"line": "{{n}}: v{{n}}", "from": 9, "lines": 2, "joined": true}]`, "9: v9\n10: v10"},
		{`[{"line": "ab", "repeat": 3, "lines": 1}, "end"]`, "ababab\nend"},
	} {
		got, err := expandText([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("expandText(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`[{"line": "x", "lines": 0}]`, `[{"line": "x", "lines": 1, "count": 2}]`, `{}`} {
		if _, err := expandText([]byte(bad)); err == nil {
			t.Errorf("expandText(%s): no error", bad)
		}
	}
}

// TestCheckContextFailure checks that a wrong expectation fails with the first differing line, and
// that a case that cannot run is a bad case, not a pass.
func TestCheckContextFailure(t *testing.T) {
	c := Case{ID: "t", Section: "§1",
		Input: json.RawMessage(`{"events": [{"result": {"text": "a\nb"}}]}`),
		Want:  json.RawMessage(`{"outputs": ["[#0001]\na\nc"]}`)}
	err := checkContext(c)
	if want := `output 1 (event 1, result): line 3: want "c", got "b"`; errString(err) != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	for _, tc := range []struct{ in, want, msg string }{
		{`{"events": [{"read": {"path": "x"}}]}`, `{"outputs": []}`, "event 1 (read): bad case: no file /p/x set"},
		{`{"events": [{"turn": {}, "compact": {}}]}`, `{"outputs": []}`, "event 1 (?): bad case: an event has exactly one kind, this one has 2"},
		{`{"config": {"cap.cut": 1}, "events": []}`, `{"outputs": []}`, `bad case: config key "cap.cut" may not be overridden`},
		{`{"measures_off": ["speed"], "events": []}`, `{"outputs": []}`, `bad case: unknown measure "speed"`},
		{`{"events": [{"result": {"text": "a"}}]}`, `{"outputs": []}`, "1 outputs, want 0"},
	} {
		err := checkContext(Case{ID: "t", Section: "§1", Input: json.RawMessage(tc.in), Want: json.RawMessage(tc.want)})
		if errString(err) != tc.msg {
			t.Errorf("%s: err = %v, want %s", tc.in, err, tc.msg)
		}
	}
}

func TestOutputShape(t *testing.T) {
	got := "[#0001]\nl1\nl2\nl3"
	for _, tc := range []struct{ shape, msg string }{
		{`{"line_count": 4, "chars": 16, "first_lines": ["[#0001]", "l1"], "last_lines": ["l3"]}`, ""},
		{`{"line_count": 5}`, "o: 4 lines, want 5"},
		{`{"first_lines": ["[#0001]", "x"]}`, `o (first lines): line 2: want "x", got "l1"`},
		{`{"last_lines": ["l2", "l4"]}`, `o (last lines): line 2: want "l4", got "l3"`},
		{`{"sha256": "00"}`, "o: sha256 " + sha256Hex(got) + ", want 00"},
		{`null`, ""},
	} {
		if msg := errString(compareOutput("o", json.RawMessage(tc.shape), got)); msg != tc.msg {
			t.Errorf("%s: %q, want %q", tc.shape, msg, tc.msg)
		}
	}
}
