package arms

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"lab/hygiene"
	"lab/internal/fileerr"
)

// The built-in arms keep their names and order, spec first and plain last, with the measures
// each ablation names switched off.
func TestBuiltinArms(t *testing.T) {
	b := Builtin()
	if b[0].Name != "spec" || b[len(b)-1].Name != "plain" || len(b) != 17 {
		t.Fatalf("built-in arms: %d, first %s, last %s", len(b), b[0].Name, b[len(b)-1].Name)
	}
	if b[0].Measures != hygiene.Spec() || b[len(b)-1].Measures != (hygiene.Measures{}) {
		t.Errorf("spec %+v, plain %+v", b[0].Measures, b[len(b)-1].Measures)
	}
	a, err := Select(b, "no-result-ids")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a[0].Off(), ","); got != "result_ids,stubs,caps,recall,search_dedupe" {
		t.Errorf("no-result-ids switches off %s", got)
	}
	p, _ := Select(b, "prune-old-output")
	pr := p[0].Find("prune")
	if pr == nil || pr.Prune.ThresholdTokens != 10000 || pr.Prune.ProtectResults != 4 || pr.Prune.ProtectTokens != 0 || pr.Prune.MinimumTokens != 0 || pr.Prune.Mode != PruneEveryRequest {
		t.Errorf("prune-old-output: %+v", pr)
	}
	if _, err := Select(b, "spec,nope"); err == nil || !strings.Contains(err.Error(), `unknown arm "nope"`) {
		t.Errorf("unknown arm: %v", err)
	}
}

const userFile = `arms:
  - name: clock-minute
    description: clock at minute granularity in the first user message, tools shuffled per session, prune at 20k protecting 40k
    practices:
      - clock: {granularity: minute, place: first_user, per_request: 20s}
      - tool_order: {order: session}
      - prune: {threshold_tokens: 20000, protect_tokens: 40000}
  - name: plain-window
    description: a plain harness with a sliding window
    base: plain
    measures: {diffs: true}
    practices:
      - window: {max_tokens: 8000}
      - insert: {at: "2"}
      - reasoning: {keep: last_messages, messages: 6}
`

// A user's file is read with every default filled in, and its arms record where they came from.
func TestLoadUserFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arms.yaml")
	if err := os.WriteFile(path, []byte(userFile), 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Source != path+":2" || list[1].Source != path+":8" {
		t.Fatalf("%d arms, sources %q", len(list), []string{list[0].Source, list[1].Source})
	}
	c := list[0].Find("clock").Clock
	if c.Granularity != "minute" || c.Format != "2006-01-02 15:04" || c.Place != PlaceFirstUser || c.Update != UpdateRequest || time.Duration(c.PerRequest) != 20*time.Second {
		t.Errorf("clock: %+v", c)
	}
	if got := c.Line(time.Date(2026, 3, 1, 23, 59, 41, 0, time.UTC)); got != "Current time: 2026-03-01 23:59" {
		t.Errorf("clock line %q", got)
	}
	if o := list[0].Find("tool_order").ToolOrder; o.Order != OrderSession {
		t.Errorf("tool_order %+v", o)
	}
	if p := list[0].Find("prune").Prune; p.ThresholdTokens != 20000 || p.ProtectTokens != 40000 || p.MinimumTokens != DefaultPruneMinimum || p.Mode != PruneBatch || p.Text != PrunedText {
		t.Errorf("prune %+v", p)
	}
	w := list[1]
	if w.Measures != (hygiene.Measures{Diffs: true}) || w.Find("window").Window.TargetTokens != 8000 {
		t.Errorf("plain-window: %+v %+v", w.Measures, w.Find("window").Window)
	}
	if i, ok := w.Find("insert").Insert.Index(); !ok || i != 2 || w.Find("insert").Insert.Role != InsertSystemReminder {
		t.Errorf("insert %+v", w.Find("insert").Insert)
	}
	var back map[string]any
	if err := json.Unmarshal(list[0].JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if back["practices"].([]any)[0].(map[string]any)["clock"].(map[string]any)["per_request"] != "20s" {
		t.Errorf("manifest JSON %s", list[0].JSON())
	}
	again, err := FromJSON(list[0].JSON())
	if err != nil || again.Summary() != list[0].Summary() || again.Find("clock").Clock.PerRequest != list[0].Find("clock").Clock.PerRequest {
		t.Errorf("read back from JSON: %v, %q; want %q", err, again.Summary(), list[0].Summary())
	}
	d := list[0].Describe()
	for _, want := range []string{"practice clock: granularity minute, format \"2006-01-02 15:04\"", "place first_user", "measures: every measure of spec 3.2.0"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q:\n%s", want, d)
		}
	}
}

