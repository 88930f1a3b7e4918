package harness_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/harness"
)

// TestMain lets a shell command run this test binary as a network client: with
// LAB_TEST_DIAL=host:port it dials the address and prints what happened, then exits.
func TestMain(m *testing.M) {
	if addr := os.Getenv("LAB_TEST_DIAL"); addr != "" {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			fmt.Println("dial failed:", err)
			os.Exit(0)
		}
		c.Close()
		fmt.Println("dial ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runShell(t *testing.T, dir, command string, limit time.Duration) harness.ShellResult {
	t.Helper()
	res, err := harness.RunShell(context.Background(), dir, dir, command, limit)
	if errors.Is(err, harness.ErrNoIsolation) {
		t.Skipf("this machine refuses a network namespace: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunShellOutputAndStatus(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runShell(t, dir, "cat a.txt; echo oops >&2; exit 3", 10*time.Second)
	if res.Output != "hello\noops\n" || res.ExitCode != 3 || res.TimedOut {
		t.Errorf("RunShell = %+v, want output hello/oops, exit 3", res)
	}
	if got, want := res.Text(10*time.Second), "hello\noops\n(exit status 3)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	// The command runs where it was asked to, and writes there.
	res = runShell(t, dir, "pwd; echo x > made.txt", 10*time.Second)
	if strings.TrimSpace(res.Output) != dir || res.ExitCode != 0 {
		t.Errorf("pwd = %+v, want %s", res, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); err != nil {
		t.Errorf("the command's file: %v", err)
	}
}

func TestRunShellEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret-123")
	dir := t.TempDir()
	res := runShell(t, dir, "env", 10*time.Second)
	if strings.Contains(res.Output, "sk-test-secret-123") || strings.Contains(res.Output, "OPENAI_API_KEY") {
		t.Errorf("the command saw the lab's environment:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "HOME="+dir) {
		t.Errorf("env = %q, want HOME=%s", res.Output, dir)
	}
}

func TestRunShellHasNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The same client outside the shell reaches the listener: the check can tell.
	out, err := execDial(self, ln.Addr().String())
	if err != nil || out != "dial ok" {
		t.Fatalf("dial outside the shell = %q, %v; want dial ok", out, err)
	}
	res := runShell(t, dir, fmt.Sprintf("LAB_TEST_DIAL=%s %q", ln.Addr(), self), 20*time.Second)
	if !strings.HasPrefix(res.Output, "dial failed:") {
		t.Errorf("dial from the shell = %q, want it to fail (no network)", res.Output)
	}
	res = runShell(t, dir, "cat /proc/net/dev", 10*time.Second)
	for _, line := range strings.Split(res.Output, "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name != "lo" {
			t.Errorf("the shell sees network interface %q:\n%s", name, res.Output)
		}
	}
}

func TestRunShellTimeLimitKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	// A child left in the background holds the output open: the kill reaches it too.
	res := runShell(t, dir, "sleep 30 & echo started; sleep 30", 300*time.Millisecond)
	if !res.TimedOut || res.ExitCode != -1 || res.Output != "started\n" {
		t.Errorf("RunShell = %+v, want started, timed out", res)
	}
	if got, want := res.Text(300*time.Millisecond), "started\n(killed: the command ran past its time limit of 300ms)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

func TestRunShellKeepsAtMostMaxOutput(t *testing.T) {
	dir := t.TempDir()
	n := harness.MaxShellOutput + 5000
	res := runShell(t, dir, fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n), 20*time.Second)
	if len(res.Output) != harness.MaxShellOutput || res.Dropped != 5000 {
		t.Errorf("kept %d bytes, dropped %d; want %d and 5000", len(res.Output), res.Dropped, harness.MaxShellOutput)
	}
	if !strings.HasSuffix(res.Text(time.Second), "\n[5000 more bytes of output not kept]") {
		t.Errorf("Text ends %q", res.Text(time.Second)[len(res.Output)-10:])
	}
}

// execDial runs this test binary as the dialing client, outside any shell.
func execDial(self, addr string) (string, error) {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "LAB_TEST_DIAL="+addr)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
