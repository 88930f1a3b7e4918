package report_test

import (
	"bytes"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// prefillFixture is one run "busy", scenario midnight, arms spec and date-in-system-prompt, two
// repetitions of four requests each (prompts 1000, 1100, 1200, 1300 tokens). Re-read tokens:
// request 0 500, whose prefill time is unknown (0) and must not count; requests 1 and 2 spec
// 100, date 200; request 3 (the cliff) 1200. Prefill costs spec 1 ms per re-read token and the
// date arm factor ms.
func prefillFixture(factor float64) []metrics.Sample {
	var out []metrics.Sample
	for rep := int32(1); rep <= 2; rep++ {
		for _, arm := range []string{metrics.SpecArm, report.CliffArm} {
			perToken, reread := 1e6, int64(100)
			if arm == report.CliffArm {
				perToken, reread = factor*1e6, 200
			}
			for i := int32(0); i < 4; i++ {
				s := metrics.Sample{RunID: "busy", Scenario: "midnight", Arm: arm, Repetition: rep, RequestIndex: i,
					Backend: "ollama", PromptTokens: 1000 + int64(i)*100, RereadTokens: new(reread)}
				switch i {
				case 0:
					s.RereadTokens = new(int64(500))
				case 3:
					s.RereadTokens = new(int64(1200))
				}
				s.PrefillNs = int64(perToken * float64(*s.RereadTokens))
				if i == 0 {
					s.PrefillNs = 0
				}
				s.CachedTokens = new(s.PromptTokens - *s.RereadTokens)
				s.ExpectedCachedTokens = new(*s.CachedTokens)
				out = append(out, s)
			}
		}
	}
	return out
}

func TestPrefillNotComparable(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "busy", Backend: "ollama", ServerVersion: "0.17.4", Model: "m", Complete: true,
		Settings: map[string]string{"ollama_flash_attention": "0"}}}
	for _, tc := range []struct {
		factor     float64
		comparable bool
	}{{3, false}, {1.5, true}} {
		a := report.AnalyzeRuns(runs, prefillFixture(tc.factor))
		p := a.Claims.Prefill
		if len(p) != 1 || len(p[0].Arms) != 2 || p[0].Spread == nil {
			t.Fatalf("factor %g: prefill checks %+v; want one run with two arms", tc.factor, p)
		}
		c := p[0]
		if !near(*c.Spread, tc.factor, 1e-9) || c.Comparable != tc.comparable || c.Modelled != "" {
			t.Errorf("factor %g: spread %v, comparable %v, modelled %q; want %g, %v, measured", tc.factor, *c.Spread, c.Comparable, c.Modelled, tc.factor, tc.comparable)
		}
		// spec: 6 requests, 2 × (100 + 100 + 1200) re-read tokens at 1 ms each (the unknown prefill left out).
		if s := c.Arms[0]; s.Arm != metrics.SpecArm || s.Requests != 6 || s.RereadTokens != 2800 || s.SecondsPerToken == nil || !near(*s.SecondsPerToken, 1e-3, 1e-15) {
			t.Errorf("factor %g: spec %+v", tc.factor, s)
		}
		if !strings.Contains(c.Setup, "ollama 0.17.4") || !strings.Contains(c.Setup, "ollama_flash_attention=0") {
			t.Errorf("setup %q; want the server and its flash attention setting", c.Setup)
		}
		var b bytes.Buffer
		if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		// The scenario table's row keeps its token figures; its prefill cell says whether it may be compared.
		var row string
		for _, line := range strings.Split(md, "\n") {
			if strings.HasPrefix(line, "| date-in-system-prompt | 2 | 4 ± 0 |") {
				row = line
			}
		}
		if row == "" || !strings.Contains(row, "| 2,100 ± 0 |") {
			t.Fatalf("factor %g: no date arm row with its 2,100 re-read tokens (the request without prefill included):\n%s", tc.factor, md)
		}
		if got := strings.Contains(row, "not comparable"); got == tc.comparable {
			t.Errorf("factor %g: date row %q; want \"not comparable\" %v", tc.factor, row, !tc.comparable)
		}
		if !tc.comparable {
			for _, want := range []string{"one arm's prefill per re-read token is 3.00× that of another (more than 2×)",
				"| spec | 3 | 1,300 ± 0 | 91.7% ± 0.0% | 7.7% ± 0.0% | 1,200 ± 0 | not comparable |"} {
				if !strings.Contains(md, want) {
					t.Errorf("factor 3: report.md lacks %q:\n%s", want, md)
				}
			}
		} else if !strings.Contains(md, "the arms agree within 1.50×") || strings.Contains(md, "not comparable |") ||
			!strings.Contains(md, "| spec | 3 | 1,300 ± 0 | 91.7% ± 0.0% | 7.7% ± 0.0% | 1,200 ± 0 | 1.20 ± 0.00 |") {
			t.Errorf("factor 1.5: report.md does not call the prefill times comparable:\n%s", md)
		}
	}
}

