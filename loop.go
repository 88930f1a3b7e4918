// Package lab holds the data files at the root of the repository that other packages read:
// loop.json, the harness's texts and numbers (spec 3.2.0 names its `context` section).
package lab

import _ "embed"

// LoopJSON is loop.json as committed. hygiene.ParseConfig decodes its `context` section.
//
//go:embed loop.json
var LoopJSON []byte
