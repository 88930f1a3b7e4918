package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"lab/metrics"
	"lab/plots"
	"lab/report"
)

// expandRuns expands the RUN arguments (folders or glob patterns, which the program expands
// itself, so a quoted pattern works) into run folders of either layout (metrics.IsRunDir), in the
// order given, without duplicates. A folder named outright without a manifest is bad input naming
// it (pointing at results/run_id=<id> when the user named results/<id> of a run in the part
// layout); a path a pattern matches that is not a run folder (a file, a folder without a
// manifest) is skipped with a warning on warn. A pattern that matches no run folder is bad input.
func expandRuns(args []string, warn io.Writer) ([]string, error) {
	var dirs []string
	seen := map[string]bool{} // each run folder once, however it is spelled (dir, dir/, ./dir)
	add := func(d string) {
		key := filepath.Clean(d)
		if abs, err := filepath.Abs(d); err == nil {
			key = abs
		}
		if !seen[key] {
			seen[key] = true
			dirs = append(dirs, d)
		}
	}
	isRun := metrics.IsRunDir
	for _, arg := range args {
		if !strings.ContainsAny(arg, "*?[") {
			if !isRun(arg) {
				clean := filepath.Clean(arg)
				if alt := metrics.RunDir(filepath.Dir(clean), filepath.Base(clean)); !strings.HasPrefix(filepath.Base(clean), metrics.RunDirPrefix) && isRun(alt) {
					return nil, badInput("%s is not a run folder; the run %s is in %s", arg, filepath.Base(clean), alt)
				}
				if _, err := metrics.DetectLayout(arg); err != nil {
					return nil, badInput("%v", err)
				}
				if runs, _ := filepath.Glob(filepath.Join(clean, metrics.RunDirPrefix+"*")); len(runs) > 0 {
					return nil, badInput("%s is not a run folder but holds %d: name one, or all of them with %s", arg, len(runs), strconv.Quote(filepath.Join(clean, metrics.RunDirPrefix+"*")))
				}
				return nil, badInput("%s is not a run folder (no %s, no %s)", arg, metrics.PartManifestFile(metrics.Shard{}), metrics.ManifestFile)
			}
			add(arg)
			continue
		}
		m, err := filepath.Glob(arg)
		if err != nil {
			return nil, badInput("run pattern %q: %v", arg, err)
		}
		if len(m) == 0 {
			return nil, badInput("run pattern %q matches nothing", arg)
		}
		found := 0
		for _, d := range m {
			if !isRun(d) {
				fmt.Fprintf(warn, "lab: warning: %s (matched by %q) is not a run folder (no manifest): skipped\n", d, arg)
				continue
			}
			found++
			add(d)
		}
		if found == 0 {
			return nil, badInput("run pattern %q matches no run folder (none of its %d matches has a manifest)", arg, len(m))
		}
	}
	return dirs, nil
}

