package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"lab"
	"lab/hygiene"
)

// ctxInput is a context.json case's input: the measures switched off, config numbers overridden to
// keep cases small, and the event script run against a fresh hygiene.Session (README.md).
type ctxInput struct {
	// MeasuresOff names measures to switch off ("stubs", "caps", …; "all" for the plain harness).
	// The rest are as the spec sets them (hygiene.Spec).
	MeasuresOff []string `json:"measures_off"`
	// Config overrides numbers of loop.json `context` ("cap.max_lines": 10); keys in configKeys.
	Config map[string]int `json:"config"`
	// Events run in order; each one that answers something produces one output.
	Events []ctxEvent `json:"events"`
}

// ctxEvent is one event: exactly one field is set.
type ctxEvent struct {
	// File sets a file's content (no output).
	File *fileEvent `json:"file"`
	// Read reads a file that a File event set: hygiene.Session.Read.
	Read *readEvent `json:"read"`
	// Result inserts a generic tool result: hygiene.Session.Result.
	Result *resultEvent `json:"result"`
	// Results inserts Count generic results without checking them (no output): to reach an id.
	Results *resultsEvent `json:"results"`
	// Search inserts a search or listing result: hygiene.Session.Search.
	Search *searchEvent `json:"search"`
	// Recall shows a stored result again: hygiene.Session.Recall.
	Recall *recallEvent `json:"recall"`
	// Edited, Created, Deleted and Patched change files and answer (§5); they also change the
	// file a later Read sees.
	Edited  *editedEvent  `json:"edited"`
	Created *createdEvent `json:"created"`
	Deleted *deletedEvent `json:"deleted"`
	Patched *patchedEvent `json:"patched"`
	// Turn starts a new turn: hygiene.Session.BeginTurn (no output).
	Turn *struct{} `json:"turn"`
	// Rewind takes back the turns after Turn: hygiene.Session.Rewind (no output).
	Rewind *rewindEvent `json:"rewind"`
	// Compact compacts: hygiene.Session.Compact; the output is the files-read table ("" if none).
	Compact *struct{} `json:"compact"`
	// Note builds a user message's note: hygiene.Session.Note.
	Note *noteEvent `json:"note"`
}

type fileEvent struct {
	Path    string   `json:"path"`
	Abs     string   `json:"abs"`
	Content textSpec `json:"content"`
}

type readEvent struct {
	Path   string `json:"path"`
	Abs    string `json:"abs"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

type resultEvent struct {
	Text textSpec `json:"text"`
}

type resultsEvent struct {
	Count int    `json:"count"`
	Text  string `json:"text"`
}

type searchEvent struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	Text textSpec        `json:"text"`
}

type recallEvent struct {
	ID     string `json:"id"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

type editedEvent struct {
	Path    string   `json:"path"`
	Abs     string   `json:"abs"`
	Content textSpec `json:"content"`
	Diff    textSpec `json:"diff"`
}

type createdEvent struct {
	Path    string   `json:"path"`
	Abs     string   `json:"abs"`
	Content textSpec `json:"content"`
}

type deletedEvent struct {
	Path string `json:"path"`
	Abs  string `json:"abs"`
}

type patchedEvent struct {
	Changes []patchChange `json:"changes"`
}

type patchChange struct {
	// Kind is "updated", "created" or "deleted".
	Kind    string   `json:"kind"`
	Path    string   `json:"path"`
	Abs     string   `json:"abs"`
	Content textSpec `json:"content"`
	Diff    textSpec `json:"diff"`
}

type rewindEvent struct {
	Turn int `json:"turn"`
}

type noteEvent struct {
	Changes map[string]string `json:"changes"`
}

// textSpec is a text written either as a JSON string or as an array of pieces concatenated: a
// string, or a generator {"line": "…", "lines": N, "repeat": K, "from": F, "joined": bool} that
// makes N lines, each the line text repeated K times (default 1) with {{n}} replaced by the line's
// number (from F, default 1), each followed by "\n" — except the last when joined is true.
type textSpec string

type genPiece struct {
	Line   string `json:"line"`
	Lines  int    `json:"lines"`
	Repeat int    `json:"repeat"`
	From   int    `json:"from"`
	Joined bool   `json:"joined"`
}

// UnmarshalJSON reads a string or an array of pieces.
func (t *textSpec) UnmarshalJSON(data []byte) error {
	s, err := expandText(data)
	if err != nil {
		return err
	}
	*t = textSpec(s)
	return nil
}

func expandText(data []byte) (string, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		err := json.Unmarshal(data, &s)
		return s, err
	}
	var pieces []json.RawMessage
	if err := json.Unmarshal(data, &pieces); err != nil {
		return "", fmt.Errorf("text: want a string or an array of pieces: %w", err)
	}
	var b strings.Builder
	for _, p := range pieces {
		p = bytes.TrimSpace(p)
		if len(p) > 0 && p[0] == '"' {
			var s string
			if err := json.Unmarshal(p, &s); err != nil {
				return "", err
			}
			b.WriteString(s)
			continue
		}
		var g genPiece
		if err := decodeStrict(p, &g); err != nil {
			return "", fmt.Errorf("text generator: %w", err)
		}
		if g.Lines < 1 {
			return "", fmt.Errorf("text generator: lines %d, want at least 1", g.Lines)
		}
		rep := max(g.Repeat, 1)
		from := g.From
		if from == 0 {
			from = 1
		}
		line := strings.Repeat(g.Line, rep)
		numbered := strings.Contains(line, "{{n}}")
		for i := 0; i < g.Lines; i++ {
			if numbered {
				b.WriteString(strings.ReplaceAll(line, "{{n}}", strconv.Itoa(from+i)))
			} else {
				b.WriteString(line)
			}
			if !g.Joined || i < g.Lines-1 {
				b.WriteByte('\n')
			}
		}
	}
	return b.String(), nil
}

