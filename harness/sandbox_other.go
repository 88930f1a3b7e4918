//go:build !unix

package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// claimSandbox returns a fresh sandbox folder under <temp>/lab-sandbox. Without flock(2) the
// path is a random one, so answers naming absolute paths differ from run to run.
func claimSandbox() (dir string, release func(), err error) {
	root := filepath.Join(os.TempDir(), "lab-sandbox")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, fmt.Errorf("create the sandbox folder: %w", err)
	}
	dir, err = os.MkdirTemp(root, "s")
	if err != nil {
		return "", nil, fmt.Errorf("claim a sandbox: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
