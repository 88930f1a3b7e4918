package hygiene

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// CapText caps a result body on its way in (§3). A body over cap.max_lines lines or cap.max_chars
// characters keeps its head — as many whole lines as fit cap.head_lines and cap.head_chars — and
// its tail — as many whole lines as fit cap.tail_lines and cap.tail_chars — with one line
// between them: cap.elided filled with the number of lines left out and id ("[1234 lines elided,
// full output #0020]"). A body within both limits is returned unchanged; a body of exactly
// max_lines lines or max_chars characters is within them.
//
// How it counts:
//   - Lines are counted as the read tool counts them ([Lines]): a final newline ends the last line
//     and does not start another. A capped text is head, elided line and tail joined by "\n",
//     with no final newline.
//   - Characters are Unicode code points (an invalid UTF-8 byte counts as one). The body's
//     characters include its newlines. The head's characters are those of its kept lines and
//     the newlines between them — the head as it appears — so a first line fits exactly when it
//     is at most head_chars long; the tail likewise.
//   - The first line is always kept: a first line longer than head_chars is cut to its first
//     head_chars characters and ends with cap.cut (" […cut]"), and the head is that line alone;
//     the elided line follows it whatever it counts, 0 included (a single huge line).
//   - The last line is always kept when it is not the first: the tail holds at least the last
//     line, and a last line longer than tail_chars is cut the same way (its first tail_chars
//     characters, then cap.cut), and is then the tail alone. The spec's "as many whole lines as
//     fit" would keep no tail at all there; keeping the last line's start, marked as cut, keeps
//     the promise that a capped result shows its first and last lines and stays within limits.
//   - The elided count is the number of lines wholly left out; a cut line is kept, not elided.
//
// So a capped text has at most head_lines + 1 + tail_lines lines, and at most head_chars +
// tail_chars + 2 newlines + the elided line + twice cap.cut characters.
func (c *Config) CapText(body, id string) string {
	nLines := strings.Count(body, "\n") + 1
	if body == "" {
		nLines = 0
	} else if strings.HasSuffix(body, "\n") {
		nLines--
	}
	if nLines <= c.Cap.MaxLines && utf8.RuneCountInString(body) <= c.Cap.MaxChars {
		return body
	}
	lines := Lines(body)
	var b strings.Builder
	b.Grow(c.Cap.HeadChars + c.Cap.TailChars + 64)

	// Head: whole lines while both limits hold; the first line cut when it alone is too long.
	head := 1
	if n := utf8.RuneCountInString(lines[0]); n > c.Cap.HeadChars {
		b.WriteString(cutRunes(lines[0], c.Cap.HeadChars))
		b.WriteString(c.Cap.Cut)
	} else {
		used := n
		for head < len(lines) && head < c.Cap.HeadLines {
			n := utf8.RuneCountInString(lines[head])
			if used+1+n > c.Cap.HeadChars {
				break
			}
			used += 1 + n
			head++
		}
		writeLines(&b, lines[:head])
	}

	// Tail: from the end, never reaching into the head; at least the last line.
	tail := 0
	var tailText string
	if head < len(lines) {
		last := lines[len(lines)-1]
		tail = 1
		if n := utf8.RuneCountInString(last); n > c.Cap.TailChars {
			tailText = cutRunes(last, c.Cap.TailChars) + c.Cap.Cut
		} else {
			used := n
			for tail < c.Cap.TailLines && len(lines)-1-tail >= head {
				n := utf8.RuneCountInString(lines[len(lines)-1-tail])
				if used+1+n > c.Cap.TailChars {
					break
				}
				used += 1 + n
				tail++
			}
			tailText = strings.Join(lines[len(lines)-tail:], "\n")
		}
	}

	b.WriteByte('\n')
	b.WriteString(fill(c.Cap.Elided, "lines", strconv.Itoa(len(lines)-head-tail), "id", id))
	if tail > 0 {
		b.WriteByte('\n')
		b.WriteString(tailText)
	}
	return b.String()
}

// cutRunes returns the first n code points of s.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

func writeLines(b *strings.Builder, lines []string) {
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
}
