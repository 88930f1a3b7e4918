package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/arms"
	"lab/harness"
)

func writeArms(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "arms.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lab arms --file names the file and line of a mistake, and never the flag --arms it does not
// have; lab run names the file too.
func TestArmsFileErrors(t *testing.T) {
	empty := writeArms(t, "# nothing yet\n")
	code, _, errOut := runLab(t, "arms", "--file", empty)
	if want := "lab: " + empty + ": empty: want `arms:` with a list of arms\n"; code != exitBadInput || errOut != want {
		t.Errorf("empty file: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
	bad := writeArms(t, "arms:\n  - name: a\n    description: d\n    practices:\n      - tool_list_churn:\n          every: five\n")
	code, _, errOut = runLab(t, "arms", "--file", bad)
	if want := "lab: " + bad + ":6: tool_list_churn: every: want a whole number, got \"five\"\n"; code != exitBadInput || errOut != want {
		t.Errorf("wrong type: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
	code, _, errOut = runLab(t, "arms", "--file", filepath.Join(t.TempDir(), "missing.yaml"))
	if code != exitBadInput || !strings.HasPrefix(errOut, "lab: --file: open ") {
		t.Errorf("missing file: exit %d, stderr %q; want 2 and --file: open …", code, errOut)
	}
	code, _, errOut = runLab(t, "run", "--backend", "sim", "--arms", bad, "--arm", "a", "--results", t.TempDir())
	if code != exitBadInput || !strings.Contains(errOut, bad+":6: tool_list_churn: every:") {
		t.Errorf("lab run: exit %d, stderr %q; want 2 and %s:6", code, errOut, bad)
	}
}

// An arm naming a practice the harness does not apply yet: lab arms --file says so under that
// arm, and lab run and lab check refuse the file with exit 2 before any backend opens (a server
// at a closed port is never asked). The check is faked (refusing clock), so the test holds
// whichever practices the harness applies.
func TestArmsFileUnsupportedPractice(t *testing.T) {
	old := harnessSupports
	t.Cleanup(func() { harnessSupports = old })
	harnessSupports = func(a arms.Arm) error {
		if a.Find("clock") != nil {
			return fmt.Errorf("arm %q (%s): the harness does not apply the practice clock yet", a.Name, a.Source)
		}
		return nil
	}
	file := writeArms(t, "arms:\n  - name: ok\n    description: d\n  - name: timed\n    description: d\n    practices:\n      - clock: {}\n")
	code, out, _ := runLab(t, "arms", "--file", file)
	if code != exitOK || !strings.Contains(out, "timed ("+file+":4)") ||
		!strings.HasSuffix(out, "  note: lab run refuses this arm: the harness does not apply the practice clock yet\n") ||
		strings.Count(out, "note:") != 1 {
		t.Errorf("lab arms --file: exit %d, stdout:\n%s", code, out)
	}
	code, out, errOut := runLab(t, "arms", "--file", file, "--json")
	var defs []json.RawMessage
	if code != exitOK || json.Unmarshal([]byte(out), &defs) != nil || len(defs) != 2 ||
		errOut != `lab: warning: arm "timed" (`+file+`:4): lab run refuses this arm: the harness does not apply the practice clock yet`+"\n" {
		t.Errorf("lab arms --file --json: exit %d, stdout %s, stderr %q", code, out, errOut)
	}
	results := t.TempDir()
	code, _, errOut = runLab(t, "run", "--backend", "ollama", "--server", "http://127.0.0.1:1", "--arms", file, "--arm", "ok", "--results", results)
	want := `lab: arm "timed" (` + file + `:4): the harness does not apply the practice clock yet` + "\n"
	if code != exitBadInput || errOut != want {
		t.Errorf("lab run: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("lab run wrote %d entries to --results", len(entries))
	}
	chk := filepath.Join(t.TempDir(), "check.yaml")
	os.WriteFile(chk, []byte("scenarios: [midnight]\narms: [ok]\nexpect:\n  - scenario: midnight\n    arm: ok\n    no_divergence_before: tools\n"), 0o644)
	code, _, errOut = runLab(t, "check", chk, "--arms", file, "--quiet")
	if code != exitBadInput || errOut != want {
		t.Errorf("lab check: exit %d, stderr %q; want 2, %q", code, errOut, want)
	}
}

// The wiring with the harness's own check: a practice it does not apply at test time is
// refused by lab run with exit 2 (skipped when it applies every practice).
func TestArmsFileUnsupportedByHarness(t *testing.T) {
	for _, name := range arms.PracticeNames() {
		list, err := arms.Parse("f.yaml", []byte("arms:\n  - name: a\n    description: d\n    practices:\n      - "+name+": {}\n"))
		if err != nil || harness.Supported(list[0]) == nil {
			continue // needs parameters, or applied
		}
		file := writeArms(t, "arms:\n  - name: a\n    description: d\n    practices:\n      - "+name+": {}\n")
		code, _, errOut := runLab(t, "run", "--backend", "sim", "--arms", file, "--arm", "spec", "--results", t.TempDir())
		if code != exitBadInput || !strings.Contains(errOut, "the harness does not apply the practice "+name+" yet") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and the practice named", name, code, errOut)
		}
		return
	}
	t.Skip("the harness applies every practice that needs no parameters")
}

// tool_list_churn naming a tool that is in no tool list of the run is refused (exit 2); one
// missing from a scenario's list for the arm is a warning, and the run goes on.
func TestArmsFileChurnTool(t *testing.T) {
	file := writeArms(t, "arms:\n  - name: nope\n    description: d\n    practices:\n      - tool_list_churn: {change: remove, tool: nope}\n"+
		"  - name: bash\n    description: d\n    practices:\n      - tool_list_churn: {change: remove, tool: bash}\n")
	code, out, _ := runLab(t, "arms", "--file", file)
	if code != exitOK || !strings.Contains(out, `  note: tool_list_churn: tool "nope" is not a tool of the harness (read, `) || strings.Count(out, "note:") != 1 {
		t.Errorf("lab arms --file: exit %d, stdout:\n%s", code, out)
	}
	code, _, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "midnight", "--arms", file, "--arm", "nope", "--results", t.TempDir(), "-q")
	if code != exitBadInput || !strings.Contains(errOut, `arm "nope" (`+file+`:2): tool_list_churn: tool "nope" is neither a tool of the harness`) {
		t.Errorf("unknown tool: exit %d, stderr %q; want 2 naming the arm", code, errOut)
	}
	code, _, errOut = runLab(t, "run", "--backend", "sim", "--scenario", "midnight", "--arms", file, "--arm", "bash", "--results", t.TempDir(), "-q")
	want := `lab: warning: arm "bash" (` + file + `:6): tool_list_churn: tool "bash" is not in scenario midnight's tool list for this arm: the practice changes nothing there`
	if code != exitOK || !strings.Contains(errOut, want) {
		t.Errorf("bash without a shell: exit %d, stderr %q; want 0 and %q", code, errOut, want)
	}
}
