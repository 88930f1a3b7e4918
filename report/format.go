package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"lab/metrics"
)

// Report is what a [Writer] writes: the analysis of one or more runs, their manifests and the
// figures the caller rendered.
type Report struct {
	// Runs are the manifests of the runs analysed, in the order given; at least one.
	Runs []*metrics.Manifest
	// Analysis is [Analyze] of the runs' samples.
	Analysis *Analysis
	// Figures are the charts to show or link, in order; may be empty.
	Figures []Figure
}

// Figure is one chart the caller rendered (package report draws nothing).
type Figure struct {
	// Scenario is the scenario the chart shows; "" for a chart across scenarios.
	Scenario string
	// Setup is the label of the setup whose runs the chart shows ([SetupInfo].Label) when the
	// report's runs are of several setups; "" otherwise.
	Setup string
	// SideBySide marks a chart that sets the report's setups side by side (Setup and Scenario
	// ""): it is shown in the report's "Setups" section.
	SideBySide bool
	// Title is the chart's title, shown as its caption and alternative text.
	Title string
	// Files maps a format ("svg", "png") to the chart's file, as a slash-separated path
	// relative to the folder the report is written to (for example
	// "plots/midnight-cached-share.svg"). Markdown links them.
	Files map[string]string
	// SVG is the chart as SVG, embedded inline by the HTML writer; nil to link Files instead.
	SVG []byte
}

// Writer writes a report in one format to w. It returns an error for a report without
// analysis or runs and any error writing to w.
type Writer func(w io.Writer, r *Report) error

// ErrUnknownFormat is returned by [Lookup] for a format it does not know.
var ErrUnknownFormat = errors.New("report: unknown format")

// Formats returns the names [Lookup] knows: text, markdown, csv, json, benchfmt, html.
func Formats() []string {
	return []string{"text", "markdown", "csv", "json", "benchfmt", "html"}
}

// Lookup returns the writer of the named format (see [Formats]); it wraps [ErrUnknownFormat]
// for another name.
func Lookup(name string) (Writer, error) {
	switch name {
	case "text":
		return Text, nil
	case "markdown":
		return Markdown, nil
	case "csv":
		return CSV, nil
	case "json":
		return JSON, nil
	case "benchfmt":
		return Benchfmt, nil
	case "html":
		return HTML, nil
	}
	return nil, fmt.Errorf("format %q: %w (want one of %s)", name, ErrUnknownFormat, strings.Join(Formats(), ", "))
}

func check(r *Report, what string) error {
	if r == nil || r.Analysis == nil || len(r.Runs) == 0 || slices.Contains(r.Runs, nil) {
		return fmt.Errorf("write %s report: no analysis or no run manifest", what)
	}
	return nil
}

// writeDocument writes r's document ([buildDocument]) to w in one Write call: each block as put
// writes it into b, a blank line between blocks. what names the format in the errors: those of
// [check] and of the Write.
func writeDocument(w io.Writer, r *Report, what string, put func(b *bytes.Buffer, bl *block)) error {
	if err := check(r, what); err != nil {
		return err
	}
	var b bytes.Buffer
	blocks := buildDocument(r).blocks
	for i := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		put(&b, &blocks[i])
	}
	return write(w, what, b.Bytes())
}

// write writes b to w in one call, wrapping the error.
func write(w io.Writer, what string, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write %s report: %w", what, err)
	}
	return nil
}
