package scriptmodel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every step of the script gets its outcome from the events: served, skipped with the reason the
// scripted model gave, or not reached when the agent stopped before asking for it; a bad
// events line is an error naming its file and line.
func TestProgress(t *testing.T) {
	s, err := ParseScript("s.yaml", []byte("name: s\nturns:\n  - user: one\n    steps:\n      - read a.go\n      - run go vet\n      - answer ok\n  - user: two\n    steps:\n      - read a.go\n      - answer done\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	lines := `{"n":1,"api":"openai-chat","turn":1,"step":1,"intent":"read a.go","prompt_tokens":10}
{"n":2,"api":"openai-chat","turn":1,"step":3,"intent":"answer \"ok\"","skipped":["turn=1 step=2 run go vet: no tool for run in the agent's tool list (read)"],"prompt_tokens":12}
{"n":3,"api":"openai-chat","turn":0,"step":0,"side":"no tool list","prompt_tokens":5}
{"n":4,"api":"openai-chat","turn":2,"step":1,"intent":"read a.go","prompt_tokens":0,"error":"prefill: HTTP 500"}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(path)
	if err != nil || len(evs) != 4 {
		t.Fatalf("ReadEvents: %d events, %v", len(evs), err)
	}
	got := s.Progress(evs)
	want := []struct{ outcome, why string }{
		{"served", ""}, {"skipped", "no tool for run in the agent's tool list (read)"}, {"served", ""},
		{"not reached", ""}, {"not reached", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d outcomes, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Outcome != w.outcome || got[i].Why != w.why {
			t.Errorf("step %d.%d %s: %s %q, want %s %q", got[i].Turn, got[i].Step, got[i].Intent, got[i].Outcome, got[i].Why, w.outcome, w.why)
		}
	}
	if len(got[3].Errors) != 1 || !strings.Contains(got[3].Errors[0], "HTTP 500") {
		t.Errorf("turn 2 step 1 errors %q, want the failed prefill", got[3].Errors)
	}
	if err := os.WriteFile(path, []byte(lines+"{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEvents(path); err == nil || !strings.Contains(err.Error(), path+":5:") {
		t.Fatalf("a bad line: %v, want an error naming %s:5", err, path)
	}
}
