package check

import (
	"cmp"
	"fmt"
	"slices"

	"lab/metrics"
	"lab/report"
)

// Status is an expectation's outcome: [Held] or [Failed].
type Status string

// The values of [Status].
const (
	// Held: every request (or scenario × arm) the expectation matched met it.
	Held Status = "held"
	// Failed: at least one did not, or the expectation matched no samples at all.
	Failed Status = "failed"
)

// CachedExpected is the [Failure].CachedSource of a cached share computed from
// expected_cached_tokens, because the sample's cached_tokens is unknown.
const CachedExpected = "expected"

// Result is what [Evaluate] found: every expectation of a file with its status, in file order.
type Result struct {
	// File is the check file's path as the user named it.
	File string `json:"file"`
	// Expectations are the outcomes, one per expectation, in file order.
	Expectations []Outcome `json:"expectations"`
	// Held and Failed count the outcomes by status.
	Held   int `json:"held"`
	Failed int `json:"failed"`
	// LeftOut are the sessions left out of every expectation because they did not complete
	// (report.Sessions: a request failed, or the run was interrupted during it).
	LeftOut []report.LeftOut `json:"left_out,omitempty"`
}

// OK reports whether every expectation held.
func (r *Result) OK() bool { return r.Failed == 0 }

// Outcome is one expectation's result.
type Outcome struct {
	Expectation
	// Description is the expectation in one line (its String).
	Description string `json:"description"`
	// Status is held or failed.
	Status Status `json:"status"`
	// Checked is how many requests (min_cached_share, no_divergence_before) or scenario × arm
	// pairs (max_reread_tokens) the expectation was checked against. An expectation that
	// matched samples but checked none (from_request beyond every session) fails.
	Checked int `json:"checked"`
	// LeftOut is how many sessions the expectation matched that were left out as incomplete
	// (listed in [Result].LeftOut); a session left out because a request failed is also a
	// failure of the expectation.
	LeftOut int `json:"left_out,omitempty"`
	// CachedSources, for min_cached_share, are the sources of the cached token counts the
	// shares were computed from, sorted: cached_source values such as "simulation" or
	// "server_log", and [CachedExpected] where cached_tokens was unknown.
	CachedSources []string `json:"cached_sources,omitempty"`
	// Failures are the requests (or pairs) that did not meet it, in scenario, arm, repetition
	// and request order; empty when it held.
	Failures []Failure `json:"failures"`
}

// Failure is one request, or one scenario × arm, that did not meet an expectation.
type Failure struct {
	// Scenario and Arm name the samples.
	Scenario string `json:"scenario"`
	Arm      string `json:"arm"`
	// Repetition is the 1-based repetition; 0 (omitted) for a failure over every repetition
	// (max_reread_tokens) or for an expectation that matched no samples.
	Repetition int `json:"repetition,omitempty"`
	// Request is the 0-based request_index of the failing request; nil for a failure of a whole
	// scenario × arm.
	Request *int `json:"request,omitempty"`
	// Message says what was found against what was expected, for example
	// "cached share 0.000 < 0.25".
	Message string `json:"message"`
	// Value is the figure that broke the expectation: the cached share, or the re-read tokens
	// (mean over repetitions); 0 where there is none (no samples, a failed request, a
	// divergence).
	Value float64 `json:"value"`
	// CachedSource is where the cached tokens of a cached share came from: a cached_source value
	// or [CachedExpected]; "" for other expectations.
	CachedSource string `json:"cached_source,omitempty"`
	// DivergenceSegment is the segment where the failing request first diverged from the
	// server's cache ("system", "tools", "message N", ...); for max_reread_tokens the one of the
	// request that re-read the most; "" when it did not diverge.
	DivergenceSegment string `json:"divergence_segment,omitempty"`
	// MaxRequest, for max_reread_tokens, is the request that re-read the most tokens (in
	// MaxRepetition), and MaxRequestTokens how many.
	MaxRequest       *int  `json:"max_request,omitempty"`
	MaxRepetition    int   `json:"max_repetition,omitempty"`
	MaxRequestTokens int64 `json:"max_request_tokens,omitempty"`
}

// session is one scenario × arm × repetition's requests, in request order.
type session struct {
	scenario, arm string
	rep           int
	reqs          []*metrics.Sample
}

// Evaluate checks every expectation of f against samples (any order; for example a run folder's
// metrics.ReadRun) and returns the outcomes: [EvaluateRuns] without manifests, so that a
// session with a failed request is left out and fails the expectations that match it.
func Evaluate(f *File, samples []metrics.Sample) *Result {
	return EvaluateRuns(f, nil, samples)
}

