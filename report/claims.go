package report

import (
	"math"
	"slices"

	"lab/metrics"
)

// The spec's measured claims (context-hygiene spec 3.2.0, §10 and §8, quoted in DESIGN.md) that
// a report checks against a run.
const (
	// CliffScenario is the scenario whose clock crosses midnight.
	CliffScenario = "midnight"
	// CliffArm is the arm that puts the date in the system prompt, the practice the claim is
	// about.
	CliffArm = "date-in-system-prompt"
	// ClaimCliffPromptTokens, ClaimCliffFrom, ClaimCliffTo and ClaimCliffSeconds are the claim
	// "a date that changed at midnight sent a 16,912-token session from 99 % cached to 0 % (139 s
	// of re-reading)": the prompt in tokens, the cached share before and after, the prefill in
	// seconds.
	ClaimCliffPromptTokens = 16912
	ClaimCliffFrom         = 0.99
	ClaimCliffTo           = 0.0
	ClaimCliffSeconds      = 139.0

	// ReasoningNeverArm is the arm that never sends reasoning back.
	ReasoningNeverArm = "reasoning-never"
	// ClaimReasoningSaved is the claim "a step re-read about a fifth fewer tokens with its
	// reasoning sent back": the share of re-read tokens saved.
	ClaimReasoningSaved = 0.2

	// ClaimReasoningTolerance is how far from [ClaimReasoningSaved] ("about a fifth") the saved
	// share, or its 95 % interval, may lie for the claim to hold: ±10 points.
	ClaimReasoningTolerance = 0.1
	// ClaimCliffHoldsFrom and ClaimCliffHoldsTo are the cached shares the [CliffArm] must fall
	// from (at least) and to (at most), mean over repetitions, for the cliff claim to hold.
	ClaimCliffHoldsFrom = 0.9
	ClaimCliffHoldsTo   = 0.1
)

// Claims holds the checks of the spec's claims that the run has data for.
type Claims struct {
	// Cliff is the midnight cliff; nil when the run has no scenario [CliffScenario] with at
	// least two requests of known cached tokens in one repetition.
	Cliff *CliffClaim `json:"cliff,omitempty"`
	// Reasoning has one entry per scenario where both [metrics.SpecArm] and [ReasoningNeverArm]
	// ran, sorted by scenario; empty when none has.
	Reasoning []ReasoningClaim `json:"reasoning,omitempty"`
}

// CliffClaim is the midnight cliff of each arm of scenario [CliffScenario].
type CliffClaim struct {
	// AtDateCliff is true when the run has a [CliffArm] whose cached share dropped: every arm's
	// entry is then the change of its share at the request of the date arm's largest drop (the
	// first request after the date changed), so that the arms are compared at the same
	// request. When false, each arm's entry is its own largest drop.
	AtDateCliff bool `json:"at_date_cliff"`
	// Arms holds one entry per arm with data, in the order of [metrics.SortArms].
	Arms []Cliff `json:"arms"`
	// Holds says whether the claim holds on this run: the [CliffArm]'s share fell from at least
	// [ClaimCliffHoldsFrom] to at most [ClaimCliffHoldsTo] (means over repetitions); nil when
	// the run has no drop of the date arm.
	Holds *bool `json:"holds,omitempty"`
}

// Cliff is the change of an arm's cached share (cached / prompt tokens) from the previous
// request with a known count to the request of the cliff, in one repetition, averaged over
// repetitions. The request of the cliff is the one where the [CliffArm] dropped most in the
// same repetition (the most frequent such request for a repetition the date arm lacks), or,
// without a date arm, the arm's own largest drop. A repetition with no known share at that
// request (or, without a date arm, whose share never dropped) contributes nothing; an arm with
// no contribution has no Requests and estimates with N = 0.
type Cliff struct {
	Arm string `json:"arm"`
	// Requests are the 0-based request indices where the drops happened, distinct, sorted.
	Requests []int32 `json:"requests"`
	// PromptTokens is the prompt size of the request at the drop, in tokens.
	PromptTokens metrics.Estimate `json:"prompt_tokens"`
	// From and To are the cached shares (0–1) before and at the drop.
	From metrics.Estimate `json:"from"`
	To   metrics.Estimate `json:"to"`
	// RereadTokens and PrefillSeconds are what the request at the drop re-read and how long
	// its prefill took, in seconds; PrefillSeconds over the repetitions whose server reported a
	// prefill time (N = 0 when none did).
	RereadTokens   metrics.Estimate `json:"reread_tokens"`
	PrefillSeconds metrics.Estimate `json:"prefill_seconds"`
}

