//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// A private sandbox is made under $TMPDIR when it is set, else, asked for in memory, in the
// memory filesystem when the machine has one fit for it (memoryTempDir), else in the temporary
// folder; its release removes it.
func TestPrivateSandboxFolder(t *testing.T) {
	chosen := t.TempDir()
	t.Setenv("TMPDIR", chosen)
	sb, release, err := PrivateSandbox("midnight", true)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(sb.Dir) != chosen || sb.Shown != ShownSandbox("midnight") {
		t.Errorf("with TMPDIR %s: sandbox %+v", chosen, sb)
	}
	release()
	if _, err := os.Stat(sb.Dir); !os.IsNotExist(err) {
		t.Errorf("released sandbox %s still there: %v", sb.Dir, err)
	}

	t.Setenv("TMPDIR", "")
	sb, release, err = PrivateSandbox("midnight", true)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	want := memoryTempDir()
	if want == "" {
		want = os.TempDir()
	}
	if filepath.Dir(sb.Dir) != want {
		t.Errorf("without TMPDIR: sandbox in %s, want %s", filepath.Dir(sb.Dir), want)
	}
	// Not in memory (a live session's): the temporary folder, whatever /dev/shm is.
	disk, releaseDisk, err := PrivateSandbox("midnight", false)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseDisk()
	if filepath.Dir(disk.Dir) != os.TempDir() {
		t.Errorf("on disk without TMPDIR: sandbox in %s, want %s", filepath.Dir(disk.Dir), os.TempDir())
	}
}

// memoryTempDir is /dev/shm exactly when /proc/self/mounts lists it as a tmpfs mounted without
// noexec (and this process may write there).
func TestMemoryTempDir(t *testing.T) {
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Skip("no /proc/self/mounts:", err)
	}
	want := ""
	for _, line := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[1] == "/dev/shm" {
			want = ""
			if f[2] == "tmpfs" && !slices.Contains(strings.Split(f[3], ","), "noexec") && syscall.Access("/dev/shm", 0x3) == nil {
				want = "/dev/shm"
			}
		}
	}
	if got := memoryTempDir(); got != want {
		t.Errorf("memoryTempDir() = %q, want %q from /proc/self/mounts", got, want)
	}
}
