package harness_test

import (
	"strings"
	"testing"

	lab "lab"
	"lab/hygiene"
	"lab/scenario"
)

// load reads the scenario file at path, failing t when it does not load.
func load(t *testing.T, path string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// loopConfig is the spec's loop configuration (loop.json), failing t when it does not parse.
func loopConfig(t *testing.T) *hygiene.Config {
	t.Helper()
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	return loop
}

// calls wraps scripted calls into a scenario: base's user step, one assistant step with the calls
// (line 9 on), and a final answer.
func calls(lines ...string) string {
	return base + "  - assistant:\n      calls:\n" + strings.Join(lines, "\n") + "\n  - assistant:\n      text: done\n"
}