// loadRuns reads the runs in dirs and merges their samples into one compact table (metrics.Rows:
// the columns a report reads, converted as each row group is read). A run whose samples cannot be read
// is bad input naming its folder. A run a kill left without its part files is read from its
// journals, with a warning on warn pointing at lab repair; journal lines that hold no sample are
// named on warn, every other row is kept, and lost is then a [lostRowsError] (exit 1) that the
// caller returns once it has reported what was kept.
func loadRuns(dirs []string, warn io.Writer) (mans []*metrics.Manifest, all *metrics.Rows, lost, err error) {
	all = &metrics.Rows{}
	ids := map[string]string{}
	lostLines, kept := 0, 0
	var lostDirs []string
	for _, d := range dirs {
		start := all.Len()
		m, err := metrics.AppendRunRows(all, d)
		var je *metrics.JournalError
		switch {
		case errors.As(err, &je):
			warnLost(warn, je.Bad)
			lostLines += len(je.Bad)
			kept += je.Kept
			lostDirs = append(lostDirs, d)
		case err != nil:
			return nil, nil, nil, badInput("%v", err)
		}
		for _, j := range m.RowsRead.Journals {
			if slices.Contains(m.RowsRead.InUse, j) { // as it was read, without opening it again
				fmt.Fprintf(warn, "lab: warning: %s: a lab process is still writing this part; its rows so far are read from this journal\n", j)
				continue
			}
			hint := "lab repair " + d + " writes the part file"
			if l, _ := metrics.DetectLayout(d); l == metrics.LayoutSingle {
				hint = "the folder is of the old layout, read only: lab repair leaves it as it is"
			}
			fmt.Fprintf(warn, "lab: warning: %s: the run was stopped before it closed this part; its rows are read from this journal (%s)\n", j, hint)
		}
		// Repetitions of different runs are kept apart by run id: two folders with one id
		// would merge their repetitions.
		for i := start; i < all.Len(); i++ {
			if other, ok := ids[all.RunID(i)]; ok && other != d {
				return nil, nil, nil, badInput("%s and %s hold samples of the same run id %q", other, d, all.RunID(i))
			}
		}
		for i := start; i < all.Len(); i++ {
			ids[all.RunID(i)] = d
		}
		mans = append(mans, m)
	}
	if lostLines > 0 {
		lost = &lostRowsError{fmt.Sprintf("%d journal %s of %s held no sample (named above): their rows are lost, the %d rows of the other lines are kept; lab repair %s writes the part files from what is left",
			lostLines, plural(lostLines, "line", "lines"), strings.Join(lostDirs, ", "), kept, strings.Join(lostDirs, " "))}
	}
	return mans, all, lost, nil
}

