// Package fileerr is the error of a file the user wrote (a scenario, a check file) that reads
// but is wrong: a [SyntaxError] printed "file:line: message", and the line taken out of a YAML
// decoder's own messages (go.yaml.in/yaml/v3, "yaml: line N: …").
package fileerr

import (
	"fmt"
	"regexp"
	"strconv"
)

// SyntaxError is a problem in a file the user wrote, at a line: it prints as "file:line:
// message", or "file: message" when the problem has no single line.
type SyntaxError struct {
	// File is the file as the user named it.
	File string
	// Line is 1-based; 0 when the problem has no single line (an empty file, a missing field).
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// SplitYAMLLine splits a YAML decoder's message "line N: what" (with or without the "yaml: "
// prefix) into the 1-based line N and what; a message without a line is returned whole with
// line 0.
func SplitYAMLLine(msg string) (line int, rest string) {
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, msg
}
