package supervise

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server that started a child (as Ollama starts its model runners, in its process group) and
// then exited during Start: the failed Start's Kill should end the group, as before the pidfd
// change (kill(2) of -pid reached every member left). It now signals nothing, because the
// leader has exited, and the child lives on.
func TestFailedStartLeavesNoChild(t *testing.T) {
	f := filepath.Join(t.TempDir(), "child.pid")
	s := fakeSpec(t, "FAKE_CHILD="+f, "FAKE_EXIT_AFTER_CHILD=1")
	_, err := Start(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("Start = %v; want the server's exit", err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	time.Sleep(time.Second)
	if alive(pid, s.Binary) {
		t.Errorf("the server's child pid %d (its process group %v) is alive after the failed Start", pid, pgid(pid))
	}
}

func pgid(pid int) int { g, _ := syscall.Getpgid(pid); return g }
