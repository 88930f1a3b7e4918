// Package toolstest holds the tools' test helpers shared by the packages that run tools
// (tools, harness): a disk too slow for a tool call's limit, and a workspace of many files.
package toolstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"lab/tools"
)

// SlowDisk makes every folder and file chunk a tool reads count as one read
// ([tools.SetReadHook]), and the read numbered block (1-based) wait for the tool call's context
// to end (its deadline, or the run's stop), as a disk too slow for the call's limit would; act,
// when set, runs then (a stop of the run). It waits at most 10 s: a call that does not check its
// deadline then reads on, and the count shows it. It returns the count; the hook is removed when
// t ends.
func SlowDisk(t testing.TB, block int64, act func()) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	t.Cleanup(tools.SetReadHook(func(ctx context.Context) {
		if n.Add(1) != block {
			return
		}
		if act != nil {
			act()
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
	}))
	return &n
}

// Tree is a workspace of folders × files files, as name/content pairs ("d000/f000.txt",
// "needle\n", …), each file holding "needle".
func Tree(folders, files int) []string {
	var out []string
	for d := range folders {
		for f := range files {
			out = append(out, fmt.Sprintf("d%03d/f%03d.txt", d, f), "needle\n")
		}
	}
	return out
}
