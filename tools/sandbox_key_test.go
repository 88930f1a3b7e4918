package tools

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A sandbox is claimed only for a scenario name: a key such as ".locks" would name (and
// empty) the folder of every process's lock, "", "..", a path the folder of every sandbox or
// one outside them.
func TestClaimSandboxRefusesOtherKeys(t *testing.T) {
	useShownRoot(t, filepath.Join(t.TempDir(), "lab-sandbox"))
	other := filepath.Join(shownRoot, "other")
	lock := filepath.Join(shownRoot, ".locks", "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", ".", "..", "a/../..", "/abs", ".locks"} {
		if _, release, err := ClaimSandbox(context.Background(), key, nil); err == nil {
			release()
			t.Errorf("ClaimSandbox(%q) = nil error; want one naming the scenario name", key)
		}
		for _, p := range []string{other, lock} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("after ClaimSandbox(%q), another scenario's sandbox or lock is gone: %v", key, err)
			}
		}
	}
	dir, release, err := ClaimSandbox(context.Background(), "midnight", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if want := filepath.Join(shownRoot, "midnight"); dir != want {
		t.Errorf("sandbox %s; want %s", dir, want)
	}
}

// useShownRoot points the shown sandbox root, which the locked claim makes real, at root for the
// test (not parallel), so that it claims no folder a real run on the machine holds.
func useShownRoot(t *testing.T, root string) {
	old := shownRoot
	shownRoot = root
	t.Cleanup(func() { shownRoot = old })
}
