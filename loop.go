// Package lab holds the data files at the root of the repository that other packages read:
// loop.json, the harness's texts and numbers (spec 3.2.0 names its `context` section), and
// quirks.json, what differs between model families and dialects.
package lab

import _ "embed"

// LoopJSON is loop.json as committed. hygiene.ParseConfig decodes its `context` section.
//
//go:embed loop.json
var LoopJSON []byte

// QuirksJSON is quirks.json as committed: per dialect and model family, where reasoning goes on
// the wire and which inline tags a family writes it between (spec 3.2.0 §8 `reasoning-fields`).
// hygiene.ParseQuirks decodes it.
//
//go:embed quirks.json
var QuirksJSON []byte
