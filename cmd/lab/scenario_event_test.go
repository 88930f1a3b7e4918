package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/metrics"
)

// Each row names what the scenario changed just before its request (scenario_event): midnight's
// clock crosses into 6 November before turn 4 (request 27), mode-switch goes to plan before
// turn 2 and to auto before turn 3; every other row has none.
func TestScenarioEventRows(t *testing.T) {
	t.Parallel()
	res := filepath.Join(t.TempDir(), "results")
	if code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "midnight,mode-switch", "--arm", "spec", "--results", res, "--run-id", "ev", "--quiet"); code != 0 {
		t.Fatalf("lab run: exit %d: %s", code, errOut)
	}
	_, rows, err := metrics.ReadRun(filepath.Join(res, "run_id=ev"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rows {
		if s.ScenarioEvent != "" {
			got = append(got, fmt.Sprintf("%s %d (turn %d step %d): %s", s.Scenario, s.RequestIndex, s.Turn, s.Step, s.ScenarioEvent))
		}
	}
	slices.Sort(got)
	want := []string{"midnight 27 (turn 4 step 1): midnight", "mode-switch 4 (turn 2 step 1): mode plan", "mode-switch 9 (turn 3 step 1): mode auto"}
	if !slices.Equal(got, want) {
		t.Errorf("rows with a scenario event:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
