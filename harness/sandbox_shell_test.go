//go:build linux

package harness_test

import (
	"context"
	"fmt"
	"lab/arms"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/scenario"
	"lab/tools"
)

// shownShellScenario writes a live scenario named name whose one command prints the shell's
// working folder and HOME, and loads it.
func shownShellScenario(t *testing.T, name string) *scenario.Scenario {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- main.go --\npackage main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := `name: ` + name + `
description: Where the shell is.
project: demo
workspace: w.txtar
clock: "2026-11-05T10:00:00+01:00"
shell:
  timeout: 20s
commands:
  - command: "pwd; echo $HOME; cat missing.txt"
    output: "scripted\n"
steps:
  - user: Where are we?
  - assistant:
      calls:
        - bash: {command: "pwd; echo $HOME; cat missing.txt"}
  - assistant:
      text: Done.
`
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return load(t, filepath.Join(dir, "s.yaml"))
}

// runShown runs sc's one session with the live driver d and returns its bash answer.
func runShown(t *testing.T, sc *scenario.Scenario, d harness.Driver, warn func(error)) string {
	be := newRecorder(t)
	if _, _, err := harness.Run(context.Background(), harness.RunConfig{
		Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, ResultsDir: t.TempDir(), RunID: "r",
		Loop: loop(t), Backend: be, Tokenizer: tinytokenizer.Bytes{}, Driver: d, Warn: warn,
	}); err != nil {
		t.Error(err)
		return ""
	}
	for _, m := range be.requests[len(be.requests)-1].Messages {
		if m.ToolName == "bash" {
			return m.Content
		}
	}
	t.Error("no bash answer")
	return ""
}

// The live shell shows the sandbox at its shown path, /tmp/lab-sandbox/<scenario>, whatever
// TMPDIR is: pwd, $HOME and an error message name it, with no rewriting of the output (the view
// mounts the private folder there). A session in a private folder waits for no one, not even
// for the holder of the scenario's fixed folder. With --unsandboxed-shell, where the shown path
// cannot be mounted, the session claims the fixed folder itself, held by the lock as before
// (it waits for its holder), so its answers are the same.
func TestLiveShellShowsTheShownPath(t *testing.T) {
	temp := longTempDir(t)
	name := fmt.Sprintf("shown-shell-%d", os.Getpid())
	sc := shownShellScenario(t, name)
	shown := filepath.Join(tools.ShownSandboxRoot, name)
	want := fmt.Sprintf("[#0001]\n%s/demo\n%s/.home\ncat: missing.txt: No such file or directory\n(exit status 1)", shown, shown)

	// Another holder has the scenario's fixed folder.
	_, release, err := tools.ClaimSandbox(context.Background(), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(tools.ShownSandboxRoot, ".locks", name)) })
	held := true
	defer func() {
		if held {
			release()
		}
	}()

	done := make(chan string, 1)
	go func() { done <- runShown(t, sc, harness.Driver{Mode: harness.DriverLive}, nil) }()
	var got string
	select {
	case got = <-done:
	case <-time.After(60 * time.Second):
		release()
		held = false
		<-done
		t.Fatal("a live session in a private sandbox waited for the holder of the scenario's fixed folder")
	}
	if strings.Contains(got, "network namespace") || strings.Contains(got, "namespaces of its own") {
		t.Skipf("this machine refuses the shell's namespaces: %s", got)
	}
	if got != want {
		t.Errorf("bash = %q; want %q", got, want)
	}
	if strings.Contains(got, temp) {
		t.Errorf("bash names the real temporary folder %s", temp)
	}

	// With the opt-out the session waits for the fixed folder's holder, then runs there.
	var mu sync.Mutex
	var warned []string
	waiting := make(chan bool, 1)
	warn := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		warned = append(warned, err.Error())
		if strings.Contains(err.Error(), "waiting for the sandbox "+shown) {
			select {
			case waiting <- true:
			default:
			}
		}
	}
	go func() {
		done <- runShown(t, sc, harness.Driver{Mode: harness.DriverLive, UnsandboxedShell: true}, warn)
	}()
	select {
	case <-waiting:
	case <-time.After(60 * time.Second):
		mu.Lock()
		t.Errorf("with --unsandboxed-shell the session did not wait for the fixed folder %s (warnings %q)", shown, warned)
		mu.Unlock()
	}
	release()
	held = false
	if got := <-done; got != want {
		t.Errorf("with --unsandboxed-shell bash = %q; want %q", got, want)
	}
}
