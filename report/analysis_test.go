package report_test

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"lab/internal/golden"
	"lab/metrics"
	"lab/report"
	"lab/stats"
)

// repsFixture is scenario midnight with arms spec, date-in-system-prompt and reasoning-never,
// three repetitions each (run r1 repetitions 1 and 2, run r2 repetition 1: the same repetition
// number in two runs stays two repetitions), three requests each. Per repetition j = 0, 1, 2:
//
//	spec:   prompts 1000, 1100, 1200; cached 0, 990, 1090−5j  → re-read 1220+5j
//	date:   prompts 1000, 1100, 1200; cached 0, 990, 10j      → re-read 2310−10j (cliff at 2)
//	never:  prompts 1000, 1100, 1300; cached 0, 990, 1090     → re-read 1320
func repsFixture() []metrics.Sample {
	reps := []stats.RepKey{{RunID: "r1", Repetition: 1}, {RunID: "r1", Repetition: 2}, {RunID: "r2", Repetition: 1}}
	var out []metrics.Sample
	add := func(arm string, rk stats.RepKey, prompts, cached []int64) {
		for i := range prompts {
			s := metrics.Sample{
				RunID: rk.RunID, Repetition: rk.Repetition, Scenario: "midnight", Arm: arm, RequestIndex: int32(i),
				PromptTokens: prompts[i], CachedTokens: new(cached[i]), ExpectedCachedTokens: new(int64(cached[i])),
				RereadTokens: new(int64(prompts[i] - cached[i])), PrefillNs: (prompts[i] - cached[i]) * 1e6,
			}
			if arm == report.CliffArm && i == 2 {
				s.RereadSystemTokens = s.RereadTokens
				s.DivergenceSegment = "system"
			} else {
				s.RereadMessageTokens = s.RereadTokens
			}
			out = append(out, s)
		}
	}
	for j, rk := range reps {
		d := int64(10 * j)
		add(metrics.SpecArm, rk, []int64{1000, 1100, 1200}, []int64{0, 990, 1090 - d/2})
		add(report.CliffArm, rk, []int64{1000, 1100, 1200}, []int64{0, 990, d})
		add(report.ReasoningNeverArm, rk, []int64{1000, 1100, 1300}, []int64{0, 990, 1090})
	}
	return out
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestAnalyze(t *testing.T) {
	t.Parallel()
	a := report.Analyze(repsFixture())
	if len(a.Scenarios) != 1 || len(a.Scenarios[0].Arms) != 3 {
		t.Fatalf("Analyze: %d scenarios; want 1 with 3 arms", len(a.Scenarios))
	}
	sc := a.Scenarios[0]
	if got := []string{sc.Arms[0].Arm, sc.Arms[1].Arm, sc.Arms[2].Arm}; got[0] != "spec" || got[1] != "date-in-system-prompt" || got[2] != "reasoning-never" {
		t.Errorf("arm order = %v", got)
	}
	spec, date := sc.Arm(metrics.SpecArm), sc.Arm(report.CliffArm)
	if len(spec.Reps) != 3 || spec.Reps[2].RepKey != (stats.RepKey{RunID: "r2", Repetition: 1}) {
		t.Fatalf("spec reps = %+v; want 3, r2/1 last", spec.Reps)
	}
	// Re-read 1220, 1225, 1230: mean 1225, sd 5, half width t(0.975, 2)·5/√3 = 12.420689.
	e := spec.RereadTokens
	if e.N != 3 || e.Mean != 1225 || !near(e.SD, 5, 1e-9) || e.CI == nil || !near(e.CI.Hi-1225, 12.420689, 1e-5) {
		t.Errorf("spec re-read = %+v %+v; want 1225 ± 12.420689", e, e.CI)
	}
	if e := spec.PrefillSeconds; !near(e.Mean, 1.225, 1e-12) {
		t.Errorf("spec prefill = %v s; want 1.225", e.Mean)
	}
	if spec.VsSpec != nil {
		t.Errorf("spec.VsSpec = %+v; want nil", spec.VsSpec)
	}
	// Paired differences 1090, 1075, 1060: mean 1075, sd 15, half width 37.262066.
	v := date.VsSpec
	if v == nil || v.Pairs != 3 || v.RereadDiff.Mean != 1075 || v.RereadDiff.CI == nil || !near(v.RereadDiff.CI.Hi-1075, 37.262066, 1e-5) {
		t.Fatalf("date vs spec = %+v %+v", v, v.RereadDiff.CI)
	}
	if !near(v.RereadRatio.Value, 2300.0/1225, 1e-12) || v.RereadRatio.CI == nil || !v.RereadRatio.CI.Contains(v.RereadRatio.Value) {
		t.Errorf("date re-read ratio = %+v; want %v inside its interval", v.RereadRatio, 2300.0/1225)
	}
	// Cached share of date's first repetition: 990 / 3300.
	if got := *date.Reps[0].CachedShare(); !near(got, 990.0/3300, 1e-12) {
		t.Errorf("date rep 1 cached share = %v; want %v", got, 990.0/3300)
	}
	if e := date.Efficiency; e.Mean != 1 {
		t.Errorf("date efficiency = %v; want 1 (cached = expected)", e.Mean)
	}
	// Re-read by segment: date re-read its system prompt at request 2 (1200, 1190, 1180).
	if e := date.Reread[0]; e.Mean != 1190 {
		t.Errorf("date system re-read = %v; want 1190", e.Mean)
	}
	if date.CostUSD != nil {
		t.Errorf("date cost = %+v; want nil (no request has a cost)", date.CostUSD)
	}

	// The cliff: date drops from 90 % to 0, 10/1200, 20/1200 at request 2; spec never drops.
	c := a.Claims.Cliff
	if c == nil || len(c.Arms) != 3 {
		t.Fatalf("cliff = %+v; want 3 arms", c)
	}
	for _, cl := range c.Arms {
		switch cl.Arm {
		case report.CliffArm:
			if len(cl.Requests) != 1 || cl.Requests[0] != 2 || !near(cl.From.Mean, 0.9, 1e-12) || !near(cl.To.Mean, 10.0/1200, 1e-12) ||
				cl.RereadTokens.Mean != 1190 || cl.PromptTokens.Mean != 1200 {
				t.Errorf("date cliff = %+v", cl)
			}
		case metrics.SpecArm:
			// At the date arm's cliff (request 2) spec's share rises from 90 % to 90.4 %.
			if len(cl.Requests) != 1 || cl.Requests[0] != 2 || !near(cl.From.Mean, 0.9, 1e-12) || cl.To.Mean < cl.From.Mean {
				t.Errorf("spec cliff = %+v; want its change at the date arm's request 2, no drop", cl)
			}
		}
	}
	if !c.AtDateCliff || c.Holds == nil || !*c.Holds {
		t.Errorf("cliff at date cliff %v, holds %v; want true, true (90 %% to 0.8 %%)", c.AtDateCliff, c.Holds)
	}
	// Reasoning sent back: 1 − 1225/1320.
	if r := a.Claims.Reasoning; len(r) != 1 || r[0].Saved == nil || !near(*r[0].Saved, 1-1225.0/1320, 1e-12) || r[0].Pairs != 3 ||
		r[0].SavedCI == nil || !(r[0].SavedCI.Lo <= *r[0].Saved && *r[0].Saved <= r[0].SavedCI.Hi) {
		t.Errorf("reasoning claim = %+v", r)
	}
}

func TestAnalyzeOneRepetitionHasNoInterval(t *testing.T) {
	t.Parallel()
	var one []metrics.Sample
	for _, s := range repsFixture() {
		if s.RunID == "r2" {
			one = append(one, s)
		}
	}
	a := report.Analyze(one)
	date := a.Scenarios[0].Arm(report.CliffArm)
	if date.RereadTokens.CI != nil || date.VsSpec.RereadDiff.CI != nil || date.VsSpec.RereadRatio.CI != nil {
		t.Errorf("one repetition: intervals %+v %+v %+v; want none", date.RereadTokens.CI, date.VsSpec.RereadDiff.CI, date.VsSpec.RereadRatio.CI)
	}
	if a.Claims.Reasoning[0].SavedCI != nil {
		t.Errorf("one repetition: saved CI %+v; want none", a.Claims.Reasoning[0].SavedCI)
	}
}

func testReport() *report.Report {
	m1 := testManifest()
	m1.RunID, m1.Repetitions, m1.Samples = "r1", 2, 18
	m2 := testManifest()
	m2.RunID, m2.Samples = "r2", 9
	return &report.Report{
		Runs:     []*metrics.Manifest{m1, m2},
		Analysis: report.Analyze(repsFixture()),
		Figures: []report.Figure{
			{Scenario: "midnight", Title: "midnight: cached share of the prompt", Files: map[string]string{"svg": "plots/midnight-cached-share.svg", "png": "plots/midnight-cached-share.png"},
				SVG: []byte(`<?xml version="1.0"?>` + "\n" + `<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd">` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><text>a&lt;b</text></svg>`)},
			{Title: "re-read tokens relative to spec", Files: map[string]string{"svg": "plots/reread vs spec.svg"}},
		},
	}
}

func TestFormats(t *testing.T) {
	t.Parallel()
	for _, name := range report.Formats() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, err := report.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := w(&buf, testReport()); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "TestFormats."+name+".golden", buf.Bytes())
		})
	}
	if _, err := report.Lookup("yaml"); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("Lookup(yaml) = %v; want an error naming it", err)
	}
}

func TestHTMLIsSelfContained(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := report.HTML(&buf, testReport()); err != nil {
		t.Fatal(err)
	}
	h := buf.String()
	for _, bad := range []string{"<?xml", "<!DOCTYPE svg", "<script", "<link", " src="} {
		if strings.Contains(h, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, want := range []string{"<svg xmlns=", "<text>a&lt;b</text>", "<style>", "The midnight cliff", `href="plots/reread%20vs%20spec.svg"`} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// The benchfmt output follows the Go benchmark data format (golang.org/design/14313): config
// lines "key: value" (key starting lower case, no space or upper case), unit metadata lines,
// and result lines "BenchmarkX iterations value unit ...", an even number of fields, at least 4.
func TestBenchfmtGrammar(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := report.Benchfmt(&buf, testReport()); err != nil {
		t.Fatal(err)
	}
	config := regexp.MustCompile(`^([^:\s]+):\s+(.*)$`)
	results := map[string]int{}
	var configs []string
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			if len(f) < 4 || len(f)%2 != 0 {
				t.Fatalf("line %d %q: %d fields; want an even number ≥ 4", i+1, line, len(f))
			}
			rest := strings.TrimPrefix(f[0], "Benchmark")
			if r := []rune(rest); len(r) > 0 && !unicode.IsUpper(r[0]) {
				t.Errorf("line %d: name %q: Benchmark must be followed by an upper-case letter", i+1, f[0])
			}
			if n, err := strconv.Atoi(f[1]); err != nil || n <= 0 {
				t.Errorf("line %d: iterations %q", i+1, f[1])
			}
			for j := 2; j < len(f); j += 2 {
				if _, err := strconv.ParseFloat(f[j], 64); err != nil {
					t.Errorf("line %d: value %q: %v", i+1, f[j], err)
				}
			}
			results[f[0]]++
			if !strings.Contains(line, " reread-tokens") || !strings.Contains(line, " prefill-ns") || !strings.Contains(line, " cached-tokens") {
				t.Errorf("line %d %q lacks a unit", i+1, line)
			}
		case strings.HasPrefix(line, "Unit "):
			if len(f) < 3 || !strings.Contains(f[2], "=") {
				t.Errorf("line %d %q: want Unit <unit> key=value", i+1, line)
			}
		default:
			m := config.FindStringSubmatch(line)
			if m == nil || !unicode.IsLower([]rune(m[1])[0]) || strings.IndexFunc(m[1], unicode.IsUpper) >= 0 {
				t.Fatalf("line %d %q is neither a result, a unit nor a config line", i+1, line)
			}
			configs = append(configs, m[1]+"="+m[2])
		}
	}
	if strings.Join(configs, ",") != "backend=ollama,model=qwen3-synth" {
		t.Errorf("config = %v; want backend and model", configs)
	}
	for _, arm := range []string{"spec", "date-in-system-prompt", "reasoning-never"} {
		if n := results["BenchmarkLab/scenario=midnight/arm="+arm]; n != 3 {
			t.Errorf("arm %s: %d result lines; want 3 (one per repetition)", arm, n)
		}
	}
	// The first spec line is r1 repetition 1: 3 requests, 3300 prompt, 2080 cached, 1220 re-read.
	if want := "BenchmarkLab/scenario=midnight/arm=spec 3 3300 prompt-tokens 2080 cached-tokens 2080 expected-cached-tokens 1220 reread-tokens 1220000000 prefill-ns\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("benchfmt lacks %q:\n%s", want, buf.String())
	}
}

func TestWritersRejectEmptyReport(t *testing.T) {
	t.Parallel()
	for _, name := range report.Formats() {
		w, _ := report.Lookup(name)
		if err := w(&bytes.Buffer{}, &report.Report{}); err == nil {
			t.Errorf("%s(empty report) = nil; want an error", name)
		}
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	old := report.Analyze(repsFixture())
	if c := report.Compare(old, old, 0.05); c.Regressions != 0 || len(c.Changes) != 12 {
		t.Errorf("Compare(same) = %d regressions, %d changes; want 0, 12 (3 arms × 4 metrics)", c.Regressions, len(c.Changes))
	}
	// The new run: date re-reads 100 more tokens at request 0 (2310 → 2410 …, +4.3 %) and
	// reasoning-never 300 more (1320 → 1620, +22.7 %); spec is gone, a new arm appears.
	var next []metrics.Sample
	for _, s := range repsFixture() {
		switch {
		case s.Arm == metrics.SpecArm:
			s.Arm = "plain"
		case s.RequestIndex == 0 && s.Arm == report.CliffArm:
			s.RereadTokens = new(*s.RereadTokens + 100)
		case s.RequestIndex == 0 && s.Arm == report.ReasoningNeverArm:
			s.RereadTokens = new(*s.RereadTokens + 300)
		}
		next = append(next, s)
	}
	c := report.Compare(old, report.Analyze(next), 0.05)
	var flagged []string
	for _, ch := range c.Changes {
		if ch.Regression {
			flagged = append(flagged, ch.Arm+" "+ch.Metric)
		}
	}
	// The spec arm missing from the new run counts as a regression.
	if strings.Join(flagged, ",") != "reasoning-never reread_tokens" || c.Regressions != 2 {
		t.Errorf("regressions = %v; want only reasoning-never reread_tokens (date's +4.3 %% is within 5 %%)", flagged)
	}
	if strings.Join(c.OnlyOld, ",") != "midnight/spec" || strings.Join(c.OnlyNew, ",") != "midnight/plain" {
		t.Errorf("only old %v, only new %v", c.OnlyOld, c.OnlyNew)
	}
	if c := report.Compare(old, report.Analyze(next), 0.01); c.Regressions != 3 {
		t.Errorf("Compare at 1 %%: %d regressions; want 3", c.Regressions)
	}
	// Beyond the threshold but not beyond the interval: no regression.
	var noisy []metrics.Sample
	for _, s := range repsFixture() {
		if s.Arm == metrics.SpecArm && s.RequestIndex == 0 && s.RunID == "r2" {
			s.RereadTokens = new(*s.RereadTokens + 3000)
		}
		noisy = append(noisy, s)
	}
	for _, ch := range report.Compare(old, report.Analyze(noisy), 0.05).Changes {
		if ch.Arm == metrics.SpecArm && ch.Metric == "reread_tokens" {
			if *ch.Relative < 0.05 || ch.Regression || ch.Delta.CI == nil || ch.Delta.CI.Lo > 0 {
				t.Errorf("noisy spec: %+v; want +81 %% within the interval, not a regression", ch)
			}
		}
	}
	for _, f := range report.CompareFormats() {
		var buf bytes.Buffer
		if err := c.Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "TestCompare."+f+".golden", buf.Bytes())
	}
	if err := c.Write(&bytes.Buffer{}, "csv"); err == nil {
		t.Errorf("Write(csv) = nil; want an error")
	}
}

// A repetition with a request whose figures are unknown (a failed request: no prompt count, no
// cached count, no prefill time) gets no partial total on its benchfmt line: each unit is
// written only when every request of the repetition has it, as benchstat would otherwise
// compare a sum short of a request with whole ones; a line left with no unit is left out.
func TestBenchfmtLeavesOutPartialTotals(t *testing.T) {
	t.Parallel()
	samples := repsFixture()
	samples = append(samples, metrics.Sample{RunID: "r1", Repetition: 1, Scenario: "midnight", Arm: metrics.SpecArm, RequestIndex: 3, Error: "HTTP 500"})
	samples = append(samples, metrics.Sample{RunID: "r9", Repetition: 1, Scenario: "midnight", Arm: metrics.SpecArm, Error: "HTTP 500"})
	r := testReport()
	m := testManifest()
	m.RunID = "r9"
	r.Runs = append(r.Runs, m)
	r.Analysis = report.Analyze(samples)
	var buf bytes.Buffer
	if err := report.Benchfmt(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(line, "BenchmarkLab/scenario=midnight/arm=spec ") {
			continue
		}
		if f := strings.Fields(line); len(f) < 4 || f[1] == "1" {
			t.Errorf("line %q: want none for the repetition whose one request failed (nothing measured)", line)
		}
		if strings.HasPrefix(line, "BenchmarkLab/scenario=midnight/arm=spec 4 ") {
			for _, unit := range []string{"prompt-tokens", "cached-tokens", "reread-tokens", "prefill-ns"} {
				if strings.Contains(line, " "+unit) {
					t.Errorf("the repetition with a failed request: line %q has a partial %s", line, unit)
				}
			}
		}
	}
	if want := "BenchmarkLab/scenario=midnight/arm=spec 3 3300 prompt-tokens"; !strings.Contains(buf.String(), want) {
		t.Errorf("benchfmt lacks the whole repetitions' %q:\n%s", want, buf.String())
	}
}