// A sim run's prefill is modelled: the check says so and names the model.
func TestPrefillModelledOnSim(t *testing.T) {
	t.Parallel()
	rows := prefillFixture(3)
	for i := range rows {
		rows[i].Backend = "sim"
	}
	runs := []*metrics.Manifest{{RunID: "busy", Backend: "sim", Complete: true, Settings: map[string]string{"prefill": "300µs per token (placeholder)"}}}
	a := report.AnalyzeRuns(runs, rows)
	if p := a.Claims.Prefill; len(p) != 1 || p[0].Modelled != "300µs per token (placeholder)" {
		t.Fatalf("prefill checks %+v; want the sim's prefill model", p)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "prefill is modelled, not measured (300µs per token (placeholder))") {
		t.Errorf("report.md does not say the prefill is modelled:\n%s", b.String())
	}
	// Without the manifest the rows still say sim.
	if p := report.Analyze(rows).Claims.Prefill; len(p) != 1 || p[0].Modelled != "modelled" {
		t.Errorf("without a manifest: %+v; want modelled", p)
	}
}

// reasoningFixture is scenario s, arms spec and reasoning-never, reps repetitions, two turns of
// three steps each. Re-read tokens per request: the first request 1000 in both arms; the steps
// inside a turn, spec 100 + rep and never 150 + 3·rep; the first request of turn 2, spec 800 +
// 10·rep (the template dropped its reasoning) and never 200. Live sessions generate reasoning:
// spec 50 per step, never 80 + rep.
func reasoningFixture(reps int32, driver, backend string) []metrics.Sample {
	var out []metrics.Sample
	for rep := int32(1); rep <= reps; rep++ {
		for _, arm := range []string{metrics.SpecArm, report.ReasoningNeverArm} {
			idx := int32(0)
			for turn := int32(1); turn <= 2; turn++ {
				for step := int32(1); step <= 3; step++ {
					var reread, reasoning int64
					switch {
					case turn == 1 && step == 1:
						reread = 1000
					case step == 1 && arm == metrics.SpecArm:
						reread = 800 + 10*int64(rep)
					case step == 1:
						reread = 200
					case arm == metrics.SpecArm:
						reread = 100 + int64(rep)
					default:
						reread = 150 + 3*int64(rep)
					}
					if driver == metrics.DriverLive {
						reasoning = 50
						if arm != metrics.SpecArm {
							reasoning = 80 + int64(rep)
						}
					}
					out = append(out, metrics.Sample{RunID: "r", Scenario: "s", Arm: arm, Repetition: rep, RequestIndex: idx,
						Turn: turn, Step: step, Kind: metrics.KindStep, Driver: driver, Backend: backend, Model: "lab-qwen3-synth",
						PromptTokens: 5000, CachedTokens: new(5000 - reread), ExpectedCachedTokens: new(5000 - reread), RereadTokens: new(reread),
						ReasoningTokensGenerated: new(reasoning)})
					idx++
				}
			}
			// A compaction request counts in neither part.
			out = append(out, metrics.Sample{RunID: "r", Scenario: "s", Arm: arm, Repetition: rep, RequestIndex: idx, Turn: 2, Step: 4,
				Kind: metrics.KindCompaction, Driver: driver, Backend: backend, PromptTokens: 5000, CachedTokens: new(int64(0)), RereadTokens: new(int64(5000))})
		}
	}
	return out
}

