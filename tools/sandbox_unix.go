//go:build unix

package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ClaimSandbox returns the fixed sandbox folder of a session of scenario key, the shown path
// made real: [ShownSandbox](key) (/tmp/lab-sandbox/<key>), and a release func that empties it and
// lets it go. It is for a session whose live shell may run outside the shell's view (the
// --unsandboxed-shell opt-out, a system without the namespaces), where the shown path cannot be
// mounted over a private folder: the folder then really is at the path every answer names (spec
// 3.2.0 §1, §11), so the session sends the bytes of a session in a [PrivateSandbox]. Every other
// session takes a [PrivateSandbox] and waits for nothing. The folder is held by an flock(2) on
// /tmp/lab-sandbox/.locks/<key>, which the kernel drops when the process ends, so a crashed run
// blocks nothing. When another process holds it (a session of the same scenario), ClaimSandbox
// calls waiting once with the folder and the lock file, and waits, polling, until it is free or
// ctx ends (then ctx's error). key is a scenario's name (no '/', never starting with '.', so no
// lock file meets a sandbox folder); any other key (empty, "..", a path) is an error
// ([checkSandboxKey]), as the folder it would name is emptied.
func ClaimSandbox(ctx context.Context, key string, waiting func(dir, lock string)) (dir string, release func(), err error) {
	if err := checkSandboxKey(key); err != nil {
		return "", nil, err
	}
	root := shownRoot
	locks := filepath.Join(root, ".locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		return "", nil, fmt.Errorf("create the sandbox folder: %w", err)
	}
	dir = filepath.Join(root, key)
	lock := filepath.Join(locks, key)
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return "", nil, fmt.Errorf("claim the sandbox %s: %w", dir, err)
	}
	told := false
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return "", nil, fmt.Errorf("claim the sandbox %s: %w", dir, err)
		}
		if !told && waiting != nil {
			waiting(dir, lock)
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return "", nil, fmt.Errorf("claim the sandbox %s: %w", dir, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	os.RemoveAll(dir) // what a crashed run left
	return dir, func() {
		os.RemoveAll(dir)
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