// Every mistake in a file is an error naming the file and the line of the mistake.
func TestParseErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		body string
		line int
		msg  string
	}{
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - clock: {granularity: week}\n", 5, `clock: granularity: "week": want second, minute, hour, day`},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - clock: {granularty: day}\n", 5, `clock: unknown parameter "granularty"`},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - sparkle: {}\n", 5, `unknown practice "sparkle"`},
		{"arms:\n  - name: a\n    description: d\n    measures: {stubz: false}\n", 4, `unknown measure "stubz"`},
		{"arms:\n  - name: a\n    description: d\n    measures: {result_ids: false}\n", 2, "stubs (§2) need result ids"},
		{"arms:\n  - name: a\n    description: d\n  - name: a\n    description: e\n", 4, `arm "a" is defined twice (first at line 2)`},
		{"arms:\n  - name: spec\n    description: d\n", 2, "built-in arm's name"},
		{"arms:\n  - name: A b\n    description: d\n", 2, "name: \"A b\""},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - prune: {protect_tokens: many}\n", 5, `prune: protect_tokens: want a whole number, got "many"`},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - window: {}\n", 5, "window: max_tokens: missing (required)"},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - reasoning: {keep: last_messages}\n", 5, "reasoning: messages: missing (required with keep: last_messages)"},
		{"arms:\n  - name: a\n    description: d\n    colour: red\n", 4, `unknown field "colour"`},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - insert: {at: second}\n", 5, `at: "second"`},
		{"arms:\n  - name: a\n    description: d\n    practices:\n      - clock: {per_request: soon}\n", 5, `clock: per_request: want a duration such as 20s or 1m30s, got "soon"`},
	} {
		path := filepath.Join(t.TempDir(), "arms.yaml")
		os.WriteFile(path, []byte(tc.body), 0o644)
		_, err := Load(path)
		var se *fileerr.SyntaxError
		if !errors.As(err, &se) || se.File != path || se.Line != tc.line || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%q: error %v; want %s:%d: …%s…", tc.body, err, path, tc.line, tc.msg)
		}
	}
}

// An arm read back from its manifest JSON is the arm that ran: the same measures and practices.
func TestFromJSONRoundTrip(t *testing.T) {
	for _, a := range Builtin() {
		b, err := FromJSON(a.JSON())
		if err != nil {
			t.Fatal(err)
		}
		if b.Measures != a.Measures || b.Summary() != a.Summary() {
			t.Errorf("%s: read back %+v, %q; want %+v, %q", a.Name, b.Measures, b.Summary(), a.Measures, a.Summary())
		}
	}
	got := Builtin()[1].Summary()
	if got != "date-in-system-prompt (built-in): every measure but date_in_note" {
		t.Errorf("summary %q", got)
	}
}

// arm is a one-arm file with the practices given (each line indented as a list item).
func arm(practices ...string) string {
	s := "arms:\n  - name: a\n    description: d\n    practices:\n"
	for _, p := range practices {
		s += "      - " + p + "\n"
	}
	return s
}

