package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
	"lab/tools/toolstest"
)

const slowGrepScenario = `name: slow-grep
description: A search past its time limit.
project: demo
workspace: w.txtar
clock: "2026-11-05T10:00:00+01:00"
steps:
  - user: Find the needle.
  - assistant:
      calls:
        - grep: {pattern: needle}
  - assistant:
      calls:
        - read: {path: a.txt}
  - assistant:
      text: Done.
`

func slowGrepSession(t *testing.T) *scenario.Scenario {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a.txt --\nneedle\n-- sub/b.txt --\nneedle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(slowGrepScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return load(t, filepath.Join(dir, "s.yaml"))
}

// In a session, a call past the run's tool time limit (Driver.ToolTimeout) answers the model that
// it was stopped, a warning names it, and the session goes on with its next steps.
func TestSessionToolCallPastItsLimitGoesOn(t *testing.T) {
	sc := slowGrepSession(t)
	toolstest.SlowDisk(t, 1, nil)
	be := newRecorder(t)
	sink := &metrics.MemorySink{}
	var warnings []string
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop(t), Backend: be,
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(), Retry: harness.RetryPolicy{Attempts: 1},
		Driver: harness.Driver{ToolTimeout: 40 * time.Millisecond},
		Warn:   func(err error) { warnings = append(warnings, err.Error()) },
	})
	if err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	if n := len(sink.Samples()); n != 3 {
		t.Errorf("%d rows; want 3, the session going on after the stopped call", n)
	}
	var results []string
	for _, m := range be.requests[len(be.requests)-1].Messages {
		if m.Role == chat.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || !strings.HasSuffix(results[0], "(stopped: the grep call ran past its time limit of 40ms)") || !strings.Contains(results[1], "needle") {
		t.Errorf("tool results = %q; want the grep stopped, then the read", results)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "slow-grep/spec turn 1 step 1: stopped: the grep call ran past its time limit of 40ms") {
		t.Errorf("warnings = %q; want one naming the stopped grep", warnings)
	}
}

// A run stopped (its context cancelled, as SIGTERM does) while a tool call waits on a slow disk
// ends the call and the session.
func TestSessionStoppedDuringAToolCall(t *testing.T) {
	sc := slowGrepSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := toolstest.SlowDisk(t, 1, cancel)
	sink := &metrics.MemorySink{}
	err := harness.RunSession(ctx, harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop(t), Backend: newRecorder(t),
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(), Retry: harness.RetryPolicy{Attempts: 1},
		Driver: harness.Driver{ToolTimeout: time.Hour},
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("RunSession = %v; want the run's stop", err)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads; want the grep to end at its first", n)
	}
}

// A live command whose scenario gives no shell timeout runs within the run's tool time limit,
// and the turn's limit kills a command that outlasts the turn, saying so.
func TestLiveShellRunsWithinTheToolTimeLimit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- main.go --\npackage main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := `name: live-slow
description: A command past its limit.
project: demo
workspace: w.txtar
clock: "2026-11-05T10:00:00+01:00"
shell: {}
commands:
  - command: "echo started; sleep 30"
    output: "scripted\n"
steps:
  - user: Wait.
  - assistant:
      calls:
        - bash: {command: "echo started; sleep 30"}
  - assistant:
      text: Done.
`
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := load(t, filepath.Join(dir, "s.yaml"))
	for _, c := range []struct {
		d    harness.Driver
		want string
	}{
		{harness.Driver{Mode: harness.DriverLive, ToolTimeout: 2 * time.Second}, "started\n(killed: the command ran past its time limit of 2s)"},
		{harness.Driver{Mode: harness.DriverLive, ToolTimeout: time.Minute, TurnTimeout: 2 * time.Second}, "started\n(killed: the command ran past the turn's time limit)"},
	} {
		be := newRecorder(t)
		var warnings []string
		sink := &metrics.MemorySink{}
		err := harness.RunSession(context.Background(), harness.SessionConfig{
			Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop(t), Backend: be,
			Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(), Retry: harness.RetryPolicy{Attempts: 1},
			Driver: c.d, Warn: func(err error) { warnings = append(warnings, err.Error()) },
		})
		if err != nil {
			t.Fatal(err)
		}
		var out string
		for _, r := range be.requests {
			for _, m := range r.Messages {
				if m.ToolName == "bash" {
					out = m.Content
				}
			}
		}
		if strings.Contains(out, "namespaces of its own") {
			t.Skipf("this machine refuses the shell's namespaces: %s", out)
		}
		if !strings.HasSuffix(out, c.want) {
			t.Errorf("%+v: bash answered %q; want it to end %q", c.d, out, c.want)
		}
		if len(warnings) == 0 || !strings.Contains(warnings[0], "was killed: "+strings.Trim(c.want[strings.Index(c.want, "(killed"):], "()")) {
			t.Errorf("%+v: warnings %q; want one naming the kill", c.d, warnings)
		}
	}
}
