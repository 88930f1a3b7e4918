//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package metrics

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an advisory lock (flock) on f without waiting, exclusive or shared, for as long
// as f stays open in this process; the operating system drops it when the process ends, killed
// included. It returns false, nil when another open file holds a conflicting lock (a lab process
// still writing the journal holds an exclusive one), and an error when the file system offers no
// such lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
