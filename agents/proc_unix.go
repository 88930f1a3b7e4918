//go:build unix

package agents

import (
	"os"
	"os/exec"
	"syscall"
)

// killGroup runs cmd in a process group of its own and, when its context ends, kills the
// whole group: agents start helpers (a shell, ripgrep, a language server) that would outlive
// the agent.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// fileID is a file's device and inode, so that hard links are counted once; ok is false when
// the system does not say.
func fileID(fi os.FileInfo) (id [2]uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return id, false
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, true
}
