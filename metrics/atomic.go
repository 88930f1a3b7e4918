package metrics

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces the file at path with what write writes, so that a reader, or a
// crash at any moment, finds either the old file whole or the new one whole, never a part: it
// writes a temporary file beside path (mode 0644), syncs it, renames it over path and syncs the
// folder. On an error path is as it was and the temporary file is removed; the error names the
// file.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return writeFileAtomic(path, write, true)
}

// replaceFile is [WriteFileAtomic] without the syncs: the rename still makes a reader, or a
// process killed at any moment, find the old file whole or the new one whole, but what the
// operating system holds may reach the disk later (a machine that loses power may be left with
// the old file, or on a file system that does not order a rename after the data, an empty
// one). For a file written again and again whose last writing is synced.
func replaceFile(path string, write func(io.Writer) error) error {
	return writeFileAtomic(path, write, false)
}

func writeFileAtomic(path string, write func(io.Writer) error, durable bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		syncDir(filepath.Dir(path))
	}
	return nil
}
