package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unicode/utf8"

	"lab/capture"
	"lab/internal/fileerr"
)

// The formats a [Session] is read from ([Session].Format).
const (
	// FormatClaudeCode is Claude Code's session file (~/.claude/projects/<project>/<id>.jsonl).
	FormatClaudeCode = "claude-code"
	// FormatCodex is Codex's rollout file (~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl).
	FormatCodex = "codex"
)

// SyntaxError is a file the readers cannot read, at a line: "file:line: message" (the lab's one
// error of a wrong file, [fileerr.SyntaxError]).
type SyntaxError = fileerr.SyntaxError

// MaxLine is the longest line, in bytes, the readers take: a longer one (a pasted image's base64
// is a few MB) is an error naming its line.
const MaxLine = 64 << 20

// Read reads the session file at path, its format told by its first record ([Sniff]): a Claude
// Code session or a Codex rollout. The path is also where the readers learn the recording
// user's home (the folder holding .claude/ or .codex/), to redact it. Errors: the file cannot be
// opened, no record of either format ([SyntaxError] at line 1), or the reader's own.
func Read(path string) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(1 << 20) // the first line, or its first MB: enough to tell the formats apart
	head = bytes.TrimLeft(head, " \t\r\n")
	if nl := bytes.IndexByte(head, '\n'); nl >= 0 {
		head = head[:nl]
	}
	switch Sniff(head) {
	case FormatClaudeCode:
		return ReadClaudeCode(br, path)
	case FormatCodex:
		return ReadCodex(br, path)
	}
	return nil, &SyntaxError{File: path, Line: 1, Msg: "neither a Claude Code session line nor a Codex rollout record"}
}

