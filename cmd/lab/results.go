package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/plot"

	"lab/metrics"
	"lab/plots"
	"lab/report"
)

// The files a report writes into its folder, beside its charts' folder (plots.Dir).
const (
	reportMarkdown = "report.md"
	reportHTML     = "report.html"
)

// writeReport reads a run's results and writes its charts under plots/ (SVG, and PNG
// too when png is true), report.md and
// report.html into the run folder; it returns the report written (nil when the run could not be
// read) and the files of the folder, relative to dir (for a run's closing message): its data
// files (every part's samples, manifest and requests, or the old layout's), then the report's.
func writeReport(dir string, png bool) (r *report.Report, files []string, err error) {
	var rows metrics.Rows
	man, err := metrics.AppendRunRows(&rows, dir)
	if err != nil {
		return nil, nil, err
	}
	files = runDataFiles(dir)
	r, written, err := writeReportOf(dir, []*metrics.Manifest{man}, &rows, png)
	return r, append(files, written...), err
}

// runDataFiles lists the run folder's own files, sorted: everything but the report's
// (report.md, report.html, plots/) and hidden temporary files.
func runDataFiles(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || n == reportMarkdown || n == reportHTML {
			continue
		}
		files = append(files, n)
	}
	return files
}

// checkShard validates --shard and --run-id together before anything runs, and returns the
// shard (zero without --shard): a shard needs --run-id, since every shard, on whatever machine,
// must name the same run and the default run id (the start time) differs between machines; and
// a new run's folder must not already hold its part ([metrics.CheckNewRun]). With --resume the
// run's own folder is carried on and only the shard's form is checked.
func checkShard(o *runOptions) (metrics.Shard, error) {
	var shard metrics.Shard
	if o.Shard != "" {
		s, err := metrics.ParseShard(o.Shard)
		if err != nil {
			return shard, badInput("--shard: %v", err)
		}
		shard = s
		if o.RunID == "" {
			return shard, badInput("--shard %s needs --run-id: every shard, on whatever machine, must name the same run, and the default run id (the start time) differs between machines", o.Shard)
		}
	}
	if o.Reliability.Resume != "" || o.RunID == "" {
		return shard, nil
	}
	if err := metrics.CheckRunID(o.RunID); err != nil {
		return shard, badInput("--run-id: %v", err)
	}
	if err := metrics.CheckNewRun(o.ResultsDir, o.RunID, shard); err != nil {
		return shard, badInput("--run-id %s: %v", o.RunID, err)
	}
	return shard, nil
}

// writeReportFiles analyses samples, renders the charts into out/plots/ (in
// plots.FileFormats(png): SVG, and PNG too when png is true) and writes report.md and
// report.html into out; it returns the files written, relative to out.
// Sessions that did not complete (report.Sessions) are left out of the analysis and the charts.
// Runs of several setups (report.GroupSetups) get the charts of each setup, named by
// plots.Names with the setup's label: a chart never draws two setups as one.
func writeReportFiles(out string, runs []*metrics.Manifest, rows *metrics.Rows, png bool) (files []string, err error) {
	_, files, err = writeReportOf(out, runs, rows, png)
	return files, err
}

// writeReportOf is [writeReportFiles] that also returns the report (its analysis, for the
// summary on the terminal, also when a chart or file could not be written).
func writeReportOf(out string, runs []*metrics.Manifest, rows *metrics.Rows, png bool) (r *report.Report, files []string, err error) {
	formats := plots.FileFormats(png)
	an, labels, completes := report.AnalyzeRunRows(runs, rows)
	r = &report.Report{Runs: runs, Analysis: an} // the summary, also when a chart fails
	var figs []report.Figure
	for i, g := range an.Groups() {
		f, fl, err := renderFigures(out, labels[i], scenarioOrder(runs, g), completes[i], g, formats)
		figs, files = append(figs, f...), append(files, fl...)
		if err != nil {
			return r, files, err
		}
	}
	f, fl, err := renderServerFigures(out, an, labels, completes, formats)
	figs, files = append(figs, f...), append(files, fl...)
	if err != nil {
		return r, files, err
	}
	f, fl, err = renderSetupFigures(out, an, formats)
	figs, files = append(figs, f...), append(files, fl...)
	if err != nil {
		return r, files, err
	}
	r.Figures = figs
	for _, f := range []struct {
		name  string
		write report.Writer
	}{{reportMarkdown, report.Markdown}, {reportHTML, report.HTML}} {
		if err := writeFile(filepath.Join(out, f.name), func(w *os.File) error { return f.write(w, r) }); err != nil {
			return r, files, err
		}
		files = append(files, f.name)
	}
	if err := removeStaleCharts(out, files); err != nil {
		return r, files, err
	}
	return r, files, nil
}

