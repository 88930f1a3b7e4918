package check

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"lab/internal/golden"
	"lab/metrics"
)

// req is a hand-made sample: request i of scenario/arm repetition rep, in turn/step, with the
// prompt, cached (-1: unknown) and expected cached tokens, re-read tokens and divergence.
func req(scenario, arm string, rep, i, turn, step int, prompt, cached, expected, reread int64, div string) metrics.Sample {
	s := metrics.Sample{Scenario: scenario, Arm: arm, Repetition: int32(rep), RequestIndex: int32(i), Turn: int32(turn), Step: int32(step),
		PromptTokens: prompt, ExpectedCachedTokens: new(int64(expected)), RereadTokens: new(int64(reread)), DivergenceSegment: div}
	if cached >= 0 {
		s.CachedTokens, s.CachedSource = &cached, metrics.CachedSourceSimulation
	}
	return s
}

// midnight is a small session of two arms: the spec arm stays cached but for a turn start
// (request 3, where the template drops the reasoning); the date arm re-reads from the system
// prompt at request 3. Given out of order, as a reader might return them.
func midnight() []metrics.Sample {
	return []metrics.Sample{
		req("midnight", "date-in-system-prompt", 1, 3, 2, 1, 3000, 5, 5, 2995, "system"),
		req("midnight", "spec", 1, 0, 1, 1, 1000, 0, 0, 1000, ""),
		req("midnight", "spec", 1, 1, 1, 2, 2000, 1000, 1000, 1000, "message 2"),
		req("midnight", "spec", 1, 2, 1, 3, 2100, 2000, 2000, 100, "message 4"),
		req("midnight", "spec", 1, 3, 2, 1, 3000, 1500, 1500, 1500, "reasoning 2"),
		req("midnight", "spec", 1, 4, 2, 2, 3100, 3000, 3000, 100, "message 7"),
		req("midnight", "date-in-system-prompt", 1, 0, 1, 1, 1000, 0, 0, 1000, ""),
		req("midnight", "date-in-system-prompt", 1, 1, 1, 2, 2000, 1000, 1000, 1000, "message 2"),
		req("midnight", "date-in-system-prompt", 1, 2, 1, 3, 2100, 2000, 2000, 100, "message 4"),
		req("midnight", "date-in-system-prompt", 1, 4, 2, 2, 3100, 3000, 3000, 100, "message 7"),
	}
}

func one(e Expectation) *File { return &File{Path: "c.yaml", Repeat: 1, Expect: []Expectation{e}} }

func TestEvaluateMinCachedShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Expectation
		// want are the failing (arm, request) pairs.
		want []string
	}{
		{"spec holds at 0.45", Expectation{Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.45), FromRequest: 1}, nil},
		{"spec fails at 0.55 at request 1 and the turn start", Expectation{Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.55), FromRequest: 1}, []string{"spec 1 1", "spec 1 3"}},
		{"exactly at the threshold holds", Expectation{Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.5), FromRequest: 1}, nil},
		{"except turn starts", Expectation{Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.9), FromRequest: 2, ExceptTurnStarts: true}, nil},
		{"request 1 counts from 1", Expectation{Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.9), FromRequest: 1, ExceptTurnStarts: true}, []string{"spec 1 1"}},
		{"from request 0 checks the cold start", Expectation{Scenario: "midnight", Arm: "spec", MinCachedShare: ptr(0.1), FromRequest: 0}, []string{"spec 1 0"}},
		{"the date arm falls at midnight", Expectation{Scenario: "midnight", Arm: "*", MinCachedShare: ptr(0.45), FromRequest: 1}, []string{"date-in-system-prompt 1 3"}},
		{"from beyond the last request checks no request: fails", Expectation{Scenario: "midnight", Arm: "*", MinCachedShare: ptr(1.0), FromRequest: 9}, []string{"* 0 -"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Evaluate(one(tc.e), midnight())
			o := res.Expectations[0]
			var got []string
			for _, f := range o.Failures {
				r := "-"
				if f.Request != nil {
					r = itoa(*f.Request)
				}
				got = append(got, strings.Join([]string{f.Arm, itoa(f.Repetition), r}, " "))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("failures (-want +got):\n%s", d)
			}
			wantStatus := Held
			if len(tc.want) > 0 {
				wantStatus = Failed
			}
			if o.Status != wantStatus || res.OK() != (wantStatus == Held) {
				t.Errorf("status %s, OK %v; want %s", o.Status, res.OK(), wantStatus)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// The failure names the share, its source and the first divergent segment.
func TestEvaluateMinCachedShareFailure(t *testing.T) {
	res := Evaluate(one(Expectation{Line: 7, Scenario: "midnight", Arm: "date-in-system-prompt", MinCachedShare: ptr(0.9), FromRequest: 3}), midnight())
	o := res.Expectations[0]
	if len(o.Failures) != 1 {
		t.Fatalf("failures %+v; want 1", o.Failures)
	}
	f := o.Failures[0]
	if f.Request == nil || *f.Request != 3 || f.Value != 5.0/3000 || f.CachedSource != "simulation" || f.DivergenceSegment != "system" || f.Message != "cached share 0.002 < 0.9" {
		t.Errorf("failure %+v", f)
	}
	if o.Checked != 2 || !cmp.Equal(o.CachedSources, []string{"simulation"}) {
		t.Errorf("checked %d, sources %v; want 2, [simulation]", o.Checked, o.CachedSources)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	want := "FAIL midnight/date-in-system-prompt rep 1 request 3: cached share 0.002 < 0.9 (cached tokens: simulation; first divergence: system) [c.yaml:7]\n1 expectation, 0 held, 1 failed\n"
	if buf.String() != want {
		t.Errorf("WriteText =\n%s\nwant\n%s", buf.String(), want)
	}
}

// Without cached_tokens the share comes from expected_cached_tokens, and says so.
func TestEvaluateMinCachedShareExpected(t *testing.T) {
	ss := []metrics.Sample{
		req("s", "spec", 1, 1, 1, 2, 1000, -1, 400, 600, "message 2"),
		req("s", "spec", 1, 2, 1, 3, 1000, 900, 100, 100, "message 4"),
	}
	res := Evaluate(one(Expectation{Scenario: "s", Arm: "spec", MinCachedShare: ptr(0.5), FromRequest: 1}), ss)
	o := res.Expectations[0]
	if len(o.Failures) != 1 || o.Failures[0].CachedSource != CachedExpected || o.Failures[0].Value != 0.4 {
		t.Fatalf("failures %+v; want request 1 at 0.4 from expected", o.Failures)
	}
	if !cmp.Equal(o.CachedSources, []string{CachedExpected, "simulation"}) {
		t.Errorf("sources %v", o.CachedSources)
	}
	if got := failureLine(&o.Failures[0]); !strings.Contains(got, "expected cached tokens: the server did not say") {
		t.Errorf("failure line %q", got)
	}
}

// A request that ended with an error fails a cached share expectation.
func TestEvaluateMinCachedShareErroredRequest(t *testing.T) {
	s := req("s", "spec", 1, 1, 1, 2, 1000, 1000, 1000, 0, "")
	s.Error = "connection reset"
	res := Evaluate(one(Expectation{Scenario: "s", Arm: "spec", MinCachedShare: ptr(0.5), FromRequest: 1}), []metrics.Sample{s})
	if f := res.Expectations[0].Failures; len(f) != 1 || f[0].Message != "the request failed: connection reset (its session is left out)" {
		t.Fatalf("failures %+v", f)
	}
}

func TestEvaluateNoDivergenceBefore(t *testing.T) {
	ss := append(midnight(),
		req("late-mcp", "spec", 1, 1, 1, 2, 2000, 1000, 1000, 1000, "tools"),
		req("late-mcp", "spec", 1, 2, 1, 3, 2000, 1000, 1000, 1000, "generation prompt"),
		req("odd", "spec", 1, 1, 1, 2, 2000, 1000, 1000, 1000, "prologue"),
	)
	for _, tc := range []struct {
		name string
		e    Expectation
		want []string
	}{
		{"spec keeps the system prompt", Expectation{Scenario: "midnight", Arm: "spec", NoDivergenceBefore: SegmentTools, FromRequest: 1}, nil},
		{"the date arm breaks it", Expectation{Scenario: "midnight", Arm: "*", NoDivergenceBefore: SegmentTools, FromRequest: 1}, []string{"midnight/date-in-system-prompt 3: diverged in system, before tools"}},
		{"tools is allowed before conversation only", Expectation{Scenario: "late-mcp", Arm: "spec", NoDivergenceBefore: SegmentTools, FromRequest: 1}, nil},
		{"tools breaks conversation", Expectation{Scenario: "late-mcp", Arm: "spec", NoDivergenceBefore: SegmentConversation, FromRequest: 0}, []string{"late-mcp/spec 1: diverged in tools, before conversation"}},
		{"from request 4", Expectation{Scenario: "*", Arm: "date-in-system-prompt", NoDivergenceBefore: SegmentConversation, FromRequest: 4}, nil},
		{"an unknown segment fails", Expectation{Scenario: "odd", Arm: "spec", NoDivergenceBefore: SegmentTools, FromRequest: 1}, []string{`odd/spec 1: diverged in "prologue", a segment lab check does not know`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Evaluate(one(tc.e), ss).Expectations[0]
			var got []string
			for _, f := range o.Failures {
				got = append(got, f.Scenario+"/"+f.Arm+" "+itoa(*f.Request)+": "+f.Message)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("failures (-want +got):\n%s", d)
			}
		})
	}
}

func TestEvaluateMaxRereadTokens(t *testing.T) {
	ss := midnight()
	// A second repetition of the spec arm re-reads 1,000 tokens more: the mean is 3,700 + 500.
	ss = append(ss, req("midnight", "spec", 2, 0, 1, 1, 1000, 0, 0, 1000, ""), req("midnight", "spec", 2, 1, 1, 2, 4000, 200, 200, 3800, "system"))
	// spec: rep 1 3,700, rep 2 4,800: mean 4,250. date: 5,195.
	for _, tc := range []struct {
		name string
		max  int64
		want []string
	}{
		{"both hold", 5195, nil},
		{"the date arm fails", 5194, []string{"date-in-system-prompt 5195"}},
		{"exactly the mean holds", 4250, []string{"date-in-system-prompt 5195"}},
		{"both fail", 4249, []string{"spec 4250", "date-in-system-prompt 5195"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Evaluate(one(Expectation{Scenario: "*", Arm: "*", MaxRereadTokens: ptr(tc.max)}), ss).Expectations[0]
			var got []string
			for _, f := range o.Failures {
				got = append(got, f.Arm+" "+itoa(int(f.Value)))
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("failures (-want +got):\n%s", d)
			}
			if o.Checked != 2 {
				t.Errorf("checked %d pairs; want 2", o.Checked)
			}
		})
	}
	o := Evaluate(one(Expectation{Scenario: "midnight", Arm: "spec", MaxRereadTokens: ptr(int64(100))}), ss).Expectations[0]
	f := o.Failures[0]
	if f.Repetition != 0 || f.Request != nil || *f.MaxRequest != 1 || f.MaxRepetition != 2 || f.MaxRequestTokens != 3800 || f.DivergenceSegment != "system" {
		t.Errorf("failure %+v; want the whole pair, worst at rep 2 request 1", f)
	}
	if got, want := failureLine(&f), "midnight/spec: re-read tokens 4,250 > 100 (mean of 2 repetitions) (most in rep 2 request 1: 3,800 tokens; first divergence: system)"; got != want {
		t.Errorf("failure line\n%q; want\n%q", got, want)
	}
}

// An expectation that matches no samples fails: a gate must not pass on nothing.
func TestEvaluateNoSamples(t *testing.T) {
	res := Evaluate(one(Expectation{Scenario: "edit-loop", Arm: "spec", MaxRereadTokens: ptr(int64(1))}), midnight())
	o := res.Expectations[0]
	if o.Status != Failed || len(o.Failures) != 1 || o.Failures[0].Message != "no requests of edit-loop/spec in the samples" {
		t.Fatalf("outcome %+v", o)
	}
}

// The text and JSON output of a file with three expectations, one failing, from fixed input.
func TestWrite(t *testing.T) {
	f, err := Parse("checks/x.yaml", []byte(`expect:
  - scenario: midnight
    arm: "*"
    no_divergence_before: tools
  - scenario: midnight
    arm: spec
    min_cached_share: 0.45
  - scenario: "*"
    arm: "*"
    max_reread_tokens: 6000
`), testKnown)
	if err != nil {
		t.Fatal(err)
	}
	res := Evaluate(f, midnight())
	if res.Held != 2 || res.Failed != 1 {
		t.Fatalf("held %d, failed %d; want 2, 1", res.Held, res.Failed)
	}
	var text, js bytes.Buffer
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "TestWrite.golden.txt", text.Bytes())
	golden.Check(t, "TestWrite.golden.json", js.Bytes())
	var back Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("the JSON does not decode: %v", err)
	}
	if d := cmp.Diff(res, &back); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
}

// Text output caps the failures of one expectation.
func TestWriteTextCapsFailures(t *testing.T) {
	var ss []metrics.Sample
	for i := range 15 {
		ss = append(ss, req("s", "spec", 1, i+1, 1, i+2, 1000, 0, 0, 1000, "system"))
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, Evaluate(one(Expectation{Line: 3, Scenario: "s", Arm: "spec", NoDivergenceBefore: SegmentTools, FromRequest: 1}), ss)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != MaxTextFailures+2 || !strings.Contains(lines[MaxTextFailures], "… and 5 more failures") {
		t.Errorf("WriteText =\n%s", buf.String())
	}
}

// A backend that records no divergence (expected_unknown: a cloud API) fails
// no_divergence_before instead of passing it vacuously, and a request with neither cached nor
// expected cached tokens fails min_cached_share.
func TestEvaluateExpectedUnknown(t *testing.T) {
	var ss []metrics.Sample
	for i := range 3 {
		s := req("s", "spec", 1, i, 1, i+1, 1000, -1, 0, 1000, "")
		s.ExpectedUnknown, s.ExpectedCachedTokens = true, nil
		ss = append(ss, s)
	}
	res := Evaluate(one(Expectation{Line: 4, Scenario: "s", Arm: "spec", NoDivergenceBefore: SegmentTools, FromRequest: 1}), ss)
	o := res.Expectations[0]
	if o.Status != Failed || len(o.Failures) != 2 || !strings.Contains(o.Failures[0].Message, "the backend records no divergence") {
		t.Errorf("no_divergence_before over unknown divergences: %s, %+v; want 2 failures naming it", o.Status, o.Failures)
	}
	res = Evaluate(one(Expectation{Scenario: "s", Arm: "spec", MinCachedShare: ptr(0.0), FromRequest: 1}), ss)
	o = res.Expectations[0]
	if o.Status != Failed || len(o.Failures) != 2 || !strings.Contains(o.Failures[0].Message, "no cached share") || len(o.CachedSources) != 0 {
		t.Errorf("min_cached_share with nothing known: %s, %+v, sources %v", o.Status, o.Failures, o.CachedSources)
	}
}

// An interrupted run: its last session is left out (not averaged into max_reread_tokens),
// counted, and listed by WriteText; the expectation is checked on the complete sessions.
func TestEvaluateRunsInterrupted(t *testing.T) {
	var ss []metrics.Sample
	for rep := 1; rep <= 2; rep++ {
		for i := range 3 {
			s := req("s", "spec", rep, i, 1, i+1, 1000, 500, 500, 500, "")
			s.RunID, s.StartedAt = "r", s.StartedAt.Add(time.Duration(10*rep+i)*time.Second)
			ss = append(ss, s)
		}
	}
	ss = ss[:5] // repetition 2 cut after request 1
	f := one(Expectation{Line: 3, Scenario: "s", Arm: "spec", MaxRereadTokens: ptrInt(1500)})
	// Without the manifest the cut repetition (1,000 re-read tokens) is averaged in: 1,250.
	if o := Evaluate(f, ss).Expectations[0]; o.Status != Held || o.Checked != 1 || o.LeftOut != 0 {
		t.Fatalf("without manifest: %+v", o)
	}
	res := EvaluateRuns(f, []*metrics.Manifest{{RunID: "r", Complete: false}}, ss)
	o := res.Expectations[0]
	if o.Status != Held || o.LeftOut != 1 || len(res.LeftOut) != 1 || res.LeftOut[0].Repetition != 2 {
		t.Fatalf("interrupted run: %+v, left out %+v", o, res.LeftOut)
	}
	f.Expect[0].MaxRereadTokens = ptrInt(1400) // repetition 1 re-read 1,500: fails now, held with the cut one averaged in
	res = EvaluateRuns(f, []*metrics.Manifest{{RunID: "r", Complete: false}}, ss)
	if res.Expectations[0].Status != Failed || !strings.Contains(res.Expectations[0].Failures[0].Message, "re-read tokens 1,500 > 1,400 (mean of 1 repetition)") {
		t.Errorf("failures %+v", res.Expectations[0].Failures)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "LEFT OUT s/spec repetition 2 of run r: the run was interrupted during this session (2 requests measured)\n") {
		t.Errorf("WriteText:\n%s", buf.String())
	}
}

func ptrInt(v int64) *int64 { return &v }

// A later system or developer message ("system N", "developer N", as cachesim names them) lies in
// the conversation: a divergence there is after the tool list, and lab check knows the name.
func TestEvaluateLaterSystemMessage(t *testing.T) {
	var ss []metrics.Sample
	for i, seg := range []string{"", "system 3", "developer 5"} {
		ss = append(ss, req("s", "spec", 1, i, 1, i+1, 1000, 900, 900, 100, seg))
	}
	res := Evaluate(one(Expectation{Line: 2, Scenario: "s", Arm: "spec", NoDivergenceBefore: SegmentTools}), ss)
	if o := res.Expectations[0]; o.Status != Held || len(o.Failures) != 0 {
		t.Errorf("no_divergence_before tools over later system messages: %s, %+v; want held", o.Status, o.Failures)
	}
	res = Evaluate(one(Expectation{Line: 2, Scenario: "s", Arm: "spec", NoDivergenceBefore: SegmentConversation}), ss)
	if o := res.Expectations[0]; o.Status != Held {
		t.Errorf("no_divergence_before conversation: %s, %+v; want held (they lie in the conversation)", o.Status, o.Failures)
	}
}
