//go:build !linux

package harness

import (
	"errors"
	"os"
	"syscall"
)

// isolation cannot give a command a network namespace outside Linux: RunShell then runs
// nothing rather than a command with network.
func isolation() (*syscall.SysProcAttr, error) {
	return nil, errors.New("network namespaces are Linux's")
}

// killGroup kills p.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}
