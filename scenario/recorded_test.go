package scenario_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/scenario"
)

// recordedBase is a scenario whose first turn has recorded answers: a read of a file the
// workspace does not hold, a bash call without commands, a call of the scenario's own tool.
const recordedBase = `name: x
project: p
workspace: w.txtar
clock: "2026-11-05T22:00:00Z"
tools:
  - name: web_fetch
    description: Fetch a page.
    parameters: {type: object, properties: {url: {type: string}}}
steps:
  - user: hi
  - assistant:
      calls:
        - read: {path: gone.go, offset: 3}
          answer: "3: x"
        - answer: ok
          bash: {command: go test ./...}
        - web_fetch: {url: "https://example.invalid"}
          answer: <html>
        - read: {path: a}
  - assistant:
      text: done
`

func loadText(t *testing.T, text string) (*scenario.Scenario, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	os.WriteFile(p, []byte(text), 0o644)
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a --\nx\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "requests.jsonl"), []byte("{\"scenario\":\"c\",\"api\":\"ollama-chat\",\"body\":{\"messages\":[]},\"reply\":{\"content\":\"hi\"}}\n"), 0o644)
	return scenario.LoadScenario(p)
}

// A call with answer: replays it: its paths are not checked, bash needs no commands entry
// (and is then in the tool list), the scenario's own tools need one; RecordedSteps names the
// step with its turn, step and count; capture: is read line by line.
func TestRecordedAnswers(t *testing.T) {
	sc, err := loadText(t, recordedBase+"capture: requests.jsonl\n")
	if err != nil {
		t.Fatal(err)
	}
	calls := sc.Steps[1].Assistant.Calls
	if calls[0].Answer == nil || *calls[0].Answer != "3: x" || calls[1].Tool != "bash" || *calls[1].Answer != "ok" || calls[3].Answer != nil {
		t.Errorf("calls %+v", calls)
	}
	if !sc.HasShell() || !sc.HasAgentTool("web_fetch") || string(sc.Tools[0].ToolSchema()) != `{"properties":{"url":{"type":"string"}},"type":"object"}` {
		t.Errorf("HasShell %v, tools %+v", sc.HasShell(), sc.Tools)
	}
	if got := sc.RecordedSteps(); len(got) != 1 || got[0] != (scenario.RecordedStep{Turn: 1, Step: 1, Line: 11, Calls: 3}) {
		t.Errorf("RecordedSteps = %+v", got)
	}
	if len(sc.Captured) != 1 || sc.Captured[0].API != "ollama-chat" || sc.Captured[0].Reply.Content != "hi" || sc.Captured[0].Line != 1 {
		t.Errorf("Captured = %+v", sc.Captured)
	}
}

// Mistakes in the new fields are file:line errors.
func TestRecordedAnswerErrors(t *testing.T) {
	for _, tc := range []struct{ name, edit, want string }{
		{"own tool without answer", "          answer: <html>\n", ":17: web_fetch: a call of one of the scenario's own tools needs answer: TEXT"},
		{"answer not a string", "          answer: \"3: x\"\n", ":14: answer: want a string"},
		{"tool named as a lab tool", "  - name: web_fetch\n", ":5: tools: \"read\" is a lab tool"},
		{"two tools", "        - answer: ok\n", `:17: call: unknown field "bash" beside the tool "read"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := recordedBase
			switch tc.name {
			case "own tool without answer":
				text = strings.Replace(text, tc.edit, "", 1)
			case "answer not a string":
				text = strings.Replace(text, tc.edit, "          answer: {a: 1}\n", 1)
			case "tool named as a lab tool":
				text = strings.Replace(text, tc.edit, "  - name: read\n", 1)
			case "two tools":
				text = strings.Replace(text, "        - answer: ok\n          bash:", "        - answer: ok\n          read: {path: a}\n          bash:", 1)
			}
			_, err := loadText(t, text)
			var se *scenario.SyntaxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadScenario = %v; want %s", err, tc.want)
			}
		})
	}
	if _, err := loadText(t, recordedBase+"capture: missing.jsonl\n"); err == nil || !strings.Contains(err.Error(), `capture "missing.jsonl"`) {
		t.Errorf("a missing capture: %v", err)
	}
	if _, err := scenario.ParseCaptured("r.jsonl", []byte("{\"api\":\"x\",\"body\":{}}\n{\"body\":{}}\n")); err == nil || err.Error() != "r.jsonl:2: a requests line needs api and body (lab proxy --save-requests writes both)" {
		t.Errorf("ParseCaptured: %v", err)
	}
}
