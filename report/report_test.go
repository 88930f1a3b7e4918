package report_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"lab/internal/golden"
	"lab/metrics"
	"lab/metrics/metricstest"
	"lab/report"
)

// fixture is a small hand-checked run: scenario "midnight" with arms spec and
// date-in-system-prompt, and scenario "other" without a spec arm.
func fixture() []metrics.Sample {
	s := func(scenario, arm string, idx int32, prompt int64, cached *int64, expected, reread int64, prefill time.Duration, errText string) metrics.Sample {
		return metrics.Sample{
			RunID: "run-1", Scenario: scenario, Arm: arm, RequestIndex: idx, PromptTokens: prompt,
			CachedTokens: cached, ExpectedCachedTokens: new(int64(expected)), RereadTokens: new(int64(reread)),
			PrefillNs: int64(prefill), Error: errText,
		}
	}
	return []metrics.Sample{
		s("midnight", "date-in-system-prompt", 0, 1000, new(int64(0)), 0, 1000, time.Second, ""),
		s("midnight", metrics.SpecArm, 0, 1000, new(int64(0)), 0, 1000, 1500*time.Millisecond, ""),
		s("midnight", metrics.SpecArm, 1, 1500, new(int64(990)), 1000, 510, 500*time.Millisecond, ""),
		s("midnight", metrics.SpecArm, 2, 2000, nil, 1500, 500, 250*time.Millisecond, ""),
		s("midnight", "date-in-system-prompt", 1, 1500, new(int64(40)), 50, 1460, 1460*time.Millisecond, "stream cut"),
		s("other", "b", 0, 16912, nil, 16000, 912, 139*time.Second, ""),
		s("other", "a", 0, 1234567, new(int64(1000000)), 1200000, 234567, 1234567*time.Millisecond, ""),
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	want := []report.ScenarioTable{
		{Scenario: "midnight", Rows: []report.ArmRow{
			{
				Arm: metrics.SpecArm,
				// request 2 is unknown, not 0
				Counts:               report.Counts{Requests: 3, PromptTokens: 4500, CachedTokens: 990, CachedUnknown: 1},
				ExpectedCachedTokens: 2500, RereadTokens: 2010, PrefillNs: 2250e6,
				Efficiency:   new(990.0 / 1000), // request 2's expected tokens are left out
				RereadVsSpec: new(1.0),
			},
			{
				Arm:                  "date-in-system-prompt",
				Counts:               report.Counts{Requests: 2, Failed: 1, PromptTokens: 2500, CachedTokens: 40},
				ExpectedCachedTokens: 50, RereadTokens: 2460, PrefillNs: 2460e6,
				Efficiency:   new(0.8),
				RereadVsSpec: new(2460.0 / 2010),
			},
		}},
		{Scenario: "other", Rows: []report.ArmRow{
			{
				Arm:                  "a",
				Counts:               report.Counts{Requests: 1, PromptTokens: 1234567, CachedTokens: 1000000},
				ExpectedCachedTokens: 1200000, RereadTokens: 234567, PrefillNs: 1234567e6,
				Efficiency: new(1000000.0 / 1200000),
			},
			{
				Arm:                  "b",
				Counts:               report.Counts{Requests: 1, PromptTokens: 16912, CachedUnknown: 1},
				ExpectedCachedTokens: 16000, RereadTokens: 912, PrefillNs: 139e9,
			},
		},
			// 1,000,000 cached of 1,200,000 expected is beyond 1 %; spec's 990 of 1,000 is not.
			Mismatches: []report.Mismatch{{Arm: "a", CachedTokens: 1000000, ExpectedCachedTokens: 1200000}},
		},
	}
	got := report.Summarize(fixture())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
	}
	if got := got[0].Rows[0].PrefillSeconds(); got != 2.25 {
		t.Errorf("PrefillSeconds() = %v; want 2.25", got)
	}
}

func TestSummarizeEdges(t *testing.T) {
	t.Parallel()
	if got := report.Summarize(nil); got != nil {
		t.Errorf("Summarize(nil) = %v; want nil", got)
	}
	// The spec arm re-read nothing: no ratio. Nothing expected: no efficiency.
	got := report.Summarize([]metrics.Sample{
		{Scenario: "s", Arm: metrics.SpecArm, PromptTokens: 10, CachedTokens: new(int64(10)), ExpectedCachedTokens: new(int64(10))},
		{Scenario: "s", Arm: "x", PromptTokens: 10, CachedTokens: new(int64(0)), RereadTokens: new(int64(10))},
	})
	if r := got[0].Rows[1]; r.RereadVsSpec != nil || r.Efficiency != nil {
		t.Errorf("row x = ratio %v, efficiency %v; want nil, nil", r.RereadVsSpec, r.Efficiency)
	}
	if r := got[0].Rows[0]; r.Efficiency == nil || *r.Efficiency != 1 {
		t.Errorf("row spec efficiency = %v; want 1", r.Efficiency)
	}
}

