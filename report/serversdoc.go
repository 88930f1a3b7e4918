package report

import (
	"fmt"
	"strconv"
	"strings"
)

// maxRequestDiffs is how many requests of a [ServerComparison] the report lists one by one; the
// causes sum them all.
const maxRequestDiffs = 40

// servers lays out one [ServerComparison]: what the servers differ in, their figures per
// scenario×arm side by side, and where and why their re-read tokens differ; then its figures
// ([Figure].Setup is the comparison's [ServerComparison.Label]).
func (d *document) servers(r *Report, c *ServerComparison) {
	a, b := c.Base+" ("+c.BaseServer+")", c.Other+" ("+c.OtherServer+")"
	d.heading(2, "Servers side by side: %s and %s", a, b)
	if len(c.Refused) > 0 {
		d.para("Setups %s and %s are not set side by side as servers: they differ in what is measured (%s). "+
			"Two servers are compared on one model file, driver and cache start, over the scenarios (same name and content) "+
			"and arms both ran. Each setup's figures stand in its own section.", c.Base, c.Other, strings.Join(c.Refused, "; "))
		return
	}
	differs := "nothing the runs recorded"
	if len(c.Differs) > 0 {
		differs = strings.Join(c.Differs, "; ")
	}
	d.para("Setups %s and %s measured the same scenarios and arms with one model file: they differ in the server (%s). "+
		"Per scenario×arm, each server's mean over its repetitions; time to first token is the mean per request.", c.Base, c.Other, differs)
	if len(c.Notes) > 0 {
		d.list(c.Notes...)
	}
	var rows [][]string
	for _, arm := range c.Arms {
		for _, s := range []struct {
			name string
			f    ServerFigures
		}{{a, arm.Base}, {b, arm.Other}} {
			prefill := secEst(s.f.PrefillSeconds)
			if !s.f.PrefillComparable && s.f.PrefillSeconds.N > 0 {
				prefill = notComparable
			}
			ttft := "—"
			if s.f.TTFTSeconds != nil {
				ttft = seconds(*s.f.TTFTSeconds)
			}
			rows = append(rows, []string{arm.Scenario, arm.Arm, s.name, strconv.Itoa(s.f.Repetitions), estimate(s.f.Requests, tok),
				pctEst(s.f.CachedShare), tokEst(s.f.RereadTokens), prefill, pctEst(s.f.Efficiency), ttft})
		}
	}
	d.table([]string{"scenario", "arm", "server", "repetitions", "requests", "cached share", "re-read tokens", "prefill (s)",
		"cache efficiency", "time to first token (s)"}, 3, rows)

	d.heading(3, "Where they differ, why")
	if len(c.Requests) == 0 {
		d.para("No request's re-read tokens differ between the servers by more than %.0f %% of its prompt.", 100*MismatchTolerance)
	} else {
		d.para("%d request%s re-read more than %.0f %% of the prompt more on one server than on the other (requests paired by scenario, "+
			"arm, repetition in order and request index). Per cause: where in the session the request lies, where each server's cache "+
			"diverged from the prompt (the first token that differs from what the cache held after the previous request, as the lab "+
			"computes it from that server's own rendering, and the segment it lies in) and whether the server's cached tokens are what "+
			"the lab expected of that server:", len(c.Requests), plural(len(c.Requests)), 100*MismatchTolerance)
		items := make([]string, len(c.Causes))
		for i, k := range c.Causes {
			items[i] = fmt.Sprintf("%s: %d request%s, re-read %s on %s and %s on %s (%s − %s: %s): %s", k.Cause, k.Requests, plural(k.Requests),
				thousands(k.BaseReread), c.Base, thousands(k.OtherReread), c.Other, c.Other, c.Base, signedTok(float64(k.OtherReread-k.BaseReread)), k.Why)
		}
		d.list(items...)
		shown := c.Requests
		if len(shown) > maxRequestDiffs {
			d.para("The first %d of the %d requests:", maxRequestDiffs, len(shown))
			shown = shown[:maxRequestDiffs]
		}
		var rows [][]string
		for _, q := range shown {
			rows = append(rows, []string{q.Scenario, q.Arm, strconv.Itoa(q.Repetition), strconv.Itoa(int(q.RequestIndex)),
				optTok(q.Base.RereadTokens), divergedAt(q.Base), cachedVs(q.Base),
				optTok(q.Other.RereadTokens), divergedAt(q.Other), cachedVs(q.Other), signedTok(float64(q.RereadDiff))})
		}
		d.table([]string{"scenario", "arm", "repetition", "request", "re-read (" + c.Base + ")", "diverged at (" + c.Base + ")", "cached / expected (" + c.Base + ")",
			"re-read (" + c.Other + ")", "diverged at (" + c.Other + ")", "cached / expected (" + c.Other + ")", c.Other + " − " + c.Base}, 4, rows)
	}
	d.para("%s", c.Rendering)
	for i := range r.Figures {
		if r.Figures[i].Setup == c.Label() {
			d.blocks = append(d.blocks, block{kind: bFigure, fig: &r.Figures[i]})
		}
	}
}

// optTok formats a token count that may be unknown.
func optTok(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return thousands(*p)
}

// divergedAt says where a request's prompt first differed from the server's cache: "token
// 4,410 (reasoning 19)".
func divergedAt(s RequestSide) string {
	at := "token unknown"
	switch {
	case s.DivergenceToken != nil:
		at = "token " + thousands(*s.DivergenceToken)
	case s.ExpectedCachedTokens != nil && s.DivergenceSegment == "":
		// The lab knew what the cache held and the prompt only extended it.
		at = "none"
	}
	return fmt.Sprintf("%s (%s)", at, orDash(s.DivergenceSegment))
}

// cachedVs gives a request's cached and expected cached tokens and the verdict: "8,352 / 7,010
// (more than expected)".
func cachedVs(s RequestSide) string {
	return fmt.Sprintf("%s / %s (%s)", optTok(s.CachedTokens), optTok(s.ExpectedCachedTokens), s.Verdict)
}
