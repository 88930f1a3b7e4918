//go:build unix

package harness_test

import (
	"bufio"
	"context"
	"io"
	"lab/arms"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	lab "lab"
	"lab/backend/ollama"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/scenario"
	"lab/scenarios"
)

// holdBackend is the helper process's backend: its first request says "ready" on stdout and
// waits until stdin is closed, so the helper holds its sandbox as long as the test wants.
type holdBackend struct {
	renderBackend
	held bool
}

func (b *holdBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	if !b.held {
		b.held = true
		os.Stdout.WriteString("ready\n")
		io.Copy(io.Discard, os.Stdin)
	}
	return b.renderBackend.Send(ctx, req, reply)
}

// TestSandboxHelperProcess is not a test: it is the other lab process of
// TestSandboxPathIgnoresOtherProcesses, running the scenario LAB_SANDBOX_HELPER names.
func TestSandboxHelperProcess(t *testing.T) {
	name := os.Getenv("LAB_SANDBOX_HELPER")
	if name == "" {
		t.Skip("only the helper of TestSandboxPathIgnoresOtherProcesses")
	}
	sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", "scenarios/"+name+"/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	loop, _ := hygiene.ParseConfig(lab.LoopJSON)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	if _, _, err := harness.Run(context.Background(), harness.RunConfig{
		Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, ResultsDir: t.TempDir(), RunID: "helper",
		Loop: loop, Backend: &holdBackend{renderBackend: renderBackend{conv: conv}}, Tokenizer: tinytokenizer.Bytes{},
	}); err != nil {
		t.Fatal(err)
	}
}

// startHelper starts another process running a session of scenario name, and returns once its
// first request holds the session's sandbox; closing the returned writer lets it finish.
func startHelper(t *testing.T, name string) (io.WriteCloser, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LAB_SANDBOX_HELPER="+name)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatal("the helper process ended before its first request")
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the helper process did not start its session within 60s")
	}
	return in, cmd
}

// The bytes a scripted session sends depend on nothing else on the machine: a session run while
// another lab process runs a session (of another scenario, or of the same one) sees the same
// project root, shown at /tmp/lab-sandbox/<scenario> whatever TMPDIR is, and sends the same
// rendered requests as one run alone. A session of the same scenario runs at once, in a private
// folder of its own, and waits for nothing.
func TestSandboxPathIgnoresOtherProcesses(t *testing.T) {
	temp := longTempDir(t)
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "midnight/scenario.yaml", "scenarios/midnight/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	loop, _ := hygiene.ParseConfig(lab.LoopJSON)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	run := func(id string, sent chan<- bool) []string {
		be := &signalBackend{renderBackend: renderBackend{conv: conv}, sent: sent}
		if _, _, err := harness.Run(context.Background(), harness.RunConfig{
			Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, ResultsDir: t.TempDir(), RunID: id,
			Loop: loop, Backend: be, Tokenizer: tinytokenizer.Bytes{},
		}); err != nil {
			t.Error(err)
		}
		return be.rendered
	}
	alone := run("alone", nil)
	all := strings.Join(alone, "")
	if root := "/tmp/lab-sandbox/midnight/"; !strings.Contains(all, root) {
		t.Fatalf("the requests never name a path under %s; the test needs a scenario whose answers name absolute paths", root)
	}
	if strings.Contains(all, temp) {
		t.Errorf("the requests name the real temporary folder %s", temp)
	}

	// Another process runs a session of another scenario.
	in, cmd := startHelper(t, "unchanged-rereads")
	beside := run("beside", nil)
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if !slices.Equal(alone, beside) {
		t.Errorf("a session run beside another lab process sent other bytes than one run alone (%d and %d requests)", len(alone), len(beside))
	}

	// Another process is in a session of the same scenario: this one runs at once, beside it,
	// and sends the same bytes.
	in, cmd = startHelper(t, "midnight")
	done := make(chan []string, 1)
	go func() { done <- run("same", nil) }()
	select {
	case same := <-done:
		if !slices.Equal(alone, same) {
			t.Errorf("a session run beside another process's session of the same scenario sent other bytes than one run alone")
		}
	case <-time.After(60 * time.Second):
		t.Error("a session of midnight did not finish within 60s while another process was in a session of midnight")
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
}

// signalBackend records every rendered prompt and says on sent when it sends one.
type signalBackend struct {
	renderBackend
	sent     chan<- bool
	rendered []string
}

func (b *signalBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	if b.sent != nil {
		b.sent <- true
	}
	res, err := b.renderBackend.Send(ctx, req, reply)
	if res != nil {
		b.rendered = append(b.rendered, res.Rendered)
	}
	return res, err
}
