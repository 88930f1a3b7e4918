package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/metrics"
	"lab/metrics/metricstest"
	"lab/report"
)

// writeRun writes a small run folder: scenario midnight, arms spec and date-in-system-prompt,
// two repetitions of four requests; the date arm's cache is lost at request 3. extra is added to
// the date arm's re-read tokens at every request.
func writeRun(t *testing.T, dir, id string, extra int64) string {
	t.Helper()
	run := filepath.Join(dir, id)
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	var rows []metrics.Sample
	for rep := int32(1); rep <= 2; rep++ {
		for _, arm := range []string{metrics.SpecArm, "date-in-system-prompt"} {
			for i := int32(0); i < 4; i++ {
				prompt := int64(1000 + 100*i)
				cached := int64(0)
				if i > 0 {
					cached = prompt - 100 - int64(rep)
				}
				reread := prompt - cached
				seg := ""
				if arm != metrics.SpecArm && i == 3 {
					cached, reread, seg = 0, prompt+extra, "system"
				}
				s := &metrics.Sample{
					RunID: id, Scenario: "midnight", Arm: arm, Repetition: rep, RequestIndex: i, Backend: "sim", Model: "m",
					PromptTokens: prompt, CachedTokens: new(cached), ExpectedCachedTokens: new(int64(cached)), RereadTokens: new(int64(reread)),
					DivergenceSegment: seg, PrefillNs: reread * 1e6,
				}
				rows = append(rows, *s)
			}
		}
	}
	n := len(rows)
	if err := metricstest.WriteOldSamples(run, metrics.FileMeta{}, rows); err != nil {
		t.Fatal(err)
	}
	m := &metrics.Manifest{RunID: id, Scenarios: []string{"midnight"}, Arms: []string{"spec", "date-in-system-prompt"},
		Repetitions: 2, Backend: "sim", Model: "m", Complete: true, Samples: n,
		StartedAt: time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 11, 29, 23, 1, 0, 0, time.UTC)}
	if err := metrics.WriteManifest(filepath.Join(run, metrics.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	return run
}

func TestReportWritesIntoTheRunFolder(t *testing.T) {
	run := writeRun(t, t.TempDir(), "a", 0)
	code, out, errOut := runLab(t, "report", run)
	if code != exitOK {
		t.Fatalf("lab report: exit %d, stderr %q", code, errOut)
	}
	for _, f := range []string{"report.md", "report.html", "plots/midnight-cached-share.svg"} {
		if fi, err := os.Stat(filepath.Join(run, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
		// The report's two files are named, the plots only with --list-files.
		if listed := strings.Contains(out, "\n  "+f); listed != !strings.HasPrefix(f, "plots/") {
			t.Errorf("stdout lists %s: %v:\n%s", f, listed, out)
		}
	}
	// The summary comes first: the claim's verdict, then where the report is.
	if i, j := strings.Index(out, "midnight cliff (§10"), strings.Index(out, "report: "+run+"\n"); i < 0 || j < i {
		t.Errorf("stdout: want the summary, then where the report is:\n%s", out)
	}
	if _, all, _ := runLab(t, "report", "--list-files", run); !strings.Contains(all, "\n  plots/midnight-cached-share.svg\n") {
		t.Errorf("lab report --list-files does not name the plots:\n%s", all)
	}
	// Without --png no chart is a PNG, and the report links none.
	if pngs, _ := filepath.Glob(filepath.Join(run, "plots", "*.png")); len(pngs) > 0 || strings.Contains(out, ".png") {
		t.Errorf("PNGs written without --png: %q\n%s", pngs, out)
	}
	md, _ := os.ReadFile(filepath.Join(run, "report.md"))
	if strings.Contains(string(md), ".png") || !strings.Contains(string(md), "(plots/midnight-cached-share.svg)") {
		t.Errorf("report.md without --png links a PNG, or not the SVG:\n%s", md)
	}
	html, _ := os.ReadFile(filepath.Join(run, "report.html"))
	if strings.Contains(string(html), ".png") {
		t.Errorf("report.html without --png links a PNG")
	}
	if !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "The midnight cliff") {
		t.Errorf("report.html lacks an inline chart or the cliff section")
	}
	// The date arm's cliff: request 3, a 1,300-token prompt re-read whole.
	if !strings.Contains(string(md), "| date-in-system-prompt | 3 | 1,300 ± 0 |") {
		t.Errorf("report.md lacks the date arm's cliff row:\n%s", md)
	}

	// With --png each chart is a PNG too, listed and linked beside its SVG.
	code, out, errOut = runLab(t, "report", "--png", "--list-files", run)
	if code != exitOK {
		t.Fatalf("lab report --png: exit %d, stderr %q", code, errOut)
	}
	const png = "plots/midnight-cached-share.png"
	if fi, err := os.Stat(filepath.Join(run, png)); err != nil || fi.Size() == 0 || !strings.Contains(out, "  "+png+"\n") {
		t.Errorf("%s: %v; stdout:\n%s", png, err, out)
	}
	md, _ = os.ReadFile(filepath.Join(run, "report.md"))
	if !strings.Contains(string(md), "("+png+")") {
		t.Errorf("report.md with --png does not link %s:\n%s", png, md)
	}
	if code, _, errOut := runLab(t, "report", "--png", "--format", "text", run); code != exitBadInput || !strings.Contains(errOut, "--png") {
		t.Errorf("--png --format text: exit %d, stderr %q; want a usage error naming --png", code, errOut)
	}
}

func TestReportFormatsToStdout(t *testing.T) {
	run := writeRun(t, t.TempDir(), "a", 0)
	code, out, errOut := runLab(t, "report", "--format", "benchfmt", run)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "backend: sim\nmodel: m\n") || strings.Count(out, "\nBenchmarkLab/scenario=midnight/arm=spec 4 ") != 2 {
		t.Errorf("benchfmt output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(run, "report.md")); !os.IsNotExist(err) {
		t.Errorf("--format wrote report.md into the run folder: %v", err)
	}
	code, out, _ = runLab(t, "report", "--format", "json", run)
	if code != exitOK || !strings.Contains(out, `"run_id": "a"`) {
		t.Errorf("json: exit %d, %.200s", code, out)
	}
}

func TestReportSeveralRuns(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, "a", 0)
	writeRun(t, dir, "b", 0)
	if code, _, errOut := runLab(t, "report", filepath.Join(dir, "*")); code != exitBadInput || !strings.Contains(errOut, "--out") {
		t.Errorf("two runs without --out: exit %d, stderr %q; want 2 naming --out", code, errOut)
	}
	out := filepath.Join(dir, "merged")
	code, _, errOut := runLab(t, "report", "--out", out, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// 2 runs × 2 repetitions, kept apart by run id: 4 repetitions per arm.
	if !strings.Contains(string(md), "# Runs a, b") || !strings.Contains(string(md), "| spec | 4 | 4 ± 0 |") {
		t.Errorf("merged report.md:\n%s", md)
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	run := writeRun(t, dir, "a", 0)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", filepath.Join(dir, "nope")}, filepath.Join(dir, "nope")},
		{[]string{"report", dir}, dir + " is not a run folder"},
		{[]string{"report", filepath.Join(dir, "x*")}, "matches nothing"},
		{[]string{"report", "--format", "yaml", run}, `"yaml"`},
		{[]string{"report"}, "requires at least 1 arg"},
		{[]string{"compare", run}, "accepts 2 arg"},
		{[]string{"compare", "--threshold", "lots", run, run}, `"lots"`},
		{[]string{"compare", "--format", "csv", run, run}, `"csv"`},
		{[]string{"compare", run, filepath.Join(dir, "nope")}, filepath.Join(dir, "nope")},
	} {
		code, _, errOut := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestCompareExitCodes(t *testing.T) {
	dir := t.TempDir()
	old := writeRun(t, dir, "old", 0)
	same := writeRun(t, dir, "same", 0)
	worse := writeRun(t, dir, "worse", 400) // the date arm re-reads 400 more per repetition (+16 %)
	code, out, errOut := runLab(t, "compare", old, same)
	if code != exitOK || strings.Contains(out, "REGRESSION") {
		t.Errorf("compare old same: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runLab(t, "compare", old, worse)
	if code != exitFailed || !strings.Contains(out, "date-in-system-prompt  reread_tokens") || !strings.Contains(out, "REGRESSION") {
		t.Errorf("compare old worse: exit %d; want 3\n%s%s", code, out, errOut)
	}
	// At a threshold above the change, nothing is flagged.
	if code, out, _ := runLab(t, "compare", "--threshold", "90%", "--format", "markdown", old, worse); code != exitOK || !strings.HasPrefix(out, "| scenario |") {
		t.Errorf("compare --threshold 90%%: exit %d\n%s", code, out)
	}
}

func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"5%", 0.05, true}, {"0.05", 0.05, true}, {"0", 0, true}, {"12.5%", 0.125, true}, {"-1%", 0, false}, {"x", 0, false}, {"NaN", 0, false},
		{"1", 1, true}, {"5", 0, false}, {"150%", 1.5, true}, {"Inf", 0, false}} {
		got, err := parseThreshold(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseThreshold(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// editManifest rewrites the manifest of the run folder run with edit.
func editManifest(t *testing.T, run string, edit func(*metrics.Manifest)) {
	t.Helper()
	path := filepath.Join(run, metrics.ManifestFile)
	m, err := metrics.ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	if err := metrics.WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
}

// An incomplete or empty new run fails the comparison (exit 3, naming it) unless
// --allow-incomplete; a scenario×arm the new run lacks is a regression.
func TestCompareIncompleteNewRun(t *testing.T) {
	dir := t.TempDir()
	old := writeRun(t, dir, "old", 0)
	cut := writeRun(t, dir, "cut", 0)
	editManifest(t, cut, func(m *metrics.Manifest) { m.Complete, m.Error = false, "interrupt" })
	code, out, errOut := runLab(t, "compare", old, cut)
	if code != exitFailed || !strings.Contains(errOut, "the new run "+cut+" is incomplete (manifest complete: false (interrupt))") {
		t.Errorf("compare old cut: exit %d, stderr %q; want 3 naming the incomplete run", code, errOut)
	}
	// The cut run's last session (date-in-system-prompt, repetition 2) is left out: one repetition remains.
	if !strings.Contains(errOut, "left out midnight/date-in-system-prompt repetition 2 of run cut: the run was interrupted") {
		t.Errorf("stderr does not name the left-out session: %q", errOut)
	}
	if code, out, errOut := runLab(t, "compare", "--allow-incomplete", old, cut); code != exitOK {
		t.Errorf("compare --allow-incomplete: exit %d\n%s%s", code, out, errOut)
	}
	_ = out

	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := metricstest.WriteOldSamples(empty, metrics.FileMeta{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteManifest(filepath.Join(empty, metrics.ManifestFile), &metrics.Manifest{RunID: "empty", Complete: true}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runLab(t, "compare", "--allow-incomplete", old, empty)
	if code != exitFailed || !strings.Contains(errOut, "has no samples") || !strings.Contains(out, "missing from the new run: REGRESSION): midnight/spec, midnight/date-in-system-prompt") {
		t.Errorf("compare old empty: exit %d\n%s%s", code, out, errOut)
	}
}

func TestCompareThresholdBareNumber(t *testing.T) {
	run := writeRun(t, t.TempDir(), "a", 0)
	code, _, errOut := runLab(t, "compare", "--threshold", "5", run, run)
	if code != exitBadInput || !strings.Contains(errOut, "did you mean 5%?") {
		t.Errorf("--threshold 5: exit %d, stderr %q; want 2 asking for 5%%", code, errOut)
	}
}

// A pattern that also matches files that are not runs skips them with a warning.
func TestRunPatternSkipsNonRuns(t *testing.T) {
	dir := t.TempDir()
	a := writeRun(t, dir, "a", 0)
	writeRun(t, dir, "b", 0)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runLab(t, "compare", a, filepath.Join(dir, "b*"))
	if code != exitOK {
		t.Errorf("compare a 'b*': exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runLab(t, "report", "--format", "json", filepath.Join(dir, "*"))
	if code != exitOK || !strings.Contains(errOut, filepath.Join(dir, "notes.txt")+` (matched by "`) || !strings.Contains(errOut, "is not a run folder") {
		t.Errorf("report '*' with a file: exit %d, stderr %q; want 0 and a warning naming notes.txt", code, errOut)
	}
	code, _, errOut = runLab(t, "compare", a, filepath.Join(dir, "n*"))
	if code != exitBadInput || !strings.Contains(errOut, "matches no run folder") {
		t.Errorf("compare a 'n*': exit %d, stderr %q; want 2", code, errOut)
	}
}

func TestReportFormatWithOut(t *testing.T) {
	run := writeRun(t, t.TempDir(), "a", 0)
	code, _, errOut := runLab(t, "report", "--format", "csv", "--out", t.TempDir(), run)
	if code != exitBadInput || !strings.Contains(errOut, "--out") {
		t.Errorf("--format csv --out: exit %d, stderr %q; want 2", code, errOut)
	}
}

// Scenario names with "/", spaces or HTML give safe plot file names.
func TestReportOddScenarioNames(t *testing.T) {
	run := writeRun(t, t.TempDir(), "a", 0)
	samples, err := metrics.ReadParquet(filepath.Join(run, metrics.SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(run, metrics.SamplesFile)); err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		samples[i].Scenario = "team/<b>mid night</b>"
	}
	if err := metricstest.WriteOldSamples(run, metrics.FileMeta{}, samples); err != nil {
		t.Fatal(err)
	}
	editManifest(t, run, func(m *metrics.Manifest) { m.Scenarios = []string{"team/<b>mid night</b>"} })
	code, out, errOut := runLab(t, "report", "--list-files", "--png", run)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "  plots/team_b_mid_night_b_-cached-share.svg\n") {
		t.Errorf("plot files:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(run, "plots", "team_b_mid_night_b_-cached-share.png")); err != nil {
		t.Error(err)
	}
	md, _ := os.ReadFile(filepath.Join(run, "report.md"))
	if !strings.Contains(string(md), "## team/&lt;b&gt;mid night&lt;/b&gt;\n") {
		t.Errorf("report.md heading not escaped")
	}
}

// lab report of two runs that differ only in the server sets them side by side, with one chart
// per arm of the re-read tokens per request, one line per server; two runs of different model
// files are not set side by side as servers, and get no such chart.
func TestReportTwoServers(t *testing.T) {
	dir := t.TempDir()
	a, b := writeRun(t, dir, "ol", 0), writeRun(t, dir, "ll", 50)
	server := func(backend, version, digest string) func(*metrics.Manifest) {
		return func(m *metrics.Manifest) {
			m.Backend, m.ServerVersion, m.ModelDigest = backend, version, digest
			m.Settings = map[string]string{"driver": "scripted"}
			if backend == "llamacpp" {
				m.Settings["cache_reuse"] = "256"
			}
		}
	}
	editManifest(t, a, server("ollama", "0.17.4", "sha256:aa"))
	editManifest(t, b, server("llamacpp", "b11669", "sha256:aa"))
	out := filepath.Join(dir, "both")
	code, stdout, errOut := runLab(t, "report", "--list-files", "--png", "--out", out, a, b)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(stdout, "\nservers A (ollama 0.17.4) and B (llamacpp b11669): 2 requests re-read a different number of tokens on each") {
		t.Errorf("the summary does not set the servers side by side:\n%s", stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Servers side by side: A (ollama 0.17.4) and B (llamacpp b11669)", "cache_reuse: A not set, B 256",
		// The date arm's request 3 re-reads 50 tokens more on B: 1,300 + 50 over its prompt of 1,300.
		"| midnight | date-in-system-prompt | 1 | 3 | 1,300 | token unknown (system) | 0 / 0 (as expected) | 1,350 |",
		"(plots/servers-A-B-midnight-reread-spec.svg)", "(plots/servers-A-B-midnight-reread-date-in-system-prompt.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"servers-A-B-midnight-reread-spec.svg", "servers-A-B-midnight-reread-spec.png", "setups-reread-vs-spec.svg", "setups-reread-vs-spec.png"} {
		if _, err := os.Stat(filepath.Join(out, "plots", f)); err != nil || !strings.Contains(stdout, f) {
			t.Errorf("chart %s: %v; listed: %v", f, err, strings.Contains(stdout, f))
		}
	}
	// The setups side by side: a column per setup, spec's row at 1.00× in each.
	svg, err := os.ReadFile(filepath.Join(out, "plots", "setups-reread-vs-spec.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">setup A ollama</text>", ">setup B llamacpp</text>", ">midnight: re-read tokens relative to spec, per arm and setup (log colour scale)</text>"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("setups chart lacks %q", want)
		}
	}
	if n := strings.Count(string(svg), ">1.00×</text>"); n != 3 {
		t.Errorf("setups chart prints 1.00× %d times, want 3: spec's cell in each setup and the legend's", n)
	}

	editManifest(t, b, server("llamacpp", "b11669", "sha256:bb"))
	out2 := filepath.Join(dir, "unlike")
	if code, _, errOut := runLab(t, "report", "--out", out2, a, b); code != exitOK {
		t.Fatalf("unlike runs: exit %d, stderr %q", code, errOut)
	}
	md, err = os.ReadFile(filepath.Join(out2, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "are not set side by side as servers: they differ in what is measured (model file: A sha256:aa, B sha256:bb)") ||
		strings.Contains(string(md), "servers-A-B-") ||
		!strings.Contains(string(md), "| scenario | arm | setup | repetitions | cached share | re-read tokens | re-read vs spec | prefill (s) |") ||
		!strings.Contains(string(md), "(plots/setups-reread-vs-spec.svg)") {
		t.Errorf("report.md of two model files:\n%s", md)
	}
}

// A report written again into the folder of an earlier one leaves no chart file of the earlier
// report that it did not write itself: without --png the earlier PNGs go, and the charts of a
// pair of servers no longer reported go; the SVGs it wrote and files that are no charts stay.
func TestReportAgainRemovesStaleCharts(t *testing.T) {
	dir := t.TempDir()
	a, b := writeRun(t, dir, "ol", 0), writeRun(t, dir, "ll", 50)
	editManifest(t, a, func(m *metrics.Manifest) { m.Backend, m.ServerVersion, m.ModelDigest = "ollama", "0.17.4", "sha256:aa" })
	editManifest(t, b, func(m *metrics.Manifest) {
		m.Backend, m.ServerVersion, m.ModelDigest = "llamacpp", "b11669", "sha256:aa"
	})
	out := filepath.Join(dir, "out")
	charts := func() []string {
		t.Helper()
		var names []string
		for _, ext := range []string{"svg", "png"} {
			m, err := filepath.Glob(filepath.Join(out, "plots", "*."+ext))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m {
				names = append(names, filepath.Base(p))
			}
		}
		return names
	}
	if code, _, errOut := runLab(t, "report", "--png", "--out", out, a, b); code != exitOK {
		t.Fatalf("first report: exit %d, stderr %q", code, errOut)
	}
	first := charts()
	if !slices.Contains(first, "servers-A-B-midnight-reread-spec.png") || !slices.Contains(first, "setup-A-midnight-cached-share.png") {
		t.Fatalf("the first report's charts %q lack the servers' or setup A's PNG", first)
	}
	keep := filepath.Join(out, "plots", "notes.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}

	// a alone, first with --png, then without: one setup, no servers; then no PNG either.
	for _, png := range []bool{true, false} {
		args := []string{"report", "--list-files", "--out", out, a}
		if png {
			args = slices.Insert(args, 1, "--png")
		}
		code, stdout, errOut := runLab(t, args...)
		if code != exitOK {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
		}
		var listed []string
		for l := range strings.SplitSeq(stdout, "\n") {
			if f, ok := strings.CutPrefix(l, "  plots/"); ok {
				listed = append(listed, f)
			}
		}
		got := charts()
		slices.Sort(got)
		slices.Sort(listed)
		if !slices.Equal(got, listed) || len(got) == 0 {
			t.Errorf("%q: charts in plots/ %q; want exactly the ones the report wrote, %q", args, got, listed)
		}
		for _, f := range got {
			if (!png && strings.HasSuffix(f, ".png")) || strings.HasPrefix(f, "servers-") || strings.HasPrefix(f, "setup-") {
				t.Errorf("%q: stale chart %s left from the report before", args, f)
			}
		}
		if want := "midnight-cached-share.png"; png && !slices.Contains(got, want) {
			t.Errorf("%q: charts %q lack %s", args, got, want)
		}
		if want := "midnight-cached-share.svg"; !slices.Contains(got, want) {
			t.Errorf("%q: charts %q lack %s", args, got, want)
		}
		md, _ := os.ReadFile(filepath.Join(out, "report.md"))
		if strings.Contains(string(md), ".png") != png {
			t.Errorf("%q: report.md links a PNG: %v; want %v", args, !png, png)
		}
	}
	if data, err := os.ReadFile(keep); err != nil || string(data) != "mine" {
		t.Errorf("a file that is no chart was touched: %q, %v", data, err)
	}
}

// writeFigure without PNG removes the chart's PNG an earlier report wrote, and only that chart's.
func TestWriteFigureRemovesItsOtherFormats(t *testing.T) {
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, "plots"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"c.png", "c.svg", "other.png"} {
		if err := os.WriteFile(filepath.Join(out, "plots", f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fig, files, err := writeFigure(out, "c", report.Figure{}, []string{"svg"}, func(w io.Writer, format string) error {
		_, err := io.WriteString(w, "<svg/>")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, []string{"plots/c.svg"}) || fig.Files["png"] != "" || string(fig.SVG) != "<svg/>" {
		t.Errorf("files %q, figure files %v, SVG %q", files, fig.Files, fig.SVG)
	}
	if _, err := os.Stat(filepath.Join(out, "plots", "c.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("c.png of the earlier report: %v; want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(out, "plots", "other.png")); err != nil {
		t.Errorf("another chart's PNG: %v; want it left alone", err)
	}
}
