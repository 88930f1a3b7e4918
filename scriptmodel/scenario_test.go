package scriptmodel

import (
	"context"
	"encoding/json"
	"lab/arms"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	lab "lab"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

// scenarioCalls lists the scenario's tool calls in order, each as "tool {json arguments}".
func scenarioCalls(sc *scenario.Scenario) []string {
	var out []string
	for _, st := range sc.Steps {
		if st.Assistant == nil {
			continue
		}
		for _, c := range st.Assistant.Calls {
			out = append(out, c.Tool+" "+string(c.Args))
		}
	}
	return out
}

// The default script becomes a scenario of its three turns: one user step per turn, one
// assistant step per script step, each intent one call of the lab's tool with its arguments.
func TestScenarioOfTheDefaultScript(t *testing.T) {
	s := DefaultScript()
	sc, err := s.Scenario(DefaultWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "script-default" || sc.Project != ScenarioProject {
		t.Errorf("name %q, project %q; want script-default, %s", sc.Name, sc.Project, ScenarioProject)
	}
	var users []string
	assistants := 0
	for _, st := range sc.Steps {
		switch {
		case st.User != nil:
			users = append(users, *st.User)
		case st.Assistant != nil:
			assistants++
		}
	}
	want := []string{s.Turns[0].User, s.Turns[1].User, s.Turns[2].User}
	if diff := cmp.Diff(want, users); diff != "" {
		t.Errorf("user steps (-want +got):\n%s", diff)
	}
	if assistants != 6+7+7 {
		t.Errorf("%d assistant steps; want one per script step, 20", assistants)
	}
	wantCalls := []string{
		`list {}`,
		`read {"path":"README.md"}`,
		`read {"path":"main.go"}`,
		`read {"path":"greet.go"}`,
		`grep {"pattern":"Greet"}`,
		`read {"path":"greet.go"}`,
		`edit {"path":"greet.go","old_string":"Hello, ","new_string":"Hi, "}`,
		`read {"path":"greet.go"}`,
		`read {"path":"greet_test.go"}`,
		`edit {"path":"greet_test.go","old_string":"Hello, Ada!","new_string":"Hi, Ada!"}`,
		`bash {"command":"go test ./..."}`,
		`grep {"pattern":"Greet"}`,
		`grep {"pattern":"Hello"}`,
		"edit {\"path\":\"README.md\",\"old_string\":\"prints `Hello, Ada!`\",\"new_string\":\"prints `Hi, Ada!`\"}",
		`bash {"command":"seq 1 3000"}`,
		`write {"path":"NOTES.md","content":"# Notes\n\n- The greeting is \"Hi, NAME!\" now (greet.go, greet_test.go, README.md).\n"}`,
		`list {}`,
	}
	if diff := cmp.Diff(wantCalls, scenarioCalls(sc)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	// The reasoning and the answers come through; an answer step has no call.
	first := sc.Steps[1].Assistant
	if first.Reasoning != "I should see which files the project has first." {
		t.Errorf("first step's reasoning = %q", first.Reasoning)
	}
	last := sc.Steps[len(sc.Steps)-1].Assistant
	if last == nil || len(last.Calls) != 0 || last.Text != s.Turns[2].Steps[6].Intent.Text {
		t.Errorf("last step = %+v; want the third turn's answer, no call", last)
	}
	// The workspace is the map given, byte for byte.
	ws := DefaultWorkspace()
	got := map[string]string{}
	for _, f := range sc.Files {
		got[f.Name] = string(f.Data)
	}
	if diff := cmp.Diff(ws, got); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	// bash is answered from commands: seq's real output, 3000 lines.
	var seqOut string
	for _, c := range sc.Commands {
		if c.Command == "seq 1 3000" {
			seqOut = c.Output
		}
	}
	lines := strings.Split(strings.TrimSuffix(seqOut, "\n"), "\n")
	if len(lines) != 3000 || lines[0] != "1" || lines[2999] != "3000" {
		t.Errorf("seq 1 3000 answers %d lines (%.20q…); want 1 to 3000", len(lines), seqOut)
	}
}

// With midnight: 3 the clock starts late in the evening and a clock step before turn 3 takes it
// into the next day; without midnight there is no clock step.
func TestScenarioClockCrossesMidnight(t *testing.T) {
	s := DefaultScript()
	sc, err := s.Scenario(DefaultWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	day := func(tm time.Time) string { return tm.In(sc.Start.Location()).Format("2006-01-02") }
	if got := sc.Start.Format("15:04"); got != "23:50" {
		t.Errorf("clock starts at %s; want 23:50", got)
	}
	turn, clockTurn := 0, 0
	var at time.Time
	for _, st := range sc.Steps {
		switch {
		case st.User != nil:
			turn++
		case st.Clock != nil:
			clockTurn, at = turn+1, st.At
		}
	}
	if clockTurn != 3 {
		t.Fatalf("clock step before turn %d; want before turn 3", clockTurn)
	}
	if day(sc.Start) != "2026-11-05" || day(at) != "2026-11-06" {
		t.Errorf("clock goes from %s to %s; want 2026-11-05 to 2026-11-06", sc.Start, at)
	}

	s.Midnight = 0
	sc, err = s.Scenario(DefaultWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sc.Steps {
		if st.Clock != nil {
			t.Errorf("midnight 0: a clock step %q at line %d; want none", *st.Clock, st.Line)
		}
	}
}

// An intent of no kind the conversion knows, a path the workspace does not hold and a workspace
// file a txtar archive cannot hold are errors that say so.
func TestScenarioErrors(t *testing.T) {
	script := func(steps ...Step) *Script {
		return &Script{Name: "x", Turns: []Turn{{User: "u", Steps: steps}}}
	}
	answer := Step{Intent: Intent{Kind: KindAnswer, Text: "done"}}
	ws := map[string]string{"a.go": "package a\n"}
	for _, c := range []struct {
		name string
		s    *Script
		ws   map[string]string
		want string
	}{
		{"unknown intent", script(Step{Intent: Intent{Kind: "delete", Path: "a.go"}, Line: 4}, answer), ws,
			`script x as a scenario: turn 1 step 1 (line 4): intent "delete" has no tool of the lab's harness`},
		{"missing file", script(Step{Intent: Intent{Kind: KindRead, Path: "b.go"}}, answer), ws,
			`read "b.go": the workspace holds no such file`},
		{"no final newline", script(answer), map[string]string{"a.go": "package a"}, `workspace file "a.go": a txtar archive cannot hold it as it is`},
		{"marker line", script(answer), map[string]string{"a.md": "x\n-- b.go --\ny\n", "z.go": "package z\n"}, `workspace file "a.md": a txtar archive cannot hold it`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.s.Scenario(c.ws)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one holding %q", err, c.want)
			}
		})
	}
}

// Text that YAML would read otherwise unquoted (a leading space, "true", a colon, a trailing
// newline, a tab) keeps its value through the generated scenario file.
func TestScenarioKeepsTextExactly(t *testing.T) {
	odd := []string{" lead", "true", "a: b # c", "two\nlines\n", "tab\there", "- dash", "\"quoted\""}
	var steps []Step
	for _, o := range odd {
		steps = append(steps, Step{Intent: Intent{Kind: KindWrite, Path: "f.txt", Text: o}, Reasoning: o})
	}
	steps = append(steps, Step{Intent: Intent{Kind: KindAnswer, Text: odd[3]}})
	s := &Script{Name: "odd", Turns: []Turn{{User: odd[2], Steps: steps}}}
	sc, err := s.Scenario(nil)
	if err != nil {
		t.Fatal(err)
	}
	if *sc.Steps[0].User != odd[2] {
		t.Errorf("user = %q; want %q", *sc.Steps[0].User, odd[2])
	}
	for i, o := range odd {
		a := sc.Steps[1+i].Assistant
		var args struct{ Content string }
		if err := json.Unmarshal(a.Calls[0].Args, &args); err != nil {
			t.Fatal(err)
		}
		if a.Reasoning != o || args.Content != o {
			t.Errorf("step %d: reasoning %q, content %q; want %q", i+1, a.Reasoning, args.Content, o)
		}
	}
}

func TestCommandOutput(t *testing.T) {
	for cmd, want := range map[string]string{
		"seq 3":         "1\n2\n3\n",
		"seq 2 4":       "2\n3\n4\n",
		"seq 1 2 6":     "1\n3\n5\n",
		"seq 3 -1 1":    "3\n2\n1\n",
		"seq 5 1":       "",
		"go test ./...": "",
		"seq x":         "",
	} {
		if got := commandOutput(cmd); got != want {
			t.Errorf("commandOutput(%q) = %q; want %q", cmd, got, want)
		}
	}
}

// The default script's scenario runs through the lab's own harness on the sim backend under the
// spec arm: one request per script step, every tool call answered without an error, and the
// third turn's date note naming the next day.
func TestScenarioRunsOnTheSim(t *testing.T) {
	sc, err := DefaultScript().Scenario(DefaultWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	arms, err := arms.Select(arms.Builtin(), "spec")
	if err != nil {
		t.Fatal(err)
	}
	be, err := sim.New(sim.Options{Model: &cachesim.Ideal{}, Tokenizer: tinytokenizer.Bytes{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingBackend{Backend: be}
	sink := &metrics.MemorySink{}
	err = harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arms[0], Repetition: 1, RunID: "t", Loop: loop, Backend: rec,
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	samples := sink.Samples()
	if len(samples) != 20 {
		t.Fatalf("%d requests; want one per script step, 20", len(samples))
	}
	if s := samples[13]; s.Turn != 3 || s.Step != 1 {
		t.Errorf("request 14 is turn %d step %d; want turn 3 step 1", s.Turn, s.Step)
	}
	for _, s := range samples {
		if s.Error != "" {
			t.Errorf("turn %d step %d: error %s", s.Turn, s.Step, s.Error)
		}
	}
	last := rec.requests[len(rec.requests)-1]
	var results []string
	for _, m := range last.Messages {
		if m.Role == chat.RoleTool {
			results = append(results, m.Content)
			if strings.HasPrefix(m.Content, "Error: ") || strings.Contains(m.Content, "]\nError: ") {
				t.Errorf("a tool call answered an error: %.300s", m.Content)
			}
		}
	}
	if len(results) != 17 {
		t.Errorf("%d tool results in the last request; want the 17 calls'", len(results))
	}
	all := strings.Join(results, "\n")
	if !strings.Contains(all, `+	return "Hi, " + name + "!"`) {
		t.Errorf("no result shows greet.go's edit as a diff:\n%.2000s", all)
	}
	turn3 := rec.requests[13].Messages[len(rec.requests[13].Messages)-1].Content
	if !strings.Contains(turn3, "Today's date is Friday, 2026-11-06.") {
		t.Errorf("turn 3's user message carries no date note for the next day:\n%s", turn3)
	}
}

// recordingBackend is the sim backend with every request it was sent kept.
type recordingBackend struct {
	*sim.Backend
	requests []*chat.Request
}

func (r *recordingBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	r.requests = append(r.requests, req)
	return r.Backend.Send(ctx, req, reply)
}
