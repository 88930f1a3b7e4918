package hygiene

import (
	"strconv"
	"strings"
)

// Recall answers recall(id, offset?, limit?) (§4): a stored result shown again, in full, up to
// recall.window_lines lines from offset, under its own bracket:
//
//	[#0021 recall #0020 lines 1-2000 of 3400]
//	…
//
// The id may be given with or without '#', in any case, with any number of leading zeros; the
// bracket spells it as the session does ("#0020"). offset is 1-based (0 or less means 1); limit 0
// or less, or more than recall.window_lines, means recall.window_lines.
//
// The lines of a stored result are its full stored text after its bracket line, counted as the
// read tool counts them ([Lines]): the lines the model saw under the bracket, the lines §3's
// elided count counts, so "of 3400" is the result's own length and line N of a recall is line N
// of the output. A result that is its bracket line alone (a file created or deleted, an empty
// file, an empty text) has that one line. A stub's stored text is the text it stands for (§1), so
// its recall shows those lines.
//
// An id the session never gave answers "[#0021] No stored result #ffff in this session." An
// offset past the stored result's end answers read.past_end naming the id
// ("[#0021]\nError: #0020 has 3400 lines; offset 5000 is past its end."). A recall gets an id, is
// stored, and is never capped or deduplicated. With ids off there are no ids to recall: the answer
// is recall.unknown alone and nothing is stored. Recall answers whether or not Measures.Recall is
// on; that measure decides whether the harness offers the tool.
func (s *Session) Recall(id string, offset, limit int) string {
	st, canon, ok := s.lookup(id)
	unknown := fill(s.cfg.Recall.Unknown, "id", canon)
	if !s.m.ResultIDs {
		return unknown
	}
	own := s.nextID()
	if !ok {
		out := "[" + own + "] " + unknown
		s.keep(out, -1)
		return out
	}
	var lines []string
	if st.body >= 0 {
		lines = Lines(st.text[st.body:])
	}
	if len(lines) == 0 {
		lines = []string{st.text[:bracketEnd(st)]}
	}
	total := len(lines)
	from := max(offset, 1)
	if from > total {
		bracket := "[" + own + "]"
		out := bracket + "\n" + fill(s.cfg.Read.PastEnd, "path", canon, "total", strconv.Itoa(total), "offset", strconv.Itoa(from))
		s.keep(out, len(bracket)+1)
		return out
	}
	if limit <= 0 || limit > s.cfg.Recall.WindowLines {
		limit = s.cfg.Recall.WindowLines
	}
	to := min(from+limit-1, total)
	bracket := "[" + own + " " + fill(s.cfg.Recall.Header, "id", canon, "from", strconv.Itoa(from), "to", strconv.Itoa(to), "total", strconv.Itoa(total)) + "]"
	out := bracket + "\n" + strings.Join(lines[from-1:to], "\n")
	s.keep(out, len(bracket)+1)
	return out
}

// bracketEnd returns the length of a stored result's bracket line.
func bracketEnd(st stored) int {
	if st.body > 0 {
		return st.body - 1
	}
	if i := strings.IndexByte(st.text, '\n'); i >= 0 {
		return i
	}
	return len(st.text)
}
