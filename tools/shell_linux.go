package tools

import (
	"os"
	"syscall"
)

// isolation runs a command in namespaces of its own:
//   - a user namespace (CLONE_NEWUSER), mapping the lab's user and group to themselves, so files
//     the command writes belong to the lab's user as before (the view maps a root lab's command
//     to an unprivileged host user instead: see viewCommand), and so that a lab running as root
//     gives the command no capability over the machine's namespaces (without it, root's command
//     could setns back into the lab's network namespace: nsenter --net=/proc/PID/ns/net);
//   - a network namespace (CLONE_NEWNET): only a loopback interface, down;
//   - a PID namespace (CLONE_NEWPID), whose first process is /bin/sh: when it ends, by itself or
//     killed at the time limit, the kernel kills every process left in the namespace, those
//     that left the process group (setsid) or ignore signals (nohup) included, so nothing a
//     command starts outlives it (pid_namespaces(7)). Pdeathsig kills it should the lab die;
//   - IPC, UTS and cgroup namespaces (CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP): no System V
//     shared memory, semaphore or message queue nor POSIX message queue of the host, its own
//     hostname, and its own cgroup as the root of the cgroup tree it sees;
//
// and a session of its own (setsid(2); it leads its process group too): the lab's controlling
// terminal is not the command's, which cannot type into it (TIOCSTI) nor read it.
func isolation() (*syscall.SysProcAttr, error) {
	uid, gid := os.Geteuid(), os.Getegid()
	return &syscall.SysProcAttr{
		Setsid:                     true,
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}, nil
}

// killGroup kills p's process group: the command and every process it started in it (the PID
// namespace takes the rest).
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// plainAttr is a command's with no namespace (only with [Shell].Unsandboxed): a session (and
// process group) of its own, without the lab's terminal, killed whole at the time limit.
func plainAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// HasShellView reports whether the live shell can run its commands in the filesystem view, which
// shows a [PrivateSandbox] at its shown path: Linux's mount namespaces.
const HasShellView = true
