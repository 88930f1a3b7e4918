package hygiene

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Config holds loop.json's `context` section: the spec's texts and numbers (spec 3.2.0, "The texts
// and numbers are loop.json context"). Texts hold {{name}} placeholders that the session fills.
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
		// Empty is the bracket of an empty file (§1): {{path}} {{sha}}.
		Empty string `json:"empty"`
		// Range is the bracket of a read (§1): {{path}} {{from}} {{to}} {{total}} {{sha}}.
		Range string `json:"range"`
		// PastEnd answers an offset past the file's end: {{path}} (absolute) {{total}} {{offset}}.
		PastEnd string `json:"past_end"`
	} `json:"read"`
	// Stub is the sentence after a stub's bracket (§2); {{id}} and {{lines}} are filled in.
	Stub string `json:"stub"`
	Cap  struct {
		// MaxLines and MaxChars: a result over either is capped (§3 `cap.max_lines` 400,
		// `cap.max_chars` 40,000). Characters are Unicode code points.
		MaxLines int `json:"max_lines"`
		MaxChars int `json:"max_chars"`
		// HeadLines/HeadChars and TailLines/TailChars bound the whole lines kept at each end.
		HeadLines int `json:"head_lines"`
		HeadChars int `json:"head_chars"`
		TailLines int `json:"tail_lines"`
		TailChars int `json:"tail_chars"`
		// Elided is the line between head and tail: {{lines}} {{id}}.
		Elided string `json:"elided"`
		// Cut ends a first line cut to HeadChars (" […cut]").
		Cut string `json:"cut"`
	} `json:"cap"`
	Recall struct {
		// WindowLines is how many lines one recall shows from its offset (§4, 2000).
		WindowLines int `json:"window_lines"`
		// Header is the recall's bracket after its own id: {{id}} {{from}} {{to}} {{total}}.
		Header string `json:"header"`
		// Unknown answers an id the session never gave: {{id}}.
		Unknown string `json:"unknown"`
	} `json:"recall"`
	Edit struct {
		// Created follows a new file's bracket (§5): {{lines}}.
		Created string `json:"created"`
		// Deleted follows a deleted file's path in its bracket (§5).
		Deleted string `json:"deleted"`
	} `json:"edit"`
	Dedupe struct {
		// ByResult lists the tools deduplicated by result (§6 `dedupe.by_result`).
		ByResult []string `json:"by_result"`
		// Same answers a repeated call with the same result: {{id}}.
		Same string `json:"same"`
	} `json:"dedupe"`
	Compaction struct {
		// Rows is the most files the files-read table lists (§7 `compaction.rows`, 50).
		Rows int `json:"rows"`
		// Heading, Intro, Columns and Rule are the table's lines before its rows.
		Heading string `json:"heading"`
		Intro   string `json:"intro"`
		Columns string `json:"columns"`
		Rule    string `json:"rule"`
	} `json:"compaction"`
	Env struct {
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
	// Unavailable answers a call of a listed tool whose requirement is not met now (§10.4):
	// {{tool}} {{reason}}.
	Unavailable string `json:"unavailable"`
	// WrapUp is the wrap-up request's message (§10.4 `wrap_up`).
	WrapUp string `json:"wrap_up"`
	// MCPWaitMS is how long a session waits for its MCP servers before its first request, in
	// milliseconds (§10.4 `mcp_wait_ms`).
	MCPWaitMS int `json:"mcp_wait_ms"`
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
	positive := []struct {
		key string
		v   int
	}{
		{"ids.digits", c.IDs.Digits}, {"read.window_lines", c.Read.WindowLines},
		{"cap.max_lines", c.Cap.MaxLines}, {"cap.max_chars", c.Cap.MaxChars},
		{"cap.head_lines", c.Cap.HeadLines}, {"cap.head_chars", c.Cap.HeadChars},
		{"cap.tail_lines", c.Cap.TailLines}, {"cap.tail_chars", c.Cap.TailChars},
		{"recall.window_lines", c.Recall.WindowLines}, {"compaction.rows", c.Compaction.Rows},
	}
	for _, p := range positive {
		if p.v < 1 {
			return fmt.Errorf("%s: %d, want at least 1", p.key, p.v)
		}
	}
	if c.Read.SHADigits < 1 || c.Read.SHADigits > 64 {
		return fmt.Errorf("read.sha_digits: %d, want 1-64", c.Read.SHADigits)
	}
	if c.Cap.HeadLines+c.Cap.TailLines >= c.Cap.MaxLines || c.Cap.HeadChars+c.Cap.TailChars >= c.Cap.MaxChars {
		return fmt.Errorf("cap: head and tail must leave room below max_lines and max_chars")
	}
	texts := []struct{ key, v, must string }{
		{"read.empty", c.Read.Empty, "{{sha}}"}, {"read.range", c.Read.Range, "{{total}}"},
		{"read.past_end", c.Read.PastEnd, "{{path}}"}, {"stub", c.Stub, "{{id}}"},
		{"cap.elided", c.Cap.Elided, "{{id}}"}, {"cap.cut", c.Cap.Cut, ""},
		{"recall.header", c.Recall.Header, "{{id}}"}, {"recall.unknown", c.Recall.Unknown, "{{id}}"},
		{"edit.created", c.Edit.Created, "{{lines}}"}, {"edit.deleted", c.Edit.Deleted, ""},
		{"dedupe.same", c.Dedupe.Same, "{{id}}"}, {"compaction.heading", c.Compaction.Heading, ""},
		{"compaction.columns", c.Compaction.Columns, ""}, {"compaction.rule", c.Compaction.Rule, ""},
		{"env.project", c.Env.Project, "{{name}}"}, {"env.started_in", c.Env.StartedIn, "{{dir}}"},
		{"note.open", c.Note.Open, ""}, {"note.close", c.Note.Close, ""}, {"note.empty", c.Note.Empty, ""},
		{"unavailable", c.Unavailable, "{{tool}}"}, {"wrap_up", c.WrapUp, ""},
		{"practice.date_in_system_prompt", c.Practice.DateInSystemPrompt, "{{value}}"},
	}
	for _, t := range texts {
		if t.v == "" {
			return fmt.Errorf("%s: missing", t.key)
		}
		if t.must != "" && !strings.Contains(t.v, t.must) {
			return fmt.Errorf("%s: %q has no %s", t.key, t.v, t.must)
		}
	}
	if c.Compaction.Intro == "" {
		return fmt.Errorf("compaction.intro: missing")
	}
	if c.MCPWaitMS < 1 {
		return fmt.Errorf("mcp_wait_ms: %d, want at least 1", c.MCPWaitMS)
	}
	if !contains(c.Note.Order, "date") {
		return fmt.Errorf("note.order: no date (the harness carries the date in a note, §10.2)")
	}
	if len(c.Dedupe.ByResult) == 0 {
		return fmt.Errorf("dedupe.by_result: missing")
	}
	for kind := range c.Note.Blocks {
		if !contains(c.Note.Order, kind) {
			return fmt.Errorf("note.blocks.%s: kind not in note.order", kind)
		}
	}
	for _, kind := range c.Note.Order {
		if _, ok := c.Note.Blocks[kind]; !ok {
			return fmt.Errorf("note.order: %s has no text in note.blocks", kind)
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
