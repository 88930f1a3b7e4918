package report

import (
	"fmt"
	"strconv"
)

// templates lays out "What the template does": for every setup (server, family, chat template)
// and scenario where §8's sentence can be checked (the spec and reasoning-never arms both ran,
// with known re-read tokens at a new user message: [TemplateEffect].Section8), and every
// scenario of a family other than Qwen3 whatever its arms, the re-read tokens per request inside
// a turn, at a new user message and at compaction per arm, the spec's §8 sentence checked where
// it can be, and each part's first divergences with an excerpt of what the KV cache held against
// what the template rendered. It writes nothing when no setup has such a scenario.
func (d *document) templates(groups []*Analysis) {
	type entry struct {
		setup  *Analysis
		effect *TemplateEffect
		one    bool // the report's only setup: named by its server alone
	}
	var entries []entry
	one := len(groups) == 1
	for _, g := range groups {
		for i := range g.Templates {
			e := &g.Templates[i]
			if e.Section8 != nil || e.Family != "" && e.Family != "qwen3" {
				entries = append(entries, entry{g, e, one})
			}
		}
	}
	if len(entries) == 0 {
		return
	}
	d.heading(2, "What the template does")
	d.para("%s", "Per server, model family and chat template: the mean re-read tokens per request where the chat template decides them. "+
		"Inside a turn is every step after the first; new user message is the first request after one (where templates drop or keep earlier turns' reasoning); "+
		"compaction is the summarising request and the one after it. Each in the server's own tokens: compare families by the share of the prompt, not the count. "+
		"The spec's §8 says the common templates drop earlier turns' reasoning themselves, \"so what the server reads of the history is the same bytes either way and nothing is re-read\": "+
		"it holds for a setup when the spec arm, which sends the turn's reasoning back, re-reads at a new user message no more than the reasoning-never arm, which never does "+
		"(within "+strconv.Itoa(TemplateCheckTolerance)+" tokens per request).")
	var rows [][]string
	for _, en := range entries {
		for _, a := range en.effect.Arms {
			rows = append(rows, []string{templateSetupName(en.setup, en.one), templateFamilyCell(en.effect), en.effect.Scenario, a.Arm,
				partCell(a.WithinTurn), partCell(a.NewUserMessage), partCell(a.Compaction)})
		}
	}
	d.table([]string{"setup", "family", "scenario", "arm", "inside a turn", "new user message", "compaction"}, 4, rows)
	var checks []string
	for _, en := range entries {
		c := en.effect.Section8
		if c == nil {
			continue
		}
		msgs := "messages"
		if c.Requests == 1 {
			msgs = "message"
		}
		line := fmt.Sprintf("%s, %s, %s: §8 %s — at %d new user %s spec re-read %s tokens per request, reasoning-never %s",
			templateSetupName(en.setup, en.one), orDash(en.effect.Family), en.effect.Scenario, c.Verdict, c.Requests, msgs, fmtF(c.Spec), fmtF(c.Never))
		if c.NeverRequests != c.Requests {
			line += fmt.Sprintf(" (at %d)", c.NeverRequests)
		}
		if c.Why != "" {
			line += "; " + c.Why
		}
		checks = append(checks, line+".")
	}
	if len(checks) > 0 {
		d.list(checks...)
	}
	d.para("%s", "What each template does to the history, as the first divergences show it (per part, the kind of segment the prompt first differed in, "+
		"with the request that re-read the most: what the KV cache held — the earlier prompt and the reply the model generated — against what the template rendered):")
	for _, en := range entries {
		var items []string
		known, divUnknown := 0, 0
		for _, a := range en.effect.Arms {
			for _, p := range []struct {
				name string
				part TemplatePart
			}{{"inside a turn", a.WithinTurn}, {"new user message", a.NewUserMessage}, {"compaction", a.Compaction}} {
				known += p.part.Requests - p.part.Unknown
				divUnknown += p.part.DivergenceUnknown
				for i, dv := range p.part.Divergences {
					if i == 2 {
						break
					}
					items = append(items, divergenceItem(a.Arm, p.name, dv))
				}
			}
		}
		name := fmt.Sprintf("%s · %s · %s (%s)", templateSetupName(en.setup, en.one), orDash(en.effect.Family), en.effect.Scenario, orDash(en.effect.Template))
		switch {
		case divUnknown > 0 && divUnknown == known:
			d.para("%s: where these requests diverged from what the KV cache held is not known (the lab has no expected cached tokens for them).", name)
			continue
		case len(items) == 0 && divUnknown > 0:
			d.para("%s: no request of these parts whose divergence is known diverged from what the KV cache held; %d requests' is not known.", name, divUnknown)
			continue
		case len(items) == 0:
			d.para("%s: no request of these parts diverged from what the KV cache held: what they re-read is what the conversation added after it.", name)
			continue
		case divUnknown > 0:
			d.para("%s (where %d requests diverged is not known):", name, divUnknown)
		default:
			d.para("%s:", name)
		}
		d.list(items...)
	}
}

