package transcript

import "fmt"

// Reader reads one session file into a [Session]; file is the path as the user gave it, and
// errors name it (and the line, for a record it cannot read).
type Reader func(file string) (*Session, error)

// Readers are the session readers by format, the names of `lab scenario import --from`:
// "capture" ([ReadCapture]), "claude-code" and "codex" (the agents' session files; until
// their readers are built, each answers [ErrNotBuilt]).
var Readers = map[string]Reader{
	"capture":     ReadCapture,
	"claude-code": notBuilt("claude-code"),
	"codex":       notBuilt("codex"),
}

// Formats are the keys of [Readers] in the order `lab scenario import --help` lists them.
var Formats = []string{"claude-code", "codex", "capture"}

// ErrNotBuilt is the error of a format whose reader the lab does not have yet.
var ErrNotBuilt = fmt.Errorf("this lab has no reader for the format yet")

func notBuilt(format string) Reader {
	return func(file string) (*Session, error) {
		return nil, fmt.Errorf("%s: --from %s: %w", file, format, ErrNotBuilt)
	}
}