// ctxWant is a context.json case's expected outcome: one entry per event that answers, in order.
// An entry is the exact text (a string or a textSpec array), null (not checked), or a shape
// object (outputShape) for a text too long to write out.
type ctxWant struct {
	Outputs []json.RawMessage `json:"outputs"`
}

// outputShape checks properties of a long output; each field set is checked.
type outputShape struct {
	// LineCount is the number of lines ("\n"-separated; a text with no "\n" is one line).
	LineCount int `json:"line_count"`
	// Chars is the length in characters (Unicode code points).
	Chars int `json:"chars"`
	// SHA256 is the lowercase hex SHA-256 of the whole output.
	SHA256 string `json:"sha256"`
	// FirstLines and LastLines are the output's first and last lines, exactly.
	FirstLines []string `json:"first_lines"`
	LastLines  []string `json:"last_lines"`
}

// measureSwitches maps a measure's name in measures_off to its switch in hygiene.Measures.
func measureSwitches(m *hygiene.Measures) map[string]*bool {
	return map[string]*bool{
		"result_ids": &m.ResultIDs, "stubs": &m.Stubs, "caps": &m.Caps, "recall": &m.Recall,
		"diffs": &m.Diffs, "search_dedupe": &m.SearchDedupe, "compaction_next_turn": &m.CompactionNextTurn,
		"date_in_note": &m.DateInNote, "notes_for_changes": &m.NotesForChanges,
		"fixed_tool_list": &m.FixedToolList, "reasoning_this_turn": &m.ReasoningThisTurn,
		"relative_paths": &m.RelativePaths,
	}
}

// configKeys maps the loop.json `context` numbers a case may override to their fields.
func configKeys(c *hygiene.Config) map[string]*int {
	return map[string]*int{
		"ids.digits": &c.IDs.Digits, "read.sha_digits": &c.Read.SHADigits,
		"read.window_lines": &c.Read.WindowLines, "cap.max_lines": &c.Cap.MaxLines,
		"cap.max_chars": &c.Cap.MaxChars, "cap.head_lines": &c.Cap.HeadLines,
		"cap.head_chars": &c.Cap.HeadChars, "cap.tail_lines": &c.Cap.TailLines,
		"cap.tail_chars": &c.Cap.TailChars, "recall.window_lines": &c.Recall.WindowLines,
		"compaction.rows": &c.Compaction.Rows,
	}
}

