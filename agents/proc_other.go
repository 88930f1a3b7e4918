//go:build !unix

package agents

import (
	"os"
	"os/exec"
)

// killGroup leaves cmd as it is: without process groups the context kills the agent only.
func killGroup(cmd *exec.Cmd) {}

// fileID is not known here: every file counts.
func fileID(fi os.FileInfo) (id [2]uint64, ok bool) { return id, false }
