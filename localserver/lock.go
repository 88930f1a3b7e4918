package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockURL takes the use lock of the llama-server at base URL u, <cache>/locks/llama-<host>_<port>.lock
// ([LockUse]), so that two lab processes measuring on one llama-server take turns, whether they
// found it as the shared server or were given its --base-url: a run erases the slot at each
// session's start, and two runs at once would each read the other's prompts as their own cache.
// An address without a host is an error.
func LockURL(ctx context.Context, cache, u string, log io.Writer) (unlock func(), err error) {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return nil, fmt.Errorf("lock the llama-server: address %q has no host", u)
	}
	port := pu.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[pu.Scheme]
		if port == "" {
			port = "80"
		}
	}
	host := pu.Hostname()
	if host == "localhost" {
		host = "127.0.0.1" // one server, one lock
	}
	key := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, host+"_"+port)
	return LockUse(ctx, filepath.Join(cache, "locks", "llama-"+key+".lock"), u, log)
}

// lockPoll is how often lockFile retries a lock another process holds.
const lockPoll = 250 * time.Millisecond

// lockFile takes an exclusive flock on path (created if missing), retrying until it gets it or
// ctx ends. onWait is called once if the lock is held elsewhere. The returned function releases
// the lock.
func lockFile(ctx context.Context, path string, onWait func()) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
	return func() error {
		uerr := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return errors.Join(uerr, f.Close())
	}, nil
}
