package tools_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/tools"
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

func runShell(t *testing.T, dir, command string, limit time.Duration) tools.ShellResult {
	t.Helper()
	res, err := tools.RunShell(context.Background(), dir, dir, command, limit)
	if errors.Is(err, tools.ErrNoIsolation) {
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
	if strings.Contains(res.Output, "sk-test-secret-123") || strings.Contains(res.Output, "OPENAI_API_KEY") || strings.Contains(res.Output, "LAB_SHELL_INIT") {
		t.Errorf("the command saw the lab's environment:\n%s", res.Output)
	}
	if !strings.Contains(res.Output, "HOME="+dir) {
		t.Errorf("env = %q, want HOME=%s", res.Output, dir)
	}
}

func TestRunShellHasNoNetwork(t *testing.T) {
	ln, self := dialTarget(t)
	dir := t.TempDir()
	// The same client outside the shell reaches the listener: the check can tell.
	out, err := execDial(self, ln.Addr().String())
	if err != nil || out != "dial ok" {
		t.Fatalf("dial outside the shell = %q, %v; want dial ok", out, err)
	}
	res := runShell(t, dir, fmt.Sprintf("LAB_TEST_DIAL=%s %q", ln.Addr(), selfIn(t, self, dir)), 20*time.Second)
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
	// A child left in the background holds the output open: the kill reaches it too. (The limit
	// leaves the shell's init time to start on a loaded machine.)
	res := runShell(t, dir, "sleep 30 & echo started; sleep 30", 2*time.Second)
	if !res.TimedOut || res.ExitCode != -1 || res.Output != "started\n" {
		t.Errorf("RunShell = %+v, want started, timed out", res)
	}
	if got, want := res.Text(2*time.Second), "started\n(killed: the command ran past its time limit of 2s)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

func TestRunShellKeepsAtMostMaxOutput(t *testing.T) {
	dir := t.TempDir()
	n := tools.MaxShellOutput + 5000
	res := runShell(t, dir, fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n), 20*time.Second)
	if len(res.Output) != tools.MaxShellOutput || res.Dropped != 5000 {
		t.Errorf("kept %d bytes, dropped %d; want %d and 5000", len(res.Output), res.Dropped, tools.MaxShellOutput)
	}
	if !strings.HasSuffix(res.Text(time.Second), "\n[5000 more bytes of output not kept]") {
		t.Errorf("Text ends %q", res.Text(time.Second)[len(res.Output)-10:])
	}
}

// dialTarget starts a loopback listener that accepts and closes every connection (closed at the
// test's end) and returns it with this test binary's path, the client that dials it
// (LAB_TEST_DIAL, TestMain).
func dialTarget(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
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
	return ln, self
}

// selfIn copies the test binary self into dir, the project the shell sees (its own folder,
// under the machine's temporary folder, is not in the shell's view), and returns the copy's path.
func selfIn(t *testing.T, self, dir string) string {
	t.Helper()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "dialer")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// execDial runs this test binary as the dialing client, outside any shell.
func execDial(self, addr string) (string, error) {
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "LAB_TEST_DIAL="+addr)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// leftovers returns the pids of the processes whose command line has arg, zombies left out.
func leftovers(t *testing.T, arg string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil {
			if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// Nothing a command starts outlives it: not a child in the background, not one that left the
// process group (setsid) or ignores hangups (nohup), whether the command ended by itself or by
// the time limit.
func TestRunShellLeavesNothingRunning(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc to look for processes in")
	}
	dir := t.TempDir()
	for i, c := range []struct {
		command string
		limit   time.Duration
	}{
		{"nohup sleep %s >/dev/null 2>&1 & echo started", 10 * time.Second},
		{"setsid sleep %s >/dev/null 2>&1 </dev/null & echo started", 10 * time.Second},
		{"sleep %s & echo started", 10 * time.Second},
		{"setsid sh -c 'sleep %s' & echo started; sleep 30", 2 * time.Second},
		{"(trap '' HUP TERM INT; exec setsid sleep %s) >/dev/null 2>&1 & echo started; sleep 30", 2 * time.Second},
	} {
		// A duration no other process on the machine gives sleep.
		arg := fmt.Sprintf("%d.%d", 200+i, time.Now().UnixNano()%1e9)
		command := fmt.Sprintf(c.command, arg)
		res := runShell(t, dir, command, c.limit)
		if !strings.HasPrefix(res.Output, "started") {
			t.Fatalf("%q: output %q", command, res.Output)
		}
		var left []int
		for range 50 { // a killed process may take a moment to go
			if left = leftovers(t, arg); len(left) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("%q left processes %v running", command, left)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// A command cannot go back to the lab's own network namespace: running as root does not give it
// the capability to (setns needs CAP_SYS_ADMIN over the namespace's owner).
func TestRunShellCannotEnterTheLabsNetwork(t *testing.T) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter")
	}
	ln, self := dialTarget(t)
	dir := t.TempDir()
	res := runShell(t, dir, fmt.Sprintf("LAB_TEST_DIAL=%s %q --net=/proc/%d/ns/net %q", ln.Addr(), nsenter, os.Getpid(), selfIn(t, self, dir)), 20*time.Second)
	if strings.Contains(res.Output, "dial ok") {
		t.Errorf("the shell entered the lab's network namespace and reached %s:\n%s", ln.Addr(), res.Output)
	}
}

// A command cannot read the environment of the lab, or of a process the lab started, through
// /proc: the user namespace keeps it from ptrace access to them even under the same user.
func TestRunShellCannotReadTheLabsEnvironment(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	helper := exec.Command("sleep", "60")
	helper.Env = append(os.Environ(), "LAB_TEST_SECRET=sk-helper-secret-456")
	if err := helper.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	dir := t.TempDir()
	for _, pid := range []int{os.Getpid(), helper.Process.Pid} {
		res := runShell(t, dir, fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/environ", pid), 10*time.Second)
		if strings.Contains(res.Output, "PATH=") || strings.Contains(res.Output, "sk-helper-secret-456") {
			t.Errorf("the shell read /proc/%d/environ:\n%s", pid, res.Output)
		}
	}
}

// BenchmarkRunShell is what one command costs the lab to start and end in its sandbox: the
// wall time of `true` (the shell's init, the lab's own executable, builds the filesystem view
// before it execs /bin/sh).
func BenchmarkRunShell(b *testing.B) {
	dir := b.TempDir()
	if _, err := tools.RunShell(context.Background(), dir, dir, "true", 10*time.Second); errors.Is(err, tools.ErrNoIsolation) {
		b.Skipf("this machine refuses the shell's namespaces: %v", err)
	}
	for b.Loop() {
		if _, err := tools.RunShell(context.Background(), dir, dir, "true", 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