// EvaluateRuns checks every expectation of f against the complete sessions of samples
// (report.Sessions with the runs' manifests: a session is left out when one of its requests
// failed, or when its run was interrupted during it) and returns the outcomes. It never fails:
// an expectation that matches no samples, or that checks no request, is [Failed] with a
// failure saying so; a left-out session with a failed request is a failure of every
// expectation that matches it; an interrupted session is only counted ([Outcome].LeftOut) and
// listed ([Result].LeftOut).
func EvaluateRuns(f *File, runs []*metrics.Manifest, samples []metrics.Sample) *Result {
	complete, left := report.Sessions(runs, samples)
	sessions := group(complete)
	res := &Result{File: f.Path, Expectations: []Outcome{}, LeftOut: left}
	for i := range f.Expect {
		e := f.Expect[i]
		o := Outcome{Expectation: e, Description: e.String(), Failures: []Failure{}}
		match := func(scenario, arm string) bool {
			return (e.Scenario == Any || e.Scenario == scenario) && (e.Arm == Any || e.Arm == arm)
		}
		var matched []*session
		for _, s := range sessions {
			if match(s.scenario, s.arm) {
				matched = append(matched, s)
			}
		}
		for _, l := range left {
			if !match(l.Scenario, l.Arm) {
				continue
			}
			o.LeftOut++
			if l.Reason == report.LeftFailed {
				req := int(l.Request)
				o.Failures = append(o.Failures, Failure{Scenario: l.Scenario, Arm: l.Arm, Repetition: int(l.Repetition), Request: &req,
					Message: "the request failed: " + l.Error + " (its session is left out)"})
			}
		}
		if len(matched) == 0 && o.LeftOut == 0 {
			o.Failures = append(o.Failures, Failure{Scenario: e.Scenario, Arm: e.Arm,
				Message: "no requests of " + e.Scenario + "/" + e.Arm + " in the samples"})
		}
		switch {
		case e.MinCachedShare != nil:
			checkShare(&o, matched)
		case e.NoDivergenceBefore != "":
			checkDivergence(&o, matched)
		case e.MaxRereadTokens != nil:
			checkReread(&o, matched)
		}
		if o.Checked == 0 && len(o.Failures) == 0 && (len(matched) > 0 || o.LeftOut > 0) {
			// A check of nothing must not pass: from_request beyond every session, or every
			// matching session left out.
			msg := fmt.Sprintf("checked no request: no request of %s/%s from request %d on", e.Scenario, e.Arm, e.FromRequest)
			if len(matched) == 0 {
				msg = fmt.Sprintf("checked no request: every session of %s/%s was left out as incomplete", e.Scenario, e.Arm)
			}
			o.Failures = append(o.Failures, Failure{Scenario: e.Scenario, Arm: e.Arm, Message: msg})
		}
		o.Status = Held
		if len(o.Failures) > 0 {
			o.Status = Failed
			res.Failed++
		} else {
			res.Held++
		}
		res.Expectations = append(res.Expectations, o)
	}
	return res
}

// group splits samples into sessions sorted by scenario, arm (spec first), repetition, with
// each session's requests sorted by request index.
func group(samples []metrics.Sample) []*session {
	type key struct {
		scenario, arm string
		rep           int32
	}
	by := map[key]*session{}
	var out []*session
	for i := range samples {
		s := &samples[i]
		k := key{s.Scenario, s.Arm, s.Repetition}
		ss := by[k]
		if ss == nil {
			ss = &session{scenario: s.Scenario, arm: s.Arm, rep: int(s.Repetition)}
			by[k] = ss
			out = append(out, ss)
		}
		ss.reqs = append(ss.reqs, s)
	}
	armOrder := func(a, b string) int {
		x := []string{a, b}
		metrics.SortArms(x)
		if a == b {
			return 0
		}
		if x[0] == a {
			return -1
		}
		return 1
	}
	slices.SortFunc(out, func(a, b *session) int {
		return cmp.Or(cmp.Compare(a.scenario, b.scenario), armOrder(a.arm, b.arm), cmp.Compare(a.rep, b.rep))
	})
	for _, s := range out {
		slices.SortStableFunc(s.reqs, func(a, b *metrics.Sample) int { return cmp.Compare(a.RequestIndex, b.RequestIndex) })
	}
	return out
}

func requestFailure(s *session, r *metrics.Sample, msg string) Failure {
	idx := int(r.RequestIndex)
	return Failure{Scenario: s.scenario, Arm: s.arm, Repetition: s.rep, Request: &idx, Message: msg, DivergenceSegment: r.DivergenceSegment}
}

// applies reports whether a per-request expectation checks request r.
func (o *Outcome) applies(r *metrics.Sample) bool {
	if int(r.RequestIndex) < o.FromRequest {
		return false
	}
	return !(o.ExceptTurnStarts && r.Step == 1 && r.Turn > 1)
}