// removeStaleCharts removes from out's plots folder (plots.Dir) every chart file (a format of
// plots.FileFormats) that is not among files (relative to out, slash-separated), the files the
// report just wrote: the charts of an earlier report into the same folder that this one no
// longer draws (a scenario or setup no longer among the runs, a chart with nothing to draw)
// would otherwise lie beside the current ones as if they were. Other files are left alone. An
// error names the file.
func removeStaleCharts(out string, files []string) error {
	ents, err := os.ReadDir(filepath.Join(out, plots.Dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		rel := path.Join(plots.Dir, e.Name())
		ext := strings.TrimPrefix(path.Ext(e.Name()), ".")
		if !e.Type().IsRegular() || !slices.Contains(plots.FileFormats(true), ext) || slices.Contains(files, rel) {
			continue
		}
		if err := os.Remove(filepath.Join(out, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the stale chart file: %w", err)
		}
	}
	return nil
}

// scenarioOrder returns the scenarios to chart: in the order the runs' manifests name them,
// then any other scenario of the analysis.
func scenarioOrder(runs []*metrics.Manifest, an *report.Analysis) []string {
	var names []string
	for _, m := range runs {
		for _, s := range m.Scenarios {
			if !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
	}
	for _, sc := range an.Scenarios {
		if !slices.Contains(names, sc.Scenario) {
			names = append(names, sc.Scenario)
		}
	}
	return names
}

// writeFigure writes a chart, which render draws in a format, into out in each of formats
// (plots.FileFormats) at plots.File(name, format), and returns fig with its files (relative to out)
// and its SVG bytes, and the files written (also those written before an error). A file of the
// chart in a format not asked for this time (the PNG of an earlier report with --png) is
// removed: it would no longer match the chart. An error of render names the chart; an error
// removing a file names it.
func writeFigure(out, name string, fig report.Figure, formats []string, render func(w io.Writer, format string) error) (report.Figure, []string, error) {
	fig.Files = map[string]string{}
	var files []string
	for _, format := range plots.FileFormats(true) {
		if slices.Contains(formats, format) {
			continue
		}
		if err := os.Remove(filepath.Join(out, filepath.FromSlash(plots.File(name, format)))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fig, files, fmt.Errorf("remove the stale chart file: %w", err)
		}
	}
	for _, format := range formats {
		var buf bytes.Buffer
		if err := render(&buf, format); err != nil {
			return fig, files, fmt.Errorf("plot %s: %w", name, err)
		}
		rel := plots.File(name, format)
		if err := os.WriteFile(filepath.Join(out, filepath.FromSlash(rel)), buf.Bytes(), 0o644); err != nil {
			return fig, files, err
		}
		if format == "svg" {
			fig.SVG = buf.Bytes()
		}
		fig.Files[format] = rel
		files = append(files, rel)
	}
	return fig, files, nil
}

// renderFigures draws the standard charts of each scenario (plots.ScenarioCharts) and the
// cross-scenario chart of re-read tokens relative to spec into out, in each of formats
// (plots.FileFormats) at the paths plots.File gives the names of plots.Names, and returns them as report figures
// with their SVG bytes, and the files written relative to out. A chart with nothing to draw
// (plots.ErrNoSamples) is skipped.
//
// setup is the figures' report.Figure.Setup and starts every chart's file name ("" for runs of
// one setup).
func renderFigures(out, setup string, scenarios []string, rows *metrics.Rows, an *report.Analysis, formats []string) (figs []report.Figure, files []string, err error) {
	if err := os.MkdirAll(filepath.Join(out, plots.Dir), 0o755); err != nil {
		return nil, nil, err
	}
	byScenario := rowsByScenario(rows)
	// save writes one chart (its file base name, title and a function rendering it as a
	// format) in every format and records it as a figure.
	save := func(scenario, name, title string, render func(w io.Writer, format string) error) error {
		if setup != "" {
			title = "setup " + setup + ": " + title
		}
		fig, written, err := writeFigure(out, name, report.Figure{Scenario: scenario, Setup: setup, Title: title}, formats, render)
		files = append(files, written...)
		if err != nil {
			return err
		}
		figs = append(figs, fig)
		return nil
	}
	// The per-scenario charts are built and drawn side by side (drawing them is most of a sim
	// run's report, PNGs most of all), then saved in order. Each chart is built in its own job, so that no more
	// charts' points are held at once than are being drawn.
	type job struct {
		scenario, name, title string
		chart                 plots.Chart
		rows                  *metrics.Rows
		skip                  bool // nothing to draw (plots.ErrNoSamples)
		out                   map[string][]byte
	}
	var jobs []*job
	for _, sc := range scenarios {
		ss := byScenario[sc]
		if ss.Len() == 0 {
			continue
		}
		// The standard per-scenario charts; new ones added to plots.ScenarioCharts appear here.
		for _, c := range plots.ScenarioCharts() {
			jobs = append(jobs, &job{scenario: sc, name: sc + "-" + c.Name, chart: c, rows: ss, out: map[string][]byte{}})
		}
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		g.Go(func() error {
			build := j.chart.Rows
			if build == nil { // a chart that builds from samples only
				build = func(sc string, rows *metrics.Rows) (*plot.Plot, error) { return j.chart.Build(sc, rows.Samples()) }
			}
			p, err := build(j.scenario, j.rows)
			if errors.Is(err, plots.ErrNoSamples) {
				j.skip = true
				return nil
			}
			if err != nil {
				errs[i] = fmt.Errorf("plot %s of %s: %w", j.chart.Name, j.scenario, err)
				return errs[i]
			}
			j.title = p.Title.Text
			w, h := plots.DefaultWidth, plots.DefaultHeight
			if j.chart.Size != nil {
				w, h = j.chart.Size(j.scenario, j.rows)
			}
			for _, format := range formats {
				var buf bytes.Buffer
				if err := plots.Write(&buf, p, format, w, h); err != nil {
					errs[i] = fmt.Errorf("plot %s: %w", j.name, err)
					return errs[i]
				}
				j.out[format] = buf.Bytes()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		// The first failed chart in order, whichever failed first in time.
		for _, e := range errs {
			if e != nil {
				return figs, files, e
			}
		}
		return figs, files, err
	}
	var names plots.Names // the charts' file names, in the order they are saved
	for _, j := range jobs {
		if j.skip {
			continue
		}
		if err := save(j.scenario, names.Base(setup, j.scenario, j.chart.Name), j.title, func(w io.Writer, format string) error {
			_, err := w.Write(j.out[format])
			return err
		}); err != nil {
			return figs, files, err
		}
		j.out = nil
	}
	// Across scenarios: re-read tokens relative to spec, with several scenarios as an arm ×
	// scenario heat map (one chart, each ratio printed), with one as bars with Fieller's 95 %
	// interval.
	if cells := heatCells(an); len(scenariosOf(cells)) > 1 {
		p, err := plots.RatioHeatMap("re-read tokens relative to spec, per arm and scenario (log colour scale)", cells)
		if err != nil {
			return figs, files, fmt.Errorf("plot re-read relative to spec: %w", err)
		}
		w, h := plots.RatioHeatMapSize(cells)
		if err := save("", names.Across(setup, "reread-vs-spec"), p.Title.Text, func(wr io.Writer, format string) error {
			return plots.Write(wr, p, format, w, h)
		}); err != nil {
			return figs, files, err
		}
		return figs, files, nil
	}
	bars := relativeBars(an)
	p, err := plots.RelativeBars("re-read tokens relative to spec (95 % CI)", bars)
	switch {
	case errors.Is(err, plots.ErrNoSamples):
	case err != nil:
		return figs, files, fmt.Errorf("plot re-read relative to spec: %w", err)
	default:
		if err := save("", names.Across(setup, "reread-vs-spec"), p.Title.Text, func(w io.Writer, format string) error {
			return plots.Write(w, p, format, plots.DefaultWidth, plots.RelativeBarsHeight(bars))
		}); err != nil {
			return figs, files, err
		}
	}
	return figs, files, nil
}

// renderSetupFigures draws, for a report of several setups (an.Setups), the chart that sets
// them side by side (setupCells: an arms × setups heat map of re-read tokens relative to each
// setup's own spec arm, plots.RatioHeatMap), saved as plots/setups-reread-vs-spec in each of
// formats and returned as a report figure marked SideBySide. Nothing for one setup, or when no
// setup has a spec arm with a re-read figure.
func renderSetupFigures(out string, an *report.Analysis, formats []string) (figs []report.Figure, files []string, err error) {
	cells, title := setupCells(an)
	if len(cells) == 0 {
		return nil, nil, nil
	}
	p, err := plots.RatioHeatMap(title, cells)
	if err != nil {
		return nil, nil, fmt.Errorf("plot setups side by side: %w", err)
	}
	w, h := plots.RatioHeatMapSize(cells)
	var names plots.Names
	fig, written, err := writeFigure(out, names.Across("", "setups-reread-vs-spec"), report.Figure{SideBySide: true, Title: p.Title.Text}, formats,
		func(wr io.Writer, format string) error { return plots.Write(wr, p, format, w, h) })
	if err != nil {
		return nil, written, err
	}
	return []report.Figure{fig}, written, nil
}

// maxSetupColumns is the most setup columns the setups heat map has before it turns: past it
// (and when the setups outnumber the arms) each setup is a row and each arm a column, so that a
// report of many setups and few arms (make families: 19 setups × 2 scenarios, 2 arms) reads
// down the page instead of across 38 columns.
const maxSetupColumns = 12

// setupCells returns the cells and title of the setups heat map of an (nil for fewer than two
// setups): each setup's re-read tokens relative to its own spec arm, per arm (heatCells), a
// column per setup, "A: midnight" per setup × scenario when the setups ran other or more
// scenarios than one, each setup named by its label and what tells it from the others
// (setupTag); turned, a row per setup, past maxSetupColumns columns.
func setupCells(an *report.Analysis) ([]plots.Cell, string) {
	if len(an.Setups) < 2 {
		return nil, ""
	}
	one := "" // the one scenario every setup ran, if so
	for i, g := range an.Setups {
		if len(g.Scenarios) != 1 || (i > 0 && g.Scenarios[0].Scenario != one) {
			one = ""
			break
		}
		one = g.Scenarios[0].Scenario
	}
	tags := setupTags(an.Setups)
	var cells []plots.Cell
	columns := map[string]bool{}
	arms := map[string]bool{}
	for i, g := range an.Setups {
		for _, c := range heatCells(g) {
			col := tags[i]
			if one == "" {
				col += ": " + c.Scenario
			}
			c.Scenario = col
			columns[col], arms[c.Arm] = true, true
			cells = append(cells, c)
		}
	}
	title := "re-read tokens relative to spec, per arm and setup (log colour scale)"
	if one != "" {
		title = one + ": " + title
	}
	if len(columns) > maxSetupColumns && len(columns) > len(arms) {
		for i := range cells {
			cells[i].Arm, cells[i].Scenario = cells[i].Scenario, cells[i].Arm
		}
		title = strings.Replace(title, "per arm and setup", "per setup (a row each) and arm", 1)
	}
	return cells, title
}

// setupTags names each setup for a chart: "setup A", followed by what tells the setups apart
// where they differ in it: the backend, then the renderer where one is set, else the model (a
// file's ".gguf", a "-<12 hex digits>" content suffix and the lab's "lab-" and "-synth" taken
// off its name, so that one synthetic model file served by two servers is one name): "setup A
// ollama", "setup E ollama deepseek3.1", "setup P llamacpp qwen3".
func setupTags(groups []*report.Analysis) []string {
	model := func(s *report.SetupInfo) string {
		if r := s.Setup.Settings["renderer"]; r != "" {
			return r
		}
		m := strings.TrimSuffix(s.Setup.Model, ".gguf")
		if i := strings.LastIndexByte(m, '-'); i >= 0 && len(m)-i-1 == 12 && strings.Trim(m[i+1:], "0123456789abcdef") == "" {
			m = m[:i]
		}
		return strings.TrimSuffix(strings.TrimPrefix(m, "lab-"), "-synth")
	}
	fields := []func(*report.SetupInfo) string{
		func(s *report.SetupInfo) string { return s.Setup.Backend },
		model,
	}
	tags := make([]string, len(groups))
	for i, g := range groups {
		tags[i] = "setup " + g.Setup.Label
	}
	for _, f := range fields {
		seen := map[string]bool{}
		for _, g := range groups {
			seen[f(g.Setup)] = true
		}
		if len(seen) < 2 {
			continue // the same in every setup: it tells none apart
		}
		for i, g := range groups {
			if v := f(g.Setup); v != "" {
				tags[i] += " " + v
			}
		}
	}
	return tags
}

// heatCells returns one heat-map cell per scenario×arm of the re-read tokens relative to the
// spec arm in that scenario: spec itself at 1 once it has a re-read figure, the other arms where
// their ratio exists (an arm without one is left blank, never drawn as 1).
func heatCells(an *report.Analysis) []plots.Cell {
	var cells []plots.Cell
	for _, sc := range an.Scenarios {
		spec := sc.Arm(metrics.SpecArm)
		if spec == nil || spec.RereadTokens.N == 0 {
			continue
		}
		for _, st := range sc.Arms {
			switch {
			case st.Arm == metrics.SpecArm:
				cells = append(cells, plots.Cell{Arm: st.Arm, Scenario: sc.Scenario, Ratio: 1})
			case st.VsSpec != nil && !math.IsNaN(st.VsSpec.RereadRatio.Value) && !math.IsInf(st.VsSpec.RereadRatio.Value, 0):
				cells = append(cells, plots.Cell{Arm: st.Arm, Scenario: sc.Scenario, Ratio: st.VsSpec.RereadRatio.Value})
			}
		}
	}
	return cells
}

// scenariosOf returns the distinct scenarios of cells.
func scenariosOf(cells []plots.Cell) []string {
	var out []string
	for _, c := range cells {
		if !slices.Contains(out, c.Scenario) {
			out = append(out, c.Scenario)
		}
	}
	return out
}

// relativeBars returns one bar per scenario×arm of the re-read tokens relative to the spec arm,
// grouped by scenario; arms whose ratio does not exist are left out.
func relativeBars(an *report.Analysis) []plots.Bar {
	var bars []plots.Bar
	for _, sc := range an.Scenarios {
		if sc.Arm(metrics.SpecArm) == nil {
			continue
		}
		for _, st := range sc.Arms {
			b := plots.Bar{Label: st.Arm, Group: sc.Scenario, Value: 1}
			if v := st.VsSpec; v != nil {
				r := v.RereadRatio
				if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
					continue
				}
				b.Value = r.Value
				if r.CI != nil {
					b.Lo, b.Hi = new(r.CI.Lo), new(r.CI.Hi)
				}
			}
			bars = append(bars, b)
		}
	}
	return bars
}

// writeFile creates path, lets write fill it and closes it, keeping the close error.
func writeFile(path string, write func(*os.File) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// rowsByScenario returns the rows of each scenario, in the order of rows. Where a scenario's rows
// lie next to each other (a run measures one scenario after the other) they are a part of rows
// itself, shared, not copied; only a scenario whose rows are spread among others' gets a
// compact copy.
func rowsByScenario(rows *metrics.Rows) map[string]*metrics.Rows {
	type span struct{ from, to, n int }
	spans := map[string]*span{}
	for i := range rows.Len() {
		sc := rows.Scenario(i)
		sp := spans[sc]
		if sp == nil {
			sp = &span{from: i}
			spans[sc] = sp
		}
		sp.to, sp.n = i+1, sp.n+1
	}
	out := make(map[string]*metrics.Rows, len(spans))
	for sc, sp := range spans {
		if sp.to-sp.from == sp.n {
			out[sc] = rows.Slice(sp.from, sp.to)
			continue
		}
		out[sc] = rows.Slice(sp.from, sp.to).Select(func(i int) bool { return rows.Scenario(sp.from+i) == sc })
	}
	return out
}
