//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package metrics

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive advisory lock (flock) on f without waiting, for as long as f stays
// open in this process; the operating system drops it when the process ends, killed included.
// It returns false, nil when another open file holds the lock (a lab process still writing the
// journal), and an error when the file system offers no such lock.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
