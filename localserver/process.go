package localserver

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// process is a server process the lab started or attached to: Ollama or a user's llama-server.
// Both lead their own process group (the server and, for Ollama, its model runners).
type process struct {
	// name is the server's name in errors ("ollama").
	name string
	pid  int
	// exited is closed when a process this lab started has been reaped; nil for one attached to.
	exited chan struct{}
	// alive reports whether pid still runs this server.
	alive func(pid int) bool
}

// waitExit waits up to d for the process to end.
func (p process) waitExit(d time.Duration) bool {
	deadline := time.After(d)
	for {
		if p.exited != nil {
			select {
			case <-p.exited:
				return true
			case <-deadline:
				return false
			}
		}
		if !p.alive(p.pid) {
			return true
		}
		select {
		case <-deadline:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill ends the whole process group at once.
func (p process) kill() {
	syscall.Kill(-p.pid, syscall.SIGKILL)
	p.waitExit(5 * time.Second)
}

// stop sends SIGTERM, then after stopGrace SIGKILL to the process group. A process that has
// already exited is not an error.
func (p process) stop() error {
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("stop %s pid %d: %w", p.name, p.pid, err)
	}
	if p.waitExit(stopGrace) {
		return nil
	}
	if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s pid %d: %w", p.name, p.pid, err)
	}
	if !p.waitExit(5 * time.Second) {
		return fmt.Errorf("stop %s pid %d: still running after SIGKILL", p.name, p.pid)
	}
	return nil
}
