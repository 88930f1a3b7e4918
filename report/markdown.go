package report

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Markdown writes report.md to w: a title with the run id(s), each run's manifest facts (lab
// version, backend, server, model, num_ctx, start, end, whether the run completed), what the
// figures mean, the prefill check against the token counts, the spec's claims checked against
// the run (when it has the data), then per
// scenario its table (means over repetitions with 95 % intervals, ratio and paired difference
// to the spec arm), re-read tokens by segment kind, failed requests, the requests whose cached
// tokens differ from the expected ones, and its figures: an image of the SVG file and links to
// every file of [Figure].Files. Charts across scenarios come last.
//
// Numbers are formatted for people: thousands separators in token counts, seconds with 2
// decimals, percentages with 1. It returns an error for a report without analysis or runs and
// any error writing to w (one Write call).
func Markdown(w io.Writer, r *Report) error {
	return writeDocument(w, r, "markdown", func(b *bytes.Buffer, bl *block) {
		switch bl.kind {
		case bHeading:
			fmt.Fprintf(b, "%s %s\n", strings.Repeat("#", bl.level), escapeHTML(bl.text))
		case bPara:
			fmt.Fprintf(b, "%s\n", escapeHTML(bl.text))
		case bList:
			for _, it := range bl.items {
				fmt.Fprintf(b, "- %s\n", escapeHTML(inline(it)))
			}
		case bTable:
			cells := make([]string, len(bl.head))
			align := make([]string, len(bl.head))
			for i, h := range bl.head {
				cells[i] = cell(h)
				align[i] = "--:"
				if i < bl.left {
					align[i] = "---"
				}
			}
			fmt.Fprintf(b, "| %s |\n|%s|\n", strings.Join(cells, " | "), strings.Join(align, "|"))
			for _, row := range bl.rows {
				for i, c := range row {
					cells[i] = cell(c)
				}
				fmt.Fprintf(b, "| %s |\n", strings.Join(cells[:len(row)], " | "))
			}
		case bFigure:
			f := bl.fig
			if svg, ok := f.Files["svg"]; ok {
				fmt.Fprintf(b, "![%s](%s)\n\n", escapeHTML(inline(f.Title)), escapePath(svg))
			}
			var links []string
			for _, format := range figureFormats(f) {
				p := f.Files[format]
				links = append(links, fmt.Sprintf("[%s](%s)", escapeHTML(inline(path.Base(p))), escapePath(p)))
			}
			fmt.Fprintf(b, "%s: %s\n", escapeHTML(inline(f.Title)), strings.Join(links, ", "))
		}
	})
}

// figureFormats returns the formats of f's files: svg, png, then the others sorted.
func figureFormats(f *Figure) []string {
	var formats []string
	for k := range f.Files {
		formats = append(formats, k)
	}
	slices.SortFunc(formats, func(a, b string) int {
		ra, rb := formatRank(a), formatRank(b)
		if ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return formats
}

func formatRank(f string) int {
	switch f {
	case "svg":
		return 0
	case "png":
		return 1
	}
	return 2
}

func escapePath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// thousands formats n with a comma every three digits: 16912 → "16,912".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// seconds formats v with 2 decimals and thousands separators: 1234.5 → "1,234.50".
func seconds(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	whole, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return s
	}
	if n == 0 && strings.HasPrefix(whole, "-") {
		return s // -0.xx
	}
	return thousands(n) + "." + frac
}

// percent formats a ratio as a percentage with 1 decimal (0.987 → "98.7%"); "—" for nil.
func percent(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(100**v, 'f', 1, 64) + "%"
}

// ratio formats v with 2 decimals and a times sign (0.81 → "0.81×"); "—" for nil.
func ratio(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64) + "×"
}

// numCtx formats a context size in tokens; "—" for 0 (none pinned).
func numCtx(n int) string {
	if n == 0 {
		return "—"
	}
	return thousands(int64(n))
}

// timestamp formats t in UTC to the second; "—" for the zero time.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return inline(s)
}

// inline makes s safe on one line of Markdown: line ends become spaces.
func inline(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cell makes s safe in a Markdown table cell: one line, HTML escaped, | escaped.
func cell(s string) string {
	return strings.ReplaceAll(escapeHTML(inline(s)), "|", `\|`)
}

// htmlEscaper escapes what Markdown would pass through as HTML: a scenario named
// "<script>" must show as text; and a backslash, which Markdown would read as escaping the
// character after it (an excerpt's Go-quoted \" would show as a bare quote).
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `\`, `\\`)

// escapeHTML escapes &, <, > and \ in Markdown text.
func escapeHTML(s string) string { return htmlEscaper.Replace(s) }