// templateSetupName names an analysis's setup in the template table: its label and server ("A: llamacpp
// b11669"), or the server alone when it is the report's only setup (one).
func templateSetupName(a *Analysis, one bool) string {
	if a.Setup == nil {
		return "—"
	}
	name := serverName(a.Setup.Setup)
	if a.Setup.Label != "" && !one {
		return a.Setup.Label + ": " + name
	}
	return name
}

// templateFamilyCell is the family of e in the table of "What the template does", with the
// renderer that rendered it when the runs record one ("qwen3, glm-4.7 renderer"): renderers on one
// family's model are setups of their own.
func templateFamilyCell(e *TemplateEffect) string {
	if e.Renderer == "" {
		return orDash(e.Family)
	}
	return orDash(e.Family) + ", " + e.Renderer + " renderer"
}

// partCell is a [TemplatePart] in a table cell: "1,234 (12)", the mean re-read tokens per request
// and the number of requests, "—" with none, and the unknown ones counted.
func partCell(p TemplatePart) string {
	if p.Requests == 0 {
		return "—"
	}
	s := "—"
	if p.Reread != nil {
		s = fmtF(*p.Reread)
	}
	s += fmt.Sprintf(" (%d)", p.Requests)
	if p.Unknown > 0 {
		s += fmt.Sprintf(" (%d unknown)", p.Unknown)
	}
	return s
}

// fmtF formats a mean token count to whole tokens with thousands separators.
func fmtF(v float64) string { return tok(v) }

// divergenceItem is one divergence of the template list: "spec, new user message: diverged in
// reasoning (reasoning dropped) on 3 requests, 4,200 re-read tokens; at turn 2 step 1: after …
// the cache held …, the template rendered …".
func divergenceItem(arm, part string, dv TemplateDivergence) string {
	s := fmt.Sprintf("%s, %s: diverged in %s", arm, part, dv.Segment)
	if dv.Rule != "" {
		s += " (" + dv.Rule + ")"
	}
	s += fmt.Sprintf(" on %d request", dv.Requests)
	if dv.Requests != 1 {
		s += "s"
	}
	s += fmt.Sprintf(", %s re-read tokens", thousands(dv.Reread))
	if e := dv.Example; e != nil {
		s += fmt.Sprintf("; at turn %d step %d: after %s the cache held %s, the template rendered %s",
			dv.Turn, dv.Step, quoteExcerpt(e.Before, e.BeforeCut, true), quoteExcerpt(e.Cached, e.CachedCut, false), quoteExcerpt(e.Prompt, e.PromptCut, false))
	}
	return s
}

// quoteExcerpt shows excerpt text as a Go-quoted string (line breaks and tabs escaped), an
// ellipsis where it was cut (cut, from the excerpt's flags, [lab/cachesim.Excerpt]): before the start of the
// text before a divergence, after the end of the others; "(nothing)" for "".
func quoteExcerpt(s string, cut, before bool) string {
	if s == "" {
		return "(nothing)"
	}
	q := strconv.Quote(s)
	switch {
	case cut && before:
		q = "…" + q
	case cut:
		q += "…"
	}
	return q
}
