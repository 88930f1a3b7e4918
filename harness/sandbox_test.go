package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/chat"
	"lab/scenario"
)

// The bash tool runs no shell: it answers the scenario's scripted output for the command, and a
// scenario that calls a command it gives no output for is refused when it loads. Nothing is
// executed, even a command that would leave a trace.
func TestBashRunsNoShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a.txt --\nx\n"), 0o644)
	head := "name: shell\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T10:00:00Z\"\n"
	steps := "steps:\n  - user: go\n  - assistant:\n      calls:\n        - bash: {command: touch " + marker + "}\n  - assistant:\n      text: done\n"
	path := filepath.Join(dir, "scenario.yaml")
	os.WriteFile(path, []byte(head+steps), 0o644)
	if _, err := scenario.LoadScenario(path); err == nil || !strings.Contains(err.Error(), path+":9: bash: no entry for") {
		t.Errorf("a scenario calling an unscripted command: %v; want refused at file:line", err)
	}
	os.WriteFile(path, []byte(head+"commands:\n  - command: touch "+marker+"\n    output: scripted\n"+steps), 0o644)
	s := load(t, path)
	_, be := replay(t, s, arm(t, "spec"))
	var results []string
	for _, m := range be.requests[1].Messages {
		if m.Role == chat.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 1 || !strings.HasSuffix(results[0], "\nscripted") {
		t.Errorf("bash results %q; want the scripted output", results)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("%s exists: a shell ran the command (%v)", marker, err)
	}
}
