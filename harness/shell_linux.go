package harness

import (
	"os"
	"syscall"
)

// isolation puts a command in a network namespace of its own (CLONE_NEWNET: only a loopback
// interface, down) and a process group of its own. Without root it needs a user namespace too
// (CLONE_NEWUSER), mapping the lab's user and group to themselves, so files the command writes
// belong to the lab's user as before.
func isolation() (*syscall.SysProcAttr, error) {
	a := &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNET}
	if uid := os.Geteuid(); uid != 0 {
		gid := os.Getegid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a, nil
}

// killGroup kills p's process group: the command and every process it started.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