// The file is read strictly: a key given twice anywhere, a second document, an alias, a
// parameter of the wrong type or out of range is an error naming the line and, for a parameter,
// the practice and the parameter; the whole message is asserted.
func TestParseStrictMessages(t *testing.T) {
	for _, tc := range []struct {
		body string
		line int
		msg  string
	}{
		// Keys given twice, at every level, and a second document.
		{"arms:\n  - name: a1\n    description: d\narms:\n  - name: a2\n    description: d\n", 4, `key "arms" given twice (first at line 1)`},
		{"arms:\n  - name: a1\n    description: d\n    name: a2\n", 4, `key "name" given twice (first at line 2)`},
		{"arms:\n  - name: a\n    description: d\n    measures: {stubs: false, stubs: true}\n", 4, `key "stubs" given twice (first at line 4)`},
		{arm("clock:\n          place: system_end\n          place: first_user"), 7, `key "place" given twice (first at line 6)`},
		{"arms:\n  - name: a1\n    description: d\n---\narms:\n  - name: a2\n    description: d\n", 4, "a second YAML document (after ---): an arm file holds one, `arms:` with a list of arms"},
		{"arms:\n  - name: a1\n    description: d\n---\n", 4, "a second YAML document (after ---): an arm file holds one, `arms:` with a list of arms"},
		{"arms:\n  - name: a1\n    description: d\n    practices: &p\n      - clock: {}\n  - name: a2\n    description: d\n    practices: *p\n", 8, "*p: an arm file takes no YAML aliases: write the value out"},
		// Empty files.
		{"", 0, "empty: want `arms:` with a list of arms"},
		{"# only a comment\n\n", 0, "empty: want `arms:` with a list of arms"},
		{"---\n", 0, "empty: want `arms:` with a list of arms"},
		// Types, named by practice and parameter.
		{arm("tool_list_churn:\n          every: five"), 6, `tool_list_churn: every: want a whole number, got "five"`},
		{arm("tool_list_churn: {every: 2.5}"), 5, `tool_list_churn: every: want a whole number, got "2.5"`},
		{arm("prune: {threshold_tokens: [1]}"), 5, "prune: threshold_tokens: want a whole number, got a list"},
		{arm("clock: {text: {a: 1}}"), 5, "clock: text: want a string, got a mapping"},
		{arm("counter:\n          budget:"), 6, "counter: budget: no value: want a whole number (leave the parameter out for its default)"},
		// An instruction file outside the project.
		{arm("instructions:\n          file: ../AGENTS.md"), 6, `instructions: file: "../AGENTS.md": want a path relative to the project root, inside it (such as AGENTS.md or docs/AGENTS.md)`},
		{arm("instructions: {file: /etc/motd}"), 5, `instructions: file: "/etc/motd": want a path relative to the project root, inside it (such as AGENTS.md or docs/AGENTS.md)`},
		// Ranges, at the parameter's own line.
		{arm("tool_list_churn:\n          change: add\n          every: -3"), 7, "tool_list_churn: every: -3: want at least 1"},
		{arm("tool_list_churn: {every: 0}"), 5, "tool_list_churn: every: 0: want at least 1"},
		{arm("counter: {budget: 0}"), 5, "counter: budget: 0: want at least 1"},
		{arm("window:\n          max_tokens: 100\n          target_tokens: 0"), 7, "window: target_tokens: 0: want at least 1"},
		{arm("window: {max_tokens: 100, target_tokens: 200}"), 5, "window: target_tokens: 200: want at most max_tokens (100)"},
		{arm("prune:\n          threshold_tokens: 10\n          minimum_tokens: -1"), 7, "prune: minimum_tokens: -1: want 0 or more"},
		{arm("clock:\n          per_request: -5s"), 6, "clock: per_request: -5s: want 0 or more"},
		{arm("clock: {place: \"\"}"), 5, `clock: place: "": want system_start, system_end, first_user, latest_user, early_block`},
		{arm("insert: {text: \"\"}"), 5, `insert: text: empty: want some text (leave text out for "Remember to keep the todo list up to date.")`},
		{arm("tool_list_churn: {tool: \"\"}"), 5, "tool_list_churn: tool: empty: name a tool (leave tool out for the list's last tool)"},
		{arm("tool_list_churn: {change: add, tool: read}"), 5, "tool_list_churn: tool: only with change: remove or describe (add adds a tool of its own)"},
		// Required parameters.
		{arm("keep_last: {}"), 5, "keep_last: results: missing (required)"},
		{arm("keep_last: {results: 0}"), 5, "keep_last: results: 0: want at least 1"},
		{arm("reasoning: {}"), 5, "reasoning: keep: missing (required): want never, this_turn, all_turns, last_messages"},
		{arm("reasoning: {keep: all_turns, messages: 0}"), 5, "reasoning: messages: only with keep: last_messages"},
	} {
		path := filepath.Join(t.TempDir(), "arms.yaml")
		os.WriteFile(path, []byte(tc.body), 0o644)
		_, err := Load(path)
		var se *fileerr.SyntaxError
		if !errors.As(err, &se) || se.File != path || se.Line != tc.line || se.Msg != tc.msg {
			t.Errorf("%q:\n error %v\n want  %s:%d: %s", tc.body, err, path, tc.line, tc.msg)
		}
	}
}

