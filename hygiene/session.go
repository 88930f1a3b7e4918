package hygiene

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Session is the hygiene state of one agent session: the id counter (§1), the store of every
// result in full (§1, for recall §4), the turn counter (for rewinds), and the dedupe table (§2,
// §6): the full reads and searches in the request being built. The CLI resends every result, so
// the dedupe table is everything inserted since the session began or the last [Session.Compact],
// minus the turns taken back by [Session.Rewind] and the results a practice of the harness removed
// from the request ([Session.Withdraw]). Not safe for concurrent use: a session inserts
// its results one at a time.
//
// Every insertion costs time proportional to the result (its text, the file read), not to the
// session: the store is a slice indexed by the id's number, and the dedupe table is indexed by
// file (absolute path and content hash) and by search key.
type Session struct {
	cfg  *Config
	m    Measures
	next int
	turn int
	// store holds every result in full, before any cap, at index number-1 (§1 "Every result is
	// stored with the session, in full").
	store []stored
	// reads are the full reads (never stubs) made since the session began or the last
	// compaction, in turns still part of the history, oldest first (§2 dedupe table, §7 table).
	reads []readEntry
	// readIdx maps a file (absolute path and full content hash) to its entries in reads, oldest
	// first: the stub lookup of §2 looks only at reads of the same file with the same content.
	readIdx map[fileKey][]int
	// searches are the full results of dedupe.by_result tools in the dedupe table, oldest first
	// (§6); searchIdx maps a search key (tool and canonical arguments) to its entries.
	searches  []searchEntry
	searchIdx map[string][]int
}

// stored is one stored result: its full text and where its body starts (after the bracket line
// and its newline), or -1 when the result is its bracket line alone. For a stub (§2, §6), ref is
// the id it names and search says it stood for a search's result (which a full answer caps, §3).
// entry is, for a full read or search in the dedupe table, its index in reads or searches plus 1
// (0: none); an index is trusted only while the entry there has this result's id, since a rewind
// or a compaction shortens the table.
type stored struct {
	text   string
	body   int
	ref    string
	search bool
	entry  int
}

type fileKey struct {
	absPath string
	sum     [sha256.Size]byte
}

type readEntry struct {
	id string
	// gone says the result left the requests the session builds ([Session.Withdraw]): no stub
	// names it any more (§2).
	gone     bool
	path     string // as the call gave it (§1), for the §7 table
	key      fileKey
	short    string // the first sha_digits hex digits of the hash
	from, to int    // lines shown, 1-based, inclusive; 0, 0 for an empty file
	total    int    // the file's length in lines
	turn     int
}

type searchEntry struct {
	key  string
	id   string
	text string
	turn int
	gone bool // as readEntry.gone (§6)
}

// NewSession starts the hygiene state of a session. It fails when the measures cannot hold
// together ([Measures.Validate]).
func NewSession(cfg *Config, m Measures) (*Session, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &Session{cfg: cfg, m: m, readIdx: map[fileKey][]int{}, searchIdx: map[string][]int{}}, nil
}

// Measures returns the measures the session applies.
func (s *Session) Measures() Measures { return s.m }

// BeginTurn starts a new turn: the reads and searches inserted from now on belong to it, so
// [Session.Rewind] can take them back. A session starts in turn 0; the first BeginTurn starts
// turn 1.
func (s *Session) BeginTurn() { s.turn++ }

// Turn returns the number of the current turn (0 before the first [Session.BeginTurn]).
func (s *Session) Turn() int { return s.turn }

// Rewind takes back every turn after turn (an undo, a rewind, a reply regenerated or deleted):
// their reads and searches leave the dedupe table (§2: what a stub would point at is no longer in
// the request) and the §7 files-read table ("A turn taken back … takes its reads with it"), and
// turn becomes the current turn. Their results stay stored: ids are never reused (§1) and recall
// shows any id the session gave (§4). A turn at or after the current one changes nothing.
func (s *Session) Rewind(turn int) {
	if turn >= s.turn {
		return
	}
	s.turn = max(turn, 0)
	s.reads = dropAfter(s.reads, s.readIdx, s.turn, func(e readEntry) (fileKey, int) { return e.key, e.turn })
	s.searches = dropAfter(s.searches, s.searchIdx, s.turn, func(e searchEntry) (string, int) { return e.key, e.turn })
}

