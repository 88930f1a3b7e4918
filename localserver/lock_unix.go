//go:build unix

package localserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Lock takes the server's use lock, <Dir>/use.lock ([LockUse]), so that two lab processes
// measuring on one shared server (`lab server start`) take turns: a run resets the server's KV
// cache (it unloads the model) and would spoil the other's measurements.
func (s *Server) Lock(ctx context.Context, log io.Writer) (unlock func(), err error) {
	return LockUse(ctx, filepath.Join(s.Dir, "use.lock"), s.URL, log)
}

// LockUse takes the use lock file path of the server at url (named in the waiting line): it
// waits until the lock is free, writing one line to log while it waits, or until ctx ends (then
// ctx's error). The lock is an flock(2) on the file (created, with its folder, if missing): the
// kernel releases it when the process ends, so a crashed run leaves no stale lock. unlock
// releases it; call it once.
func LockUse(ctx context.Context, path, url string, log io.Writer) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock the server at %s: %w", url, err)
	}
	release, err := lockFile(ctx, path, func() {
		if log != nil {
			fmt.Fprintf(log, "waiting for another lab process using the server at %s to finish (%s)\n", url, path)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lock the server at %s: %w", url, err)
	}
	return func() { _ = release() }, nil
}
