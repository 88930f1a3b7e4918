package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
)

// HTML writes report.html: one self-contained page (inline CSS, no script, no external file)
// with the content of [Markdown], laid out for a laptop screen: a table of contents after the
// answer ("At a glance", the first section) and before the run's facts ("What was run"), each
// section (a heading of level 2 or 3 and what follows it up to the next heading of its level or
// above) a <details> element open by default, so a reader folds what they do not need without
// any script, and each wide table of every figure folded behind its narrow headline table.
// Headings carry ids ("sec-1", …) the contents link to. A figure with SVG bytes is embedded
// inline (its XML declaration and doctype dropped); one without is linked to its files. The SVG is trusted as
// is: it must come from the lab's own charts. It returns an error for a report without
// analysis or runs and any error writing to w (one Write call).
func HTML(w io.Writer, r *Report) error {
	if err := check(r, "html"); err != nil {
		return err
	}
	type fig struct {
		Title string
		SVG   template.HTML
		Links [][2]string // name, href
	}
	type blk struct {
		Kind   string
		Level  int
		ID     string // a section's heading: its anchor
		Close  int    // sections to close before this block
		Text   string
		Items  []string
		Head   []string
		Left   int
		Rows   [][]string
		Fold   string
		Matrix bool
		Fig    *fig
		glance bool // the heading of "At a glance"
	}
	type entry struct {
		ID, Text string
		Sub      []entry
	}
	d := buildDocument(r)
	var blocks []blk
	var toc []entry
	var open []int // the levels of the sections open at this point, outermost first
	title := ""
	for _, bl := range d.blocks {
		b := blk{Level: bl.level, Text: bl.text, Items: bl.items, Head: bl.head, Left: bl.left, Rows: bl.rows, Fold: bl.fold, Matrix: bl.matrix, glance: bl.glance}
		switch bl.kind {
		case bHeading:
			b.Kind = "h"
			if title == "" {
				title = bl.text
			}
			if bl.level == 2 || bl.level == 3 {
				for len(open) > 0 && open[len(open)-1] >= bl.level {
					open = open[:len(open)-1]
					b.Close++
				}
				open = append(open, bl.level)
				b.Kind = "section"
				b.ID = fmt.Sprintf("sec-%d", len(blocks)+1)
				e := entry{ID: b.ID, Text: bl.text}
				if bl.level == 3 && len(toc) > 0 {
					toc[len(toc)-1].Sub = append(toc[len(toc)-1].Sub, e)
				} else {
					toc = append(toc, e)
				}
			}
		case bPara:
			b.Kind = "p"
		case bList:
			b.Kind = "ul"
		case bTable:
			b.Kind = "table"
		case bFigure:
			b.Kind = "figure"
			f := &fig{Title: bl.fig.Title, SVG: template.HTML(inlineSVG(bl.fig.SVG))}
			for _, format := range figureFormats(bl.fig) {
				p := bl.fig.Files[format]
				f.Links = append(f.Links, [2]string{format, escapePath(p)})
			}
			b.Fig = f
		}
		blocks = append(blocks, b)
	}
	// The contents go before the first section but the answer ("At a glance"), which comes
	// first: the answer, then where everything else is.
	at := -1
	for i, b := range blocks {
		if b.Kind == "section" && !b.glance {
			at = i
			break
		}
	}
	if at < 0 {
		toc = nil
	}
	var buf bytes.Buffer
	if err := htmlPage.Execute(&buf, struct {
		Title  string
		Blocks []blk
		TOC    []entry
		At     int
		Open   int
	}{title, blocks, toc, at, len(open)}); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return write(w, "html", buf.Bytes())
}

// svgProlog matches what may precede the <svg> element of a file: XML declaration, doctype,
// comments and space.
var svgProlog = regexp.MustCompile(`^(\s*(<\?xml[^>]*\?>|<!DOCTYPE[^>]*>|<!--.*?-->))*\s*`)

