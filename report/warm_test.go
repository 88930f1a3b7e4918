package report_test

import (
	"bytes"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// warmFixture is three sessions of one warm run, three requests each: session 1's first
// request found nothing and its start is unknown (expected null), session 2's was served 1,200
// tokens of session 1's cache (expected 1,200), session 3's has no cached count (expected 500).
func warmFixture() []metrics.Sample {
	var out []metrics.Sample
	first := []struct{ cached, expected *int64 }{
		{new(int64(0)), nil}, {new(int64(1200)), new(int64(1200))}, {nil, new(int64(500))},
	}
	for rep := range int32(3) {
		for i := range int32(3) {
			s := metrics.Sample{RunID: "w", Scenario: "midnight", Arm: metrics.SpecArm, Repetition: rep + 1, RequestIndex: i,
				PromptTokens: 2000, CachedTokens: new(int64(1900)), ExpectedCachedTokens: new(int64(1900)), RereadTokens: new(int64(100))}
			if i == 0 {
				f := first[rep]
				s.CachedTokens, s.ExpectedCachedTokens, s.RereadTokens = f.cached, f.expected, nil
			}
			out = append(out, s)
		}
	}
	return out
}

// A warm run's report says how many sessions' first requests an earlier session's cache served
// and their cached tokens summed, and what the lab expected of those whose start it knew; a
// cold run's says nothing of it.
func TestWarmStarts(t *testing.T) {
	t.Parallel()
	man := &metrics.Manifest{RunID: "w", Complete: true, CacheState: metrics.CacheWarm, Scenarios: []string{"midnight"}, Arms: []string{metrics.SpecArm}, Repetitions: 3}
	a := report.AnalyzeRuns([]*metrics.Manifest{man}, warmFixture())
	w := a.WarmStarts
	if w == nil {
		t.Fatal("no warm starts for a warm run")
	}
	if w.ExpectedCachedTokens == nil || *w.ExpectedCachedTokens != 1700 {
		t.Fatalf("expected cached tokens %v; want 1700", w.ExpectedCachedTokens)
	}
	if got := *w; got.Sessions != 3 || got.Served != 1 || got.CachedTokens != 1200 || got.CachedUnknown != 1 || got.ExpectedUnknown != 1 {
		t.Errorf("warm starts %+v", got)
	}
	var buf bytes.Buffer
	if err := report.Markdown(&buf, &report.Report{Runs: []*metrics.Manifest{man}, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	want := "Warm starts (lab run --warm: no reset between sessions): 1 of 3 sessions' first requests were served from an earlier session's cache, 1,200 cached tokens in all (1 with no cached count); the lab expected 1,700 over the 2 whose start it knew (1 unknown: what the server held when the session started, see the rows' warnings)."
	if !strings.Contains(buf.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, buf.String())
	}
	// No first request's expected count known: null, not 0.
	unknown := warmFixture()
	for i := range unknown {
		unknown[i].ExpectedCachedTokens = nil
	}
	if w := report.AnalyzeRuns([]*metrics.Manifest{man}, unknown).WarmStarts; w == nil || w.ExpectedCachedTokens != nil || w.ExpectedUnknown != 3 {
		t.Errorf("no expected count known: warm starts %+v; want expected null, 3 unknown", w)
	}
	cold := *man
	cold.CacheState = metrics.CacheColdVerified
	if a := report.AnalyzeRuns([]*metrics.Manifest{&cold}, warmFixture()); a.WarmStarts != nil {
		t.Errorf("cold run: warm starts %+v; want none", *a.WarmStarts)
	}
}