// Checkpoint is where the dedupe table stood at one moment of a session ([Session.Checkpoint]):
// how many reads and searches it held.
type Checkpoint struct{ reads, searches int }

// Checkpoint returns the dedupe table's state now, for [Session.RewindTo]: a harness takes one
// before each model reply it adds to the history.
func (s *Session) Checkpoint() Checkpoint {
	return Checkpoint{reads: len(s.reads), searches: len(s.searches)}
}

// RewindTo takes back what the session inserted since c, as [Session.Rewind] does for whole
// turns but at any point inside the current turn (an undo of the last requests): the reads and
// searches inserted after c leave the dedupe table (§2: what a stub would point at is no longer
// in the request) and the §7 files-read table. Their results stay stored and ids go on counting
// (§1, §4); the turn does not change. A checkpoint taken before the last [Session.Compact] or
// [Session.Rewind], which shortened the table below it, takes back only what came after them.
func (s *Session) RewindTo(c Checkpoint) {
	s.reads = dropFrom(s.reads, s.readIdx, c.reads, func(e readEntry) fileKey { return e.key })
	s.searches = dropFrom(s.searches, s.searchIdx, c.searches, func(e searchEntry) string { return e.key })
}

// dropFrom removes entries[n:] and their places in idx (key → indexes into entries, oldest
// first, so theirs are the last of each key's); it returns the shortened entries.
func dropFrom[E any, K comparable](entries []E, idx map[K][]int, n int, key func(E) K) []E {
	for len(entries) > max(n, 0) {
		last := len(entries) - 1
		k := key(entries[last])
		if ix := idx[k]; len(ix) > 0 && ix[len(ix)-1] == last {
			if len(ix) > 1 {
				idx[k] = ix[:len(ix)-1]
			} else {
				delete(idx, k)
			}
		}
		entries = entries[:last]
	}
	return entries
}

// dropAfter removes from the end of entries those whose turn is after turn, and their places in
// idx (key → indexes into entries, oldest first); it returns the shortened entries.
func dropAfter[E any, K comparable](entries []E, idx map[K][]int, turn int, keyTurn func(E) (K, int)) []E {
	for n := len(entries); n > 0; n-- {
		k, t := keyTurn(entries[n-1])
		if t <= turn {
			return entries[:n]
		}
		if ix := idx[k]; len(ix) > 1 {
			idx[k] = ix[:len(ix)-1]
		} else {
			delete(idx, k)
		}
	}
	return entries[:0]
}

// nextID returns the next result id: "#" and the result's number in the session, counting from 1,
// in lowercase hex with at least ids.digits digits (§1). Never reused, not after a compaction
// either.
func (s *Session) nextID() string {
	s.next++
	return s.formatID(uint64(s.next))
}

func (s *Session) formatID(n uint64) string {
	return "#" + fmt.Sprintf("%0*s", s.cfg.IDs.Digits, strconv.FormatUint(n, 16))
}

// keep stores text, the full result given id (§1), whose body starts at byte body (-1: the result
// is its bracket line alone). Ids are given in order, so id's number is len(s.store)+1.
func (s *Session) keep(text string, body int) {
	s.store = append(s.store, stored{text: text, body: body})
}

// LastID returns the id of the newest result the session gave ("#0012"), "" before the first or
// with ids off (§1). Every tool call inserts one result, so after a call it is that call's id.
func (s *Session) LastID() string {
	if len(s.store) == 0 {
		return ""
	}
	return s.formatID(uint64(len(s.store)))
}

