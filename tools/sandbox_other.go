//go:build !unix

package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ClaimSandbox returns a fresh sandbox folder under <temp>/lab-sandbox/<key>. Without flock(2)
// the path is a random one, so answers naming absolute paths differ from run to run.
func ClaimSandbox(_ context.Context, key string, _ func(dir, lock string)) (dir string, release func(), err error) {
	if err := checkSandboxKey(key); err != nil {
		return "", nil, err
	}
	root := filepath.Join(os.TempDir(), "lab-sandbox", key)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, fmt.Errorf("create the sandbox folder: %w", err)
	}
	dir, err = os.MkdirTemp(root, "s")
	if err != nil {
		return "", nil, fmt.Errorf("claim a sandbox: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