// ReasoningClaim is the share of re-read tokens one scenario saved by sending reasoning back:
// 1 − spec's re-read tokens / reasoning-never's, over the repetitions both ran.
type ReasoningClaim struct {
	Scenario string `json:"scenario"`
	// Pairs is the number of repetitions both arms ran.
	Pairs int `json:"pairs"`
	// Spec and Never are the mean re-read tokens per repetition of the two arms.
	Spec  metrics.Estimate `json:"spec_reread_tokens"`
	Never metrics.Estimate `json:"never_reread_tokens"`
	// Saved is 1 − mean(spec) / mean(never); nil when never re-read nothing.
	Saved *float64 `json:"saved"`
	// SavedCI is 1 minus the ends of Fieller's interval of the ratio; nil with fewer than 2
	// pairs or an unbounded interval.
	SavedCI *metrics.Interval `json:"saved_ci,omitempty"`
	// Holds is true when Saved, or its interval when there is one, comes within
	// [ClaimReasoningTolerance] of [ClaimReasoningSaved]; false otherwise and when Saved is nil.
	Holds bool `json:"holds"`
}

func claims(samples []metrics.Sample, a *Analysis) Claims {
	var c Claims
	c.Cliff = cliffClaim(samples)
	for i := range a.Scenarios {
		sc := &a.Scenarios[i]
		spec, never := sc.Arm(metrics.SpecArm), sc.Arm(ReasoningNeverArm)
		if spec == nil || never == nil {
			continue
		}
		b, n, keys := metrics.Pair(perRep(never, reread), perRep(spec, reread))
		r, _ := metrics.RatioOfMeans(b, n)
		rc := ReasoningClaim{Scenario: sc.Scenario, Pairs: len(keys), Spec: metrics.MeanCI(n), Never: metrics.MeanCI(b)}
		if v := finite(r.Value); v != nil {
			rc.Saved = new(1 - *v)
		}
		if r.CI != nil {
			rc.SavedCI = &metrics.Interval{Lo: 1 - r.CI.Hi, Hi: 1 - r.CI.Lo}
		}
		if rc.Saved != nil {
			lo, hi := *rc.Saved, *rc.Saved
			if rc.SavedCI != nil {
				lo, hi = min(lo, rc.SavedCI.Lo), max(hi, rc.SavedCI.Hi)
			}
			rc.Holds = hi >= ClaimReasoningSaved-ClaimReasoningTolerance && lo <= ClaimReasoningSaved+ClaimReasoningTolerance
		}
		c.Reasoning = append(c.Reasoning, rc)
	}
	return c
}

type cliffPoint struct {
	request            int32
	prompt, from, to   float64
	reread, prefillSec float64
}

// shareOf returns a request's cached share; false when its cached count is unknown, its prompt
// empty or it failed.
func shareOf(s *metrics.Sample) (float64, bool) {
	if s.CachedTokens == nil || s.PromptTokens <= 0 || s.Error != "" {
		return 0, false
	}
	return float64(*s.CachedTokens) / float64(s.PromptTokens), true
}

// pointAt is the cliff point of s; its re-read is known since its cached share is, its prefill
// time may not be (NaN, left out of the mean).
func pointAt(s *metrics.Sample, from, to float64) *cliffPoint {
	reread, _ := metrics.Int64(s.RereadTokens)
	prefill := math.NaN()
	if s.PrefillNs > 0 {
		prefill = float64(s.PrefillNs) / 1e9
	}
	return &cliffPoint{request: s.RequestIndex, prompt: float64(s.PromptTokens), from: from, to: to,
		reread: float64(reread), prefillSec: prefill}
}

// largestDrop returns the largest drop of the share in ss (sorted by request), nil when it
// never dropped, and how many requests have a known share.
func largestDrop(ss []*metrics.Sample) (best *cliffPoint, known int) {
	prev := -1.0
	for _, s := range ss {
		share, ok := shareOf(s)
		if !ok {
			continue
		}
		known++
		if prev >= 0 && prev-share > 0 && (best == nil || prev-share > best.from-best.to) {
			best = pointAt(s, prev, share)
		}
		prev = share
	}
	return best, known
}