// inlineSVG returns svg without what must not appear inside an HTML page; "" for none.
func inlineSVG(svg []byte) string {
	return strings.TrimSpace(svgProlog.ReplaceAllString(string(svg), ""))
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":   func(i, left int) bool { return i >= left },
	"times": func(n int) []struct{} { return make([]struct{}, n) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1rem auto; max-width: 80rem; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1, h2, h3 { line-height: 1.2; }
h1 { font-size: 1.7rem; margin: .4rem 0 .6rem; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; display: block; overflow-x: auto; max-width: 100%; }
table.matrix th.n { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; vertical-align: bottom; text-align: left; padding: .4rem .15rem; }
table.matrix { font-size: .85rem; line-height: 1.25; }
table.matrix td { padding: .12rem .35rem; }
details.section > summary { cursor: pointer; list-style-position: outside; }
details.section > summary > h2, details.section > summary > h3 { display: inline-block; margin: 1.4rem 0 .4rem; }
details.section > summary > h2 { border-bottom: none; }
details.section { border-top: 1px solid #ddd; }
details.section details.section { border-top: 1px solid #eee; margin-left: .6rem; }
details.fold > summary { cursor: pointer; color: #2a4d8f; font-size: .9rem; margin: .4rem 0; }
nav.toc { font-size: .92rem; columns: 2 18rem; background: #fafafa; border: 1px solid #e4e4e4; padding: .4rem 1rem; }
nav.toc ul { margin: .2rem 0; padding-left: 1.1rem; }
nav.toc > ul { padding-left: .4rem; list-style: none; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { background: #f4f4f4; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.2rem 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .9rem; color: #444; }
</style>
</head>
<body>
{{- $toc := .TOC}}{{$at := .At}}
{{- range $i, $b := .Blocks}}
{{- with $b}}
{{- range times .Close}}
</div></details>
{{- end}}
{{- if and $toc (eq $i $at)}}
<nav class="toc"><strong>Contents</strong>
<ul>
{{- range $toc}}
<li><a href="#{{.ID}}">{{.Text}}</a>{{if .Sub}}
<ul>{{range .Sub}}<li><a href="#{{.ID}}">{{.Text}}</a></li>{{end}}</ul>{{end}}</li>
{{- end}}
</ul>
</nav>
{{- end}}
{{- if eq .Kind "section"}}
<details class="section" open><summary>{{if eq .Level 2}}<h2 id="{{.ID}}">{{.Text}}</h2>{{else}}<h3 id="{{.ID}}">{{.Text}}</h3>{{end}}</summary><div>
{{- else if eq .Kind "h"}}
{{- if eq .Level 1}}
<h1>{{.Text}}</h1>
{{- else if eq .Level 2}}
<h2>{{.Text}}</h2>
{{- else if eq .Level 4}}
<h4>{{.Text}}</h4>
{{- else}}
<h3>{{.Text}}</h3>
{{- end}}
{{- else if eq .Kind "p"}}
<p>{{.Text}}</p>
{{- else if eq .Kind "ul"}}
<ul>
{{- range .Items}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- else if eq .Kind "table"}}
{{- $left := .Left}}
{{- if .Fold}}
<details class="fold"><summary>{{.Fold}}</summary>
{{- end}}
<table{{if .Matrix}} class="matrix"{{end}}>
<thead><tr>{{range $i, $h := .Head}}<th{{if num $i $left}} class="n"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range $i, $c := .}}<td{{if num $i $left}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- if .Fold}}
</details>
{{- end}}
{{- else if eq .Kind "figure"}}
<figure>
{{- if .Fig.SVG}}
{{.Fig.SVG}}
{{- end}}
<figcaption>{{.Fig.Title}}{{range .Fig.Links}} · <a href="{{index . 1}}">{{index . 0}}</a>{{end}}</figcaption>
</figure>
{{- end}}
{{- end}}
{{- end}}
{{- range times .Open}}
</div></details>
{{- end}}
</body>
</html>
`))
