// Package prompts embeds the texts the harness tells the model: the system prompt (system.md),
// what the model is told about context hygiene (blocks/context.md, spec 3.2.0 §9), the task
// messages (tasks/compact.md with {{transcript}} and {{previous_summary}}, tasks/init.md) and one
// file per permission mode (modes/<mode>.md, §10.3).
package prompts

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// FS holds every prompt file, by its path below prompts/ (for example "tasks/compact.md").
//
//go:embed *.md blocks/*.md tasks/*.md modes/*.md
var FS embed.FS

// Text returns the prompt file at name (such as "blocks/context.md"); an error naming the file
// when there is none.
func Text(name string) (string, error) {
	b, err := FS.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("prompts: %s: %w", name, err)
	}
	return string(b), nil
}

// System returns the base system prompt (system.md), without the environment lines the harness
// adds (spec 3.2.0 §11).
func System() string {
	s, err := Text("system.md")
	if err != nil {
		// system.md is embedded at build time; its absence is a build error, caught by the test.
		panic(err)
	}
	return s
}

// Modes returns the permission modes there is a modes/<mode>.md for, sorted.
func Modes() []string {
	entries, _ := fs.ReadDir(FS, "modes")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".md"))
	}
	sort.Strings(out)
	return out
}