func newReportCmd(s *streams) *cobra.Command {
	var format, out string
	var listFiles bool
	var png bool
	cmd := &cobra.Command{
		Use:   "report RUN...",
		Short: "Write report.md, report.html and plots for runs, or one format to stdout",
		Long: `report reads one or more run folders (results/run_id=<run-id>, or glob patterns such as
'results/run_id=*', quoted or not) and reports them:
per scenario and arm the totals of each repetition, their means with 95 % confidence intervals,
the ratio to the spec arm and the paired difference to it, cache efficiency, the requests whose
cached tokens differ from the expected ones, and the spec's own claims checked against the run
(the midnight cliff; the re-read tokens saved by sending reasoning back).

Without --format it writes report.md, report.html (self-contained, plots inline) and plots/
(each chart as SVG, and as PNG too with --png) into the run folder, or into --out DIR
(required for several runs), and prints what it found: per scenario and arm the cached share,
the re-read tokens, re-read vs spec and the request that lost most of the KV cache with the
segment where its prompt diverged (the spec arm and the arms that differ from it beyond its
interval, at most 40 lines with the rest in report.html), each claim's verdict, then where the
report is. With --format it writes that format to stdout instead: text, markdown, csv, json,
benchfmt (the Go benchmark format: benchstat old.txt new.txt compares two runs) or html. The samples of several runs of one setup
are pooled as repetitions, kept apart by run id; runs of different setups (backend, server
version, model file, num_ctx, cache start, cache model, driver, flash attention, …) are never
pooled: each setup gets its own section after a table setting their means side by side, and a
scenario named the same with other content is another scenario. Two setups that differ only in
the server (backend, version, its settings) and match in model file, driver, cache start,
scenarios and arms are also set side by side as servers: per server and arm requests, cached
share, re-read tokens, prefill seconds, efficiency and time to first token, every setting that
differs, a chart per arm with one line per server, and the requests whose re-read tokens differ
with where each server's cache diverged and why. A run split into shards (lab run --shard)
is read whole from its folder, every part-*.parquet of it; it is incomplete until every shard is
there (the report names the missing ones). Folders of the old layout (results/<run-id>/ with
samples.parquet and manifest.json) are read too.

A run killed before it closed a part is read from the part's journal, with a warning (lab
repair writes the part file). A journal line that holds no sample (cut short by the kill, or
corrupt) is named (file:line) and its row left out; the report covers every other row and lab
report then exits 1. report never writes the data files.`,
		Example: `  lab report results/run_id=20261129-231502
  lab report --out /tmp/all 'results/run_id=2026*'
  lab report --format text results/run_id=20261129-231502
  lab report --format benchfmt results/old > old.txt && lab report --format benchfmt results/new > new.txt && benchstat old.txt new.txt`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var write report.Writer
			if format != "" {
				w, err := report.Lookup(format)
				if err != nil {
					return &usageError{err}
				}
				write = w
				if png {
					return badInput("--format %s writes to stdout and --png asks for chart files: give one of them", format)
				}
				if out != "" {
					return badInput("--format %s writes to stdout and --out %s names a folder for report.md, report.html and plots/: give one of them", format, out)
				}
			}
			dirs, err := expandRuns(args, s.err)
			if err != nil {
				return err
			}
			if write == nil && out == "" && len(dirs) > 1 {
				return badInput("%d runs given: --out DIR says where to write their report", len(dirs))
			}
			mans, samples, lost, err := loadRuns(dirs, s.err)
			if err != nil {
				return err
			}
			if write != nil {
				// Charts are files: the formats on stdout carry none (html links none either).
				an, _, _ := report.AnalyzeRunRows(mans, samples)
				if err := write(s.out, &report.Report{Runs: mans, Analysis: an}); err != nil {
					return err
				}
				return lost
			}
			dest := out
			if dest == "" {
				dest = dirs[0]
			}
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
			r, files, err := writeReportOf(dest, mans, samples, png)
			where := whereLines("report", dest, files, listFiles)
			if r != nil {
				if werr := report.Terminal(s.out, r, report.TerminalOptions{MaxLines: summaryLines - min(len(where), 3), More: reportHTML}); werr != nil {
					err = errors.Join(err, werr)
				}
			}
			for _, l := range where {
				fmt.Fprintln(s.out, l)
			}
			if err != nil {
				return err
			}
			return lost
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "write one format to stdout: "+strings.Join(report.Formats(), ", ")+" (default: report.md, report.html and plots/ into the folder)")
	cmd.Flags().StringVar(&out, "out", "", "the folder to write report.md, report.html and plots/ into (default: the run folder; required for several runs)")
	cmd.Flags().BoolVar(&listFiles, "list-files", false, "after the summary, name every file written (plots included), not only report.html and report.md")
	cmd.Flags().BoolVar(&png, "png", false, "also write each chart as a PNG beside its SVG (report.md links it; report.html inlines the SVG)")
	return cmd
}

// parseThreshold parses a relative threshold: a percentage ("5%") or a share of at most 1
// ("0.05"), both 5 %. A bare number above 1 ("5") is an error asking whether a percentage was
// meant: it would tolerate a 500 % worsening.
func parseThreshold(v string) (float64, error) {
	pct := strings.HasSuffix(v, "%")
	num := strings.TrimSpace(strings.TrimSuffix(v, "%"))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("--threshold %q: want a share such as 5%% or 0.05", v)
	}
	if pct {
		return f / 100, nil
	}
	if f > 1 {
		return 0, fmt.Errorf("--threshold %q: a bare number is a share of 1 (%s would tolerate a %s %% worsening): did you mean %s%%?",
			v, num, strconv.FormatFloat(100*f, 'f', -1, 64), num)
	}
	return f, nil
}

// incompleteRunError is lab compare's verdict on a new run that is incomplete or empty: exit
// code 3, like a regression (it unwraps to a failedError).
type incompleteRunError struct{ msg string }

func (e *incompleteRunError) Error() string { return e.msg }
func (e *incompleteRunError) Unwrap() error {
	return &failedError{failed: 1, total: 1, what: "new runs incomplete"}
}