// Withdraw records that the results with these ids (as [Session.Stored] takes them) are no longer
// in the requests the session builds: a practice of the harness that rewrites earlier context
// (pruning old output, keeping the last N observations) replaced them. They leave the dedupe
// table for good, so no later stub names them (§2: "A stub names only a result that is in the
// request being built"; §6 alike): the next re-read of the file, or the same search, is answered
// in full. They stay stored (recall shows them, §4) and a withdrawn read stays in the §7 table of
// files read. An id the session never gave, or one not in the dedupe table, changes nothing.
func (s *Session) Withdraw(ids ...string) {
	for _, id := range ids {
		st, canon, found := s.lookup(id)
		if !found || st.entry == 0 {
			continue
		}
		if i := st.entry - 1; i < len(s.reads) && s.reads[i].id == canon {
			s.reads[i].gone = true
		}
		if i := st.entry - 1; i < len(s.searches) && s.searches[i].id == canon {
			s.searches[i].gone = true
		}
	}
}

// StubOf returns the id the result id is a stub of: the earlier full read a §2 stub names, or the
// earlier search a §6 "Same result as" names; ok is false when id is no stub the session gave.
func (s *Session) StubOf(id string) (ref string, ok bool) {
	st, _, found := s.lookup(id)
	if !found || st.ref == "" {
		return "", false
	}
	return st.ref, true
}

// Unstubbed returns the answer the stub id stands for, as the session would have inserted it in
// full had there been no earlier result to name: a read's bracket (the stub's own: its id, path,
// lines, length and sha) and the lines shown (§1; reads are not capped, §3), or a search's
// "[#id]", a newline and its text, capped as §3 caps any output. A harness whose practice removed
// the result a stub names sends this instead of the stub, so no request holds a stub naming a
// result it does not hold (§2). ok is false when id is no stub.
func (s *Session) Unstubbed(id string) (string, bool) {
	st, canon, found := s.lookup(id)
	if !found || st.ref == "" {
		return "", false
	}
	if !st.search || !s.m.Caps {
		return st.text, true
	}
	return st.text[:st.body] + s.cfg.CapText(st.text[st.body:], canon), true
}

// parseID reads an id as a call or a caller may spell it: with or without '#', any case, any
// number of leading zeros. It returns the id as the session spells it (lowercase, '#', padded to
// ids.digits) and its number; ok is false when id is not a hex number, and then canon is the
// argument lowercased with a '#' in front.
func (s *Session) parseID(id string) (canon string, n uint64, ok bool) {
	raw := strings.ToLower(strings.TrimSpace(id))
	raw = strings.TrimPrefix(raw, "#")
	n, err := strconv.ParseUint(raw, 16, 64)
	if err != nil {
		return "#" + raw, 0, false
	}
	return s.formatID(n), n, true
}

// lookup returns the stored result of id ("#0001"; see parseID for the spellings accepted).
func (s *Session) lookup(id string) (stored, string, bool) {
	canon, n, ok := s.parseID(id)
	if !ok || n < 1 || n > uint64(len(s.store)) {
		return stored{}, canon, false
	}
	return s.store[n-1], canon, true
}

// Stored returns the full text stored for id ("#0001"; the "#" may be left out, any case) and
// whether the session gave that id (§1 "Every result is stored with the session, in full").
func (s *Session) Stored(id string) (string, bool) {
	st, _, ok := s.lookup(id)
	return st.text, ok
}

// Result inserts a tool result other than a read, an edit, a search or a recall (§1): with ids on
// it answers "[#id]", a newline and text, and stores that in full; with §3 caps on, what it
// answers carries text capped by [Config.CapText] (the stored text is never capped). With ids off
// it answers text unchanged and stores nothing.
func (s *Session) Result(text string) string {
	out, _ := s.result(text)
	return out
}

// result is [Session.Result] that also returns the id given ("" with ids off).
func (s *Session) result(text string) (string, string) {
	if !s.m.ResultIDs {
		return text, ""
	}
	id := s.nextID()
	bracket := "[" + id + "]"
	s.keep(bracket+"\n"+text, len(bracket)+1)
	if s.m.Caps {
		text = s.cfg.CapText(text, id)
	}
	return bracket + "\n" + text, id
}