func TestReasoningClaimSplit(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "r", Backend: "sim", Complete: true, Settings: map[string]string{"renderer": "qwen3.5"}}}
	a := report.AnalyzeRuns(runs, reasoningFixture(3, metrics.DriverScripted, "sim"))
	if len(a.Claims.Reasoning) != 1 {
		t.Fatalf("reasoning claims %+v; want one", a.Claims.Reasoning)
	}
	rc := a.Claims.Reasoning[0]
	if rc.Pairs != 3 || rc.Driver != metrics.DriverScripted || rc.Behaviour != nil {
		t.Errorf("pairs %d, driver %q, behaviour %+v; want 3, scripted, none", rc.Pairs, rc.Driver, rc.Behaviour)
	}
	// Inside a turn: 4 steps per repetition; spec 4·(100+rep) = 404..412 (mean 408), never
	// 4·(150+3rep) = 612..636 (mean 624).
	w := rc.WithinTurn
	if w.SpecRequests != 12 || w.NeverRequests != 12 || w.Spec.Mean != 408 || w.Never.Mean != 624 || w.Diff.Mean != 216 ||
		w.Saved == nil || !near(*w.Saved, 1-408.0/624, 1e-12) || w.SavedCI == nil || !w.SavedCI.Contains(*w.Saved) {
		t.Errorf("inside a turn %+v", w)
	}
	// At the new user message: spec 810..830 (mean 820), never 200.
	n := rc.NewUserMessage
	if n.SpecRequests != 3 || n.Spec.Mean != 820 || n.Never.Mean != 200 || n.Diff.Mean != -620 || n.Saved == nil || !near(*n.Saved, 1-820.0/200, 1e-12) {
		t.Errorf("new user message %+v", n)
	}
	if rc.Template.Name != "Ollama's qwen3.5 renderer" || !strings.Contains(w.Rule, "no </think> before a tool call") ||
		!strings.Contains(n.Rule, "drops earlier turns' reasoning at a new user message") {
		t.Errorf("template %+v; want the qwen3.5 renderer's rules", rc.Template)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| s | steps inside a turn | 3 | 624 ± 30 | 408 ± 10 | +216 ± 20 | 34.6% [33.0%, 36.1%] |",
		"| s | first after a new user message | 3 | 200 ± 0 | 820 ± 25 | -620 ± 25 | -310.0% [",
		"the prompt was rendered by Ollama's qwen3.5 renderer (from the run's renderer setting)",
		"- Steps inside a turn: Ollama's qwen3.5 renderer writes no &lt;/think&gt; before a tool call without text",
		"- First after a new user message: The Qwen3 format drops earlier turns' reasoning",
		"the figures above are the cache effect of sending reasoning back under this chat template, and no verdict on the spec's claim",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	// "What the template does" checks §8's sentence on templates, a cache effect a scripted
	// run decides; the claim about the model's behaviour is in the claims' section.
	claimsPart := md[strings.Index(md, "## The spec's claims"):]
	if strings.Contains(claimsPart, "does not hold") || strings.Contains(claimsPart, "| holds |") {
		t.Errorf("a scripted run's report gives a verdict on the reasoning claim:\n%s", md)
	}
	for _, want := range []string{"## What the template does", "§8 does not hold — at 3 new user messages spec re-read 820 tokens per request, reasoning-never 200; the spec arm re-read 620 more tokens"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// The chat template comes from the data or is unknown.
func TestReasoningClaimTemplate(t *testing.T) {
	t.Parallel()
	rows := reasoningFixture(1, metrics.DriverScripted, "ollama")
	for _, tc := range []struct {
		model, name      string
		within, newUser  bool
		unknownParagraph bool
	}{
		// No renderer in the manifest: the model's name gives the family, which names the rule at
		// a new user message only.
		{"qwen3:8b", "the Qwen3 chat format", false, true, false},
		{"lab-qwen3-synth", "the Qwen3 chat format", false, true, false},
		{"llama3.1:8b", "", false, false, true},
	} {
		for i := range rows {
			rows[i].Model = tc.model
		}
		a := report.AnalyzeRuns([]*metrics.Manifest{{RunID: "r", Backend: "ollama", Complete: true}}, rows)
		rc := a.Claims.Reasoning[0]
		if rc.Template.Name != tc.name || (rc.WithinTurn.Rule != "") != tc.within || (rc.NewUserMessage.Rule != "") != tc.newUser {
			t.Errorf("model %s: template %+v; want %q, rules %v %v", tc.model, rc.Template, tc.name, tc.within, tc.newUser)
		}
		var b bytes.Buffer
		if err := report.Markdown(&b, &report.Report{Runs: []*metrics.Manifest{{RunID: "r", Backend: "ollama", Complete: true}}, Analysis: a}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "the chat template is unknown"); got != tc.unknownParagraph {
			t.Errorf("model %s: \"the chat template is unknown\" %v; want %v", tc.model, got, tc.unknownParagraph)
		}
		if tc.newUser && !strings.Contains(b.String(), "- Steps inside a turn: unknown") {
			t.Errorf("model %s: the rule inside a turn is not called unknown:\n%s", tc.model, b.String())
		}
	}
}

// Only live sessions of a model judge the behaviour claim, with their intervals.
func TestReasoningClaimLiveVerdict(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "r", Backend: "ollama", Complete: true}}
	a := report.AnalyzeRuns(runs, reasoningFixture(3, metrics.DriverLive, "ollama"))
	rc := a.Claims.Reasoning[0]
	// Reasoning generated per session: spec 6·50 = 300, never 6·(80+rep) = 486, 492, 498.
	if b := rc.Behaviour; b == nil || b.Verdict != report.VerdictHolds || b.ReasoningGenerated.Mean != 192 || b.ReasoningGenerated.CI == nil {
		t.Fatalf("behaviour %+v; want holds, +192 reasoning tokens with an interval", rc.Behaviour)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if want := "| s | 3 | 192 [177.1, 206.9] | 216 [196.1, 235.9] | 34.6% [33.0%, 36.1%] | holds |"; !strings.Contains(b.String(), want) {
		t.Errorf("report.md lacks the verdict row %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "cache effect of sending reasoning back") {
		t.Errorf("a live run's report calls its figures a cache effect only")
	}

	// One repetition: no interval, no verdict.
	a = report.AnalyzeRuns(runs, reasoningFixture(1, metrics.DriverLive, "ollama"))
	if b := a.Claims.Reasoning[0].Behaviour; b == nil || b.Verdict != report.VerdictNoInterval {
		t.Errorf("one repetition: behaviour %+v; want no interval", b)
	}
	b.Reset()
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| no verdict: no interval (fewer than 2 repetitions, or no step inside a turn) |") {
		t.Errorf("one repetition: report.md gives a verdict:\n%s", b.String())
	}
	// The sim's live driver replays the scenario: no behaviour to judge.
	a = report.AnalyzeRuns([]*metrics.Manifest{{RunID: "r", Backend: "sim", Complete: true}}, reasoningFixture(3, metrics.DriverLive, "sim"))
	if b := a.Claims.Reasoning[0].Behaviour; b != nil {
		t.Errorf("sim live driver: behaviour %+v; want none", b)
	}
}

// The behaviour verdict follows the intervals: reasoning-never generating less reasoning than
// spec (interval below 0) does not hold; an interval across 0 is undecided.
func TestReasoningClaimLiveVerdictIntervals(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "r", Backend: "ollama", Complete: true}}
	for _, tc := range []struct {
		never func(rep int32) int64 // reasoning generated per step by reasoning-never
		want  string
	}{
		{func(rep int32) int64 { return 20 + int64(rep) }, report.VerdictDoesNotHold},
		{func(rep int32) int64 { return 50 + 10*int64(rep-2) }, report.VerdictUndecided},
	} {
		rows := reasoningFixture(3, metrics.DriverLive, "ollama")
		for i := range rows {
			if rows[i].Arm == report.ReasoningNeverArm && rows[i].Kind == metrics.KindStep {
				rows[i].ReasoningTokensGenerated = new(tc.never(rows[i].Repetition))
			}
		}
		b := report.AnalyzeRuns(runs, rows).Claims.Reasoning[0].Behaviour
		if b == nil || b.Verdict != tc.want {
			t.Errorf("behaviour %+v; want %q", b, tc.want)
		}
	}
}

