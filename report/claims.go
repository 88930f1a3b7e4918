package report

import (
	"maps"
	"slices"

	"lab/metrics"
	"lab/stats"
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

	// ClaimCliffHoldsFrom and ClaimCliffHoldsTo are the cached shares the [CliffArm] must fall
	// from (at least) and to (at most), mean over repetitions, for the cliff claim to hold.
	ClaimCliffHoldsFrom = 0.9
	ClaimCliffHoldsTo   = 0.1
)

// Claims holds the checks of the spec's claims that the run has data for, and the prefill
// sanity check the figures in seconds depend on.
type Claims struct {
	// Prefill checks, per run, that the arms' prefill seconds per re-read token agree
	// ([PrefillCheck]); sorted by run id, empty when no request has both figures.
	Prefill []PrefillCheck `json:"prefill,omitempty"`
	// Cliff is the midnight cliff; nil when the run has no scenario [CliffScenario] with at
	// least two requests of known cached tokens in one repetition.
	Cliff *CliffClaim `json:"cliff,omitempty"`
	// Reasoning has one entry per scenario and driver where both [metrics.SpecArm] and
	// [ReasoningNeverArm] ran, sorted by scenario, then driver; empty when none has.
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
	PromptTokens stats.Estimate `json:"prompt_tokens"`
	// From and To are the cached shares (0–1) before and at the drop.
	From stats.Estimate `json:"from"`
	To   stats.Estimate `json:"to"`
	// RereadTokens and PrefillSeconds are what the request at the drop re-read and how long
	// its prefill took, in seconds, over the repetitions where each is known (N = 0: unknown).
	// Read PrefillSeconds with [Claims].Prefill: a run whose prefill times are not comparable
	// between arms gives no conclusion in seconds.
	RereadTokens   stats.Estimate `json:"reread_tokens"`
	PrefillSeconds stats.Estimate `json:"prefill_seconds"`
}

func claims(rows *metrics.Rows, a *Analysis, runs []*metrics.Manifest) Claims {
	return Claims{
		Prefill:   prefillChecks(rows, runs),
		Cliff:     cliffClaim(rows),
		Reasoning: reasoningClaims(rows, a.Live, runs),
	}
}

type cliffPoint struct {
	request            int32
	prompt, from, to   float64
	reread, prefillSec float64
	// rereadOK and prefillOK say whether the request's re-read tokens and prefill time are
	// known; an unknown one is left out of its mean.
	rereadOK, prefillOK bool
}

// shareOf returns a request's cached share; false when its cached count is unknown, its prompt
// empty or it failed.
func shareOf(s *metrics.Sample) (float64, bool) {
	prompt, ok := promptOf(s)
	if s.CachedTokens == nil || !ok || s.Error != "" {
		return 0, false
	}
	return float64(*s.CachedTokens) / float64(prompt), true
}

// pointAt is the cliff point of s; its re-read is known since its cached share is, its prefill
// time may not be (NaN, left out of the mean).
func pointAt(s *metrics.Sample, from, to float64) *cliffPoint {
	prompt, _ := promptOf(s) // known: the share at s is
	reread, rereadOK := rereadOf(s)
	prefill, prefillOK := prefillOf(s)
	return &cliffPoint{request: s.RequestIndex, prompt: float64(prompt), from: from, to: to,
		reread: float64(reread), prefillSec: float64(prefill) / 1e9, rereadOK: rereadOK, prefillOK: prefillOK}
}

// largestDrop returns the largest drop of the share in ss (sorted by request), nil when it
// never dropped, and how many requests have a known share.
func largestDrop(rows *metrics.Rows, ss []int) (best *cliffPoint, known int) {
	prev := -1.0
	var b metrics.SampleBuf
	for _, i := range ss {
		s := rows.Load(i, &b)
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
func changeAt(rows *metrics.Rows, ss []int, req int32) *cliffPoint {
	prev := -1.0
	var b metrics.SampleBuf
	for _, i := range ss {
		s := rows.Load(i, &b)
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

func cliffClaim(rows *metrics.Rows) *CliffClaim {
	type key struct {
		arm string
		rep stats.RepKey
	}
	byRep := map[key][]int{} // row indices, sorted by request
	for i := range rows.Len() {
		if rows.Scenario(i) != CliffScenario {
			continue
		}
		k := key{rows.Arm(i), stats.RepKey{RunID: rows.RunID(i), Repetition: rows.Repetition(i)}}
		byRep[k] = append(byRep[k], i)
	}
	for _, ss := range byRep {
		slices.SortStableFunc(ss, func(a, b int) int { return int(rows.RequestIndex(a)) - int(rows.RequestIndex(b)) })
	}
	// The date arm's cliff, per repetition, and the most frequent one.
	dateAt := map[stats.RepKey]int32{}
	count := map[int32]int{}
	for k, ss := range byRep {
		if k.arm != CliffArm {
			continue
		}
		if best, _ := largestDrop(rows, ss); best != nil {
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
			pt = changeAt(rows, ss, req)
		} else {
			pt, known = largestDrop(rows, ss)
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
	arms := slices.Collect(maps.Keys(points))
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
		col := func(f func(cliffPoint) (float64, bool)) stats.Estimate {
			var xs []float64
			for _, p := range ps {
				if v, ok := f(p); ok {
					xs = append(xs, v)
				}
			}
			return stats.MeanCI(xs)
		}
		cl := Cliff{
			Arm:            arm,
			PromptTokens:   col(func(p cliffPoint) (float64, bool) { return p.prompt, true }),
			From:           col(func(p cliffPoint) (float64, bool) { return p.from, true }),
			To:             col(func(p cliffPoint) (float64, bool) { return p.to, true }),
			RereadTokens:   col(func(p cliffPoint) (float64, bool) { return p.reread, p.rereadOK }),
			PrefillSeconds: col(func(p cliffPoint) (float64, bool) { return p.prefillSec, p.prefillOK }),
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
