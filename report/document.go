package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/metrics"
)

// A document is the content the text, Markdown and HTML writers share: headings, paragraphs,
// lists, tables and figures, all plain text (each writer escapes for its medium).
type blockKind int

const (
	bHeading blockKind = iota
	bPara
	bList
	bTable
	bFigure
)

type block struct {
	kind  blockKind
	level int      // bHeading: 1, 2 or 3
	text  string   // bHeading, bPara
	items []string // bList
	head  []string // bTable
	left  int      // bTable: how many leading columns are text (left-aligned); the rest are numbers
	rows  [][]string
	fig   *Figure // bFigure
}

type document struct{ blocks []block }

func (d *document) heading(level int, format string, args ...any) {
	d.blocks = append(d.blocks, block{kind: bHeading, level: level, text: inline(fmt.Sprintf(format, args...))})
}

func (d *document) para(format string, args ...any) {
	d.blocks = append(d.blocks, block{kind: bPara, text: inline(fmt.Sprintf(format, args...))})
}

func (d *document) list(items ...string) {
	d.blocks = append(d.blocks, block{kind: bList, items: items})
}

func (d *document) table(head []string, left int, rows [][]string) {
	d.blocks = append(d.blocks, block{kind: bTable, head: head, left: left, rows: rows})
}

