package hygiene

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Session is the hygiene state of one agent session: the id counter (§1), the store of every
// result in full (§1, for recall), and the dedupe table of full reads in the request being built
// (§2). Not safe for concurrent use: a session inserts its results one at a time.
type Session struct {
	cfg  *Config
	m    Measures
	next int
	// store maps an id ("#0001") to the result's full text, before any cap.
	store map[string]string
	// reads is the dedupe table's part for reads: full reads (never stubs) still in the request,
	// oldest first.
	reads []readEntry
}

type readEntry struct {
	id       string
	absPath  string
	sum      [sha256.Size]byte
	from, to int // lines shown, 1-based, inclusive
}

// NewSession starts the hygiene state of a session. It fails when the measures cannot hold
// together ([Measures.Validate]).
func NewSession(cfg *Config, m Measures) (*Session, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &Session{cfg: cfg, m: m, store: map[string]string{}}, nil
}

// Measures returns the measures the session applies.
func (s *Session) Measures() Measures { return s.m }

// nextID returns the next result id: "#" and the result's number in the session, counting from 1,
// in lowercase hex with at least ids.digits digits (§1). Never reused.
func (s *Session) nextID() string {
	s.next++
	return "#" + fmt.Sprintf("%0*s", s.cfg.IDs.Digits, strconv.FormatInt(int64(s.next), 16))
}

// Stored returns the full text stored for id ("#0001"; the "#" may be left out) and whether the
// session gave that id (§1 "Every result is stored with the session, in full").
func (s *Session) Stored(id string) (string, bool) {
	if !strings.HasPrefix(id, "#") {
		id = "#" + id
	}
	t, ok := s.store[id]
	return t, ok
}

// Result inserts a tool result other than a read or an edit: with §1 on it answers "[#id]", a
// newline and text, and stores it; with §1 off it answers text unchanged.
func (s *Session) Result(text string) string {
	if !s.m.ResultIDs {
		return text
	}
	id := s.nextID()
	out := "[" + id + "]\n" + text
	s.store[id] = out
	return out
}

// ReadRequest is one call of the read tool, already resolved by the harness.
type ReadRequest struct {
	// Path is the path as the call gave it; the bracket names it (§1 "Paths in a bracket are the
	// call's").
	Path string
	// AbsPath is the absolute, resolved path: it identifies the file for stubs (§1, §2).
	AbsPath string
	// Content is the file's whole content.
	Content []byte
	// Offset is the first line to show, 1-based; 0 means 1.
	Offset int
	// Limit is the number of lines to show; 0 means the read window (read.window_lines).
	Limit int
}

// Read answers a read: a bracket with the path as given, the lines shown, the file's length in
// lines and the first sha_digits hex digits of the SHA-256 of the content, then the lines as
// "N: text" (§1); the empty file as "[#id path empty sha …]". With §2 on, a read whose file has the
// same content hash as an earlier full read still in the dedupe table, and whose lines lie wholly
// inside that read's lines, is answered with a stub naming the earlier result instead. An offset
// past the end of the file is an error answer naming the absolute path.
func (s *Session) Read(r ReadRequest) string {
	sum := sha256.Sum256(r.Content)
	short := hex.EncodeToString(sum[:])[:s.cfg.Read.SHADigits]
	lines := Lines(string(r.Content))
	total := len(lines)
	label := r.Path
	if total == 0 {
		return s.insertRead(fill(s.cfg.Read.Empty, "path", label, "sha", short), "", r.AbsPath, sum, 0, 0)
	}
	from := max(r.Offset, 1)
	if from > total {
		return s.Result(fill(s.cfg.Read.PastEnd, "path", r.AbsPath, "total", strconv.Itoa(total), "offset", strconv.Itoa(from)))
	}
	limit := r.Limit
	if limit <= 0 || limit > s.cfg.Read.WindowLines {
		limit = s.cfg.Read.WindowLines
	}
	to := min(from+limit-1, total)
	head := fill(s.cfg.Read.Range, "path", label, "from", strconv.Itoa(from), "to", strconv.Itoa(to), "total", strconv.Itoa(total), "sha", short)
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteString(": ")
		b.WriteString(lines[i-1])
		if i < to {
			b.WriteByte('\n')
		}
	}
	body := b.String()
	if s.m.Stubs {
		// §2: a stub points at a full read (never at a stub) of the same file, same content,
		// whose lines contain the lines asked for; the newest such read.
		for i := len(s.reads) - 1; i >= 0; i-- {
			e := s.reads[i]
			if e.absPath == r.AbsPath && e.sum == sum && e.from <= from && to <= e.to {
				stub := fill(s.cfg.Stub, "id", e.id, "lines", fmt.Sprintf("%d-%d", e.from, e.to))
				return s.insertStub(head, stub, body)
			}
		}
	}
	return s.insertRead(head, body, r.AbsPath, sum, from, to)
}