// errBadCase marks a case that cannot be run as written (not a failure of the implementation).
var errBadCase = errors.New("bad case")

// checkContext runs one context.json case (§1-§7, §10's note) against a fresh hygiene.Session:
// nil when every output is as wanted, else the first difference.
func checkContext(c Case) error {
	var in ctxInput
	var want ctxWant
	if err := decodeCase(c, &in, &want); err != nil {
		return fmt.Errorf("%w: %v", errBadCase, err)
	}
	cfg, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		return err
	}
	keys := configKeys(cfg)
	for k, v := range in.Config {
		p, ok := keys[k]
		if !ok {
			return fmt.Errorf("%w: config key %q may not be overridden", errBadCase, k)
		}
		*p = v
	}
	m := hygiene.Spec()
	sw := measureSwitches(&m)
	for _, name := range in.MeasuresOff {
		if name == "all" {
			m = hygiene.Measures{}
			continue
		}
		p, ok := sw[name]
		if !ok {
			return fmt.Errorf("%w: unknown measure %q", errBadCase, name)
		}
		*p = false
	}
	s, err := hygiene.NewSession(cfg, m)
	if err != nil {
		return fmt.Errorf("%w: %v", errBadCase, err)
	}
	r := &ctxRun{s: s, files: map[string]string{}}
	var outs []labelled
	for i, ev := range in.Events {
		out, name, has, err := r.event(ev)
		if err != nil {
			return fmt.Errorf("event %d (%s): %w", i+1, name, err)
		}
		if has {
			outs = append(outs, labelled{name: name, event: i + 1, text: out})
		}
	}
	if len(outs) != len(want.Outputs) {
		return fmt.Errorf("%d outputs, want %d", len(outs), len(want.Outputs))
	}
	for i, o := range outs {
		what := fmt.Sprintf("output %d (event %d, %s)", i+1, o.event, o.name)
		if err := compareOutput(what, want.Outputs[i], o.text); err != nil {
			return err
		}
	}
	return nil
}

type labelled struct {
	name  string
	event int
	text  string
}

// compareOutput checks one output against its expected entry.
func compareOutput(what string, w json.RawMessage, got string) error {
	w = bytes.TrimSpace(w)
	switch {
	case string(w) == "null":
		return nil
	case len(w) > 0 && (w[0] == '"' || w[0] == '['):
		exp, err := expandText(w)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errBadCase, what, err)
		}
		return diffText(what, exp, got)
	}
	var sh outputShape
	if err := decodeStrict(w, &sh); err != nil {
		return fmt.Errorf("%w: %s: %v", errBadCase, what, err)
	}
	lines := strings.Split(got, "\n")
	for i, l := range sh.FirstLines {
		if i >= len(lines) || lines[i] != l {
			return diffText(what+" (first lines)", strings.Join(sh.FirstLines, "\n"), strings.Join(lines[:min(len(lines), len(sh.FirstLines))], "\n"))
		}
	}
	if n := len(sh.LastLines); n > 0 {
		tail := lines[max(0, len(lines)-n):]
		if err := diffText(what+" (last lines)", strings.Join(sh.LastLines, "\n"), strings.Join(tail, "\n")); err != nil {
			return err
		}
	}
	if sh.LineCount > 0 && len(lines) != sh.LineCount {
		return fmt.Errorf("%s: %d lines, want %d", what, len(lines), sh.LineCount)
	}
	if sh.Chars > 0 && len([]rune(got)) != sh.Chars {
		return fmt.Errorf("%s: %d characters, want %d", what, len([]rune(got)), sh.Chars)
	}
	if sh.SHA256 != "" {
		if sum := sha256Hex(got); sum != sh.SHA256 {
			return fmt.Errorf("%s: sha256 %s, want %s", what, sum, sh.SHA256)
		}
	}
	return nil
}

// ctxRun is one case's run: the session and the files as the events left them, by absolute path.
type ctxRun struct {
	s     *hygiene.Session
	files map[string]string
}

// absOf returns abs, else the path under the conventional root /p.
func absOf(path, abs string) string {
	if abs != "" {
		return abs
	}
	if strings.HasPrefix(path, "/") {
		return path
	}
	return "/p/" + path
}

