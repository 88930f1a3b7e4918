//go:build unix

package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// claimSandbox returns the sandbox folder for a run: <temp>/lab-sandbox/s<N>, the first slot no
// other lab process holds, and a release func that empties it and lets it go. The path appears
// in answers that name absolute paths (errors, search results: spec 3.2.0 §1, §11), so it must
// not depend on the run id: with one run at a time it is always s0, and every run of a scenario
// sends the same bytes. A slot is held by an flock(2) on <slot>.lock, which the kernel drops when
// the process ends, so a crashed run blocks nothing.
func claimSandbox() (dir string, release func(), err error) {
	root := filepath.Join(os.TempDir(), "lab-sandbox")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, fmt.Errorf("create the sandbox folder: %w", err)
	}
	for i := 0; i < 1000; i++ {
		dir := filepath.Join(root, fmt.Sprintf("s%d", i))
		f, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return "", nil, fmt.Errorf("claim a sandbox: %w", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			continue
		}
		if err != nil {
			f.Close()
			return "", nil, fmt.Errorf("claim a sandbox (%s): %w", dir, err)
		}
		os.RemoveAll(dir) // what a crashed run left
		return dir, func() {
			os.RemoveAll(dir)
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}, nil
	}
	return "", nil, fmt.Errorf("claim a sandbox: 1000 slots in %s are held", root)
}
