package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// keyName is what a sandbox key may be: a scenario's name (lower-case letters, digits, '.', '_'
// and '-', starting with a letter or digit), which never names a folder outside the sandboxes.
var keyName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// checkSandboxKey refuses a sandbox key that is not a scenario name ([keyName]): claiming
// the sandbox empties <temp>/lab-sandbox/<key>, so an empty key (a Scenario built in code
// without a Name) would empty every sandbox and every lock of the machine's lab processes, and
// "..", or a key with a '/', a folder outside them.
func checkSandboxKey(key string) error {
	if !keyName.MatchString(key) || key == "." || key == ".." {
		return fmt.Errorf("claim a sandbox: scenario name %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit (it names the sandbox folder)", key)
	}
	return nil
}

// ShownSandboxRoot is the folder every sandbox is shown under: a session of scenario s names its
// sandbox /tmp/lab-sandbox/s in every tool answer (errors, search results, the live shell's
// output: spec 3.2.0 §1, §11), wherever the sandbox really is, so that the bytes a session sends
// depend on nothing of the machine (not its TMPDIR, not the other lab processes).
const ShownSandboxRoot = "/tmp/lab-sandbox"

// shownRoot is [ShownSandboxRoot]; tests of the locked claim point it at a folder of their own.
var shownRoot = ShownSandboxRoot

// ShownSandbox returns the path every tool answer names the sandbox of scenario key by:
// [ShownSandboxRoot]/<key>.
func ShownSandbox(key string) string { return filepath.Join(shownRoot, key) }

// Sandbox is the folder a session's workspace is written into ([NewSandboxWorkspace]): Dir, the
// real folder on the machine, where the tools read and write, and Shown, the absolute path every
// tool answer names it by. Shown is Dir when the sandbox is the fixed folder [ClaimSandbox]
// holds.
type Sandbox struct {
	Dir, Shown string
}

// PrivateSandbox makes a fresh private folder for a session of scenario key (os.MkdirTemp under
// the machine's temporary folder, $TMPDIR's or /tmp; with inMemory, under /dev/shm instead where
// it is a memory filesystem that allows running programs ([memoryTempDir]) and $TMPDIR is unset
// or empty; nothing shared, no lock: sessions of one scenario, in one process or several, run at
// once) shown as [ShownSandbox](key), and a release func that removes it. inMemory suits a
// session whose files are known and small (a scripted one: the scenario's and its tools'
// edits), not one whose commands may write without bound (a live model's builds). The file
// tools name the shown path ([Workspace]); the live shell's view mounts the folder at the shown
// path ([Shell]). Where the shown path cannot be made real for the shell (a shell without the
// view: [HasShellView], [Shell].Unsandboxed), use [ClaimSandbox] instead. Errors are the key's
// ([checkSandboxKey]) and the filesystem's.
func PrivateSandbox(key string, inMemory bool) (Sandbox, func(), error) {
	if err := checkSandboxKey(key); err != nil {
		return Sandbox{}, nil, err
	}
	root := "" // os.TempDir: $TMPDIR, the user's choice, when set
	if inMemory && os.Getenv("TMPDIR") == "" {
		root = memoryTempDir()
	}
	dir, err := os.MkdirTemp(root, "lab-sandbox-"+key+"-")
	if err != nil {
		return Sandbox{}, nil, fmt.Errorf("create the sandbox of %s: %w", key, err)
	}
	return Sandbox{Dir: dir, Shown: ShownSandbox(key)}, func() { os.RemoveAll(dir) }, nil
}