// changeAt returns the change of the share at request req of ss (sorted by request) from the
// previous request with a known share; nil when either is unknown.
func changeAt(ss []*metrics.Sample, req int32) *cliffPoint {
	prev := -1.0
	for _, s := range ss {
		if s.RequestIndex > req {
			break
		}
		share, ok := shareOf(s)
		if s.RequestIndex == req {
			if !ok || prev < 0 {
				return nil
			}
			return pointAt(s, prev, share)
		}
		if ok {
			prev = share
		}
	}
	return nil
}

func cliffClaim(samples []metrics.Sample) *CliffClaim {
	type key struct {
		arm string
		rep metrics.RepKey
	}
	byRep := map[key][]*metrics.Sample{}
	for i := range samples {
		s := &samples[i]
		if s.Scenario != CliffScenario {
			continue
		}
		k := key{s.Arm, metrics.RepKey{RunID: s.RunID, Repetition: s.Repetition}}
		byRep[k] = append(byRep[k], s)
	}
	for _, ss := range byRep {
		slices.SortStableFunc(ss, func(a, b *metrics.Sample) int { return int(a.RequestIndex) - int(b.RequestIndex) })
	}
	// The date arm's cliff, per repetition, and the most frequent one.
	dateAt := map[metrics.RepKey]int32{}
	count := map[int32]int{}
	for k, ss := range byRep {
		if k.arm != CliffArm {
			continue
		}
		if best, _ := largestDrop(ss); best != nil {
			dateAt[k.rep] = best.request
			count[best.request]++
		}
	}
	mode, modeN := int32(0), 0
	for req, n := range count {
		if n > modeN || (n == modeN && req < mode) {
			mode, modeN = req, n
		}
	}
	points := map[string][]cliffPoint{}
	for k, ss := range byRep {
		var pt *cliffPoint
		known := 0
		if len(dateAt) > 0 {
			req, ok := dateAt[k.rep]
			if !ok {
				req = mode
			}
			pt = changeAt(ss, req)
		} else {
			pt, known = largestDrop(ss)
		}
		switch {
		case pt != nil:
			points[k.arm] = append(points[k.arm], *pt)
		case (len(dateAt) > 0 || known >= 2) && points[k.arm] == nil:
			points[k.arm] = []cliffPoint{} // no drop, or no share at the date arm's cliff
		}
	}
	if len(points) == 0 {
		return nil
	}
	arms := make([]string, 0, len(points))
	for arm := range points {
		arms = append(arms, arm)
	}
	metrics.SortArms(arms)
	c := &CliffClaim{AtDateCliff: len(dateAt) > 0}
	for _, arm := range arms {
		ps := points[arm]
		// Map order is random: sort the points so the means add up in a fixed order.
		slices.SortFunc(ps, func(a, b cliffPoint) int {
			if a.request != b.request {
				return int(a.request) - int(b.request)
			}
			switch {
			case a.from-a.to > b.from-b.to:
				return -1
			case a.from-a.to < b.from-b.to:
				return 1
			}
			return 0
		})
		col := func(f func(cliffPoint) float64) metrics.Estimate {
			var xs []float64
			for _, p := range ps {
				if v := f(p); !math.IsNaN(v) { // NaN: not measured
					xs = append(xs, v)
				}
			}
			return metrics.MeanCI(xs)
		}
		cl := Cliff{
			Arm:            arm,
			PromptTokens:   col(func(p cliffPoint) float64 { return p.prompt }),
			From:           col(func(p cliffPoint) float64 { return p.from }),
			To:             col(func(p cliffPoint) float64 { return p.to }),
			RereadTokens:   col(func(p cliffPoint) float64 { return p.reread }),
			PrefillSeconds: col(func(p cliffPoint) float64 { return p.prefillSec }),
		}
		for _, p := range ps {
			if !slices.Contains(cl.Requests, p.request) {
				cl.Requests = append(cl.Requests, p.request)
			}
		}
		if arm == CliffArm && c.AtDateCliff && cl.From.N > 0 {
			c.Holds = new(cl.From.Mean >= ClaimCliffHoldsFrom && cl.To.Mean <= ClaimCliffHoldsTo)
		}
		c.Arms = append(c.Arms, cl)
	}
	return c
}
