package hygiene

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Config holds loop.json's `context` section: the spec's texts and numbers (spec 3.2.0, "The texts
// and numbers are loop.json context").
type Config struct {
	IDs struct {
		// Digits is the minimum number of hex digits of a result id (§1 `ids.digits`, 4).
		Digits int `json:"digits"`
	} `json:"ids"`
	Read struct {
		// SHADigits is how many hex digits of a file's SHA-256 a bracket shows (§1 `sha_digits`, 8).
		SHADigits int `json:"sha_digits"`
		// WindowLines is how many lines one read shows from its offset (§3, 2000).
		WindowLines int `json:"window_lines"`
	} `json:"read"`
	// Stub is the sentence after a stub's bracket (§2); {{id}} and {{lines}} are filled in.
	Stub string `json:"stub"`
	Env  struct {
		// Project is the environment line naming the project (§11); {{name}} is the root's last
		// path component.
		Project string `json:"project"`
		// StartedIn is the line naming the start directory below the root (§11); {{dir}}.
		StartedIn string `json:"started_in"`
	} `json:"env"`
	Note struct {
		// Open and Close are the note's first and last lines (§10.3: <session-note>).
		Open  string `json:"open"`
		Close string `json:"close"`
		// Order lists the note's block kinds in the order they appear (§10.3 `context.note`).
		Order []string `json:"order"`
		// Blocks maps a kind to its text; {{value}} is the new value.
		Blocks map[string]string `json:"blocks"`
		// Empty is the text of a value that became empty (`context.note.empty`).
		Empty string `json:"empty"`
	} `json:"note"`
	// Practice holds texts of what real harnesses do instead of the spec, for the ablation arms.
	Practice struct {
		// DateInSystemPrompt is the system prompt's date line; {{value}}.
		DateInSystemPrompt string `json:"date_in_system_prompt"`
	} `json:"practice"`
}

// ParseConfig decodes the `context` section of a loop.json document strictly: an unknown field or
// a missing required value is an error naming the field.
func ParseConfig(loopJSON []byte) (*Config, error) {
	var doc struct {
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(loopJSON, &doc); err != nil {
		return nil, fmt.Errorf("parse loop.json: %w", err)
	}
	if doc.Context == nil {
		return nil, fmt.Errorf("parse loop.json: no `context` section")
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Context))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("parse loop.json context: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("parse loop.json context: %w", err)
	}
	return &c, nil
}

func (c *Config) validate() error {
	switch {
	case c.IDs.Digits < 1:
		return fmt.Errorf("ids.digits: %d, want at least 1", c.IDs.Digits)
	case c.Read.SHADigits < 1 || c.Read.SHADigits > 64:
		return fmt.Errorf("read.sha_digits: %d, want 1-64", c.Read.SHADigits)
	case c.Read.WindowLines < 1:
		return fmt.Errorf("read.window_lines: %d, want at least 1", c.Read.WindowLines)
	case !strings.Contains(c.Stub, "{{id}}"):
		return fmt.Errorf("stub: %q has no {{id}}", c.Stub)
	case !strings.Contains(c.Env.Project, "{{name}}"):
		return fmt.Errorf("env.project: %q has no {{name}}", c.Env.Project)
	case c.Note.Open == "" || c.Note.Close == "":
		return fmt.Errorf("note.open and note.close must be set")
	}
	for kind := range c.Note.Blocks {
		if !contains(c.Note.Order, kind) {
			return fmt.Errorf("note.blocks.%s: kind not in note.order", kind)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func fill(tmpl string, kv ...string) string {
	return strings.NewReplacer(wrapKeys(kv)...).Replace(tmpl)
}

func wrapKeys(kv []string) []string {
	out := make([]string, len(kv))
	for i, v := range kv {
		if i%2 == 0 {
			v = "{{" + v + "}}"
		}
		out[i] = v
	}
	return out
}
