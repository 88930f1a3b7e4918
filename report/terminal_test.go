package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"lab/internal/golden"
	"lab/metrics"
	"lab/metrics/metricstest"
	"lab/report"
)

// session is a session's rows from its prompts and cached tokens (nil: not measured, a cloud
// API that says nothing), each request's expected cached tokens equal to its cached ones and its
// divergence segment seg[i] ("" for none).
func session(run, scenario, arm string, rep int32, prompts []int64, cached []*int64, seg []string) []metrics.Sample {
	var out []metrics.Sample
	for i, p := range prompts {
		s := metrics.Sample{RunID: run, Scenario: scenario, Arm: arm, Repetition: rep, RequestIndex: int32(i),
			Turn: 1, Step: int32(i + 1), PromptTokens: p, Kind: metrics.KindStep, DivergenceSegment: seg[i]}
		if c := cached[i]; c != nil {
			s.CachedTokens, s.ExpectedCachedTokens, s.RereadTokens = c, c, new(p-*c)
		}
		out = append(out, s)
	}
	return out
}

func n(v int64) *int64 { return &v }

// terminalFixture is midnight with spec and date-in-system-prompt, two repetitions each (so
// that re-read vs spec has Fieller's interval): the date arm loses the whole prompt at request
// 2 (diverged in system), spec only re-reads what is new; and an arm the lab could not measure.
func terminalFixture() ([]*metrics.Manifest, []metrics.Sample) {
	var rows []metrics.Sample
	none := []string{"", "message 2", "message 4"}
	for rep := int32(1); rep <= 2; rep++ {
		d := int64(rep) * 10
		rows = append(rows, session("r1", "midnight", metrics.SpecArm, rep, []int64{1000, 1500, 2000 + d}, []*int64{n(0), n(1000), n(1500)}, none)...)
		rows = append(rows, session("r1", "midnight", "date-in-system-prompt", rep, []int64{1000, 1500, 2000 + d},
			[]*int64{n(0), n(1000), n(5)}, []string{"", "message 2", "system"})...)
		rows = append(rows, session("r1", "midnight", "no-caps", rep, []int64{1000, 1500, 2000}, []*int64{nil, nil, nil}, none)...)
	}
	m := metricstest.Manifest()
	m.RunID, m.Arms, m.Repetitions, m.Samples = "r1", []string{"spec", "date-in-system-prompt", "no-caps"}, 2, len(rows)
	return []*metrics.Manifest{m}, rows
}