func testManifest() *metrics.Manifest {
	m := metricstest.Manifest()
	m.Scenarios = []string{"midnight", "other"}
	m.EndedAt = time.Date(2025, 3, 10, 0, 4, 31, 0, time.UTC)
	m.Samples = 7
	m.Settings = map[string]string{"keep_alive": "30m", "driver": "scripted"}
	return m
}

func TestMarkdown(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	plotFiles := map[string][]string{
		"midnight": {"plots/midnight-cached-share.svg", "plots/midnight-cached-share.png"},
	}
	if err := report.Markdown(&buf, &report.Report{Runs: []*metrics.Manifest{testManifest()}, Analysis: report.Analyze(fixture()), Figures: figures(plotFiles)}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "TestMarkdown.golden.md", buf.Bytes())
}

func TestMarkdownIncomplete(t *testing.T) {
	t.Parallel()
	m := testManifest()
	m.Complete, m.EndedAt, m.Error = false, time.Time{}, "send request 12: connection refused"
	var buf bytes.Buffer
	if err := report.Markdown(&buf, &report.Report{Runs: []*metrics.Manifest{m}, Analysis: report.Analyze(nil)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- Complete: NO, error: send request 12: connection refused\n",
		"ended: —\n",
		"No samples.",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestMarkdownErrors(t *testing.T) {
	t.Parallel()
	if err := report.Markdown(&bytes.Buffer{}, &report.Report{Analysis: report.Analyze(nil)}); err == nil {
		t.Errorf("Markdown(no manifest) = nil; want error")
	}
	errFull := errors.New("disk full")
	if err := report.Markdown(failWriter{errFull}, &report.Report{Runs: []*metrics.Manifest{testManifest()}, Analysis: report.Analyze(nil)}); !errors.Is(err, errFull) {
		t.Errorf("Markdown(failing writer) = %v; want %v", err, errFull)
	}
}

// figures turns the old plot file lists into figures.
func figures(plotFiles map[string][]string) []report.Figure {
	var figs []report.Figure
	for sc, files := range plotFiles {
		f := report.Figure{Scenario: sc, Title: sc + ": cached share", Files: map[string]string{}}
		for _, p := range files {
			f.Files[p[strings.LastIndex(p, ".")+1:]] = p
		}
		figs = append(figs, f)
	}
	return figs
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestMismatchAfterContextOverflow: a request that finds almost nothing cached after the previous
// request of its session overflowed num_ctx is explained by the overflow, not by a reload.
func TestMismatchAfterContextOverflow(t *testing.T) {
	t.Parallel()
	mk := func(idx int32, cached, expected int64, overflow bool) metrics.Sample {
		return metrics.Sample{RunID: "r", Scenario: "long-compaction", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: idx,
			PromptTokens: expected + 500, CachedTokens: new(cached), ExpectedCachedTokens: new(int64(expected)),
			DivergenceSegment: "message 1", LoadNs: new(int64(1.2e8)), ContextOverflow: overflow}
	}
	samples := []metrics.Sample{mk(22, 39343, 39343, false), mk(23, 39272, 39272, true), mk(24, 4, 1966, false), mk(25, 10, 2866, false)}
	tables := report.Summarize(samples)
	ms := tables[0].Mismatches
	if len(ms) != 2 || !ms[0].AfterOverflow || ms[1].AfterOverflow || ms[0].RequestIndex != 24 {
		t.Fatalf("mismatches %+v; want requests 24 (after the overflow) and 25 (not)", ms)
	}
	var buf bytes.Buffer
	if err := report.Markdown(&buf, &report.Report{Runs: []*metrics.Manifest{testManifest()}, Analysis: report.Analyze(samples)}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "overflowed the context window") {
		t.Errorf("the report does not name the overflow:\n%s", out)
	}
	if !strings.Contains(out, "loaded again") { // request 25: the load heuristic still applies
		t.Errorf("request 25's reason is missing:\n%s", out)
	}
}

// A live turn that ran out of time ends normally: its row is not a failed request.
func TestTimedOutLiveTurnIsNotAFailure(t *testing.T) {
	t.Parallel()
	samples := []metrics.Sample{
		{RunID: "r", Scenario: "s", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: 0, PromptTokens: 10, CachedTokens: new(int64(0)), Driver: metrics.DriverLive},
		{RunID: "r", Scenario: "s", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: 1, PromptTokens: 20, CachedTokens: new(int64(9)), ExpectedCachedTokens: new(int64(9)),
			Driver: metrics.DriverLive, EndReason: metrics.EndTimeout, Error: "context deadline exceeded"},
		{RunID: "r", Scenario: "s", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: 2, PromptTokens: 30, Error: "HTTP 500"},
	}
	if got := report.Summarize(samples)[0].Rows[0].Failed; got != 1 {
		t.Errorf("Failed = %d; want 1 (the HTTP 500, not the timed-out turn)", got)
	}
}