func newCompareCmd(s *streams) *cobra.Command {
	var format, threshold string
	var allowIncomplete, allowSetupChange bool
	cmd := &cobra.Command{
		Use:   "compare OLD NEW",
		Short: "Compare two runs and flag regressions",
		Long: `compare sets two run folders side by side, per scenario and arm: re-read tokens, cached share
of the prompt, prefill seconds and cache efficiency, each the mean over the run's repetitions
with its 95 % confidence interval. It flags a regression where NEW is worse than OLD by more
than --threshold and, when both runs have 2 or more repetitions, beyond Welch's 95 % interval
of the difference. A scenario×arm OLD has and NEW lacks is a regression too. Sessions that did
not complete (a failed request; the session an interruption cut) are left out of both runs'
figures. A NEW run that is empty, or incomplete (manifest complete: false) without
--allow-incomplete, fails. OLD and NEW must be runs of one setup (backend, server version,
model and its file's digest, num_ctx, cache start and the settings that change figures, such
as the cache model, the driver or flash attention) and their common scenarios of the same
content: otherwise compare names each difference and exits 2, unless --allow-setup-change says
the difference is the point (then its output names each difference first). Exit code 3 when it
flags a regression or NEW fails, 2 for bad input, 1 when a run's journal lost rows (as for
lab report), 0 otherwise.`,
		Example: `  lab compare results/run_id=before results/run_id=after
  lab compare --threshold 1% --format markdown results/run_id=before results/run_id=after`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if !slices.Contains(report.CompareFormats(), format) {
				return badInput("--format %q: want one of %s", format, strings.Join(report.CompareFormats(), ", "))
			}
			th, err := parseThreshold(threshold)
			if err != nil {
				return &usageError{err}
			}
			var an [2]*report.Analysis
			var runs [2]*metrics.Manifest
			var counts [2]int
			var newRun *metrics.Manifest
			var newSamples int
			var lostErr error // rows lost from a run's journal: exit 1 unless something worse
			for i, arg := range args {
				dirs, err := expandRuns([]string{arg}, s.err)
				if err != nil {
					return err
				}
				if len(dirs) != 1 {
					return badInput("%s: matches %d runs; want one", arg, len(dirs))
				}
				mans, samples, lost, err := loadRuns(dirs, s.err)
				if err != nil {
					return err
				}
				if lost != nil {
					lostErr = lost
				}
				an[i], _, _ = report.AnalyzeRunRows(mans, samples)
				for _, l := range an[i].LeftOut {
					fmt.Fprintf(s.err, "lab: %s: left out %s\n", dirs[0], l.String())
				}
				runs[i], counts[i] = mans[0], samples.Len()
				newRun, newSamples = mans[0], samples.Len()
			}
			// A run without samples compares no figure: its own verdict below says more than
			// a setup it may not even have recorded.
			diffs, unverified := metrics.SetupDiff(runs[0], runs[1])
			if len(diffs) > 0 && !allowSetupChange && counts[0] > 0 && counts[1] > 0 {
				return badInput("%s and %s are runs of different setups, not comparable as old and new: %s; "+
					"--allow-setup-change compares them when the difference is the point", args[0], args[1], strings.Join(diffs, "; "))
			}
			cmp := report.Compare(an[0], an[1], th)
			cmp.SetupChanges, cmp.Unverified, cmp.Notes = diffs, unverified, hostTagNotes(runs[0], runs[1])
			if err := cmp.Write(s.out, format); err != nil {
				return err
			}
			switch {
			case newSamples == 0:
				return &incompleteRunError{fmt.Sprintf("the new run %s has no samples: nothing to compare", args[1])}
			case !newRun.Complete && !allowIncomplete:
				why := ""
				if newRun.Error != "" {
					why = " (" + newRun.Error + ")"
				}
				return &incompleteRunError{fmt.Sprintf("the new run %s is incomplete (manifest complete: false%s): "+
					"it may lack sessions the old run has; --allow-incomplete compares what it measured", args[1], why)}
			}
			if cmp.Regressions > 0 {
				return &failedError{failed: cmp.Regressions, total: len(cmp.Changes) + len(cmp.OnlyOld), what: "compared figures regressed"}
			}
			return lostErr
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: "+strings.Join(report.CompareFormats(), ", "))
	cmd.Flags().StringVar(&threshold, "threshold", "5%", "relative worsening tolerated before a change is a regression (5% or 0.05; a bare number above 1 is refused)")
	cmd.Flags().BoolVar(&allowSetupChange, "allow-setup-change", false, "compare runs of different setups or scenario contents (backend, server version, model file, num_ctx, cache model, driver, …) instead of refusing them (exit 2): the difference is the point; the output names each difference")
	cmd.Flags().BoolVar(&allowIncomplete, "allow-incomplete", false, "compare a new run whose manifest says complete: false instead of failing (exit 3)")
	return cmd
}

// hostTagNotes names what differs between two runs' hosts and tags, not part of the setup but
// worth knowing beside a change of prefill times: "CPU A vs B", "logical cores 2 vs 8", "tag
// machine ci-1 vs ci-2".
func hostTagNotes(a, b *metrics.Manifest) []string {
	var notes []string
	ha, hb := a.Host, b.Host
	switch {
	case ha == nil && hb == nil:
	case ha == nil || hb == nil:
		notes = append(notes, "one run did not record its host")
	default:
		if ha.CPUModel != hb.CPUModel {
			notes = append(notes, fmt.Sprintf("CPU %s vs %s", orUnknown(ha.CPUModel), orUnknown(hb.CPUModel)))
		}
		core := func(p *int) string {
			if p == nil {
				return "unknown"
			}
			return strconv.Itoa(*p)
		}
		if ca, cb := core(ha.LogicalCores), core(hb.LogicalCores); ca != cb {
			notes = append(notes, fmt.Sprintf("logical cores %s vs %s", ca, cb))
		}
	}
	keys := map[string]bool{}
	for k := range a.Tags {
		keys[k] = true
	}
	for k := range b.Tags {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, oka := a.Tags[k]
		vb, okb := b.Tags[k]
		if va != vb || oka != okb {
			notes = append(notes, fmt.Sprintf("tag %s %s vs %s", k, tagValue(va, oka), tagValue(vb, okb)))
		}
	}
	return notes
}

func tagValue(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return strconv.Quote(v)
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

// renderServerFigures draws, for each server comparison of an that is not refused
// (report.ServerComparison), one chart per scenario×arm of the re-read tokens per request with
// one line per server (plots.ServerReread), into out in each of formats (plots.FileFormats), and returns them
// as report figures (Setup: the comparison's Label) with the files written relative to out.
// labels and completes are AnalyzeRunRows's: the label and complete rows of each setup.
func renderServerFigures(out string, an *report.Analysis, labels []string, completes []*metrics.Rows, formats []string) (figs []report.Figure, files []string, err error) {
	rowsOf := map[string]*metrics.Rows{}
	for i, l := range labels {
		rowsOf[l] = completes[i]
	}
	var names plots.Names
	for _, c := range an.Servers {
		if len(c.Refused) > 0 {
			continue
		}
		lines := []plots.ServerLine{{Name: c.Base + ": " + c.BaseServer, Rows: rowsOf[c.Base]}, {Name: c.Other + ": " + c.OtherServer, Rows: rowsOf[c.Other]}}
		for _, arm := range c.Arms {
			p, err := plots.ServerReread(arm.Scenario, arm.Arm, lines)
			if errors.Is(err, plots.ErrNoSamples) {
				continue
			}
			if err != nil {
				return figs, files, err
			}
			base := names.Base("", "servers-"+c.Base+"-"+c.Other+"-"+arm.Scenario, "reread-"+arm.Arm)
			fig, written, err := writeFigure(out, base, report.Figure{Scenario: arm.Scenario, Setup: c.Label(), Title: p.Title.Text}, formats,
				func(w io.Writer, format string) error {
					return plots.Write(w, p, format, plots.DefaultWidth, plots.DefaultHeight)
				})
			files = append(files, written...)
			if err != nil {
				return figs, files, err
			}
			figs = append(figs, fig)
		}
	}
	return figs, files, nil
}
