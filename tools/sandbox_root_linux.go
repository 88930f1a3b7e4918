package tools

import (
	"sync"
	"syscall"
)

// memoryTempDir is the folder a [PrivateSandbox] is made in when $TMPDIR is unset or empty:
// /dev/shm, a memory filesystem (tmpfs) on Linux, where writing a workspace's files, the tools'
// writes and removing the sandbox cost far fewer system calls than on a disk's filesystem (the
// sim matrix writes and removes 221 workspaces), when it is a folder this process may write in
// and is mounted without noexec (a workspace's scripts must run). "" otherwise: the machine's
// temporary folder (os.TempDir). Checked once per process.
var memoryTempDir = sync.OnceValue(func() string {
	const shm = "/dev/shm"
	var st syscall.Statfs_t
	if err := syscall.Statfs(shm, &st); err != nil {
		return ""
	}
	const tmpfsMagic = 0x01021994 // TMPFS_MAGIC, linux/magic.h
	const noexec = 0x8            // ST_NOEXEC, statvfs(3)
	if st.Type != tmpfsMagic || st.Flags&noexec != 0 {
		return ""
	}
	if err := syscall.Access(shm, 0x2|0x1); err != nil { // W_OK|X_OK
		return ""
	}
	return shm
})
