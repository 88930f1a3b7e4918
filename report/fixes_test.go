package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"lab/metrics"
	"lab/report"
)

// sessionsFixture is run r (manifest complete as given) with three sessions of midnight run one
// after the other: spec rep 1 (requests 0–2), spec rep 2 (requests 0–2, request 1 failed) and
// date rep 1 (requests 0–1, the last started).
func sessionsFixture() []metrics.Sample {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var out []metrics.Sample
	n := 0
	add := func(arm string, rep int32, reqs int, failAt int32) {
		for i := int32(0); i < int32(reqs); i++ {
			s := metrics.Sample{RunID: "r", Scenario: "midnight", Arm: arm, Repetition: rep, RequestIndex: i,
				StartedAt: t0.Add(time.Duration(n) * time.Second), PromptTokens: 1000, CachedTokens: new(int64(900)),
				ExpectedCachedTokens: new(int64(900)), RereadTokens: new(int64(100))}
			if i == failAt {
				s.Error = "connection refused"
			}
			out = append(out, s)
			n++
		}
	}
	add(metrics.SpecArm, 1, 3, -1)
	add(metrics.SpecArm, 2, 3, 1)
	add(report.CliffArm, 1, 2, -1)
	// File order is not start order: the interrupted session's rows come first.
	return append(out[6:], out[:6]...)
}

func TestSessions(t *testing.T) {
	t.Parallel()
	samples := sessionsFixture()
	for _, tc := range []struct {
		name     string
		runs     []*metrics.Manifest
		wantLeft []string // "arm rep reason"
		wantRows int
	}{
		{"interrupted", []*metrics.Manifest{{RunID: "r", Complete: false}}, []string{"date-in-system-prompt 1 interrupted", "spec 2 failed"}, 3},
		{"complete or resumed", []*metrics.Manifest{{RunID: "r", Complete: true}}, []string{"spec 2 failed"}, 5},
		{"no manifest", nil, []string{"spec 2 failed"}, 5},
		{"another run's manifest", []*metrics.Manifest{{RunID: "other", Complete: false}}, []string{"spec 2 failed"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			complete, left := report.Sessions(tc.runs, samples)
			var got []string
			for _, l := range left {
				got = append(got, l.Arm+" "+string(rune('0'+l.Repetition))+" "+l.Reason)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantLeft, ",") || len(complete) != tc.wantRows {
				t.Errorf("Sessions: left %v, %d complete rows; want %v, %d", got, len(complete), tc.wantLeft, tc.wantRows)
			}
			for _, s := range complete {
				if s.Arm == metrics.SpecArm && s.Repetition == 2 {
					t.Errorf("a row of the failed session is kept: %+v", s)
				}
			}
		})
	}
	_, left := report.Sessions(nil, samples)
	if l := left[0]; l.Request != 1 || l.Error != "connection refused" || l.Requests != 3 ||
		l.String() != "midnight/spec repetition 2 of run r: request 1 failed: connection refused" {
		t.Errorf("left out %+v, %q", l, l.String())
	}
}

// An interrupted repetition is not averaged in: the analysis and the report say it was left out.
func TestAnalyzeRunsLeavesIncompleteSessionsOut(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "r", Complete: false, Backend: "ollama"}}
	a := report.AnalyzeRuns(runs, sessionsFixture())
	if len(a.LeftOut) != 2 {
		t.Fatalf("LeftOut = %+v; want 2 sessions", a.LeftOut)
	}
	sc := a.Scenarios[0]
	if sc.Arm(report.CliffArm) != nil {
		t.Errorf("the interrupted date session is in the analysis: %+v", sc.Arm(report.CliffArm))
	}
	if spec := sc.Arm(metrics.SpecArm); spec == nil || len(spec.Reps) != 1 || spec.Requests.Mean != 3 {
		t.Errorf("spec = %+v; want only repetition 1", spec)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Left out of every figure below: 2 sessions that did not complete",
		"- midnight/date-in-system-prompt repetition 1 of run r: the run was interrupted during this session (2 requests measured)",
		"- midnight/spec repetition 2 of run r: request 1 failed: connection refused",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, b.String())
		}
	}
}