// A request whose re-read tokens are unknown (neither cached nor expected cached tokens known)
// makes its repetition's figure for that part unknown: the repetition is left out of the part's
// pairs, never counted as if the request re-read 0. An arm unknown everywhere gives no figure.
func TestReasoningClaimUnknownRereads(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "r", Backend: "ollama", Complete: true}}
	unknown := func(s *metrics.Sample) {
		s.CachedTokens, s.ExpectedCachedTokens, s.ExpectedUnknown, s.RereadTokens = nil, nil, true, nil
	}

	// Repetition 1 of spec: one step inside turn 1 unknown. Inside a turn only repetitions 2 and
	// 3 pair (spec 4·(100+rep): 408, 412; never 4·(150+3rep): 624, 636); the new user message
	// part keeps all three.
	rows := reasoningFixture(3, metrics.DriverScripted, "ollama")
	for i := range rows {
		if s := &rows[i]; s.Arm == metrics.SpecArm && s.Repetition == 1 && s.Turn == 1 && s.Step == 2 {
			unknown(s)
		}
	}
	rc := report.AnalyzeRuns(runs, rows).Claims.Reasoning[0]
	if w := rc.WithinTurn; w.SpecRequests != 12 || w.Spec.N != 2 || w.Spec.Mean != 410 || w.Never.Mean != 630 || w.Diff.Mean != 220 {
		t.Errorf("inside a turn with one unknown request: %+v; want 2 pairs, spec 410, never 630, 12 requests each", w)
	}
	if n := rc.NewUserMessage; n.Spec.N != 3 || n.Spec.Mean != 820 {
		t.Errorf("new user message: %+v; want 3 pairs, spec 820", n)
	}
	if rc.Pairs != 2 || rc.Spec.N != 2 {
		t.Errorf("whole sessions: %d pairs, spec %+v; want the 2 repetitions whose every re-read is known", rc.Pairs, rc.Spec)
	}

	// Every re-read of reasoning-never unknown (a proxy that saw no cached count, no rendering).
	rows = reasoningFixture(2, metrics.DriverScripted, "ollama")
	for i := range rows {
		if rows[i].Arm == report.ReasoningNeverArm {
			unknown(&rows[i])
		}
	}
	a := report.AnalyzeRuns(runs, rows)
	rc = a.Claims.Reasoning[0]
	if w := rc.WithinTurn; w.Never.N != 0 || w.Spec.N != 0 || w.Diff.N != 0 || w.Saved != nil || rc.Saved != nil {
		t.Errorf("reasoning-never unknown: inside a turn %+v, saved %v; want no figure", w, rc.Saved)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if md := b.String(); !strings.Contains(md, "| s | steps inside a turn | 0 | — | — | — | — |") {
		t.Errorf("report.md shows figures for unknown re-reads:\n%s", md)
	}
	// The compaction rows name no model: they name no other chat template than the steps' one.
	if rc.Template.Name != "the Qwen3 chat format" || strings.Contains(b.String(), "different chat templates") {
		t.Errorf("template %+v; want the Qwen3 chat format, from the steps' model", rc.Template)
	}
}