// The summary of a run: per scenario and arm the cached share, the re-read tokens, re-read vs
// spec with its interval, the biggest loss and where the prompt diverged; then the claims'
// verdicts. Its text is a golden file.
func TestTerminal(t *testing.T) {
	t.Parallel()
	mans, rows := terminalFixture()
	var b bytes.Buffer
	if err := report.Terminal(&b, &report.Report{Runs: mans, Analysis: report.AnalyzeRuns(mans, rows)}, report.TerminalOptions{More: "report.html"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	golden.Check(t, "TestTerminal.golden", b.Bytes())
	// The date arm re-read 1,995 + 2,005 tokens of a 1,500-token previous prompt at request 2:
	// its loss is the 1,495 tokens of that prompt the cache held and the server read again.
	for _, want := range []string{
		"date-in-system-prompt  ", "request 2: 1,495, in system",
		// From 1,000 of 1,500 cached to 5 of 2,010 and 2,020: not from at least 90 %.
		"midnight cliff (§10, 99% cached to 0% when the date changed): does not hold: date-in-system-prompt fell from 66.7% ± 0.0% to 0.2% ± 0.0% cached at request 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// A figure the lab did not measure prints as "—", never as 0: the arm whose cached tokens are
// all unknown has no cached share, no re-read tokens, no ratio to spec and no loss.
func TestTerminalUnknownIsDash(t *testing.T) {
	t.Parallel()
	mans, rows := terminalFixture()
	var b bytes.Buffer
	if err := report.Terminal(&b, &report.Report{Runs: mans, Analysis: report.AnalyzeRuns(mans, rows)}, report.TerminalOptions{}); err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.SplitSeq(b.String(), "\n") {
		if strings.Contains(l, " no-caps ") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) != 5 || f[1] != "—" || f[2] != "—" || f[3] != "—" || f[4] != "—" {
		t.Errorf("no-caps row %q: want its cached share, re-read tokens, vs spec and loss as —", line)
	}
}

// A big run (13 scenarios × 17 arms, as the sim matrix) stays within its line cap, claims
// included: per scenario the spec arm and the arms that differ from it most, and lines saying
// how many arms are left out and where they are.
func TestTerminalLineCap(t *testing.T) {
	t.Parallel()
	var rows []metrics.Sample
	var armNames []string
	for a := range 17 {
		armNames = append(armNames, fmt.Sprintf("arm-%02d", a))
	}
	armNames[0], armNames[1] = metrics.SpecArm, "date-in-system-prompt"
	for sc := range 13 {
		scenario := fmt.Sprintf("scenario-%02d", sc)
		if sc == 0 {
			scenario = "midnight"
		}
		for a, arm := range armNames {
			// Arms 0–7 re-read what spec does; the others more, by a step of their own.
			last := int64(1500)
			if a > 7 {
				last = 1500 - int64(100*(a-7)+sc)
			}
			if arm == "date-in-system-prompt" && sc == 0 {
				last = 0
			}
			rows = append(rows, session("r1", scenario, arm, 1, []int64{1000, 1500, 2000}, []*int64{n(0), n(1000), n(last)}, []string{"", "message 2", "tool result 3"})...)
		}
	}
	m := metricstest.Manifest()
	m.RunID, m.Arms, m.Samples = "r1", armNames, len(rows)
	an := report.AnalyzeRuns([]*metrics.Manifest{m}, rows)
	for _, limit := range []int{40, 12, 5} {
		var b bytes.Buffer
		if err := report.Terminal(&b, &report.Report{Runs: []*metrics.Manifest{m}, Analysis: an}, report.TerminalOptions{MaxLines: limit, More: "report.html"}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if got := strings.Count(out, "\n"); got > limit {
			t.Errorf("MaxLines %d: %d lines:\n%s", limit, got, out)
		}
		if limit == 5 {
			// Room for the claims and the lines saying what is left out only: no table.
			if strings.Contains(out, "scenario ") || !strings.Contains(out, "13 more scenarios: see report.html") {
				t.Errorf("MaxLines 5: want no table, and the 13 scenarios said to be in report.html:\n%s", out)
			}
			continue
		}
		// 7 arms re-read what spec does in each of the 13 scenarios, but the date arm in midnight.
		for _, want := range []string{"90 more arms within spec's interval", "more arms that differ from spec", "see report.html", "midnight cliff (§10"} {
			if !strings.Contains(out, want) {
				t.Errorf("MaxLines %d: lacks %q:\n%s", limit, want, out)
			}
		}
		if i, j := strings.Index(out, "arm-16"), strings.Index(out, "arm-15"); i < 0 || (j >= 0 && j < i) {
			t.Errorf("MaxLines %d: arm-16 (the biggest loss) not listed first:\n%s", limit, out)
		}
	}
}

// The biggest loss of an arm is the request that re-read the most of the session's previous
// prompt: new content (a request whose prompt only grew) is no loss, and a session's first
// request, with nothing before it, has none.
func TestBiggestLoss(t *testing.T) {
	t.Parallel()
	rows := session("r1", "s", metrics.SpecArm, 1, []int64{3000, 9000, 6000, 6500}, []*int64{n(0), n(3000), n(2000), n(6000)},
		[]string{"", "message 1", "reasoning 2", "message 5"})
	an := report.Analyze(rows)
	l := an.Scenarios[0].Arms[0].BiggestLoss
	// Request 1 re-read 6,000 new tokens (no loss); request 2 re-read 4,000 tokens, all of them
	// in the 9,000-token prompt before it: 9,000 − 2,000 = 7,000 were lost, 4,000 read again.
	if l == nil || l.RequestIndex != 2 || l.LostTokens != 4000 || l.RereadTokens != 4000 || l.DivergenceSegment != "reasoning 2" {
		t.Errorf("biggest loss %+v; want request 2, 4,000 tokens, in reasoning 2", l)
	}
	first := report.Analyze(rows[:1]).Scenarios[0].Arms[0].BiggestLoss
	if first != nil {
		t.Errorf("a session's first request alone has a loss: %+v", first)
	}
}

// A run that measured nothing says so, and that it checks no claim, in place of a table.
func TestTerminalNothingMeasured(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := report.Terminal(&b, &report.Report{Runs: []*metrics.Manifest{metricstest.Manifest()}, Analysis: report.Analyze(nil)}, report.TerminalOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "no request measured\n") || !strings.Contains(out, "claims: none this run can check") ||
		!strings.HasPrefix(out, "ollama 0.17.4, model qwen3-synth: run 20250309-235900-midnight, 0 requests\n") || strings.Contains(out, "arm ") {
		t.Errorf("summary of nothing:\n%s", out)
	}
	if err := report.Terminal(&b, &report.Report{}, report.TerminalOptions{}); err == nil {
		t.Error("a report without runs: no error")
	}
}

// A run without the spec arm (lab run --arm plain,no-caps) compares no arm with spec: the
// table has no vs spec column, and the line saying what was left out says there is no spec arm
// to compare with, never that arms differ from spec. Beside a scenario with a spec arm, the
// arms left out of each are told apart.
func TestTerminalWithoutSpecArm(t *testing.T) {
	t.Parallel()
	var rows []metrics.Sample
	arms := []string{"plain", "no-caps", "arm-2", "arm-3", "arm-4", "arm-5"}
	for a, arm := range arms {
		rows = append(rows, session("r1", "midnight", arm, 1, []int64{1000, 1500, 2000}, []*int64{n(0), n(1000), n(1500 - int64(100*a))}, []string{"", "message 2", "tool result 3"})...)
	}
	m := metricstest.Manifest()
	m.RunID, m.Arms, m.Samples = "r1", arms, len(rows)
	an := report.AnalyzeRuns([]*metrics.Manifest{m}, rows)
	var b bytes.Buffer
	if err := report.Terminal(&b, &report.Report{Runs: []*metrics.Manifest{m}, Analysis: an}, report.TerminalOptions{MaxLines: 6, More: "report.html"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "scenario  arm  ") {
		t.Fatalf("no spec arm: no table:\n%s", out)
	}
	// The header, then the most re-read tokens first: arm-5 re-read 1,000 + 500 + 1,000, and
	// beside its re-read tokens is its loss, no ratio.
	if f := strings.Fields(lines[2]); len(f) != 11 || f[1] != "arm-5" || f[3] != "2,500" || f[4] != "request" {
		t.Errorf("first row %q; want arm-5 with 2,500 re-read tokens and no ratio column", lines[2])
	}
	if want := "5 more arms (no spec arm to compare with): see report.html\n"; !strings.Contains(out, want) || strings.Contains(out, "differ from spec") || strings.Contains(out, "vs spec") {
		t.Errorf("no spec arm: want %q, nothing of differing from spec:\n%s", want, out)
	}

	// A second scenario, with a spec arm and arms that differ from it.
	for a, arm := range []string{metrics.SpecArm, "date-in-system-prompt", "arm-x", "arm-y"} {
		rows = append(rows, session("r1", "other", arm, 1, []int64{1000, 1500, 2000}, []*int64{n(0), n(1000), n(1500 - int64(200*a))}, []string{"", "message 2", "tool result 3"})...)
	}
	m.Arms, m.Samples = append(arms, metrics.SpecArm, "date-in-system-prompt", "arm-x", "arm-y"), len(rows)
	an = report.AnalyzeRuns([]*metrics.Manifest{m}, rows)
	b.Reset()
	if err := report.Terminal(&b, &report.Report{Runs: []*metrics.Manifest{m}, Analysis: an}, report.TerminalOptions{MaxLines: 8, More: "report.html"}); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	if want := "2 more arms that differ from spec and 5 more arms in a scenario with no spec arm to compare with: see report.html\n"; !strings.Contains(out, want) || !strings.Contains(out, "vs spec") {
		t.Errorf("one scenario with spec, one without: want the vs spec column and %q:\n%s", want, out)
	}
}
