package hygiene

import (
	"strconv"
	"strings"
)

// Compact is called when the session compacts (§7), after the summary. With §7 on it returns the
// files-read table the harness adds after the summary: of the full reads made since the previous
// compaction (or since the session began) in turns still part of the history (a turn taken back
// by [Session.Rewind] took its reads with it), the newest full read of each file by its absolute
// path, newest last, at most compaction.rows (the newest rows kept); a stub is not a read. The
// text is the heading, a blank line, the intro, a blank line, the columns, the rule and one row
// per file, with no final newline:
//
//	## Files read before this summary
//
//	Read a file again for its content; recall shows a result by its id.
//
//	| Path | Lines | sha | Result |
//	|---|---|---|---|
//	| src/app.ts | 1-200 of 340 | 1c9e04ab | #0012 |
//
// Path is the path as that read's call gave it, with any "|" written "\|" so the table holds; an
// empty file's Lines cell is "empty"; with ids off the Result cell is "-". With no reads, or with
// §7 off, it returns "".
//
// Whatever the measures, Compact then empties the dedupe table (reads and searches), so no stub
// ever points at content no longer in the context: a read after compaction is a full read. Ids go
// on counting and every stored result can still be recalled (§1, §4).
func (s *Session) Compact() string {
	var table string
	if s.m.CompactionNextTurn {
		table = s.filesReadTable()
	}
	s.reads = nil
	s.readIdx = map[fileKey][]int{}
	s.searches = nil
	s.searchIdx = map[string][]int{}
	return table
}

func (s *Session) filesReadTable() string {
	seen := map[string]bool{}
	var rows []string // newest first
	for i := len(s.reads) - 1; i >= 0 && len(rows) < s.cfg.Compaction.Rows; i-- {
		e := s.reads[i]
		if seen[e.key.absPath] {
			continue
		}
		seen[e.key.absPath] = true
		lines := "empty"
		if e.total > 0 {
			lines = strconv.Itoa(e.from) + "-" + strconv.Itoa(e.to) + " of " + strconv.Itoa(e.total)
		}
		id := e.id
		if id == "" {
			id = "-"
		}
		rows = append(rows, "| "+strings.ReplaceAll(e.path, "|", `\|`)+" | "+lines+" | "+e.short+" | "+id+" |")
	}
	if len(rows) == 0 {
		return ""
	}
	c := s.cfg.Compaction
	var b strings.Builder
	b.WriteString(c.Heading + "\n\n" + c.Intro + "\n\n" + c.Columns + "\n" + c.Rule)
	for i := len(rows) - 1; i >= 0; i-- {
		b.WriteString("\n" + rows[i])
	}
	return b.String()
}