// expectedUnknownFixture is one repetition of scenario s, arm spec, three requests: requests 0
// and 1 with expected cached tokens unknown (a cloud API), request 2 known; cached tokens are
// far from the zeros of the unknown expected counts.
func expectedUnknownFixture(allUnknown bool) []metrics.Sample {
	var out []metrics.Sample
	for i := int32(0); i < 3; i++ {
		s := metrics.Sample{RunID: "r", Scenario: "s", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: i,
			PromptTokens: 1000, CachedTokens: new(int64(800)), RereadTokens: new(int64(200)), ExpectedUnknown: true}
		if i == 2 && !allUnknown {
			s.ExpectedUnknown, s.ExpectedCachedTokens, s.RereadMessageTokens, s.PrefillNs = false, new(int64(1000)), new(int64(200)), 5e8
		}
		out = append(out, s)
	}
	return out
}

func TestExpectedUnknown(t *testing.T) {
	t.Parallel()
	a := report.Analyze(expectedUnknownFixture(false))
	sc := a.Scenarios[0]
	if len(sc.Mismatches) != 1 || sc.Mismatches[0].RequestIndex != 2 {
		t.Errorf("mismatches = %+v; want only request 2 (the others have no expected count)", sc.Mismatches)
	}
	st := sc.Arms[0]
	// Efficiency over request 2 only: 800 / 1000, not 2400 / 1000.
	if st.Efficiency.N != 1 || !near(st.Efficiency.Mean, 0.8, 1e-12) || st.Pooled.Efficiency == nil || !near(*st.Pooled.Efficiency, 0.8, 1e-12) {
		t.Errorf("efficiency = %+v, pooled %v; want 0.8", st.Efficiency, st.Pooled.Efficiency)
	}
	if st.Pooled.ExpectedUnknown != 2 || st.ExpectedCachedTokens.Mean != 1000 {
		t.Errorf("expected unknown %d, expected tokens %+v; want 2, 1000", st.Pooled.ExpectedUnknown, st.ExpectedCachedTokens)
	}
	var b bytes.Buffer
	if err := report.Benchfmt(&b, &report.Report{Runs: []*metrics.Manifest{{RunID: "r"}}, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	// Two of the three requests have no prefill time: no partial prefill-ns either.
	if strings.Contains(b.String(), "expected-cached-tokens") || strings.Contains(b.String(), " prefill-ns") || !strings.Contains(b.String(), " 2400 cached-tokens") {
		t.Errorf("benchfmt with unknown expected counts:\n%s", b.String())
	}

	// Every expected count unknown: efficiency and expected tokens are "—", no prefill-ns.
	a = report.Analyze(expectedUnknownFixture(true))
	st = a.Scenarios[0].Arms[0]
	if st.Efficiency.N != 0 || st.Pooled.Efficiency != nil || st.ExpectedCachedTokens.N != 0 || len(a.Scenarios[0].Mismatches) != 0 {
		t.Errorf("all unknown: efficiency %+v / %v, expected %+v, mismatches %v; want none", st.Efficiency, st.Pooled.Efficiency,
			st.ExpectedCachedTokens, a.Scenarios[0].Mismatches)
	}
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "r"}}, Analysis: a}
	b.Reset()
	if err := report.Benchfmt(&b, r); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Contains(got, "expected-cached-tokens") || strings.Contains(got, "prefill-ns") {
		t.Errorf("benchfmt with every expected count and prefill unknown:\n%s", got)
	}
	b.Reset()
	if err := report.Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| spec | 1 | 3 | 3,000 | 2,400 | — (3 unknown) | 600 | — (3 unknown) | 80.0% | — | 1.00× | — |") {
		t.Errorf("report.md row with unknown expected counts:\n%s", b.String())
	}
}

func TestNamesAreEscaped(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"midnight":          "midnight",
		"a/b c":             "a%2Fb%20c",
		"x=1%":              "x%3D1%25",
		"date-in-system.v2": "date-in-system.v2",
	} {
		if got := report.BenchNamePart(in); got != want {
			t.Errorf("BenchNamePart(%q) = %q; want %q", in, got, want)
		}
	}
	samples := repsFixture()
	for i := range samples {
		samples[i].Scenario = "team/<b>x</b> & y"
	}
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "r"}}, Analysis: report.Analyze(samples)}
	var b bytes.Buffer
	if err := report.Benchfmt(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nBenchmarkLab/scenario=team%2F<b>x<%2Fb>%20&%20y/arm=spec 3 ") {
		t.Errorf("benchfmt name:\n%s", b.String())
	}
	b.Reset()
	if err := report.Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n## team/&lt;b&gt;x&lt;/b&gt; &amp; y\n") || strings.Contains(b.String(), "<b>") {
		t.Errorf("markdown heading not escaped:\n%s", b.String())
	}
	b.Reset()
	if err := report.HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ">team/&lt;b&gt;x&lt;/b&gt; &amp; y</h2>") || strings.Contains(b.String(), "<b>") {
		t.Errorf("html heading not escaped")
	}
}

