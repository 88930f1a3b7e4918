package report_test

import (
	"math"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// liveFixture: scenario s, arms spec and reasoning-never, two repetitions each. Per session:
// spec generates 100 and 120 reasoning tokens, repeats no call, takes 3 steps in its one turn;
// reasoning-never generates 160 and 200, repeats one call, takes 4 steps. One scripted row is
// left out.
func liveFixture() []metrics.Sample {
	var out []metrics.Sample
	add := func(arm string, rep int32, reasoning []int64, repeated int, end string) {
		for i, r := range reasoning {
			s := metrics.Sample{RunID: "r", Scenario: "s", Arm: arm, Repetition: rep, Turn: 1, Step: int32(i + 1),
				Kind: metrics.KindStep, Driver: metrics.DriverLive, ReasoningTokensGenerated: new(int64(r)), RereadTokens: new(int64(10))}
			s.RepeatedCall = i == repeated
			if i == len(reasoning)-1 {
				s.EndReason = end
			}
			out = append(out, s)
		}
	}
	add("spec", 1, []int64{50, 30, 20}, -1, metrics.EndAnswered)
	add("spec", 2, []int64{60, 40, 20}, -1, metrics.EndAnswered)
	add("reasoning-never", 1, []int64{40, 40, 40, 40}, 2, metrics.EndAnswered)
	add("reasoning-never", 2, []int64{50, 50, 50, 50}, 3, metrics.EndMaxSteps)
	out = append(out, metrics.Sample{RunID: "r", Scenario: "s", Arm: "spec", Repetition: 1, Kind: metrics.KindStep, Driver: metrics.DriverScripted, ReasoningTokensGenerated: new(int64(1e6))})
	return out
}

func TestLiveTable(t *testing.T) {
	rows := report.LiveTable(liveFixture())
	if len(rows) != 2 || rows[0].Arm != "spec" || rows[1].Arm != "reasoning-never" {
		t.Fatalf("rows %+v; want spec then reasoning-never", rows)
	}
	spec, never := rows[0], rows[1]
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	for _, c := range []struct {
		row    report.LiveRow
		metric int
		mean   float64
	}{
		{spec, 0, 110}, {never, 0, 180}, // reasoning generated
		{spec, 1, 0}, {never, 1, 1}, // repeated calls
		{spec, 2, 3}, {never, 2, 4}, // steps per turn
		{spec, 3, 30}, {never, 3, 40}, // re-read
	} {
		if m := c.row.Metrics[c.metric]; !near(m.Estimate.Mean, c.mean) || m.Estimate.N != 2 {
			t.Errorf("%s %s: mean %g over %d; want %g over 2", c.row.Arm, m.Name, m.Estimate.Mean, m.Estimate.N, c.mean)
		}
	}
	// Paired differences: reasoning +60 and +80 → mean 70, t(0.975, 1) = 12.706, SD 14.142.
	d := never.Metrics[0].VsSpec
	if d == nil || !near(d.Mean, 70) || d.CI == nil || math.Abs(d.CI.Hi-(70+12.7062*14.1421/math.Sqrt2)) > 0.01 {
		t.Fatalf("reasoning-never Δ spec = %+v; want 70 ± 127.06", d)
	}
	if spec.Metrics[0].VsSpec != nil {
		t.Error("the spec row has a difference to itself")
	}
	if never.EndReasons[metrics.EndAnswered] != 1 || never.EndReasons[metrics.EndMaxSteps] != 1 {
		t.Errorf("end reasons %v", never.EndReasons)
	}
	var b strings.Builder
	if err := report.WriteLiveMarkdown(&b, rows); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "| s | reasoning-never | 2 | 180 [") || !strings.Contains(out, "answered 1, max_steps 1") {
		t.Fatalf("markdown:\n%s", out)
	}
	if f := liveFixture(); len(report.LiveTable(f[len(f)-1:])) != 0 {
		t.Error("a scripted sample made a live row")
	}
}

// The report of a live run has the live section, in every format built from the document.
func TestReportHasLiveSection(t *testing.T) {
	samples := liveFixture()
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "live", Complete: true}}, Analysis: report.Analyze(samples)}
	var md, text strings.Builder
	if err := report.Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Live sessions: what the model did") || !strings.Contains(md.String(), "turns ended") {
		t.Errorf("markdown without the live section:\n%s", md.String())
	}
	w, err := report.Lookup("text")
	if err != nil {
		t.Fatal(err)
	}
	if err := w(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Live sessions") {
		t.Errorf("text without the live section:\n%s", text.String())
	}
	// A scripted run has none.
	for i := range samples {
		samples[i].Driver = metrics.DriverScripted
	}
	md.Reset()
	if err := report.Markdown(&md, &report.Report{Runs: r.Runs, Analysis: report.Analyze(samples)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Live sessions") {
		t.Errorf("a scripted run has a live section")
	}
}
