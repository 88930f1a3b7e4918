// Package prompts embeds the texts the harness tells the model: the system prompt and, as the
// spec grows into the lab, the blocks and task messages spec 3.2.0 names (prompts/blocks/context.md,
// prompts/tasks/compact.md, prompts/modes/<mode>.md).
package prompts

import "embed"

// FS holds every prompt file, by its path below prompts/ (for example "system.md").
//
//go:embed *.md
var FS embed.FS

// System returns the base system prompt (system.md), without the environment lines the harness
// adds (spec 3.2.0 §11).
func System() string {
	b, err := FS.ReadFile("system.md")
	if err != nil {
		// system.md is embedded at build time; its absence is a build error, caught by the test.
		panic("prompts: system.md missing from the embedded files: " + err.Error())
	}
	return string(b)
}
