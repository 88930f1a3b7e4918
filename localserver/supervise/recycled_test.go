package supervise

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inOwnPIDNamespace reruns the calling test in a PID namespace of its own with its own /proc
// (unshare -p -f --mount-proc), where the test may pick the pid the next process gets, and
// reports false: the caller returns, its verdict is the rerun's. It reports true inside the rerun.
// It skips where the machine refuses the namespaces.
func inOwnPIDNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv("SUPERVISE_PIDNS") == t.Name() {
		return true
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to make a PID namespace")
	}
	cmd := exec.Command(unshare, "-p", "-f", "--mount-proc", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "SUPERVISE_PIDNS="+t.Name())
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "=== RUN") {
		t.Skipf("the machine refuses a PID namespace: %v: %s", err, out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Errorf("in a PID namespace of its own: %v\n%s", err, out)
	}
	return false
}

// nextPID makes pid the pid the next process of this PID namespace gets.
func nextPID(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
		t.Skipf("cannot pick the next pid: %v", err)
	}
}

// startOther starts a program that is not the server at pid, and reports whether a signal
// ended it within a second.
func startOther(t *testing.T, pid int) (signalled func() bool) {
	t.Helper()
	nextPID(t, pid)
	other := exec.Command("/bin/sleep", "30")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a server's was
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill() })
	if other.Process.Pid != pid {
		t.Skipf("the other program got pid %d, not %d", other.Process.Pid, pid)
	}
	done := make(chan struct{})
	go func() { other.Wait(); close(done) }()
	return func() bool {
		select {
		case <-done:
			return true
		case <-time.After(time.Second):
			return false
		}
	}
}

// A server found by Attach that ended, its pid now another program's: Stop signals nothing.
func TestStopLeavesARecycledPidAlone(t *testing.T) {
	if !inOwnPIDNamespace(t) {
		return
	}
	ctx := context.Background()
	s := fakeSpec(t)
	started, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Attach(ctx, s, nil) // a later lab process finds it
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(started.PID, syscall.SIGKILL) // a crash, the OOM killer
	<-started.exited
	signalled := startOther(t, p.PID)
	if !p.Exited() {
		t.Errorf("Exited() = false for a pid that now runs /bin/sleep")
	}
	err = p.Stop()
	if signalled() {
		t.Errorf("Stop() = %v of a server that had ended signalled pid %d, now another program's", err, p.PID)
	}
}

// A server Start started and reaped, its pid (and group id) now another program's: Kill signals
// nothing.
func TestKillLeavesARecycledPidAlone(t *testing.T) {
	if !inOwnPIDNamespace(t) {
		return
	}
	p, err := Start(context.Background(), fakeSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(p.PID, syscall.SIGKILL)
	<-p.exited
	signalled := startOther(t, p.PID)
	p.Kill()
	if signalled() {
		t.Errorf("Kill() of a reaped server signalled group %d, now another program's", p.PID)
	}
}