// lab compare draws no conclusion from prefill times the prefill check calls not comparable: a
// run on a busy machine shows its prefill change, marked, and it is no regression.
func TestCompareSkipsPrefillNotComparable(t *testing.T) {
	t.Parallel()
	calm := prefillFixture(1)
	for i := range calm {
		calm[i].RunID = "calm"
	}
	old := report.AnalyzeRuns([]*metrics.Manifest{{RunID: "calm", Backend: "ollama", Complete: true}}, calm)
	busy := report.AnalyzeRuns([]*metrics.Manifest{{RunID: "busy", Backend: "ollama", Complete: true}}, prefillFixture(3))
	for _, tc := range []struct {
		name     string
		old, new *report.Analysis
	}{{"new busy", old, busy}, {"old busy", busy, old}} {
		c := report.Compare(tc.old, tc.new, 0.05)
		var prefill *report.Change
		for i := range c.Changes {
			if ch := &c.Changes[i]; ch.Arm == report.CliffArm && ch.Metric == "prefill_seconds" {
				prefill = ch
			}
		}
		if prefill == nil || !prefill.NotComparable || prefill.Regression {
			t.Fatalf("%s: the date arm's prefill change %+v; want it not comparable, no regression", tc.name, prefill)
		}
		if tc.name == "new busy" && c.Regressions != 0 {
			t.Errorf("%s: %d regressions; want none (the token figures are equal)", tc.name, c.Regressions)
		}
		var b bytes.Buffer
		if err := c.Write(&b, "text"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "not comparable") || strings.Contains(b.String(), "REGRESSION") && tc.name == "new busy" {
			t.Errorf("%s: comparison\n%s\nwant the prefill rows marked not comparable, no regression", tc.name, b.String())
		}
	}
}