// buildDocument lays out the report's content; r has been checked.
func buildDocument(r *Report) *document {
	d := &document{}
	ids := make([]string, len(r.Runs))
	for i, m := range r.Runs {
		ids[i] = orDash(m.RunID)
	}
	if len(ids) == 1 {
		d.heading(1, "Run %s", ids[0])
	} else {
		d.heading(1, "Runs %s", strings.Join(ids, ", "))
	}
	for _, m := range r.Runs {
		if len(r.Runs) > 1 {
			d.para("Run %s:", orDash(m.RunID))
		}
		d.list(manifestFacts(m)...)
	}
	d.para("%s", "Each figure is the mean over the repetitions of an arm of its per-repetition total, "+
		"± the half width of its 95 % confidence interval (Student t, n−1 degrees of freedom; no ± "+
		"with one repetition). Cached tokens are what the server reports it reused from its KV cache, "+
		"over the requests whose count is known; expected cached tokens are what a perfect prefix cache "+
		"could have reused; re-read tokens are what the server processed again (prompt − cached tokens, unknown where "+
		"the cached count is). A figure a request did not measure is left out, never counted as 0, and the number "+
		"of such requests follows it: \"(3 unknown)\". Cached share is cached / "+
		"prompt tokens and cache efficiency is cached / expected cached tokens, both over the requests "+
		"whose cached count is known (and, for efficiency, whose expected count is known: a cloud API shows no rendering, so the lab cannot compute it). Re-read vs spec is the arm's mean re-read tokens over the spec "+
		"arm's, with Fieller's 95 % interval; re-read − spec is the mean paired difference per "+
		"repetition, with its t interval.")

	a := r.Analysis
	if len(a.LeftOut) > 0 {
		d.para("Left out of every figure below: %d session%s that did not complete (a session is left out whole when "+
			"one of its requests failed, or when the run was interrupted during it):", len(a.LeftOut), plural(len(a.LeftOut)))
		items := make([]string, len(a.LeftOut))
		for i := range a.LeftOut {
			items[i] = a.LeftOut[i].String()
		}
		d.list(items...)
	}
	if a.Claims.Cliff != nil || len(a.Claims.Reasoning) > 0 {
		d.heading(2, "The spec's claims against this run")
		if slices.ContainsFunc(r.Runs, func(m *metrics.Manifest) bool { return m.Backend == "sim" }) {
			d.para("%s", "Caveat: these figures come from the sim backend, a reference computed by a cache model, "+
				"not a measurement of a server; they check the harness, not the claims' numbers.")
		}
		if c := a.Claims.Cliff; c != nil {
			d.heading(3, "The midnight cliff")
			what := "the largest drop of the cached share from one request to the next"
			if c.AtDateCliff {
				what = fmt.Sprintf("the change of the cached share at the request where the %s arm dropped most "+
					"(the first request after the date changed), from the request before", CliffArm)
			}
			d.para("The spec (3.2.0, §10): a date that changed at midnight sent a %s-token session from %s cached "+
				"to %s (%s s of re-reading). Below, per arm of scenario %s, %s, and what that request re-read.",
				thousands(ClaimCliffPromptTokens), percent(new(ClaimCliffFrom)), percent(new(ClaimCliffTo)),
				strconv.FormatFloat(ClaimCliffSeconds, 'f', 0, 64), CliffScenario, what)
			rows := [][]string{{"the spec's claim", "—", thousands(ClaimCliffPromptTokens), percent(new(ClaimCliffFrom)),
				percent(new(ClaimCliffTo)), thousands(ClaimCliffPromptTokens), seconds(ClaimCliffSeconds)}}
			arms := slices.Clone(c.Arms)
			slices.SortStableFunc(arms, func(x, y Cliff) int { return cliffRank(x.Arm) - cliffRank(y.Arm) })
			for _, cl := range arms {
				req := make([]string, len(cl.Requests))
				for i, q := range cl.Requests {
					req[i] = strconv.Itoa(int(q))
				}
				if len(req) == 0 {
					req = []string{"no drop"}
				}
				rows = append(rows, []string{cl.Arm, strings.Join(req, ", "), tokEst(cl.PromptTokens), pctEst(cl.From),
					pctEst(cl.To), tokEst(cl.RereadTokens), secEst(cl.PrefillSeconds)})
			}
			d.table([]string{"", "request", "prompt tokens", "cached before", "cached at the request", "re-read tokens", "prefill (s)"}, 2, rows)
			d.para("%s", cliffVerdict(c))
		}
		if len(a.Claims.Reasoning) > 0 {
			d.heading(3, "Reasoning sent back")
			d.para("The spec (3.2.0, §8): a step re-read about a fifth fewer tokens with its reasoning sent back. "+
				"Below, per scenario where both the %s and the %s arm ran, the share of re-read tokens saved by "+
				"sending reasoning back: 1 − spec / %s, with the 95 %% interval from Fieller's interval of the ratio.",
				metrics.SpecArm, ReasoningNeverArm, ReasoningNeverArm)
			var rows [][]string
			held := 0
			for _, rc := range a.Claims.Reasoning {
				verdict := "does not hold"
				if rc.Holds {
					verdict = "holds"
					held++
				}
				rows = append(rows, []string{rc.Scenario, strconv.Itoa(rc.Pairs), tokEst(rc.Never), tokEst(rc.Spec),
					withCI(rc.Saved, rc.SavedCI, pct), percent(new(ClaimReasoningSaved)), verdict})
			}
			d.table([]string{"scenario", "repetitions", "re-read tokens, " + ReasoningNeverArm, "re-read tokens, " + metrics.SpecArm,
				"saved", "claimed", "on this run"}, 1, rows)
			n := len(a.Claims.Reasoning)
			verdict := fmt.Sprintf("Verdict: the claim holds on this run in %d of %d scenario%s", held, n, plural(n))
			if held == 0 {
				verdict = "Verdict: the claim does not hold on this run"
			}
			d.para("%s (holds: the share saved, or its 95 %% interval, within %.0f points of %s).", verdict,
				100*ClaimReasoningTolerance, percent(new(ClaimReasoningSaved)))
		}
	}

	if len(a.Live) > 0 {
		d.heading(2, "Live sessions: what the model did")
		d.para("%s", "The model decided every step (--driver live). Per scenario and arm: the mean per session over the repetitions [95 % CI]; Δ spec is the paired difference to the spec arm [95 % CI]; and how the turns ended.")
		head := []string{"scenario", "arm", "repetitions"}
		for _, m := range a.Live[0].Metrics {
			head = append(head, fmt.Sprintf("%s (%s)", m.Name, m.Unit), "Δ spec")
		}
		head = append(head, "turns ended")
		var rows [][]string
		for _, r := range a.Live {
			cells := []string{r.Scenario, r.Arm, strconv.Itoa(r.Repetitions)}
			for _, m := range r.Metrics {
				vs := "—"
				if m.VsSpec != nil {
					vs = liveEstimate(*m.VsSpec)
				}
				est := liveEstimate(m.Estimate)
				if m.Unknown > 0 {
					est = fmt.Sprintf("%s (%s requests unknown)", est, thousands(int64(m.Unknown)))
				}
				cells = append(cells, est, vs)
			}
			reasons := make([]string, 0, len(r.EndReasons))
			for name, n := range r.EndReasons {
				reasons = append(reasons, fmt.Sprintf("%s %d", name, n))
			}
			slices.Sort(reasons)
			cells = append(cells, strings.Join(reasons, ", "))
			rows = append(rows, cells)
		}
		d.table(head, 2, rows)
	}
	if len(a.Scenarios) == 0 {
		d.para("No samples.")
	}
	for _, sc := range a.Scenarios {
		d.heading(2, "%s", sc.Scenario)
		cost := slices.ContainsFunc(sc.Arms, func(s ArmStats) bool { return s.CostUSD != nil })
		head := []string{"arm", "repetitions", "requests", "prompt tokens", "cached tokens", "expected cached tokens",
			"re-read tokens", "prefill (s)", "cached share", "cache efficiency", "re-read vs spec", "re-read − spec"}
		if cost {
			head = append(head, "cost (USD)")
		}
		var rows, segRows [][]string
		anySeg := false
		for _, st := range sc.Arms {
			vsRatio, vsDiff := "—", "—"
			if v := st.VsSpec; v != nil {
				vsRatio = withCI(finite(v.RereadRatio.Value), v.RereadRatio.CI, times)
				vsDiff = signedTokEst(v.RereadDiff)
			} else if st.Arm == metrics.SpecArm {
				vsRatio = "1.00×"
			}
			cached := tokEst(st.CachedTokens)
			if u := st.Pooled.CachedUnknown; u > 0 {
				cached = fmt.Sprintf("%s (%s unknown)", cached, thousands(int64(u)))
			}
			expected := tokEst(st.ExpectedCachedTokens)
			if u := st.Pooled.ExpectedUnknown; u > 0 {
				expected = fmt.Sprintf("%s (%s unknown)", expected, thousands(int64(u)))
			}
			prompt := withUnknown(tokEst(st.PromptTokens), st.Pooled.PromptUnknown)
			reread := withUnknown(tokEst(st.RereadTokens), st.Pooled.RereadUnknown)
			prefill := withUnknown(secEst(st.PrefillSeconds), st.Pooled.PrefillUnknown)
			row := []string{st.Arm, strconv.Itoa(len(st.Reps)), tokEst(st.Requests), prompt, cached,
				expected, reread, prefill,
				pctEst(st.CachedShare), pctEst(st.Efficiency), vsRatio, vsDiff}
			if cost {
				c := "—"
				if st.CostUSD != nil {
					c = estimate(*st.CostUSD, usd)
				}
				row = append(row, c)
			}
			rows = append(rows, row)
			seg := []string{st.Arm}
			for _, e := range st.Reread {
				seg = append(seg, tokEst(e)) // "—" where the split is unknown
				anySeg = anySeg || e.Mean != 0
			}
			segRows = append(segRows, seg)
		}
		d.table(head, 1, rows)
		if anySeg {
			d.para("Re-read tokens by the kind of segment they lie in, by token position (mean per repetition; " +
				"unattributed: tokens the server counted beyond the lab's tokenizer):")
			d.table(append([]string{"arm"}, "system", "tools", "message", "tool result", "reasoning", "note", "other", "unattributed"), 1, segRows)
		}
		var failed []string
		for _, st := range sc.Arms {
			if st.Pooled.Failed > 0 {
				failed = append(failed, fmt.Sprintf("%s %s of %s", inline(st.Arm), thousands(int64(st.Pooled.Failed)), thousands(int64(st.Pooled.Requests))))
			}
		}
		if len(failed) > 0 {
			d.para("Failed requests: %s.", strings.Join(failed, ", "))
		}
		if len(sc.Mismatches) > 0 {
			d.para("Requests where the server reused more or less than expected (beyond %.0f %%):", 100*MismatchTolerance)
			items := make([]string, len(sc.Mismatches))
			for i, m := range sc.Mismatches {
				items[i] = fmt.Sprintf("%s, repetition %d, request %d: cached %s, expected %s, first divergence in %s: %s",
					inline(m.Arm), m.Repetition, m.RequestIndex, thousands(m.CachedTokens), thousands(m.ExpectedCachedTokens),
					orDash(m.DivergenceSegment), mismatchReason(&m))
			}
			d.list(items...)
		}
		for i := range r.Figures {
			if r.Figures[i].Scenario == sc.Scenario {
				d.blocks = append(d.blocks, block{kind: bFigure, fig: &r.Figures[i]})
			}
		}
	}
	first := true
	for i := range r.Figures {
		if r.Figures[i].Scenario != "" {
			continue
		}
		if first {
			d.heading(2, "Across scenarios")
			first = false
		}
		d.blocks = append(d.blocks, block{kind: bFigure, fig: &r.Figures[i]})
	}
	return d
}

