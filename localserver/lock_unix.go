//go:build unix

package localserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lock takes the server's use lock, <Dir>/use.lock, so that two lab processes measuring on one
// shared server (`lab server start`) take turns: a run resets the server's KV cache (it unloads
// the model) and would spoil the other's measurements. It waits until the lock is free, writing
// one line to log while it waits, or until ctx ends (then ctx's error). The lock is an flock(2)
// on the file: the kernel releases it when the process ends, so a crashed run leaves no stale
// lock. unlock releases it; call it once.
func (s *Server) Lock(ctx context.Context, log io.Writer) (unlock func(), err error) {
	path := filepath.Join(s.Dir, "use.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the local server: %w", err)
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock the local server (%s): %w", path, err)
		}
		if !said && log != nil {
			fmt.Fprintf(log, "waiting for another lab process using the local server at %s to finish (%s)\n", s.URL, path)
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