// A change that rounds to 0.0 % prints without a sign.
func TestCompareNoNegativeZero(t *testing.T) {
	t.Parallel()
	old := repsFixture()
	var next []metrics.Sample
	for _, s := range old {
		if s.Arm == metrics.SpecArm && s.RequestIndex == 0 {
			s.PrefillNs -= 1e5 // −0.1 ms of 1.2 s: −0.003 %
		}
		next = append(next, s)
	}
	c := report.Compare(report.Analyze(old), report.Analyze(next), 0.05)
	var b bytes.Buffer
	if err := c.Write(&b, "text"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "-0.0%") || !strings.Contains(b.String(), "prefill_seconds   1.23 ± 0.01    1.22 ± 0.01    0.0%") {
		t.Errorf("compare:\n%s", b.String())
	}
}

func TestClaimVerdicts(t *testing.T) {
	t.Parallel()
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "r1", Backend: "sim"}, {RunID: "r2", Backend: "sim"}}, Analysis: report.Analyze(repsFixture())}
	// A scripted run: the saving over the whole session (7.2 %) is kept as data, with no verdict.
	if rc := r.Analysis.Claims.Reasoning; len(rc) != 1 || rc[0].Saved == nil || !near(*rc[0].Saved, 1-1225.0/1320, 1e-12) || rc[0].Behaviour != nil {
		t.Errorf("reasoning claim %+v; want 7.2 %% saved and no behaviour verdict", rc)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Caveat: these figures come from the sim backend",
		"Verdict: the claim holds on this run: the date-in-system-prompt arm fell from 90.0% ± 0.0% to 0.8% ± 2.1% cached",
		"no verdict on the spec's claim",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "does not hold") {
		t.Errorf("report.md judges the reasoning claim on a scripted run:\n%s", b.String())
	}
	r.Runs[0].Backend, r.Runs[1].Backend = "ollama", "ollama"
	b.Reset()
	_ = report.Markdown(&b, r)
	if strings.Contains(b.String(), "Caveat") {
		t.Errorf("a caveat on an ollama run")
	}
}

// The cliff's prefill time is a mean over the repetitions that measured one: a server that
// reports none (a cloud API, prefill_ns null) gives no estimate, not 0 s.
func TestCliffPrefillUnknown(t *testing.T) {
	t.Parallel()
	samples := repsFixture()
	for i := range samples {
		samples[i].PrefillNs = 0
	}
	a := report.Analyze(samples)
	c := a.Claims.Cliff
	if c == nil {
		t.Fatal("no cliff")
	}
	for _, cl := range c.Arms {
		if cl.Arm == report.CliffArm && (cl.PrefillSeconds.N != 0 || cl.RereadTokens.N == 0) {
			t.Errorf("date cliff prefill %+v, re-read %+v; want no prefill estimate, the re-read one", cl.PrefillSeconds, cl.RereadTokens)
		}
	}
}

// The re-read split table says how many requests' split is unknown (a row whose re-read is
// known but whose rendering is not), so that its columns, which leave those requests out, are
// not read as adding up to the re-read column.
func TestSplitTableCountsUnknown(t *testing.T) {
	t.Parallel()
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "r"}}, Analysis: report.Analyze(expectedUnknownFixture(false))}
	var b bytes.Buffer
	if err := report.Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Re-read tokens by the kind of segment") || !strings.Contains(b.String(), "split unknown, left out: spec 2 of 3") {
		t.Errorf("markdown does not count the requests whose split is unknown:\n%s", b.String())
	}
}

// The spec arm's "re-read vs spec" is 1.00× only when its re-read tokens are known: with every
// cached count unknown there is nothing to compare, and the cell is "—".
func TestSpecVsItselfNeedsAReread(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for i := int32(0); i < 3; i++ {
		samples = append(samples, metrics.Sample{RunID: "r", Scenario: "s", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: i, PromptTokens: 1000, ExpectedUnknown: true})
	}
	r := &report.Report{Runs: []*metrics.Manifest{{RunID: "r"}}, Analysis: report.Analyze(samples)}
	var b bytes.Buffer
	if err := report.Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "1.00×") {
		t.Errorf("markdown shows spec at 1.00× of itself with no re-read known:\n%s", b.String())
	}
}