// event runs one event: its output, its name, whether it has an output, and an error for an event
// that cannot run.
func (r *ctxRun) event(ev ctxEvent) (out, name string, has bool, err error) {
	set := 0
	for _, p := range []bool{ev.File != nil, ev.Read != nil, ev.Result != nil, ev.Results != nil,
		ev.Search != nil, ev.Recall != nil, ev.Edited != nil, ev.Created != nil, ev.Deleted != nil,
		ev.Patched != nil, ev.Turn != nil, ev.Rewind != nil, ev.Compact != nil, ev.Note != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return "", "?", false, fmt.Errorf("%w: an event has exactly one kind, this one has %d", errBadCase, set)
	}
	s := r.s
	switch {
	case ev.File != nil:
		r.files[absOf(ev.File.Path, ev.File.Abs)] = string(ev.File.Content)
		return "", "file", false, nil
	case ev.Read != nil:
		abs := absOf(ev.Read.Path, ev.Read.Abs)
		content, ok := r.files[abs]
		if !ok {
			return "", "read", false, fmt.Errorf("%w: no file %s set", errBadCase, abs)
		}
		return s.Read(hygiene.ReadRequest{Path: ev.Read.Path, AbsPath: abs, Content: []byte(content),
			Offset: ev.Read.Offset, Limit: ev.Read.Limit}), "read", true, nil
	case ev.Result != nil:
		return s.Result(string(ev.Result.Text)), "result", true, nil
	case ev.Results != nil:
		for range ev.Results.Count {
			s.Result(ev.Results.Text)
		}
		return "", "results", false, nil
	case ev.Search != nil:
		args := ev.Search.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		return s.Search(ev.Search.Tool, args, string(ev.Search.Text)), "search", true, nil
	case ev.Recall != nil:
		return s.Recall(ev.Recall.ID, ev.Recall.Offset, ev.Recall.Limit), "recall", true, nil
	case ev.Edited != nil:
		r.files[absOf(ev.Edited.Path, ev.Edited.Abs)] = string(ev.Edited.Content)
		return s.Edited(ev.Edited.Path, []byte(ev.Edited.Content), string(ev.Edited.Diff)), "edited", true, nil
	case ev.Created != nil:
		r.files[absOf(ev.Created.Path, ev.Created.Abs)] = string(ev.Created.Content)
		return s.Created(ev.Created.Path, []byte(ev.Created.Content)), "created", true, nil
	case ev.Deleted != nil:
		delete(r.files, absOf(ev.Deleted.Path, ev.Deleted.Abs))
		return s.Deleted(ev.Deleted.Path), "deleted", true, nil
	case ev.Patched != nil:
		changes := make([]hygiene.FileChange, len(ev.Patched.Changes))
		for i, ch := range ev.Patched.Changes {
			abs := absOf(ch.Path, ch.Abs)
			fc := hygiene.FileChange{Path: ch.Path, Content: []byte(ch.Content), Diff: string(ch.Diff)}
			switch ch.Kind {
			case "updated":
				fc.Kind = hygiene.Updated
				r.files[abs] = string(ch.Content)
			case "created":
				fc.Kind = hygiene.Created
				r.files[abs] = string(ch.Content)
			case "deleted":
				fc.Kind = hygiene.Deleted
				fc.Content = nil
				delete(r.files, abs)
			default:
				return "", "patched", false, fmt.Errorf("%w: change kind %q", errBadCase, ch.Kind)
			}
			changes[i] = fc
		}
		return s.Patched(changes), "patched", true, nil
	case ev.Turn != nil:
		s.BeginTurn()
		return "", "turn", false, nil
	case ev.Rewind != nil:
		s.Rewind(ev.Rewind.Turn)
		return "", "rewind", false, nil
	case ev.Compact != nil:
		return s.Compact(), "compact", true, nil
	default:
		note, err := s.Note(ev.Note.Changes)
		if err != nil {
			return "", "note", false, err
		}
		return note, "note", true, nil
	}
}

// sha256Hex is the lowercase hex SHA-256 of s.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
