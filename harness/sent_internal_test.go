package harness

import (
	"context"
	"reflect"
	"testing"

	lab "lab"
	"lab/arms"
	"lab/chat"
	"lab/hygiene"
	"lab/metrics"
	"lab/scenario"
	"lab/scenarios"
)

// For every scenario and every built-in arm without practices, at every step of the session the
// messages the next request carries, grown from the previous request's (runner.sentMessages),
// are those built whole from the history: the system prompt, then the history with the
// reasoning §8 says. The scenarios (the built-in ones and testdata/steps.yaml) cover new turns,
// a rewind, compactions, mode switches and a system prompt rebuilt for every request.
func TestSentMessagesAreTheWholeBuild(t *testing.T) {
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	var all []*scenario.Scenario
	for _, name := range scenarios.Names() {
		sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", name)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sc)
	}
	// A rewind (and an instructions and a git step), which no built-in scenario has.
	steps, err := scenario.LoadScenario("testdata/steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, steps)
	checked := 0
	for _, sc := range all {
		name := sc.Name
		for _, arm := range arms.Builtin() {
			if len(arm.Practices) > 0 {
				continue
			}
			r, err := newRunner(SessionConfig{Scenario: sc, Arm: arm, Repetition: 1, RunID: "t", Loop: loop,
				Backend: nopBackend{}, BackendName: "t", Sink: &metrics.MemorySink{}, SandboxDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range sc.Steps {
				if st.Assistant != nil || st.Compact != nil {
					system := r.system
					if !arm.Measures.DateInNote {
						system = r.buildSystem()
					}
					want := append([]chat.Message{{Role: chat.RoleSystem, Content: system}}, hygiene.CurrentTurnReasoning(r.history, arm.Measures)...)
					if got := r.sentMessages(system); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s/%s step %d: the request's messages differ from the whole build (%d messages; want %d)", name, arm.Name, i+1, len(got), len(want))
					}
					checked++
				}
				if err := r.event(context.Background(), st); err != nil {
					t.Fatalf("%s/%s step %d: %v", name, arm.Name, i+1, err)
				}
			}
			r.ws.Remove()
		}
	}
	if checked < 500 {
		t.Errorf("%d requests checked; want the scenarios' hundreds", checked)
	}
	t.Logf("%d requests checked", checked)
}