// cliffVerdict is the one-line verdict of the cliff claim.
func cliffVerdict(c *CliffClaim) string {
	if c.Holds == nil {
		return fmt.Sprintf("Verdict: none: the run has no drop of the %s arm to compare with the claim.", CliffArm)
	}
	var date *Cliff
	for i := range c.Arms {
		if c.Arms[i].Arm == CliffArm {
			date = &c.Arms[i]
		}
	}
	verdict := "does not hold"
	if *c.Holds {
		verdict = "holds"
	}
	return fmt.Sprintf("Verdict: the claim %s on this run: the %s arm fell from %s to %s cached (holds: from at least %s to at most %s).",
		verdict, CliffArm, pctEst(date.From), pctEst(date.To), percent(new(ClaimCliffHoldsFrom)), percent(new(ClaimCliffHoldsTo)))
}

// cliffRank orders the cliff table: spec, the date arm, then the others (already sorted).
func cliffRank(arm string) int {
	switch arm {
	case metrics.SpecArm:
		return 0
	case CliffArm:
		return 1
	}
	return 2
}

// withUnknown appends to a pooled figure the number of requests whose value is unknown (null),
// which the figure leaves out: "1,200 (3 unknown)".
func withUnknown(v string, unknown int) string {
	if unknown == 0 {
		return v
	}
	return fmt.Sprintf("%s (%s unknown)", v, thousands(int64(unknown)))
}

