package transcript

import (
	"io"
	"os"
)

// Reader reads one session file into a [Session]; file is the path as the user gave it, and
// errors name it (and the line, for a record it cannot read).
type Reader func(file string) (*Session, error)

// Readers are the session readers by format, the names of `lab scenario import --from`:
// "capture" ([ReadCapture]), "claude-code" ([ReadClaudeCode]) and "codex" ([ReadCodex]) of
// the file at the path given.
var Readers = map[string]Reader{
	"capture":        ReadCapture,
	FormatClaudeCode: fromFile(ReadClaudeCode),
	FormatCodex:      fromFile(ReadCodex),
}

// fromFile is a reader of an open file as a [Reader] of a path.
func fromFile(read func(r io.Reader, file string) (*Session, error)) Reader {
	return func(file string) (*Session, error) {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return read(f, file)
	}
}

// Formats are the keys of [Readers] in the order `lab scenario import --help` lists them.
var Formats = []string{"claude-code", "codex", "capture"}