// The machine-readable formats draw no more from prefill times the prefill check calls not
// comparable than the report does: CSV leaves their cells empty and says why in
// prefill_comparable, benchfmt leaves out their prefill-ns (benchstat would compare them).
func TestDataFormatsSkipPrefillNotComparable(t *testing.T) {
	t.Parallel()
	runs := []*metrics.Manifest{{RunID: "busy", Backend: "ollama", Complete: true}}
	for _, tc := range []struct {
		factor     float64
		comparable bool
	}{{3, false}, {1.5, true}} {
		r := &report.Report{Runs: runs, Analysis: report.AnalyzeRuns(runs, prefillFixture(tc.factor))}
		var b bytes.Buffer
		if err := report.CSV(&b, r); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		head := strings.Split(lines[0], ",")
		col := func(name string) int {
			for i, h := range head {
				if h == name {
					return i
				}
			}
			t.Fatalf("csv: no column %s in %q", name, lines[0])
			return -1
		}
		pc, ps := col("prefill_comparable"), col("prefill_s")
		for _, line := range lines[1:] {
			f := strings.Split(line, ",")
			if want := map[bool]string{true: "true", false: "false"}[tc.comparable]; f[pc] != want || (f[ps] == "") == tc.comparable {
				t.Errorf("factor %g: csv row %q: prefill_comparable %q, prefill_s %q; want %s and a figure only when comparable", tc.factor, line, f[pc], f[ps], want)
			}
		}
		// benchfmt writes prefill-ns only for repetitions whose every request has a prefill
		// time: give the first requests theirs, at each arm's rate.
		samples := prefillFixture(tc.factor)
		for i := range samples {
			if s := &samples[i]; s.PrefillNs == 0 {
				s.PrefillNs = samples[i+1].PrefillNs / *samples[i+1].RereadTokens * *s.RereadTokens
			}
		}
		r = &report.Report{Runs: runs, Analysis: report.AnalyzeRuns(runs, samples)}
		b.Reset()
		if err := report.Benchfmt(&b, r); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "prefill-ns"); got != tc.comparable {
			t.Errorf("factor %g: benchfmt has prefill-ns %v; want %v:\n%s", tc.factor, got, tc.comparable, b.String())
		}
	}
}

// The prefill check names the machine and its load beside a run's verdict, where the manifest
// records them: what says why prefill times look odd.
func TestPrefillCheckNamesTheHost(t *testing.T) {
	t.Parallel()
	cores := 2
	runs := []*metrics.Manifest{{RunID: "busy", Backend: "ollama", ServerVersion: "0.17.4", Model: "m", Complete: true,
		Host: &metrics.Host{CPUModel: "Xeon X", LogicalCores: &cores, OS: "linux", Arch: "amd64",
			LoadStart: &metrics.LoadAverage{One: 7.5, Five: 3, Fifteen: 1}, LoadEnd: &metrics.LoadAverage{One: 0.25}}}}
	a := report.AnalyzeRuns(runs, prefillFixture(3))
	c := a.Claims.Prefill[0]
	for _, want := range []string{"Xeon X", "2 logical cores", "at the start 7.50, 3.00, 1.00", "at the end 0.25, 0.00, 0.00"} {
		if !strings.Contains(c.Setup, want) {
			t.Errorf("prefill check's setup %q lacks %q", c.Setup, want)
		}
	}
}

// A sim run's live sessions judge no behaviour also when their rows do not name the backend
// (a run made before the column existed): the manifest says sim.
func TestReasoningClaimSimLiveByManifest(t *testing.T) {
	t.Parallel()
	a := report.AnalyzeRuns([]*metrics.Manifest{{RunID: "r", Backend: "sim", Complete: true}}, reasoningFixture(3, metrics.DriverLive, ""))
	if b := a.Claims.Reasoning[0].Behaviour; b != nil {
		t.Errorf("sim live driver, rows without a backend: behaviour %+v; want none", b)
	}
}
