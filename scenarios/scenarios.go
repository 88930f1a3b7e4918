// Package scenarios embeds the lab's scenario library: one folder per scenario holding
// scenario.yaml and its workspace archive. The format is described in README.md here.
package scenarios

import (
	"embed"
	"io/fs"
	"sort"
)

// FS holds every scenario: <name>/scenario.yaml and <name>/workspace.txtar.
//
//go:embed */scenario.yaml */*.txtar
var FS embed.FS

// Names returns the names of the embedded scenarios, sorted.
func Names() []string {
	var out []string
	entries, _ := fs.ReadDir(FS, ".")
	for _, e := range entries {
		if _, err := fs.Stat(FS, e.Name()+"/scenario.yaml"); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}
