//go:build !linux

package tools

import (
	"context"
	"errors"
	"os"
	"os/exec"
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

// viewCommand cannot build a filesystem view outside Linux.
func viewCommand(context.Context, Shell, string, string) (*exec.Cmd, *os.File, func(), error) {
	return nil, nil, nil, errors.New("mount namespaces are Linux's")
}

// ShellTmpBytes is the size of the view's private /tmp on Linux; there is no view here.
const ShellTmpBytes = 256 << 20

// plainAttr is a plain command's: no namespace.
func plainAttr() *syscall.SysProcAttr { return nil }

// HasShellView reports whether the live shell can run its commands in the filesystem view: not
// outside Linux, where a sandbox is the fixed folder [ClaimSandbox] holds.
const HasShellView = false
