package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"lab/metrics"
	"lab/row"
)

func TestFirstDifference(t *testing.T) {
	a := []byte(`{"messages":[{"role":"system","content":"You are a coding agent. Today is Monday."}]}`)
	b := []byte(`{"messages":[{"role":"system","content":"You are a coding agent. Today is Tuesday."}]}`)
	off, before, after := FirstDifference(a, b)
	if want := strings.Index(string(a), "Monday"); off != want {
		t.Fatalf("offset %d, want %d", off, want)
	}
	if !strings.Contains(before, "Monday") || !strings.Contains(after, "Tuesday") || strings.Contains(before, "Tuesday") {
		t.Errorf("excerpts %q / %q", before, after)
	}
	if !strings.HasPrefix(before, "…") || !strings.Contains(before, "Today is ") {
		t.Errorf("before %q: want shared context before the difference", before)
	}
	if off, _, _ := FirstDifference(a, a); off != -1 {
		t.Errorf("equal bodies: offset %d, want -1", off)
	}
	// An appended message: the difference is where the shorter body ends its list.
	c := []byte(`{"m":[1]}`)
	d := []byte(`{"m":[1,2]}`)
	if off, _, _ := FirstDifference(c, d); off != 7 {
		t.Errorf("appended: offset %d, want 7", off)
	}
	// Never cut a UTF-8 character.
	e := []byte(strings.Repeat("é", 40) + "a")
	f := []byte(strings.Repeat("é", 40) + "b")
	_, x, y := FirstDifference(e, f)
	if !json.Valid([]byte(`"`+x+`"`)) || !strings.HasSuffix(x, "a") || !strings.HasSuffix(y, "b") {
		t.Errorf("utf-8 excerpts %q / %q", x, y)
	}
}

func TestAgentsReport(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	rows := []metrics.Sample{
		{Scenario: "s1", RequestIndex: 0, StartedAt: t0, PromptTokens: 1000, CachedTokens: i64(0), ExpectedCachedTokens: i64(0), RereadTokens: i64(0)},
		{Scenario: "s1", RequestIndex: 1, StartedAt: t0.Add(time.Second), PromptTokens: 1200, CachedTokens: i64(995), ExpectedCachedTokens: i64(1000), RereadTokens: i64(0), DivergenceSegment: "message"},
		{Scenario: "s1", RequestIndex: 2, StartedAt: t0.Add(2 * time.Second), PromptTokens: 1300, CachedTokens: i64(40), ExpectedCachedTokens: i64(1200), RereadTokens: i64(1160), DivergenceSegment: "system", Warnings: "prompt cut to the window"},
		{Scenario: "s1", RequestIndex: 3, StartedAt: t0.Add(3 * time.Second), PromptTokens: 1400, CachedTokens: i64(1300)},
		{Scenario: "s2", RequestIndex: 0, StartedAt: t0.Add(4 * time.Second), PromptTokens: 300, CachedTokens: i64(0), ExpectedCachedTokens: i64(0), RereadTokens: i64(0), SideRequest: true},
	}
	bodies := []row.RequestLine{
		{Scenario: "s1", RequestIndex: 0, Body: json.RawMessage(`{"system":"date 1","messages":["hi"]}`)},
		{Scenario: "s1", RequestIndex: 1, Body: json.RawMessage(`{"system":"date 1","messages":["hi","ok"]}`)},
		{Scenario: "s1", RequestIndex: 2, Body: json.RawMessage(`{"system":"date 2","messages":["hi","ok"]}`)},
		{Scenario: "s1", RequestIndex: 3, Body: json.RawMessage(`{"system":"date 2","messages":["hi","ok","more"]}`)},
	}
	run := AgentRun{Agent: "pi", Version: "1.0", Rows: rows, Bodies: bodies}
	reqs := AgentRequests(run)
	if len(reqs) != 5 || !reqs[4].Side || reqs[3].Side {
		t.Fatalf("%d requests, side %v", len(reqs), reqs[4].Side)
	}
	reqs = reqs[:4]
	run.Rows = rows[:4]
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if reqs[0].Offset != -1 {
		t.Errorf("first request: offset %d, want -1", reqs[0].Offset)
	}
	if want := strings.Index(string(bodies[1].Body), `,"ok"`); reqs[1].Offset != want {
		t.Errorf("request 1: offset %d, want %d", reqs[1].Offset, want)
	}
	if want := strings.Index(string(bodies[2].Body), `2"`); reqs[2].Offset != want || !strings.Contains(reqs[2].After, "date 2") {
		t.Errorf("request 2: offset %d (want %d), after %q", reqs[2].Offset, want, reqs[2].After)
	}
	if !reqs[0].Match || !reqs[1].Match || reqs[2].Match || reqs[3].Match {
		t.Errorf("matches %v %v %v %v, want true true false false", reqs[0].Match, reqs[1].Match, reqs[2].Match, reqs[3].Match)
	}
	if !strings.Contains(reqs[2].Reason, "cached 40, expected 1200") || !strings.Contains(reqs[2].Reason, "prompt cut") {
		t.Errorf("reason %q", reqs[2].Reason)
	}
	if reqs[3].Reason != "expected cached tokens unknown" {
		t.Errorf("reason %q", reqs[3].Reason)
	}
	s := SummarizeAgent(run, reqs)
	if s.Requests != 4 || s.Matched != 2 || s.Reread != 1160 || s.Cached != 2335 || s.Prompt != 4900 {
		t.Errorf("summary %+v", s)
	}
	if e := s.Efficiency(); e == nil || *e != float64(1035)/2200 {
		t.Errorf("efficiency %v, want %v", e, float64(1035)/2200)
	}
	var b strings.Builder
	failed := AgentRun{Agent: "codex", Version: "0.1", Error: "npm install: exit status 1"}
	run.Rows = rows
	run.ScriptSteps, run.ScriptServed = 20, 19
	run.ScriptNotes = []string{"turn 3 step 4 (run seq 1 3000): skipped, no tool for run"}
	if err := WriteAgentsReport(&b, []AgentRun{run, failed}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| pi | 1.0 | 5 | 44.9% | 1160 (1 unknown) | 47.0% | 3/5 |",
		"| codex | 0.1 | 0 | — | unknown | — | – | npm install: exit status 1 |",
		"Not measured: npm install: exit status 1",
		// Markdown: the Go-quoted bodies' backslashes escaped, so that they show.
		`byte 16: "{\\"system\\":\\"date 1\\",`, `→ "{\\"system\\":\\"date 2\\",`,
		"| s1 | 2 | 1300 | 40 | 1200 | 1160 | 3.1% | 3.3% | system |",
		"| s2 (side) | 0 | 300 | 0 | 0 | 0 | 0.0% |",
		"The script: 19 of 20 steps served.\n- turn 3 step 4 (run seq 1 3000): skipped, no tool for run\n",
		"expected cached tokens unknown",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
