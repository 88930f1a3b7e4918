// Package fileerr is the error of a file the user wrote (a scenario, a check file) that reads
// but is wrong: a [SyntaxError] printed "file:line: message", and the line taken out of a YAML
// decoder's own messages (go.yaml.in/yaml/v3, "yaml: line N: …").
package fileerr

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
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

// FromYAML turns an error of decoding file's YAML (go.yaml.in/yaml/v3) into a *SyntaxError
// naming the file and the decoder's line: a *SyntaxError already (a field check's) gets file as
// its File when it has none; a *yaml.TypeError is its first problem's line; any other error is
// its message with the "yaml: line N:" prefix taken out (line 0 when it has none).
func FromYAML(file string, err error) error {
	var se *SyntaxError
	if errors.As(err, &se) {
		if se.File == "" {
			se.File = file
		}
		return se
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		line, msg := SplitYAMLLine(te.Errors[0])
		return &SyntaxError{File: file, Line: line, Msg: msg}
	}
	line, msg := SplitYAMLLine(strings.TrimPrefix(err.Error(), "yaml: "))
	return &SyntaxError{File: file, Line: line, Msg: msg}
}

// TopKeyLine returns the 1-based line of top-level key (a line starting "key:") in a YAML
// document, 0 when there is none.
func TopKeyLine(data []byte, key string) int {
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, key+":") {
			return i + 1
		}
	}
	return 0
}