// insertRead gives a full read its id and bracket, stores it, and adds it to the dedupe table.
func (s *Session) insertRead(head, body, absPath string, sum [sha256.Size]byte, from, to int) string {
	out := "[" + head + "]"
	if s.m.ResultIDs {
		id := s.nextID()
		out = "[" + id + " " + head + "]"
		if to > 0 {
			s.reads = append(s.reads, readEntry{id: id, absPath: absPath, sum: sum, from: from, to: to})
		}
		defer func() { s.store[id] = out }()
	}
	if body != "" {
		out += "\n" + body
	}
	return out
}

// insertStub gives a stub its id and bracket (§2). What is stored under its id is the text the
// stub stands for (§1: "for a stub the text it stands for"), so recall shows the lines.
func (s *Session) insertStub(head, sentence, body string) string {
	id := s.nextID()
	s.store[id] = "[" + id + " " + head + "]\n" + body
	return "[" + id + " " + head + "] " + sentence
}

// Edited answers an edit over an existing file with the unified diff of the change (hunks only)
// under a bracket naming the path as the call gave it and the new content's hash (§5).
func (s *Session) Edited(path string, newContent []byte, diff string) string {
	sum := sha256.Sum256(newContent)
	head := path + " sha " + hex.EncodeToString(sum[:])[:s.cfg.Read.SHADigits]
	if !s.m.ResultIDs {
		return "[" + head + "]\n" + diff
	}
	id := s.nextID()
	out := "[" + id + " " + head + "]\n" + diff
	s.store[id] = out
	return out
}

// Lines splits text into lines as the read tool counts them: a final newline ends the last line
// and does not start another; "" has no lines.
func Lines(text string) []string {
	if text == "" {
		return nil
	}
	text = strings.TrimSuffix(text, "\n")
	return strings.Split(text, "\n")
}

// Note builds the note a user message carries (§10.3): one block per changed value, in the order
// loop.json `context.note.order` lists the kinds, separated by a blank line, between the note's
// open and close lines. A value that became empty reads `context.note.empty`. It returns "" when
// nothing changed. A kind with no text in loop.json is an error.
func (s *Session) Note(changes map[string]string) (string, error) {
	if len(changes) == 0 {
		return "", nil
	}
	for kind := range changes {
		if _, ok := s.cfg.Note.Blocks[kind]; !ok {
			return "", fmt.Errorf("hygiene: note kind %q has no text in loop.json context.note.blocks", kind)
		}
	}
	var blocks []string
	for _, kind := range s.cfg.Note.Order {
		v, ok := changes[kind]
		if !ok {
			continue
		}
		if v == "" {
			v = s.cfg.Note.Empty
		}
		blocks = append(blocks, fill(s.cfg.Note.Blocks[kind], "value", v))
	}
	return s.cfg.Note.Open + "\n" + strings.Join(blocks, "\n\n") + "\n" + s.cfg.Note.Close, nil
}

// WithNote returns a user message's text with the note after the person's words, separated by a
// blank line (§10.3); the text unchanged when note is "".
func WithNote(text, note string) string {
	if note == "" {
		return text
	}
	return strings.TrimRight(text, "\n") + "\n\n" + note
}

// EnvironmentLines returns the environment block of the system prompt (§11, loop.json
// `context.env`): "Project: NAME (paths are relative to its root)" and, when the session started
// in a directory below the root, "Started in: DIR (relative to the project root)". startedIn is
// relative to the root; "" or "." means the root itself.
func (c *Config) EnvironmentLines(project, startedIn string) string {
	out := fill(c.Env.Project, "name", project)
	if startedIn != "" && startedIn != "." {
		out += "\n" + fill(c.Env.StartedIn, "dir", startedIn)
	}
	return out
}

// DateLine returns the practice arm's system-prompt date line (loop.json
// `context.practice.date_in_system_prompt`): what several harnesses do instead of §10.2.
func (c *Config) DateLine(date string) string {
	return fill(c.Practice.DateInSystemPrompt, "value", date)
}
