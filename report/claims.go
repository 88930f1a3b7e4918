package report

import (
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
	// Arms holds one entry per arm with data, in the order of [metrics.SortArms].
	Arms []Cliff `json:"arms"`
}

// Cliff is an arm's largest single-request drop of the cached share (cached / prompt tokens,
// between a request and the previous one with a known count, in one repetition), averaged over
// repetitions. Each repetition contributes its own largest drop; a repetition whose share never
// dropped contributes nothing, and an arm whose share never dropped has no Requests and
// estimates with N = 0.
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
	// its prefill took, in seconds.
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
		c.Reasoning = append(c.Reasoning, rc)
	}
	return c
}

type cliffPoint struct {
	request            int32
	prompt, from, to   float64
	reread, prefillSec float64
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
	points := map[string][]cliffPoint{}
	for k, ss := range byRep {
		slices.SortStableFunc(ss, func(a, b *metrics.Sample) int { return int(a.RequestIndex) - int(b.RequestIndex) })
		var best *cliffPoint
		prev, known := -1.0, 0
		for _, s := range ss {
			if s.CachedTokens == nil || s.PromptTokens <= 0 || s.Error != "" {
				continue
			}
			share := float64(*s.CachedTokens) / float64(s.PromptTokens)
			known++
			if prev >= 0 && prev-share > 0 && (best == nil || prev-share > best.from-best.to) {
				best = &cliffPoint{
					request: s.RequestIndex, prompt: float64(s.PromptTokens), from: prev, to: share,
					reread: float64(s.RereadTokens), prefillSec: float64(s.PrefillNs) / 1e9,
				}
			}
			prev = share
		}
		switch {
		case best != nil:
			points[k.arm] = append(points[k.arm], *best)
		case known >= 2 && points[k.arm] == nil:
			points[k.arm] = []cliffPoint{} // the share never dropped
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
	c := &CliffClaim{}
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
			xs := make([]float64, len(ps))
			for i, p := range ps {
				xs[i] = f(p)
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
		c.Arms = append(c.Arms, cl)
	}
	return c
}
