package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"lab/metrics"
)

// TerminalLines is the most lines [Terminal] writes when [TerminalOptions].MaxLines is 0.
const TerminalLines = 36

// TerminalTolerance is how far an arm's re-read tokens may lie from the spec arm's, as a share
// of spec's (1 %), for [Terminal] to count it within spec's interval when the comparison has no
// interval (one repetition, or Fieller's interval unbounded).
const TerminalTolerance = 0.01

// TerminalOptions bound what [Terminal] writes.
type TerminalOptions struct {
	// MaxLines is the most lines to write; 0 is [TerminalLines]. Fewer than the claims and the
	// notes need is taken as that many: the claims' verdicts are never cut.
	MaxLines int
	// More names where the rest is, in the lines that say what was left out ("report.html");
	// "" is "the report".
	More string
}

// Terminal writes the answer of a report at a glance, for a terminal after `lab run` or
// `lab report`: per setup, scenario and arm the cached share, the re-read tokens, re-read vs
// spec (with Fieller's interval where there is one) and the request that lost most of the KV
// cache ([ArmStats].BiggestLoss) with the segment its prompt first diverged in; then each
// claim's verdict ([Claims], [TemplateCheck]), the servers set side by side, and the sessions
// left out. Figures the run did not measure read "—". Per scenario it lists the spec arm and
// the arms whose re-read tokens differ from spec's beyond its interval ([TerminalTolerance]
// without one), the biggest losses first, and within [TerminalOptions].MaxLines lines in all:
// a line says how many arms it left out and where they are. A scenario without a spec arm lists
// every arm, the most re-read tokens first, and when no scenario has one there is no vs spec
// column and no arm is said to differ from spec. It returns an error for a report
// without analysis or runs and any error writing to w (one Write call).
func Terminal(w io.Writer, r *Report, o TerminalOptions) error {
	if err := check(r, "terminal"); err != nil {
		return err
	}
	limit := o.MaxLines
	if limit <= 0 {
		limit = TerminalLines
	}
	more := o.More
	if more == "" {
		more = "the report"
	}
	groups := r.Analysis.Groups()
	multi := len(groups) > 1
	var head, tail []string
	for _, g := range groups {
		head = append(head, setupLine(g, multi, r.Runs))
	}
	for _, g := range groups {
		tail = append(tail, claimLines(g, multi)...)
	}
	for i := range r.Analysis.Servers {
		tail = append(tail, serversLine(&r.Analysis.Servers[i]))
	}
	for _, g := range groups {
		tail = append(tail, noteLines(g, multi)...)
	}
	if len(tail) == 0 {
		tail = []string{"claims: none this run can check (the midnight cliff needs scenario midnight; reasoning sent back, arms spec and reasoning-never)"}
	}
	units := terminalUnits(groups)
	within := 0
	for _, u := range units {
		within += u.within
	}
	// The table's header and rows get what the head, the tail and the lines saying what was
	// left out leave.
	budget := limit - len(head) - len(tail) - 1
	if within > 0 {
		budget--
	}
	shown, hidden, hiddenUnits := allocate(units, budget)
	if hidden > 0 || hiddenUnits > 0 {
		shown, hidden, hiddenUnits = allocate(units, budget-1)
	}

	var b bytes.Buffer
	for _, l := range head {
		b.WriteString(l + "\n")
	}
	if len(units) == 0 {
		b.WriteString("no request measured\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	// The ratio to spec is a column only when some scenario has a spec arm to compare with.
	anySpec := slices.ContainsFunc(units, func(u terminalUnit) bool { return u.hasSpec })
	cols := []string{"scenario", "arm", "cached", "re-read tokens", "vs spec", "biggest loss (request: tokens of the previous prompt re-read, where the prompt diverged)"}
	if !anySpec {
		cols = slices.Delete(cols, 4, 5)
	}
	if multi {
		cols = slices.Insert(cols, 0, "setup")
	}
	if slices.ContainsFunc(shown, func(n int) bool { return n > 0 }) {
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	for i, u := range units {
		n := shown[i]
		if n == 0 {
			continue
		}
		for j, st := range u.rows[:n] {
			sc := ""
			if j == 0 {
				sc = u.scenario
			}
			row := []string{sc, st.Arm, pctEst(st.CachedShare), tokEst(st.RereadTokens), vsSpecCell(st, u.hasSpec), lossCell(st)}
			if !anySpec {
				row = slices.Delete(row, 4, 5)
			}
			if multi {
				row = slices.Insert(row, 0, u.setup)
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	_ = tw.Flush() // writes to a bytes.Buffer: no error
	if within > 0 {
		fmt.Fprintf(&b, "%d more %s within spec's interval (or %s of spec's re-read tokens without one): see %s\n",
			within, plural2(within, "arm", "arms"), pct(TerminalTolerance), more)
	}
	if hidden > 0 || hiddenUnits > 0 {
		// The arms left out of a scenario with a spec arm differ from it; those of a scenario
		// without one are compared with nothing.
		differ, alone, aloneUnits := 0, 0, 0
		for i, u := range units {
			switch left := len(u.rows) - shown[i]; {
			case shown[i] == 0 || left == 0:
			case u.hasSpec:
				differ += left
			default:
				alone += left
				aloneUnits++
			}
		}
		var parts []string
		if differ > 0 {
			parts = append(parts, fmt.Sprintf("%d more %s that differ from spec", differ, plural2(differ, "arm", "arms")))
		}
		if alone > 0 {
			what := plural2(aloneUnits, "in a scenario", "in scenarios") + " with no spec arm to compare with"
			if !anySpec {
				what = "(no spec arm to compare with)"
			}
			parts = append(parts, fmt.Sprintf("%d more %s %s", alone, plural2(alone, "arm", "arms"), what))
		}
		if hiddenUnits > 0 {
			parts = append(parts, fmt.Sprintf("%d more %s", hiddenUnits, plural2(hiddenUnits, "scenario", "scenarios")))
		}
		fmt.Fprintf(&b, "%s: see %s\n", joinAnd(parts), more)
	}
	for _, l := range tail {
		b.WriteString(l + "\n")
	}
	return write(w, "terminal", b.Bytes())
}

// joinAnd joins parts as a list in a sentence: "a", "a and b", "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// terminalUnit is one scenario of one setup in [Terminal]'s table: the rows it may show, in
// order (the spec arm first, then the arms that differ from it, the biggest losses first).
type terminalUnit struct {
	setup, scenario string
	rows            []*ArmStats
	hasSpec         bool
	// within counts the arms left out as within spec's interval.
	within int
}

func terminalUnits(groups []*Analysis) []terminalUnit {
	var units []terminalUnit
	for _, g := range groups {
		label := ""
		if g.Setup != nil {
			label = g.Setup.Label
		}
		for i := range g.Scenarios {
			sc := &g.Scenarios[i]
			u := terminalUnit{setup: label, scenario: sc.Scenario}
			spec := sc.Arm(metrics.SpecArm)
			var others []*ArmStats
			for j := range sc.Arms {
				st := &sc.Arms[j]
				switch {
				case st == spec:
				case spec != nil && !differsFromSpec(st, spec):
					u.within++
				default:
					others = append(others, st)
				}
			}
			// The biggest losses first: the most re-read tokens more than spec (or, without a
			// spec arm, the most re-read tokens); an arm whose figure is unknown last.
			key := func(st *ArmStats) float64 {
				if st.RereadTokens.N == 0 {
					return math.Inf(-1)
				}
				if spec != nil && spec.RereadTokens.N > 0 {
					return st.RereadTokens.Mean - spec.RereadTokens.Mean
				}
				return st.RereadTokens.Mean
			}
			slices.SortStableFunc(others, func(a, b *ArmStats) int { return cmp.Compare(key(b), key(a)) })
			if spec != nil {
				u.rows, u.hasSpec = append([]*ArmStats{spec}, others...), true
			} else {
				u.rows = others
			}
			units = append(units, u)
		}
	}
	return units
}

// differsFromSpec reports whether st's re-read tokens differ from spec's beyond the interval of
// their ratio (Fieller's), or by more than [TerminalTolerance] of spec's without one. An arm
// whose re-read tokens are unknown differs: the reader must see it.
func differsFromSpec(st, spec *ArmStats) bool {
	if st.RereadTokens.N == 0 || spec.RereadTokens.N == 0 {
		return true
	}
	if v := st.VsSpec; v != nil && v.RereadRatio.CI != nil {
		return !v.RereadRatio.CI.Contains(1)
	}
	a, s := st.RereadTokens.Mean, spec.RereadTokens.Mean
	return math.Abs(a-s) > TerminalTolerance*s
}

// allocate says how many rows of each unit fit in budget rows (the table's header included):
// first each unit's first two rows (its spec arm and the arm that differs from it most), the
// units whose arm differs most first, then a unit with only its first row; then the next row of
// every unit, the biggest difference first, round after round. It returns the rows shown per
// unit, the rows left out of the units shown and the units left out.
func allocate(units []terminalUnit, budget int) (shown []int, hidden, hiddenUnits int) {
	shown = make([]int, len(units))
	left := max(budget-1, 0) // the header
	// gain is how far row k of unit i lies from its spec arm in re-read tokens (0 without one).
	gain := func(i, k int) float64 {
		u := &units[i]
		st, base := u.rows[k], u.rows[0]
		if !u.hasSpec || st.RereadTokens.N == 0 || base.RereadTokens.N == 0 {
			return 0
		}
		return math.Abs(st.RereadTokens.Mean - base.RereadTokens.Mean)
	}
	var pairs, singles []int
	for i, u := range units {
		switch {
		case len(u.rows) >= 2:
			pairs = append(pairs, i)
		case len(u.rows) == 1:
			singles = append(singles, i)
		}
	}
	slices.SortStableFunc(pairs, func(a, b int) int { return cmp.Compare(gain(b, 1), gain(a, 1)) })
	for _, i := range pairs {
		if left == 1 && len(singles) == 0 {
			shown[i], left = 1, 0 // room for one more row: the spec arm alone
		}
		if left >= 2 {
			shown[i] = 2
			left -= 2
		}
	}
	for _, i := range singles {
		if left >= 1 {
			shown[i] = 1
			left--
		}
	}
	for round := 2; left > 0; round++ {
		var next []int
		for i, u := range units {
			if shown[i] == round && round < len(u.rows) {
				next = append(next, i)
			}
		}
		if len(next) == 0 {
			break
		}
		slices.SortStableFunc(next, func(a, b int) int { return cmp.Compare(gain(b, round), gain(a, round)) })
		for _, i := range next {
			if left == 0 {
				break
			}
			shown[i]++
			left--
		}
	}
	for i, u := range units {
		if shown[i] == 0 && len(u.rows) > 0 {
			hiddenUnits++
			continue
		}
		hidden += len(u.rows) - shown[i]
	}
	return shown, hidden, hiddenUnits
}

// vsSpecCell is an arm's re-read tokens over spec's with Fieller's interval: "1.27×",
// "1.27× [1.20×, 1.34×]"; "1.00×" for spec itself, "—" without a spec arm or a ratio.
func vsSpecCell(st *ArmStats, hasSpec bool) string {
	switch {
	case !hasSpec:
		return "—"
	case st.Arm == metrics.SpecArm:
		if st.RereadTokens.N == 0 {
			return "—"
		}
		return times(1)
	case st.VsSpec == nil:
		return "—"
	}
	v := st.VsSpec.RereadRatio
	return withCI(finite(v.Value), v.CI, times)
}

// lossCell is an arm's biggest loss: "request 27: 17,074, in system"; the repetition too when
// the arm has several; "—" when no request's loss is known.
func lossCell(st *ArmStats) string {
	l := st.BiggestLoss
	if l == nil {
		return "—"
	}
	at := "request " + strconv.Itoa(int(l.RequestIndex))
	if len(st.Reps) > 1 {
		at = fmt.Sprintf("repetition %d %s", l.Repetition, at)
	}
	where := "in " + l.DivergenceSegment
	switch e := l.ExpectedCachedTokens; {
	case e == nil:
		where = "where unknown (no expected cached tokens)"
	case l.CachedTokens+int64(math.Ceil(MismatchTolerance*float64(*e))) < *e:
		// The prompt kept more of the cache than the server did.
		where = fmt.Sprintf("the server kept %s of %s expected", thousands(l.CachedTokens), thousands(*e))
		if l.DivergenceSegment != "" {
			where += ", prompt diverged in " + l.DivergenceSegment
		}
	case l.DivergenceSegment == "":
		where = "no divergence recorded"
	}
	return fmt.Sprintf("%s: %s, %s", at, thousands(l.LostTokens), where)
}

// setupLine is a setup's first line: its server, runs and requests, and for the sim that it is a
// reference. runs are the report's manifests, for an analysis without its setup ([Analyze]).
func setupLine(a *Analysis, multi bool, runs []*metrics.Manifest) string {
	requests, reps := 0, 0
	for i := range a.Scenarios {
		for j := range a.Scenarios[i].Arms {
			st := &a.Scenarios[i].Arms[j]
			requests += st.Pooled.Requests
			reps = max(reps, len(st.Reps))
		}
	}
	setup := metrics.SetupOf(runs[0]) // check: runs holds at least one manifest
	var ids []string
	for _, m := range runs {
		ids = append(ids, orDash(m.RunID))
	}
	if a.Setup != nil {
		setup, ids = a.Setup.Setup, a.Setup.Runs
	}
	what := serverName(setup)
	if setup.Model != "" {
		what += ", model " + setup.Model
	}
	l := fmt.Sprintf("%s: %s %s, %d %s", what, plural2(len(ids), "run", "runs"), strings.Join(ids, ", "),
		requests, plural2(requests, "request", "requests"))
	if reps > 0 {
		l += fmt.Sprintf(", %d %s", reps, plural2(reps, "repetition", "repetitions"))
	}
	if setup.Backend == "sim" {
		l += " (the sim: a reference computed by a cache model, not a measurement)"
	}
	if multi && a.Setup != nil {
		l = a.Setup.Label + ": " + l
	}
	return l
}

func plural2(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// claimLines are the verdicts of the claims a setup's analysis checks, one line each.
func claimLines(a *Analysis, multi bool) []string {
	prefix := ""
	if multi && a.Setup != nil {
		prefix = a.Setup.Label + ": "
	}
	var out []string
	if c := a.Claims.Cliff; c != nil {
		l := "midnight cliff (§10, 99% cached to 0% when the date changed): "
		var date, spec *Cliff
		for i := range c.Arms {
			switch c.Arms[i].Arm {
			case CliffArm:
				date = &c.Arms[i]
			case metrics.SpecArm:
				spec = &c.Arms[i]
			}
		}
		if c.Holds == nil || date == nil {
			l += fmt.Sprintf("no verdict: the run has no drop of the %s arm", CliffArm)
		} else {
			verdict := "does not hold"
			if *c.Holds {
				verdict = "holds"
			}
			l += fmt.Sprintf("%s: %s fell from %s to %s cached at request %s", verdict, CliffArm, pctEst(date.From), pctEst(date.To), requestList(date.Requests))
			if spec != nil {
				l += fmt.Sprintf(" (spec: %s to %s)", pctEst(spec.From), pctEst(spec.To))
			}
		}
		out = append(out, prefix+l)
	}
	if l := reasoningLine(a.Claims.Reasoning); l != "" {
		out = append(out, prefix+l)
	}
	if l := templatesLine(a.Templates); l != "" {
		out = append(out, prefix+l)
	}
	var slow []string
	for _, p := range a.Claims.Prefill {
		if !p.Comparable && p.Modelled == "" {
			slow = append(slow, p.RunID)
		}
	}
	if len(slow) > 0 {
		out = append(out, prefix+fmt.Sprintf("prefill seconds: not comparable between arms in %s (more than %s× apart per re-read token): they draw no conclusion; the tokens stand",
			strings.Join(slow, ", "), strconv.FormatFloat(PrefillSpreadLimit, 'f', -1, 64)))
	}
	return out
}

func requestList(reqs []int32) string {
	if len(reqs) == 0 {
		return "—"
	}
	s := make([]string, len(reqs))
	for i, r := range reqs {
		s[i] = strconv.Itoa(int(r))
	}
	return strings.Join(s, ", ")
}

// reasoningLine is the verdict on the reasoning claim (§8, "about a fifth fewer") over the
// scenarios that check it; "" when none does.
func reasoningLine(claims []ReasoningClaim) string {
	if len(claims) == 0 {
		return ""
	}
	l := fmt.Sprintf("reasoning sent back (§8, a step re-reads %s fewer tokens): ", pct(ClaimReasoningSaved))
	var live []string
	counts := map[string]int{}
	var within, atUser []float64
	for _, rc := range claims {
		if rc.Behaviour != nil {
			live = append(live, rc.Scenario+" "+rc.Behaviour.Verdict)
			counts[rc.Behaviour.Verdict]++
			continue
		}
		if v := rc.WithinTurn.Saved; v != nil {
			within = append(within, *v)
		}
		if v := rc.NewUserMessage.Saved; v != nil {
			atUser = append(atUser, *v)
		}
	}
	if len(live) > 0 {
		if len(live) <= 3 {
			return l + "live sessions: " + strings.Join(live, "; ")
		}
		var parts []string
		for _, v := range []string{VerdictHolds, VerdictDoesNotHold, VerdictUndecided, VerdictNoInterval} {
			if counts[v] > 0 {
				parts = append(parts, fmt.Sprintf("%s on %d", v, counts[v]))
			}
		}
		return l + fmt.Sprintf("live sessions: %s of %d scenarios", strings.Join(parts, ", "), len(live))
	}
	span := func(xs []float64) string {
		if len(xs) == 0 {
			return "—"
		}
		lo, hi := slices.Min(xs), slices.Max(xs)
		if lo == hi || len(xs) == 1 {
			return pct(lo)
		}
		return pct(lo) + " to " + pct(hi)
	}
	l += "no verdict: scripted sessions show only the cache effect (lab run --driver live judges the claim); saved inside a turn " +
		span(within) + ", at a new user message " + span(atUser)
	if len(claims) > 1 {
		l += fmt.Sprintf(" (%d scenarios)", len(claims))
	}
	return l
}

// templatesLine is the verdict on §8's sentence on templates over a setup's scenarios; "" when
// none checks it.
func templatesLine(ts []TemplateEffect) string {
	var checked []*TemplateEffect
	notHeld := 0
	for i := range ts {
		if c := ts[i].Section8; c != nil {
			checked = append(checked, &ts[i])
			if c.Verdict != VerdictHolds {
				notHeld++
			}
		}
	}
	if len(checked) == 0 {
		return ""
	}
	l := "templates drop earlier turns' reasoning themselves (§8, nothing re-read): "
	if len(checked) == 1 {
		c := checked[0].Section8
		l += c.Verdict + " on " + checked[0].Scenario
		if c.Why != "" {
			l += ": " + c.Why
		}
		return l
	}
	if notHeld == 0 {
		return l + fmt.Sprintf("holds on all %d scenarios", len(checked))
	}
	return l + fmt.Sprintf("does not hold on %d of %d scenarios (the spec arm re-reads more at a new user message than reasoning-never)", notHeld, len(checked))
}

// serversLine is a server comparison in one line: how many requests re-read a different number
// of tokens on the two servers, and the cause that weighs most ([ServerComparison].Causes[0])
// with each server's re-read tokens over its requests, named by the server:
//
//	servers A (ollama 0.17.4) and B (llamacpp b11669): 4 requests re-read a different number of
//	tokens on each; the cause that weighs most covers 2 of them, over which A re-read 200 tokens
//	and B 1,980: inside a turn: A: …; B: …
func serversLine(c *ServerComparison) string {
	l := fmt.Sprintf("servers %s (%s) and %s (%s): ", c.Base, c.BaseServer, c.Other, c.OtherServer)
	if len(c.Refused) > 0 {
		return l + "not compared, they differ in what is measured: " + strings.Join(c.Refused, "; ")
	}
	n := len(c.Requests)
	if n == 0 {
		return l + fmt.Sprintf("every request re-read the same number of tokens on both (within %s of its prompt)", pct(MismatchTolerance))
	}
	l += fmt.Sprintf("%d %s a different number of tokens on each", n, plural2(n, "request re-read", "requests re-read"))
	if len(c.Causes) == 0 {
		return l
	}
	k := c.Causes[0]
	tokens := fmt.Sprintf("%s re-read %s tokens and %s %s", c.Base, thousands(k.BaseReread), c.Other, thousands(k.OtherReread))
	switch {
	case n == 1:
		l += fmt.Sprintf("; there %s, for this cause: ", tokens)
	case k.Requests == n:
		l += fmt.Sprintf("; over all of them %s, for one cause: ", tokens)
	default:
		l += fmt.Sprintf("; the cause that weighs most covers %d of them, over which %s: ", k.Requests, tokens)
	}
	return l + k.Cause
}

// noteLines say what the figures leave out: sessions that did not complete, requests whose
// cached tokens differ from the expected ones.
func noteLines(a *Analysis, multi bool) []string {
	prefix := ""
	if multi && a.Setup != nil {
		prefix = a.Setup.Label + ": "
	}
	var out []string
	if n := len(a.LeftOut); n > 0 {
		out = append(out, prefix+fmt.Sprintf("left out: %d %s that did not complete (%s)", n, plural2(n, "session", "sessions"), a.LeftOut[0].String()))
	}
	mism := 0
	for i := range a.Scenarios {
		mism += len(a.Scenarios[i].Mismatches)
	}
	if mism > 0 {
		out = append(out, prefix+fmt.Sprintf("%d %s cached other than a perfect prefix cache would have (more than %s apart)",
			mism, plural2(mism, "request", "requests"), pct(MismatchTolerance)))
	}
	return out
}