// CachedShare returns a sample's cached share (cached tokens / prompt tokens) and the source of
// its cached tokens: the sample's cached_tokens and cached_source when known, else
// expected_cached_tokens and [CachedExpected]. ok is false when the prompt has no tokens, and
// when cached_tokens is unknown and so is expected_cached_tokens (nil: source "").
func CachedShare(s *metrics.Sample) (share float64, source string, ok bool) {
	if s.CachedTokens == nil && s.ExpectedCachedTokens == nil {
		return 0, "", false
	}
	cached, _ := metrics.Int64(s.ExpectedCachedTokens)
	source = CachedExpected
	if s.CachedTokens != nil {
		cached, source = *s.CachedTokens, s.CachedSource
		if source == "" {
			source = "unknown source"
		}
	}
	if s.PromptTokens <= 0 {
		return 0, source, false
	}
	return float64(cached) / float64(s.PromptTokens), source, true
}

func checkShare(o *Outcome, matched []*session) {
	least := *o.MinCachedShare
	sources := map[string]bool{}
	for _, s := range matched {
		for _, r := range s.reqs {
			if !o.applies(r) {
				continue
			}
			o.Checked++
			if r.Failed() {
				o.Failures = append(o.Failures, requestFailure(s, r, "the request failed: "+r.Error))
				continue
			}
			share, src, ok := CachedShare(r)
			if !ok {
				msg := "no prompt tokens: no cached share"
				if src == "" {
					msg = "no cached share: the server did not say how many tokens it reused, and the backend shows no rendering to compute the expected ones"
				}
				o.Failures = append(o.Failures, requestFailure(s, r, msg))
				continue
			}
			sources[src] = true
			if share < least {
				f := requestFailure(s, r, fmt.Sprintf("cached share %.3f < %s", share, formatShare(least)))
				f.Value, f.CachedSource = share, src
				o.Failures = append(o.Failures, f)
			}
		}
	}
	for src := range sources {
		o.CachedSources = append(o.CachedSources, src)
	}
	slices.Sort(o.CachedSources)
}

func checkDivergence(o *Outcome, matched []*session) {
	limit := limitRank(o.NoDivergenceBefore)
	for _, s := range matched {
		for _, r := range s.reqs {
			if !o.applies(r) {
				continue
			}
			o.Checked++
			if r.ExpectedCachedTokens == nil {
				// Never a vacuous pass: an empty divergence_segment means nothing here.
				o.Failures = append(o.Failures, requestFailure(s, r,
					"divergence unknown: the backend records no divergence (it shows neither the rendered prompt nor its tokens)"))
				continue
			}
			if r.DivergenceSegment == "" {
				continue
			}
			rank, ok := segmentRank(r.DivergenceSegment)
			switch {
			case !ok:
				o.Failures = append(o.Failures, requestFailure(s, r, fmt.Sprintf("diverged in %q, a segment lab check does not know", r.DivergenceSegment)))
			case rank < limit:
				o.Failures = append(o.Failures, requestFailure(s, r, fmt.Sprintf("diverged in %s, before %s", r.DivergenceSegment, o.NoDivergenceBefore)))
			}
		}
	}
}

func checkReread(o *Outcome, matched []*session) {
	most := *o.MaxRereadTokens
	for i := 0; i < len(matched); {
		// The repetitions of one scenario × arm are adjacent (group sorts them).
		j := i
		var total int64
		var worst *metrics.Sample
		worstRep, unknown, requests := 0, 0, 0
		for ; j < len(matched) && matched[j].scenario == matched[i].scenario && matched[j].arm == matched[i].arm; j++ {
			for _, r := range matched[j].reqs {
				requests++
				v, ok := metrics.Int64(r.RereadTokens)
				if !ok {
					unknown++
					continue
				}
				total += v
				if worst == nil || v > *worst.RereadTokens {
					worst, worstRep = r, matched[j].rep
				}
			}
		}
		reps := j - i
		mean := float64(total) / float64(reps)
		o.Checked++
		if unknown > 0 {
			// Never a vacuous pass: an unknown re-read is not 0.
			s := matched[i]
			o.Failures = append(o.Failures, Failure{Scenario: s.scenario, Arm: s.arm,
				Message: fmt.Sprintf("re-read tokens unknown on %d of %d requests (the server did not say how many tokens it reused, or the request failed): at most %s cannot be checked", unknown, requests, formatInt(most))})
		} else if mean > float64(most) {
			s := matched[i]
			f := Failure{Scenario: s.scenario, Arm: s.arm, Value: mean,
				Message: fmt.Sprintf("re-read tokens %s > %s (mean of %d repetition%s)", formatInt(int64(mean+0.5)), formatInt(most), reps, plural(reps))}
			if worst != nil {
				idx := int(worst.RequestIndex)
				f.MaxRequest, f.MaxRepetition, f.MaxRequestTokens, f.DivergenceSegment = &idx, worstRep, *worst.RereadTokens, worst.DivergenceSegment
			}
			o.Failures = append(o.Failures, f)
		}
		i = j
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
