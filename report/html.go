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
// with the content of [Markdown]. A figure with SVG bytes is embedded inline (its XML
// declaration and doctype dropped); one without is linked to its files. The SVG is trusted as
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
		Kind  string
		Level int
		Text  string
		Items []string
		Head  []string
		Left  int
		Rows  [][]string
		Fig   *fig
	}
	d := buildDocument(r)
	var blocks []blk
	title := ""
	for _, bl := range d.blocks {
		b := blk{Level: bl.level, Text: bl.text, Items: bl.items, Head: bl.head, Left: bl.left, Rows: bl.rows}
		switch bl.kind {
		case bHeading:
			b.Kind = "h"
			if title == "" {
				title = bl.text
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
	var buf bytes.Buffer
	if err := htmlPage.Execute(&buf, struct {
		Title  string
		Blocks []blk
	}{title, blocks}); err != nil {
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
	"num": func(i, left int) bool { return i >= left },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 80rem; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1, h2, h3 { line-height: 1.2; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; display: block; overflow-x: auto; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { background: #f4f4f4; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.2rem 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: .9rem; color: #444; }
</style>
</head>
<body>
{{- range .Blocks}}
{{- if eq .Kind "h"}}
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
<table>
<thead><tr>{{range $i, $h := .Head}}<th{{if num $i $left}} class="n"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range $i, $c := .}}<td{{if num $i $left}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- else if eq .Kind "figure"}}
<figure>
{{- if .Fig.SVG}}
{{.Fig.SVG}}
{{- end}}
<figcaption>{{.Fig.Title}}{{range .Fig.Links}} · <a href="{{index . 1}}">{{index . 0}}</a>{{end}}</figcaption>
</figure>
{{- end}}
{{- end}}
</body>
</html>
`))