// mismatchReason says why a request's cached tokens differ from the expected ones.
func mismatchReason(m *Mismatch) string {
	switch {
	case m.AfterOverflow:
		return "the previous request's prompt and reply overflowed the context window (num_ctx): the server truncated or shifted its context, which emptied its KV cache"
	case m.Overflow:
		return "the prompt is longer than the context window (num_ctx): the server truncated it, keeping only its first tokens"
	case m.LoadNs != nil && *m.LoadNs > 1e8:
		return fmt.Sprintf("the model was loaded again (load %s s), which drops the cache", seconds(float64(*m.LoadNs)/1e9))
	case m.CachedTokens > m.ExpectedCachedTokens:
		return "the server reused more than the lab expected: the lab's rendering or tokenization differs from the server's"
	}
	return "the server's cache held less than the previous request left (eviction, a reload or a bug)"
}

// manifestFacts are the lines describing one run.
func manifestFacts(m *metrics.Manifest) []string {
	backend := fmt.Sprintf("Backend: %s, server version %s", orDash(m.Backend), orDash(m.ServerVersion))
	if m.ServerURL != "" {
		backend += ", at " + m.ServerURL
	}
	started := fmt.Sprintf("Started: %s; ended: %s", timestamp(m.StartedAt), timestamp(m.EndedAt))
	if !m.StartedAt.IsZero() && !m.EndedAt.IsZero() {
		started += fmt.Sprintf(" (%s)", m.EndedAt.Sub(m.StartedAt).Round(time.Second))
	}
	complete := "Complete: yes"
	if !m.Complete {
		complete = "Complete: NO"
		if m.Error != "" {
			complete += ", error: " + inline(m.Error)
		}
	}
	facts := []string{
		"Lab version: " + orDash(m.LabVersion),
		backend,
		fmt.Sprintf("Model: %s, num_ctx %s", orDash(m.Model), numCtx(m.NumCtx)),
		started,
		complete,
		fmt.Sprintf("Scenarios: %s; arms: %s; repetitions: %d; samples: %s",
			orDash(strings.Join(m.Scenarios, ", ")), orDash(strings.Join(m.Arms, ", ")), m.Repetitions, thousands(int64(m.Samples))),
	}
	if len(m.Settings) > 0 {
		keys := make([]string, 0, len(m.Settings))
		for k := range m.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + inline(m.Settings[k])
		}
		facts = append(facts, "Settings: "+strings.Join(parts, ", "))
	}
	return facts
}

// Number formats for estimates: a mean, and "± half width" when there is an interval.

func tok(v float64) string   { return thousands(int64(math.Round(v))) }
func pct(v float64) string   { return percent(&v) }
func times(v float64) string { return ratio(&v) }
func usd(v float64) string   { return strconv.FormatFloat(v, 'f', 4, 64) }
func signedTok(v float64) string {
	s := tok(v)
	if !strings.HasPrefix(s, "-") && s != "0" {
		s = "+" + s
	}
	return s
}

func estimate(e metrics.Estimate, f func(float64) string) string {
	if e.N == 0 {
		return "—"
	}
	s := f(e.Mean)
	if e.CI != nil {
		s += " ± " + strings.TrimPrefix(f((e.CI.Hi-e.CI.Lo)/2), "+")
	}
	return s
}

func tokEst(e metrics.Estimate) string       { return estimate(e, tok) }
func signedTokEst(e metrics.Estimate) string { return estimate(e, signedTok) }
func secEst(e metrics.Estimate) string       { return estimate(e, seconds) }
func pctEst(e metrics.Estimate) string       { return estimate(e, pct) }

// withCI formats a value with its interval in brackets: "1.22× [1.10×, 1.35×]"; "—" for nil.
func withCI(v *float64, ci *metrics.Interval, f func(float64) string) string {
	if v == nil {
		return "—"
	}
	if ci == nil {
		return f(*v)
	}
	return fmt.Sprintf("%s [%s, %s]", f(*v), f(ci.Lo), f(ci.Hi))
}
