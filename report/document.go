package report

import (
	"fmt"
	"lab/arms"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"lab/metrics"
	"lab/stats"
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
	// fold, for a bTable, is the label under which the HTML writer shows the table folded
	// (a closed <details>): a wide table of every figure behind its narrow headline.
	fold string
	// matrix marks a bTable whose columns are many short figures under long names: the HTML
	// writer sets its column heads upright.
	matrix bool
	fig    *Figure // bFigure
	// glance marks the heading of the report's answer ("At a glance"): the HTML writer puts
	// its contents after that section, so that the answer is the first thing on the screen.
	glance bool
}

type document struct {
	blocks []block
	// shift is added to every heading's level: 1 inside a setup's section.
	shift int
}

func (d *document) heading(level int, format string, args ...any) {
	d.blocks = append(d.blocks, block{kind: bHeading, level: level + d.shift, text: inline(fmt.Sprintf(format, args...))})
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

// folded is [document.table], shown folded under label in HTML (in full elsewhere).
func (d *document) folded(label string, head []string, left int, rows [][]string) {
	d.blocks = append(d.blocks, block{kind: bTable, head: head, left: left, rows: rows, fold: label})
}

// maxTitleRuns is the most run ids the report's title names; past it the title names the
// first ones and the last with their count, and "What was run" names every one.
const maxTitleRuns = 4

// buildDocument lays out the report's content; r has been checked.
func buildDocument(r *Report) *document {
	d := &document{}
	ids := make([]string, len(r.Runs))
	for i, m := range r.Runs {
		ids[i] = orDash(m.RunID)
	}
	switch {
	case len(ids) == 1:
		d.heading(1, "Run %s", ids[0])
	case len(ids) <= maxTitleRuns:
		d.heading(1, "Runs %s", strings.Join(ids, ", "))
	default: // a title of forty run ids would fill the screen: What was run names each
		d.heading(1, "%d runs: %s, … %s", len(ids), strings.Join(ids[:maxTitleRuns-1], ", "), ids[len(ids)-1])
	}
	labels := map[string]string{} // run id → its setup's label, with several setups
	if gs := r.Analysis.Groups(); len(gs) > 1 {
		for _, g := range gs {
			for _, id := range g.Setup.Runs {
				labels[id] = g.Setup.Label
			}
		}
	}
	// The answer first, then what was run and how to read the figures.
	groups := r.Analysis.Groups()
	d.glance(groups)
	d.heading(2, "What was run")
	for _, m := range r.Runs {
		if l := labels[m.RunID]; l != "" {
			d.para("Run %s (setup %s):", orDash(m.RunID), l)
		} else if len(r.Runs) > 1 {
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

	if len(groups) > 1 {
		d.setups(r, groups)
	}
	for i := range r.Analysis.Servers {
		d.servers(r, &r.Analysis.Servers[i])
	}
	d.templates(groups)
	for _, a := range groups {
		label := ""
		if len(groups) > 1 {
			label = a.Setup.Label
			d.heading(2, "Setup %s", label)
			d.para("Runs %s: %s.", strings.Join(a.Setup.Runs, ", "), a.Setup.describe())
			d.shift = 1
		}
		d.body(r, a, label)
		d.shift = 0
	}
	return d
}

// glance lays out the report's answer first, per setup: with one scenario, its headline table
// (arm, cached share, re-read tokens relative to spec with Fieller's 95 % interval, cache
// efficiency); with several, arms × scenarios, each cell the arm's re-read tokens relative to
// the spec arm's in that scenario ("—" where the arm did not run it, there is no spec arm, or the
// figure is unknown). Nothing without scenarios.
func (d *document) glance(groups []*Analysis) {
	if !slices.ContainsFunc(groups, func(g *Analysis) bool { return len(g.Scenarios) > 0 }) {
		return
	}
	d.heading(2, "At a glance")
	d.blocks[len(d.blocks)-1].glance = true
	if len(groups) > maxGlanceSetups {
		d.glanceSetups(groups)
		return
	}
	for _, g := range groups {
		if len(g.Scenarios) == 0 {
			continue
		}
		where := ""
		if len(groups) > 1 {
			where = fmt.Sprintf("Setup %s, ", g.Setup.Label)
		}
		if len(g.Scenarios) == 1 {
			sc := g.Scenarios[0]
			d.para("%s%s: what each arm did to the cache (every figure in the scenario's section below).", where, sc.Scenario)
			d.table([]string{"arm", "cached share", "re-read vs spec", "cache efficiency"}, 1, headline(sc.Arms))
			continue
		}
		what := "re-read tokens relative to the spec arm's, per arm and scenario (1.00× is spec's; above it, the arm " +
			"made the server read more again; intervals and every other figure in each scenario's section below):"
		if where == "" {
			what = "R" + what[1:]
		}
		d.para("%s%s", where, what)
		arms := armsOf(g)
		head := []string{"arm"}
		for _, sc := range g.Scenarios {
			head = append(head, sc.Scenario)
		}
		rows := make([][]string, len(arms))
		for i, arm := range arms {
			rows[i] = []string{arm}
			for j := range g.Scenarios {
				rows[i] = append(rows[i], ratioCell(&g.Scenarios[j], arm))
			}
		}
		d.blocks = append(d.blocks, block{kind: bTable, head: head, left: 1, rows: rows, matrix: true})
	}
}

// maxGlanceSetups is the most setups "At a glance" gives a table each; past it, one table sets
// them all side by side ([document.glanceSetups]).
const maxGlanceSetups = 3

// glanceSetups lays out the answer of a report of many setups in one table: a row per setup and
// scenario ("A: midnight"; the setups are listed under Setups), a column per arm, each cell the
// arm's re-read tokens relative to that setup's spec arm in that scenario ("—" where the arm did
// not run it or there is no comparison).
func (d *document) glanceSetups(groups []*Analysis) {
	d.para("%s", "Re-read tokens relative to the spec arm's, per setup and scenario (a row each; the setups are listed "+
		"under Setups below) and per arm (1.00× is spec's; above it, the arm made the server read more again):")
	arms := armsOf(groups...)
	head := append([]string{"setup: scenario"}, arms...)
	var rows [][]string
	for _, g := range groups {
		for i := range g.Scenarios {
			sc := &g.Scenarios[i]
			row := []string{g.Setup.Label + ": " + sc.Scenario}
			for _, arm := range arms {
				row = append(row, ratioCell(sc, arm))
			}
			rows = append(rows, row)
		}
	}
	d.table(head, 1, rows)
}

// armsOf returns every arm of the scenarios of groups, once each, in [metrics.SortArms] order.
func armsOf(groups ...*Analysis) []string {
	var arms []string
	for _, g := range groups {
		for _, sc := range g.Scenarios {
			for _, st := range sc.Arms {
				if !slices.Contains(arms, st.Arm) {
					arms = append(arms, st.Arm)
				}
			}
		}
	}
	metrics.SortArms(arms)
	return arms
}

// ratioCell is arm's re-read tokens relative to the spec arm's in sc ([vsSpecRatio], no
// interval); "—" where the arm did not run sc.
func ratioCell(sc *ScenarioStats, arm string) string {
	if st := sc.Arm(arm); st != nil {
		return vsSpecRatio(st, false)
	}
	return "—"
}

// headline returns the narrow headline row of each arm: arm, cached share, re-read vs spec
// with its interval, cache efficiency.
func headline(arms []ArmStats) [][]string {
	rows := make([][]string, len(arms))
	for i := range arms {
		st := &arms[i]
		rows[i] = []string{st.Arm, pctEst(st.CachedShare), vsSpecRatio(st, true), pctEst(st.Efficiency)}
	}
	return rows
}

// vsSpecRatio formats st's re-read tokens relative to the spec arm's, with Fieller's interval
// when ci: "1.27× [1.10×, 1.45×]"; "1.00×" for the spec arm itself once it has a re-read figure;
// "—" when there is no comparison.
func vsSpecRatio(st *ArmStats, ci bool) string {
	if v := st.VsSpec; v != nil {
		if !ci {
			return withCI(finite(v.RereadRatio.Value), nil, times)
		}
		return withCI(finite(v.RereadRatio.Value), v.RereadRatio.CI, times)
	}
	if st.Arm == metrics.SpecArm && st.RereadTokens.N > 0 {
		return "1.00×"
	}
	return "—"
}

// body lays out the figures of one setup's analysis a (setup is its label when the report has
// several setups, else "").
func (d *document) body(r *Report, a *Analysis, setup string) {
	if len(a.LeftOut) > 0 {
		d.para("Left out of every figure below: %d session%s that did not complete (a session is left out whole when "+
			"one of its requests failed, when the run was interrupted during it, or when rows it measured were lost since):", len(a.LeftOut), plural(len(a.LeftOut)))
		items := make([]string, len(a.LeftOut))
		for i := range a.LeftOut {
			items[i] = a.LeftOut[i].String()
		}
		d.list(items...)
	}
	if a.WarmStarts != nil {
		d.para("%s", a.WarmStarts.line())
	}
	claimsSection(d, r, a)
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
			vsRatio, vsDiff := vsSpecRatio(&st, true), "—"
			if v := st.VsSpec; v != nil {
				vsDiff = signedTokEst(v.RereadDiff)
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
			prefill := withUnknown(prefillCell(a, st.PrefillSeconds, st.Reps), st.Pooled.PrefillUnknown)
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
		d.table([]string{"arm", "cached share", "re-read vs spec", "cache efficiency"}, 1, headline(sc.Arms))
		d.folded("Every figure of "+sc.Scenario, head, 1, rows)
		if anySeg {
			// The split leaves out the requests whose re-read is known but whose split is not
			// (no rendering): say how many, as the columns then add up to less than the re-read.
			var unknown []string
			for _, st := range sc.Arms {
				n := 0
				for _, t := range st.Reps {
					n += t.SplitUnknown - t.RereadUnknown
				}
				if n > 0 {
					unknown = append(unknown, fmt.Sprintf("%s %s of %s", inline(st.Arm), thousands(int64(n)), thousands(int64(st.Pooled.Requests))))
				}
			}
			note := ""
			if len(unknown) > 0 {
				note = "; requests whose re-read is known but its split unknown, left out: " + strings.Join(unknown, ", ")
			}
			d.para("Re-read tokens by the kind of segment they lie in, by token position (mean per repetition; "+
				"unattributed: tokens the server counted beyond the lab's tokenizer%s):", note)
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
			if r.Figures[i].Scenario == sc.Scenario && r.Figures[i].Setup == setup {
				d.blocks = append(d.blocks, block{kind: bFigure, fig: &r.Figures[i]})
			}
		}
	}
	first := true
	for i := range r.Figures {
		if r.Figures[i].Scenario != "" || r.Figures[i].Setup != setup || r.Figures[i].SideBySide {
			continue
		}
		if first {
			d.heading(2, "Across scenarios")
			first = false
		}
		d.blocks = append(d.blocks, block{kind: bFigure, fig: &r.Figures[i]})
	}
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
		modelFile(m),
		scenarioContents(m),
	}
	if r := recordedAnswers(m); r != "" {
		facts = append(facts, r)
	}
	facts = append(facts,
		hostFacts(m.Host),
		started,
		complete,
		fmt.Sprintf("Scenarios: %s; arms: %s; repetitions: %d; samples: %s",
			orDash(strings.Join(m.Scenarios, ", ")), orDash(strings.Join(m.Arms, ", ")), m.Repetitions, samplesRead(m)),
	)
	for _, raw := range m.ArmDefinitions {
		a, err := arms.FromJSON(raw)
		if err != nil {
			facts = append(facts, "Arm: unreadable definition: "+inline(err.Error()))
			continue
		}
		facts = append(facts, "Arm "+inline(a.Summary()))
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
	if len(m.Tags) > 0 {
		keys := slices.Sorted(maps.Keys(m.Tags))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = inline(k) + "=" + inline(m.Tags[k])
		}
		facts = append(facts, "Tags: "+strings.Join(parts, ", "))
	}
	return facts
}

// samplesRead gives a run's row count: the rows read ([metrics.Manifest].RowsRead), how many
// of them came from journals and how many lines those held, and the manifest's count where it
// differs (a run killed during a session counted only the rows of the sessions that ended).
// Without RowsRead, the manifest's count.
func samplesRead(m *metrics.Manifest) string {
	r := m.RowsRead
	if r == nil || r.Journal == 0 && r.Lost == 0 && r.Rows == m.Samples {
		return thousands(int64(m.Samples))
	}
	s := thousands(int64(r.Rows)) + " read"
	if held := r.Journal + r.Lost; held > 0 {
		s += fmt.Sprintf(" (%s from the journal of a samples file the run left unclosed, which held %s line%s",
			thousands(int64(r.Journal)), thousands(int64(held)), plural(held))
		if r.Lost > 0 {
			s += fmt.Sprintf("; %s held no sample: row%s lost", thousands(int64(r.Lost)), plural(r.Lost))
		}
		s += ")"
	}
	if r.Rows != m.Samples {
		s += fmt.Sprintf("; the manifest, written as each session ends, counts %s", thousands(int64(m.Samples)))
	}
	return s
}

// modelFile is the fact line of the run's model file digest.
func modelFile(m *metrics.Manifest) string {
	if m.ModelDigest == "" {
		return "Model file digest: unknown (the lab did not know the model file, or the run was made before it recorded the digest)"
	}
	return "Model file digest: " + m.ModelDigest
}

// scenarioContents is the fact line of the run's scenario content digests (their first 12 hex
// digits), in the order the scenarios ran.
func scenarioContents(m *metrics.Manifest) string {
	if len(m.ScenarioDigests) == 0 {
		return "Scenario contents: not recorded (a run made before the lab recorded them): unknown"
	}
	var parts []string
	for _, sc := range m.Scenarios {
		d := metrics.ShortDigest(m.ScenarioDigests[sc])
		if d == "" {
			d = "unknown"
		}
		parts = append(parts, inline(sc)+" "+d)
	}
	return "Scenario contents (sha256, first 12 digits): " + strings.Join(parts, ", ")
}

// recordedAnswers is the fact line of the steps replayed from recorded answers
// ([metrics.Manifest].RecordedAnswers), per scenario in run order, each as "turn T step S"
// with its count of recorded calls; "" when the run has none. The capture-as-sent arm's rows
// send the capture's own requests, recorded results included.
func recordedAnswers(m *metrics.Manifest) string {
	var parts []string
	for _, sc := range m.Scenarios {
		steps := m.RecordedAnswers[sc]
		if len(steps) == 0 {
			continue
		}
		var list []string
		calls := 0
		for _, st := range steps {
			list = append(list, fmt.Sprintf("turn %d step %d (%d)", st.Turn, st.Step, st.Calls))
			calls += st.Calls
		}
		parts = append(parts, fmt.Sprintf("%s: %d calls in %d steps: %s", inline(sc), calls, len(steps), strings.Join(list, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Replayed from recorded answers, not run (the tool results of these steps are what the imported session recorded): " + strings.Join(parts, "; ")
}

// hostFacts is the fact line of the machine the run ran on.
func hostFacts(h *metrics.Host) string {
	if h == nil {
		return "Host: not recorded (a run made before the lab recorded it)"
	}
	cores := "logical cores unknown"
	if h.LogicalCores != nil {
		cores = fmt.Sprintf("%d logical cores", *h.LogicalCores)
	}
	load := func(l *metrics.LoadAverage) string {
		if l == nil {
			return "unknown"
		}
		return l.String()
	}
	cpu := h.CPUModel
	if cpu == "" {
		cpu = "CPU model unknown"
	}
	return fmt.Sprintf("Host: %s, %s, %s/%s; load average (1, 5, 15 min) at the start %s, at the end %s",
		inline(cpu), cores, orDash(h.OS), orDash(h.Arch), load(h.LoadStart), load(h.LoadEnd))
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

func estimate(e stats.Estimate, f func(float64) string) string {
	if e.N == 0 {
		return "—"
	}
	s := f(e.Mean)
	if e.CI != nil {
		s += " ± " + strings.TrimPrefix(f((e.CI.Hi-e.CI.Lo)/2), "+")
	}
	return s
}

func tokEst(e stats.Estimate) string       { return estimate(e, tok) }
func signedTokEst(e stats.Estimate) string { return estimate(e, signedTok) }
func secEst(e stats.Estimate) string       { return estimate(e, seconds) }
func pctEst(e stats.Estimate) string       { return estimate(e, pct) }

// withCI formats a value with its interval in brackets: "1.22× [1.10×, 1.35×]"; "—" for nil.
func withCI(v *float64, ci *stats.Interval, f func(float64) string) string {
	if v == nil {
		return "—"
	}
	if ci == nil {
		return f(*v)
	}
	return fmt.Sprintf("%s [%s, %s]", f(*v), f(ci.Lo), f(ci.Hi))
}

// setups lays out what each setup of the report is, what differs between them, and their
// figures side by side: per scenario×arm one row per setup that ran it (repetitions, cached
// share, re-read tokens, re-read relative to that setup's own spec arm with Fieller's 95 %
// interval, prefill seconds), each the mean over that setup's repetitions, then the charts that
// set the setups side by side (r's figures marked SideBySide). The full tables (every figure,
// mismatches, claims) follow in each setup's own section.
func (d *document) setups(r *Report, groups []*Analysis) {
	d.heading(2, "Setups")
	d.para("These runs are of %d setups. A setup is what a run measured with: backend, server version, model and "+
		"the digest of its file, num_ctx, how each session found the cache, and the settings that change figures "+
		"(cache model, driver, flash attention, …). Runs of different setups are never pooled as repetitions: each "+
		"setup has its own section below, and their figures are set side by side here. A scenario with another "+
		"content under the same name is another scenario.", len(groups))
	items := make([]string, len(groups))
	for i, g := range groups {
		items[i] = fmt.Sprintf("Setup %s: runs %s: %s", g.Setup.Label, strings.Join(g.Setup.Runs, ", "), g.Setup.describe())
		if len(g.Setup.Unknown) > 0 {
			items[i] += ". Not recorded: " + strings.Join(g.Setup.Unknown, "; ")
		}
	}
	d.list(items...)
	if diffs := setupDiffs(groups); len(diffs) > 0 {
		d.para("They differ in: %s.", strings.Join(diffs, "; "))
	}
	type pair struct{ scenario, arm string }
	var pairs []pair
	for _, g := range groups {
		for _, sc := range g.Scenarios {
			for _, st := range sc.Arms {
				if p := (pair{sc.Scenario, st.Arm}); !slices.Contains(pairs, p) {
					pairs = append(pairs, p)
				}
			}
		}
	}
	slices.SortStableFunc(pairs, func(x, y pair) int {
		if x.scenario != y.scenario {
			return strings.Compare(x.scenario, y.scenario)
		}
		return metrics.CompareArms(x.arm, y.arm)
	})
	var rows [][]string
	for _, p := range pairs {
		first := true
		for _, g := range groups {
			var st *ArmStats
			for i := range g.Scenarios {
				if g.Scenarios[i].Scenario == p.scenario {
					st = g.Scenarios[i].Arm(p.arm)
				}
			}
			if st == nil {
				continue
			}
			sc, arm := "", ""
			if first { // each scenario×arm named once, its setups below it
				sc, arm, first = p.scenario, p.arm, false
			}
			rows = append(rows, []string{sc, arm, g.Setup.Label, strconv.Itoa(len(st.Reps)), pctEst(st.CachedShare),
				tokEst(st.RereadTokens), vsSpecRatio(st, true), secEst(st.PrefillSeconds)})
		}
	}
	switch {
	case len(rows) == 0:
	case len(groups) == 2 && len(r.Analysis.Servers) == 1 && len(r.Analysis.Servers[0].Refused) == 0:
		// Two servers of one model: their section below sets them side by side, row by row.
		d.para("%s", "\"Servers side by side\" below sets the two setups' figures side by side.")
	default:
		d.para("%s", "Per scenario and arm, each setup's means over its repetitions; re-read vs spec is relative to the "+
			"setup's own spec arm, with Fieller's 95 % interval:")
		d.table([]string{"scenario", "arm", "setup", "repetitions", "cached share", "re-read tokens", "re-read vs spec", "prefill (s)"}, 3, rows)
	}
	for i := range r.Figures {
		if r.Figures[i].SideBySide {
			d.blocks = append(d.blocks, block{kind: bFigure, fig: &r.Figures[i]})
		}
	}
}
