package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// textWidth is the column at which the text writer wraps paragraphs.
const textWidth = 100

// Text writes the report's content (the same as [Markdown]'s) as plain text for a terminal:
// headings underlined, paragraphs wrapped at 100 columns, tables aligned in columns
// (text/tabwriter), figures as their titles and file names. It returns an error for a report
// without analysis or runs and any error writing to w (one Write call).
func Text(w io.Writer, r *Report) error {
	return writeDocument(w, r, "text", func(b *bytes.Buffer, bl *block) {
		switch bl.kind {
		case bHeading:
			under := "="
			if bl.level > 1 {
				under = map[int]string{2: "-", 3: "~", 4: "."}[bl.level]
			}
			fmt.Fprintf(b, "%s\n%s\n", bl.text, strings.Repeat(under, len([]rune(bl.text))))
		case bPara:
			b.WriteString(wrap(bl.text, textWidth))
		case bList:
			for _, it := range bl.items {
				b.WriteString(wrap("- "+inline(it), textWidth))
			}
		case bTable:
			tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, strings.Join(bl.head, "\t"))
			for _, row := range bl.rows {
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
			_ = tw.Flush() // writes to a bytes.Buffer: no error
		case bFigure:
			var files []string
			for _, f := range figureFormats(bl.fig) {
				files = append(files, bl.fig.Files[f])
			}
			fmt.Fprintf(b, "Figure: %s (%s)\n", inline(bl.fig.Title), strings.Join(files, ", "))
		}
	})
}

// wrap breaks s into lines of at most width columns at spaces (a longer word stays whole); each
// line ends with a newline.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		l := len([]rune(word))
		if n > 0 && n+1+l > width {
			b.WriteString("\n")
			n = 0
		}
		if n > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += l
	}
	b.WriteString("\n")
	return b.String()
}