// Sniff returns the format of a session file's first line: [FormatCodex] for a rollout record
// ({"timestamp", "type", "payload"}, Codex's RolloutLine), [FormatClaudeCode] for a Claude Code
// session line (a "type" with "sessionId", "uuid" or "message", or one of its bookkeeping
// records: summary, file-history-snapshot, queue-operation), "" for anything else.
func Sniff(line []byte) string {
	var rec struct {
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
		SessionID *string         `json:"sessionId"`
		UUID      *string         `json:"uuid"`
		Message   json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil {
		// A first line longer than what was read (Codex's session_meta holds the whole base
		// instructions): tell the formats apart by their fields' names.
		var se *json.SyntaxError
		if !errors.As(err, &se) || se.Offset < int64(len(bytes.TrimSpace(line))) {
			return ""
		}
		switch {
		case bytes.HasPrefix(line, []byte(`{"timestamp":`)) && bytes.Contains(line, []byte(`"payload":`)):
			return FormatCodex
		case bytes.Contains(line, []byte(`"sessionId":`)) || bytes.HasPrefix(line, []byte(`{"parentUuid":`)):
			return FormatClaudeCode
		}
		return ""
	}
	if rec.Type == "" {
		return ""
	}
	switch {
	case rec.Payload != nil:
		return FormatCodex
	case rec.SessionID != nil || rec.UUID != nil || rec.Message != nil:
		return FormatClaudeCode
	case rec.Type == "summary" || rec.Type == "file-history-snapshot" || rec.Type == "queue-operation":
		return FormatClaudeCode
	}
	return ""
}

// otherFormat is the error of a line of another format (got: a format's name, or "capture")
// given to the reader of want.
func otherFormat(file string, line int, got, want string) error {
	what := map[string]string{
		FormatClaudeCode: "a Claude Code session line",
		FormatCodex:      "a Codex rollout record",
		"capture":        "a lab capture's requests line",
	}
	return &SyntaxError{File: file, Line: line, Msg: fmt.Sprintf("%s, not %s (import it with --from %s)", what[got], what[want], got)}
}

// rawLine is one line of a session file, its credential-named fields already redacted.
type rawLine struct {
	n    int    // 1-based
	text []byte // the line, redacted, without its newline
	// cut says that the line is the file's last, without a newline, and not valid JSON: a
	// record cut short (the agent was writing it when the file was copied or the agent died).
	cut bool
}

// readLines reads every non-empty line of r (each UTF-8: invalid UTF-8 is an error naming the
// line and byte, but in the last line cut short), with capture.RedactBody applied to each (the
// values of credential-named fields, at any depth, replaced by "[redacted]"), and returns the
// secrets found that look like credentials, for the cleaner to remove wherever else they appear.
// Errors: a line over [MaxLine], invalid UTF-8, a read error; each names the file and line.
func readLines(r io.Reader, file string) ([]rawLine, []string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var lines []rawLine
	var secrets []string
	for n := 1; ; n++ {
		text, err := readLine(br)
		if errors.Is(err, errLineTooLong) {
			return nil, nil, &SyntaxError{File: file, Line: n, Msg: fmt.Sprintf("a line over %d MB", MaxLine>>20)}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		last := errors.Is(err, io.EOF)
		text = bytes.TrimSpace(text)
		if len(text) > 0 {
			valid := json.Valid(text)
			if bad := invalidUTF8(text); bad >= 0 && !(last && !valid) {
				return nil, nil, &SyntaxError{File: file, Line: n, Msg: fmt.Sprintf("invalid UTF-8 at byte %d of the line: the agents write UTF-8, so the file is damaged or not a session", bad+1)}
			}
			red, found := capture.RedactBody(text)
			for _, s := range found {
				if credentialLike(s) {
					secrets = append(secrets, s)
				}
			}
			lines = append(lines, rawLine{n: n, text: red, cut: last && !valid})
		}
		if last {
			return lines, secrets, nil
		}
	}
}

var errLineTooLong = errors.New("line too long")

// invalidUTF8 returns the offset of the first byte of b that is not valid UTF-8, -1 when all is.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// captureLike says whether a line is a lab capture's requests line (row.RequestLine: api and
// body, and no type), not a record of an agent's session file.
func captureLike(line []byte) bool {
	var rec struct {
		Type *string         `json:"type"`
		API  *string         `json:"api"`
		Body json.RawMessage `json:"body"`
	}
	return json.Unmarshal(line, &rec) == nil && rec.Type == nil && rec.API != nil && rec.Body != nil
}

// readLine reads one line without its newline; io.EOF with the last line when the file does
// not end in a newline (and with nothing at its end).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return line, err
		}
		return line[:len(line)-1], nil
	}
}

// credentialLike says whether a value found under a credential name is worth redacting by value
// everywhere else in the session: 8 bytes or more and not a plain word of letters (a tool's
// {"key": "model"} names a field).
func credentialLike(v string) bool {
	if len(v) < 8 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// badLine is the error or the skip of a line that is not a JSON object: a cut last line is
// skipped (the file ends inside a record), any other is an error naming the line.
func badLine(s *Session, l rawLine, err error) error {
	if l.cut {
		s.Skipped = append(s.Skipped, Skip{Line: l.n, Kind: "", Why: "a record cut short: the file ends inside it"})
		return nil
	}
	msg := "not a JSON object"
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		msg = fmt.Sprintf("not a JSON object: %v (at byte %d)", se, se.Offset)
	case errors.As(err, &te) && te.Field == "":
		msg = "not a JSON object: a JSON " + te.Value
	case errors.As(err, &te):
		msg = fmt.Sprintf("field %s: a JSON %s, want %s", te.Field, te.Value, te.Type.Kind())
	}
	return &SyntaxError{File: s.File, Line: l.n, Msg: msg}
}

// parseTime reads an RFC 3339 timestamp; zero when empty or unreadable.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// finish sets the session's start from its first event with a time.
func (s *Session) finish() {
	for _, e := range s.Events {
		if !e.Time.IsZero() {
			s.Start = e.Time
			return
		}
	}
}

// skip lists a line the reader did not keep.
func (s *Session) skip(line int, kind, why string) {
	s.Skipped = append(s.Skipped, Skip{Line: line, Kind: kind, Why: why})
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
