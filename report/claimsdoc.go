package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"lab/metrics"
	"lab/stats"
)

// notComparable is what a cell of prefill seconds reads when its run's prefill times are not
// comparable between arms ([PrefillCheck]).
const notComparable = "not comparable"

// prefillCell formats prefill seconds computed from reps: "not comparable" when one of their
// runs failed the prefill check, so that no conclusion is drawn from them.
func prefillCell(a *Analysis, e stats.Estimate, reps []RepTotals) string {
	if e.N == 0 {
		return "—"
	}
	if anyRunIn(reps, a.Claims.prefillNotComparable()) {
		return notComparable
	}
	return secEst(e)
}

// claimsSection lays out the prefill check and the spec's claims of a, the analysis of one
// setup of r (r.Analysis itself when the runs are of one setup).
func claimsSection(d *document, r *Report, a *Analysis) {
	prefillSection(d, a.Claims.Prefill)
	if a.Claims.Cliff == nil && len(a.Claims.Reasoning) == 0 {
		return
	}
	d.heading(2, "The spec's claims against this run")
	if slices.ContainsFunc(r.Runs, func(m *metrics.Manifest) bool {
		return m.Backend == "sim" && (a.Setup == nil || slices.Contains(a.Setup.Runs, m.RunID))
	}) {
		d.para("%s", "Caveat: these figures come from the sim backend, a reference computed by a cache model, "+
			"not a measurement of a server; they check the harness, not the claims' numbers.")
	}
	if c := a.Claims.Cliff; c != nil {
		cliffSection(d, a, c)
	}
	if len(a.Claims.Reasoning) > 0 {
		reasoningSection(d, a.Claims.Reasoning)
	}
}

func prefillSection(d *document, checks []PrefillCheck) {
	if len(checks) == 0 {
		return
	}
	d.heading(2, "Prefill time against the token counts")
	d.para("Per run and arm: prefill seconds per re-read token, over the requests whose prefill time and re-read tokens are "+
		"both known. The arms of a run share one server and machine, so a re-read token costs them about the same; when the "+
		"largest and the smallest differ by more than %s×, the run's prefill times are %s (a busy machine, or a server "+
		"setting changed during the run): the report draws no conclusion from them, and their cells below read %q. The "+
		"token figures do not depend on the machine's speed and stand.",
		strconv.FormatFloat(PrefillSpreadLimit, 'f', -1, 64), notComparable, notComparable)
	var rows [][]string
	var items []string
	for _, c := range checks {
		for _, arm := range c.Arms {
			perK := "—"
			if arm.SecondsPerToken != nil {
				perK = strconv.FormatFloat(*arm.SecondsPerToken*1e6, 'f', 1, 64) // ms per 1,000 tokens
			}
			rows = append(rows, []string{orDash(c.RunID), arm.Arm, thousands(int64(arm.Requests)), thousands(arm.RereadTokens),
				seconds(float64(arm.PrefillNs) / 1e9), perK})
		}
		run := "Run " + orDash(c.RunID)
		if c.Setup != "" {
			run += " (" + c.Setup + ")"
		}
		switch {
		case c.Modelled != "":
			items = append(items, fmt.Sprintf("%s: the sim backend: prefill is modelled, not measured (%s), so it follows the "+
				"re-read tokens by construction and checks nothing.", run, c.Modelled))
		case c.Spread == nil:
			items = append(items, run+": fewer than two arms re-read anything: nothing to compare.")
		case !c.Comparable:
			items = append(items, fmt.Sprintf("%s: one arm's prefill per re-read token is %s that of another (more than %s×): "+
				"the prefill times of this run are %s, and no conclusion is drawn from them.", run, ratio(c.Spread),
				strconv.FormatFloat(PrefillSpreadLimit, 'f', -1, 64), notComparable))
		default:
			items = append(items, fmt.Sprintf("%s: the arms agree within %s (at most %s×): the prefill times are comparable.",
				run, ratio(c.Spread), strconv.FormatFloat(PrefillSpreadLimit, 'f', -1, 64)))
		}
	}
	d.table([]string{"run", "arm", "requests", "re-read tokens", "prefill (s)", "ms per 1,000 re-read tokens"}, 2, rows)
	d.list(items...)
}