// An omitted parameter takes its default, always; an explicit value is the value that runs, an
// explicit 0 included where 0 means something (prune's protection and minimum).
func TestParseDefaultsAndExplicitZeros(t *testing.T) {
	list, err := Parse("f.yaml", []byte("arms:\n"+
		"  - name: zeros\n    description: d\n    practices:\n"+
		"      - prune: {protect_tokens: 0, minimum_tokens: 0}\n"+
		"      - tool_list_churn: {every: 1}\n"+
		"      - counter: {budget: 1}\n"+
		"      - window: {max_tokens: 100, target_tokens: 1}\n"+
		"  - name: defaults\n    description: d\n    practices:\n"+
		"      - prune: {protect_results: 3}\n"+
		"      - tool_list_churn:\n"+
		"      - counter: {}\n"+
		"      - window: {max_tokens: 100}\n"+
		"  - name: half\n    description: d\n    practices:\n"+
		"      - prune: {threshold_tokens: 20000, protect_tokens: 40000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	z, d, h := list[0], list[1], list[2]
	if p := *z.Find("prune").Prune; p.ProtectTokens != 0 || p.MinimumTokens != 0 || p.ThresholdTokens != 0 || p.ProtectResults != 0 {
		t.Errorf("explicit zeros: %+v", p)
	}
	if c, n, w := z.Find("tool_list_churn").ToolListChurn, z.Find("counter").Counter, z.Find("window").Window; c.Every != 1 || n.Budget != 1 || w.TargetTokens != 1 {
		t.Errorf("explicit ones: churn %+v counter %+v window %+v", c, n, w)
	}
	if p := *d.Find("prune").Prune; p.ProtectTokens != 40000 || p.MinimumTokens != 20000 || p.ThresholdTokens != 60000 || p.ProtectResults != 3 || p.Mode != PruneBatch {
		t.Errorf("prune defaults beside protect_results: %+v", p)
	}
	if c, n, w := d.Find("tool_list_churn").ToolListChurn, d.Find("counter").Counter, d.Find("window").Window; c.Every != 5 || c.Change != ChurnDescribe || n.Budget != 128000 || w.TargetTokens != 100 {
		t.Errorf("defaults: churn %+v counter %+v window %+v", c, n, w)
	}
	// README's example: threshold and protection given, the minimum its default.
	if p := *h.Find("prune").Prune; p.ThresholdTokens != 20000 || p.ProtectTokens != 40000 || p.MinimumTokens != 20000 {
		t.Errorf("README example: %+v", p)
	}
	// The JSON holds the values that run, and reads back to the same arm.
	for _, a := range list {
		b, err := FromJSON(a.JSON())
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: JSON round trip: %v\n%+v\n%+v", a.Name, err, a, b)
		}
	}
	if got := string(z.JSON()); !strings.Contains(got, `"prune":{"threshold_tokens":0,"protect_tokens":0,"protect_results":0,"minimum_tokens":0,`) {
		t.Errorf("JSON of explicit zeros: %s", got)
	}
}

// An empty tool says what it stands for, and an arm with fewer measures on than off names those on.
func TestDescribeSaysWhatEmptyAndFewMean(t *testing.T) {
	list, err := Parse("f.yaml", []byte("arms:\n  - name: churn\n    description: d\n    practices:\n      - tool_list_churn: {every: 2}\n"+
		"  - name: plain-diffs\n    description: d\n    base: plain\n    measures: {diffs: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "churn (f.yaml:2): every measure; tool_list_churn (every 2, change describe, tool (the list's last tool))"
	if got := list[0].Summary(); got != want {
		t.Errorf("Summary %q; want %q", got, want)
	}
	if d := list[0].Describe(); !strings.Contains(d, "practice tool_list_churn: every 2, change describe, tool (the list's last tool)\n") {
		t.Errorf("Describe:\n%s", d)
	}
	if got := list[1].Summary(); got != "plain-diffs (f.yaml:6): no measure but diffs" {
		t.Errorf("Summary %q", got)
	}
	if d := list[1].Describe(); !strings.Contains(d, "  measures: none of spec 3.2.0 but diffs\n") {
		t.Errorf("Describe:\n%s", d)
	}
}