// ReadRequest is one call of the read tool, already resolved by the harness.
type ReadRequest struct {
	// Path is the path as the call gave it; the bracket names it (§1 "Paths in a bracket are the
	// call's").
	Path string
	// AbsPath is the absolute, resolved path: it identifies the file for stubs (§1, §2) and for
	// the §7 table's "newest read of each file".
	AbsPath string
	// Content is the file's whole content.
	Content []byte
	// Offset is the first line to show, 1-based; 0 means 1.
	Offset int
	// Limit is the number of lines to show; 0 (or more than read.window_lines) means the read
	// window (read.window_lines).
	Limit int
}

// Read answers a read (§1): a bracket with the id, the path as given, the lines shown, the file's
// length in lines and the first sha_digits hex digits of the SHA-256 of the content, then the
// lines as "N: text"; the empty file as "[#id path empty sha …]". Reads are not capped (§3): the
// window is read.window_lines lines from the offset. With §2 on, a read whose file has the same
// content hash as an earlier full read of the same file (absolute path) still in the dedupe table
// (not taken back by a rewind, a compaction or [Session.Withdraw]), and whose lines lie wholly
// inside that read's lines, is answered with a stub naming the newest such full read; a stub is stored as the full read it stands for (§1) but is never itself a
// read a later stub points at. An offset past the end of the file is an error answer naming the
// absolute path, inserted like [Session.Result].
//
// With ids off (the plain harness) the answer is the lines alone, with no bracket, and an empty
// file answers "". Every full read is recorded for the §7 table, whatever the measures.
func (s *Session) Read(r ReadRequest) string {
	sum := sha256.Sum256(r.Content)
	short := hex.EncodeToString(sum[:])[:s.cfg.Read.SHADigits]
	lines := Lines(string(r.Content))
	total := len(lines)
	e := readEntry{path: r.Path, key: fileKey{absPath: r.AbsPath, sum: sum}, short: short, total: total, turn: s.turn}
	if total == 0 {
		return s.insertRead(fill(s.cfg.Read.Empty, "path", r.Path, "sha", short), "", e)
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
	e.from, e.to = from, to
	head := fill(s.cfg.Read.Range, "path", r.Path, "from", strconv.Itoa(from), "to", strconv.Itoa(to), "total", strconv.Itoa(total), "sha", short)
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
		// still in the dedupe table, whose lines contain the lines asked for; the newest such.
		idx := s.readIdx[e.key]
		for i := len(idx) - 1; i >= 0; i-- {
			prev := s.reads[idx[i]]
			if !prev.gone && prev.from <= from && to <= prev.to {
				stub := fill(s.cfg.Stub, "id", prev.id, "lines", strconv.Itoa(prev.from)+"-"+strconv.Itoa(prev.to))
				return s.insertStub(head, stub, body, prev.id)
			}
		}
	}
	return s.insertRead(head, body, e)
}

// insertRead gives a full read its id and bracket, stores it, and adds it to the dedupe table
// (§2; an empty file, which has no lines to stub, only to the §7 table's reads).
func (s *Session) insertRead(head, body string, e readEntry) string {
	if !s.m.ResultIDs {
		s.addRead(e)
		return body
	}
	e.id = s.nextID()
	bracket := "[" + e.id + " " + head + "]"
	out := bracket
	if body != "" {
		out += "\n" + body
		s.keep(out, len(bracket)+1)
	} else {
		s.keep(out, -1)
	}
	s.addRead(e)
	return out
}

func (s *Session) addRead(e readEntry) {
	s.reads = append(s.reads, e)
	if e.id != "" {
		s.store[len(s.store)-1].entry = len(s.reads)
	}
	if e.to > 0 {
		s.readIdx[e.key] = append(s.readIdx[e.key], len(s.reads)-1)
	}
}

// insertStub gives a stub its id and bracket (§2). What is stored under its id is the text the
// stub stands for (§1: "for a stub the text it stands for"), so recall shows the lines.
func (s *Session) insertStub(head, sentence, body, ref string) string {
	id := s.nextID()
	bracket := "[" + id + " " + head + "]"
	s.store = append(s.store, stored{text: bracket + "\n" + body, body: len(bracket) + 1, ref: ref})
	return bracket + " " + sentence
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