func cliffSection(d *document, a *Analysis, c *CliffClaim) {
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
	var reps func(arm string) []RepTotals
	for i := range a.Scenarios {
		if sc := &a.Scenarios[i]; sc.Scenario == CliffScenario {
			reps = func(arm string) []RepTotals {
				if st := sc.Arm(arm); st != nil {
					return st.Reps
				}
				return nil
			}
		}
	}
	for _, cl := range arms {
		req := make([]string, len(cl.Requests))
		for i, q := range cl.Requests {
			req[i] = strconv.Itoa(int(q))
		}
		if len(req) == 0 {
			req = []string{"no drop"}
		}
		var rs []RepTotals
		if reps != nil {
			rs = reps(cl.Arm)
		}
		rows = append(rows, []string{cl.Arm, strings.Join(req, ", "), tokEst(cl.PromptTokens), pctEst(cl.From),
			pctEst(cl.To), tokEst(cl.RereadTokens), prefillCell(a, cl.PrefillSeconds, rs)})
	}
	d.table([]string{"", "request", "prompt tokens", "cached before", "cached at the request", "re-read tokens", "prefill (s)"}, 2, rows)
	d.para("%s", cliffVerdict(c))
}

func reasoningSection(d *document, claims []ReasoningClaim) {
	d.heading(3, "Reasoning sent back")
	d.para("The spec (3.2.0, §8): sent its calls without its reasoning, a model \"reasons its way to them again, step after step\"; "+
		"measured, \"a step re-read about a fifth fewer tokens with its reasoning sent back\" (%s). Below, per scenario where both "+
		"the %s and the %s arm ran, their re-read tokens (mean per repetition) where the chat template decides them: the steps "+
		"inside a turn (step 2 on), where %s sends the turn's reasoning back and %s does not, and the first request after a new "+
		"user message (turns 2 on), where the template decides what the earlier turns carry. Saved (tokens) is %s − %s, the "+
		"mean paired difference per repetition ± its 95 %% interval; saved is 1 − %s / %s, with the 95 %% interval from "+
		"Fieller's interval of the ratio.",
		percent(new(ClaimReasoningSaved)), metrics.SpecArm, ReasoningNeverArm, metrics.SpecArm, ReasoningNeverArm,
		ReasoningNeverArm, metrics.SpecArm, metrics.SpecArm, ReasoningNeverArm)
	drivers := map[string]bool{}
	for _, rc := range claims {
		drivers[rc.Driver] = true
	}
	head := []string{"scenario", "which requests", "repetitions", "re-read tokens, " + ReasoningNeverArm, "re-read tokens, " + metrics.SpecArm, "saved (tokens)", "saved"}
	if len(drivers) > 1 {
		head = slices.Insert(head, 1, "driver")
	}
	var rows [][]string
	for _, rc := range claims {
		for _, p := range []struct {
			name string
			part *ReasoningPart
		}{{"steps inside a turn", &rc.WithinTurn}, {"first after a new user message", &rc.NewUserMessage}} {
			row := []string{rc.Scenario, p.name, strconv.Itoa(p.part.Spec.N)} // the part's pairs
			if p.part.SpecRequests+p.part.NeverRequests == 0 {
				row[2] = strconv.Itoa(rc.Pairs)
				row = append(row, "none", "none", "—", "—")
			} else {
				row = append(row, tokEst(p.part.Never), tokEst(p.part.Spec), signedTokEst(p.part.Diff), withCI(p.part.Saved, p.part.SavedCI, pct))
			}
			if len(drivers) > 1 {
				row = slices.Insert(row, 1, rc.Driver)
			}
			rows = append(rows, row)
		}
	}
	d.table(head, len(head)-5, rows)

	// The chat templates' rules, once per template.
	type tmpl struct {
		t         Template
		scenarios []string
	}
	var ts []tmpl
	for _, rc := range claims {
		i := slices.IndexFunc(ts, func(x tmpl) bool { return x.t == rc.Template })
		if i < 0 {
			ts = append(ts, tmpl{t: rc.Template})
			i = len(ts) - 1
		}
		if !slices.Contains(ts[i].scenarios, rc.Scenario) {
			ts[i].scenarios = append(ts[i].scenarios, rc.Scenario)
		}
	}
	for _, x := range ts {
		which := "Every scenario above"
		if len(ts) > 1 {
			which = "Scenarios " + strings.Join(x.scenarios, ", ")
		}
		switch {
		case x.t.Name == "":
			d.para("%s: the chat template is unknown (the run records no renderer and the model's name names no family the "+
				"lab knows), so the lab cannot name the rule that causes what is seen.", which)
			continue
		case x.t.Name == "several":
			d.para("%s: the runs name different chat templates, so the lab names no one rule for what is seen.", which)
			continue
		}
		d.para("%s: the prompt was rendered by %s (from %s). What causes what is seen:", which, x.t.Name, x.t.Source)
		unknown := "unknown: the lab knows no rule of this template here"
		items := []string{"Steps inside a turn: " + orElse(x.t.WithinTurn, unknown), "First after a new user message: " + orElse(x.t.NewUserMessage, unknown)}
		d.list(items...)
	}

	// What the run can judge.
	var scripted, simLive bool
	var verdicts [][]string
	for _, rc := range claims {
		switch {
		case rc.Driver != metrics.DriverLive:
			scripted = true
		case rc.Behaviour == nil:
			simLive = true
		default:
			b := rc.Behaviour
			verdicts = append(verdicts, []string{rc.Scenario, strconv.Itoa(rc.Pairs), liveEst(b.ReasoningGenerated),
				liveEst(rc.WithinTurn.Diff), withCI(rc.WithinTurn.Saved, rc.WithinTurn.SavedCI, pct), verdictText(b.Verdict)})
		}
	}
	if scripted || simLive {
		what := "A scripted run sends the same conversation in both arms"
		if simLive {
			what = "A scripted run, and the sim's live driver (its model replays the scenario's steps), send the same conversation in both arms"
			if !scripted {
				what = "The sim's live driver replays the scenario's steps as the model's replies: both arms send the same conversation"
			}
		}
		d.para("%s: the figures above are the cache effect of sending reasoning back under this chat template, and no verdict on "+
			"the spec's claim. The claim is about what the model does (sent its calls without its reasoning, it reasons its way to "+
			"them again), which only live sessions of a model judge (lab run --driver live).", what)
	}
	if len(verdicts) > 0 {
		d.para("Live sessions: the behaviour claim per scenario. Δ is the mean paired difference %s − %s per session [95 %% CI]; "+
			"the claim holds when %s generated more reasoning and re-read more inside its turns than %s, both intervals above 0, "+
			"and does not hold when either interval lies below 0.", ReasoningNeverArm, metrics.SpecArm, ReasoningNeverArm, metrics.SpecArm)
		d.table([]string{"scenario", "repetitions", "reasoning generated Δ (tokens)", "re-read inside a turn Δ (tokens)",
			"saved inside a turn", "on this run"}, 1, verdicts)
	}
}

// liveEst formats a paired difference with its interval; "—" without values.
func liveEst(e stats.Estimate) string {
	if e.N == 0 {
		return "—"
	}
	return liveEstimate(e)
}

// orElse returns s, or alt when s is empty.
func orElse(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// verdictText is how a behaviour verdict reads in the report.
func verdictText(v string) string {
	switch v {
	case VerdictUndecided:
		return "undecided: an interval includes 0"
	case VerdictNoInterval:
		return "no verdict: no interval (fewer than 2 repetitions, or no step inside a turn)"
	}
	return v
}
