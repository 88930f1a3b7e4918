package report

import (
	"math"
	"slices"

	"lab/metrics"
	"lab/stats"
)

// Segments splits re-read tokens by the kind of prompt segment they lie in, after the
// reread_*_tokens columns of [metrics.Sample]. Token counts.
type Segments struct {
	System     int64 `json:"system"`
	Tools      int64 `json:"tools"`
	Message    int64 `json:"message"`
	ToolResult int64 `json:"tool_result"`
	Reasoning  int64 `json:"reasoning"`
	Note       int64 `json:"note"`
	Other      int64 `json:"other"`
	// Unattributed is the re-read part no segment holds ([metrics.Sample].RereadUnattributedTokens).
	Unattributed int64 `json:"unattributed"`
}

// SegmentNames are the kinds of [Segments], in the order of [Segments.Values]
// ([metrics.RereadSplitNames]).
var SegmentNames = metrics.RereadSplitNames

// Values returns the counts in the order of [SegmentNames].
func (s Segments) Values() []int64 {
	return []int64{s.System, s.Tools, s.Message, s.ToolResult, s.Reasoning, s.Note, s.Other, s.Unattributed}
}

// add adds x's re-read split and reports whether x has one: a row whose split is null (every
// part nil; writers set all parts or none) adds nothing.
func (s *Segments) add(x *metrics.Sample) bool {
	dst := []*int64{&s.System, &s.Tools, &s.Message, &s.ToolResult, &s.Reasoning, &s.Note, &s.Other, &s.Unattributed}
	known := false
	for i, p := range x.RereadSplit() {
		if v, ok := metrics.Int64(*p); ok {
			*dst[i] += v
			known = true
		}
	}
	return known
}

// Counts are the counts every sum of requests in a report has ([ArmRow], [RepTotals]). Token
// counts are in tokens of the served model's tokenizer.
type Counts struct {
	// Requests is the number of requests (samples), failed ones included; Failed is the number
	// of those that ended with an error.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	// PromptTokens is the sum of prompt_tokens over the requests whose count is known;
	// PromptUnknown counts the others (null: a failed request, a server that gave none), left
	// out.
	PromptTokens  int64 `json:"prompt_tokens"`
	PromptUnknown int   `json:"prompt_unknown"`
	// CachedTokens is the sum of cached_tokens over the requests whose count is known;
	// CachedUnknown counts the others (null), left out: they are not counted as 0.
	CachedTokens  int64 `json:"cached_tokens"`
	CachedUnknown int   `json:"cached_unknown"`
}

// add counts the request s.
func (c *Counts) add(s *metrics.Sample) {
	c.Requests++
	if s.Failed() {
		c.Failed++
	}
	if v, ok := promptOf(s); ok {
		c.PromptTokens += v
	} else {
		c.PromptUnknown++
	}
	if s.CachedTokens == nil {
		c.CachedUnknown++
	} else {
		c.CachedTokens += *s.CachedTokens
	}
}

// RepTotals adds up the requests of one repetition of one scenario×arm. Token counts are in
// tokens of the served model's tokenizer.
type RepTotals struct {
	stats.RepKey
	Counts
	// PromptWhereCached is the sum of prompt_tokens over the requests whose cached_tokens is
	// known: the denominator of the cached share.
	PromptWhereCached int64 `json:"prompt_where_cached"`
	// ExpectedWhereCached and CachedWhereExpected are the sums of expected_cached_tokens and
	// cached_tokens over the requests whose cached_tokens and expected cached tokens are both
	// known: the denominator and numerator of the cache efficiency.
	ExpectedWhereCached int64 `json:"expected_where_cached"`
	CachedWhereExpected int64 `json:"cached_where_expected"`
	// ExpectedCachedTokens is the sum of expected_cached_tokens over the requests where the lab
	// could compute it; ExpectedUnknown counts those where it could not
	// ([metrics.Sample].ExpectedUnknown: a cloud API shows no rendering), left out.
	ExpectedCachedTokens int64 `json:"expected_cached_tokens"`
	ExpectedUnknown      int   `json:"expected_unknown"`
	// RereadTokens is the sum of the known reread_tokens; RereadUnknown counts the requests
	// whose re-read is unknown (cached tokens unknown), left out. Reread splits it by segment
	// kind over the requests whose split is known; SplitUnknown counts the others.
	RereadTokens  int64    `json:"reread_tokens"`
	RereadUnknown int      `json:"reread_unknown"`
	Reread        Segments `json:"reread"`
	SplitUnknown  int      `json:"split_unknown"`
	// PrefillNs is the sum of prefill_ns, in nanoseconds; PrefillKnown counts the requests with
	// a prefill time (prefill_ns > 0: a server processes at least one token of every prompt, so
	// 0 means the backend did not say, as a cloud API, or the request failed).
	PrefillNs    int64 `json:"prefill_ns"`
	PrefillKnown int   `json:"prefill_known"`
	// CostUSD is the sum of cost_usd in US dollars over the requests that have one; nil when
	// none has. CostKnown counts those requests.
	CostUSD   *float64 `json:"cost_usd,omitempty"`
	CostKnown int      `json:"cost_known,omitempty"`
}

// CachedShare returns cached / prompt tokens over the requests whose cached count is known;
// nil when none is known.
func (r *RepTotals) CachedShare() *float64 {
	if r.PromptWhereCached == 0 {
		return nil
	}
	return new(float64(r.CachedTokens) / float64(r.PromptWhereCached))
}

// Efficiency returns cached / expected cached tokens over the requests whose cached and
// expected counts are both known (the server's cache efficiency); nil when none is known or
// nothing was expected.
func (r *RepTotals) Efficiency() *float64 {
	if r.ExpectedWhereCached == 0 {
		return nil
	}
	return new(float64(r.CachedWhereExpected) / float64(r.ExpectedWhereCached))
}

// PrefillSeconds returns PrefillNs in seconds; false when no request has a prefill time.
func (r *RepTotals) PrefillSeconds() (float64, bool) {
	return float64(r.PrefillNs) / 1e9, r.PrefillKnown > 0
}

// ArmStats is one scenario×arm over its repetitions: the totals of each repetition and their
// means with 95 % confidence intervals ([stats.Estimate]; no interval with one repetition).
type ArmStats struct {
	Arm string `json:"arm"`
	// Reps holds each repetition's totals, in [stats.RepKey] order.
	Reps []RepTotals `json:"reps"`
	// Pooled sums every repetition into one row, as [Summarize] does.
	Pooled ArmRow `json:"pooled"`

	// Means over repetitions of the per-repetition totals (tokens; PrefillSeconds in seconds).
	// ExpectedCachedTokens and Reread are over the repetitions with a known expected count,
	// PrefillSeconds over those with a known prefill time (N = 0 when none: unknown).
	Requests             stats.Estimate   `json:"requests"`
	PromptTokens         stats.Estimate   `json:"prompt_tokens"`
	CachedTokens         stats.Estimate   `json:"cached_tokens"`
	ExpectedCachedTokens stats.Estimate   `json:"expected_cached_tokens"`
	RereadTokens         stats.Estimate   `json:"reread_tokens"`
	Reread               []stats.Estimate `json:"reread_by_segment"` // in the order of SegmentNames
	PrefillSeconds       stats.Estimate   `json:"prefill_seconds"`
	// CachedShare and Efficiency are means over the repetitions where they are defined (N
	// says how many); ratios in [0, 1] (efficiency may exceed 1).
	CachedShare stats.Estimate `json:"cached_share"`
	Efficiency  stats.Estimate `json:"efficiency"`
	// CostUSD is the mean cost per repetition in US dollars; nil when no request has a cost.
	CostUSD *stats.Estimate `json:"cost_usd,omitempty"`
	// VsSpec compares the arm with the spec arm of the same scenario, repetition by repetition;
	// nil for the spec arm itself and when the scenario has no spec arm.
	VsSpec *VsSpec `json:"vs_spec,omitempty"`
	// BiggestLoss is the request of the arm, over every repetition, that read again the most of
	// what the session's previous request had sent ([Loss]); nil when no request has a previous
	// one whose prompt and its own cached and re-read tokens are all known.
	BiggestLoss *Loss `json:"biggest_loss,omitempty"`
}

// Loss is one request's loss of the KV cache: the tokens of the session's previous prompt that
// the server read again, min(re-read tokens, previous prompt tokens − cached tokens), where the
// prompt first diverged from what the cache held. New content (a tool result, the reply) is
// not a loss; a prefix the request keeps is not either. Token counts are in tokens of the served
// model's tokenizer.
type Loss struct {
	// RunID, Repetition, RequestIndex, Turn and Step name the request (the row's columns).
	RunID        string `json:"run_id"`
	Repetition   int32  `json:"repetition"`
	RequestIndex int32  `json:"request_index"`
	Turn         int32  `json:"turn"`
	Step         int32  `json:"step"`
	// LostTokens is the loss in tokens (above); RereadTokens the request's re-read tokens.
	LostTokens   int64 `json:"lost_tokens"`
	RereadTokens int64 `json:"reread_tokens"`
	// DivergenceSegment is the row's divergence_segment: where the prompt first differed from
	// what the cache held ("system", "reasoning 65"); "" when the whole cache matched or the lab
	// could not compute it (ExpectedCachedTokens nil).
	DivergenceSegment string `json:"divergence_segment"`
	// CachedTokens and ExpectedCachedTokens are the row's: cached below the expected one means
	// the server, not the prompt, lost the cache. ExpectedCachedTokens is nil when unknown.
	CachedTokens         int64  `json:"cached_tokens"`
	ExpectedCachedTokens *int64 `json:"expected_cached_tokens"`
}

// lossOf is the [Loss] of s after a request of the same session whose prompt held prev tokens;
// false when a figure it needs is unknown (prev 0: no previous request, or its prompt unknown)
// or s failed.
func lossOf(s *metrics.Sample, prev int64) (Loss, bool) {
	reread, ok := rereadOf(s)
	if !ok || prev <= 0 || s.CachedTokens == nil || s.Error != "" {
		return Loss{}, false
	}
	l := Loss{RunID: s.RunID, Repetition: s.Repetition, RequestIndex: s.RequestIndex, Turn: s.Turn, Step: s.Step,
		LostTokens: min(reread, max(prev-*s.CachedTokens, 0)), RereadTokens: reread,
		DivergenceSegment: s.DivergenceSegment, CachedTokens: *s.CachedTokens}
	if e, ok := metrics.Int64(s.ExpectedCachedTokens); ok {
		l.ExpectedCachedTokens = &e
	}
	return l, true
}

// lossTracker finds each scenario×arm's [ArmStats].BiggestLoss from rows in run order (a
// session's rows in request order).
type lossTracker struct {
	prev map[lossSession]int64 // the session's last prompt tokens (0: unknown)
	best map[[2]string]Loss    // by scenario, arm
}

type lossSession struct {
	run, scenario, arm string
	rep                int32
}

func (t *lossTracker) add(s *metrics.Sample) {
	if t.prev == nil {
		t.prev, t.best = map[lossSession]int64{}, map[[2]string]Loss{}
	}
	k := lossSession{s.RunID, s.Scenario, s.Arm, s.Repetition}
	prev, seen := t.prev[k]
	if p, ok := promptOf(s); ok && s.Error == "" {
		t.prev[k] = p
	} else {
		t.prev[k] = 0
	}
	if !seen {
		return
	}
	l, ok := lossOf(s, prev)
	if !ok || l.LostTokens == 0 {
		return
	}
	// No divergence and the cache as expected: the prompt kept all the cache held, and what the
	// server read again of it (the last token, which a server always evaluates) is no loss.
	if e := l.ExpectedCachedTokens; l.DivergenceSegment == "" && e != nil && l.CachedTokens+int64(math.Ceil(MismatchTolerance*float64(*e))) >= *e {
		return
	}
	a := [2]string{s.Scenario, s.Arm}
	if b, had := t.best[a]; !had || l.LostTokens > b.LostTokens {
		t.best[a] = l
	}
}

// of returns the biggest loss of scenario×arm, or nil.
func (t *lossTracker) of(scenario, arm string) *Loss {
	if l, ok := t.best[[2]string{scenario, arm}]; ok {
		return &l
	}
	return nil
}

// VsSpec compares an arm with [metrics.SpecArm] over the repetitions both ran (paired by
// [stats.RepKey]).
type VsSpec struct {
	// Pairs is the number of repetitions both arms ran.
	Pairs int `json:"pairs"`
	// RereadRatio is mean(arm's re-read tokens) / mean(spec's), with Fieller's interval.
	RereadRatio stats.Ratio `json:"reread_ratio"`
	// RereadDiff is the mean paired difference arm − spec of re-read tokens, with its t interval.
	RereadDiff stats.Estimate `json:"reread_diff"`
	// PrefillRatio and PrefillDiff do the same for prefill seconds.
	PrefillRatio stats.Ratio    `json:"prefill_ratio"`
	PrefillDiff  stats.Estimate `json:"prefill_diff"`
}

// ScenarioStats is one scenario of an [Analysis].
type ScenarioStats struct {
	Scenario string `json:"scenario"`
	// Arms holds one entry per arm in the order of [metrics.SortArms].
	Arms []ArmStats `json:"arms"`
	// Mismatches are the requests whose measured cached tokens differ from the expected ones
	// by more than [MismatchTolerance], as in [ScenarioTable].
	Mismatches []Mismatch `json:"mismatches,omitempty"`
}

// Arm returns the stats of the named arm, or nil.
func (s *ScenarioStats) Arm(name string) *ArmStats {
	for i := range s.Arms {
		if s.Arms[i].Arm == name {
			return &s.Arms[i]
		}
	}
	return nil
}

// Analysis is everything a report shows, computed from the samples of one or more runs.
type Analysis struct {
	// Scenarios are sorted by name.
	Scenarios []ScenarioStats `json:"scenarios"`
	// Claims checks the spec's own measured claims against the run.
	Claims Claims `json:"claims"`
	// LeftOut are the sessions left out of every figure because they did not complete (see
	// [Sessions]); set by [AnalyzeRuns], empty from [Analyze].
	LeftOut []LeftOut `json:"left_out,omitempty"`
	// Live compares the arms of live sessions (lab run --driver live) on what the model did;
	// empty when the samples hold none.
	Live []LiveRow `json:"live,omitempty"`
	// Setup is the setup of the runs these figures pool ([AnalyzeRuns]); nil from [Analyze],
	// which has no manifests.
	Setup *SetupInfo `json:"setup,omitempty"`
	// Setups holds one analysis per setup, in the order of their first runs, when the runs are
	// of more than one setup ([AnalyzeRuns]); the figures above are then empty: runs of
	// different setups are never pooled as repetitions. [Analysis.Groups] returns the analyses
	// to show either way.
	Setups []*Analysis `json:"setups,omitempty"`
	// WarmStarts is what the first requests of the warm runs' sessions found in the server's
	// cache ([WarmStarts]); nil when no run analysed is warm (or from [Analyze], which has no
	// manifests).
	WarmStarts *WarmStarts `json:"warm_starts,omitempty"`
	// Servers sets each setup after the first beside the first as servers measuring one thing
	// ([ServerComparison]), when the runs are of more than one setup ([AnalyzeRuns]); a pair
	// that measured different things holds only why ([ServerComparison].Refused).
	Servers []ServerComparison `json:"servers,omitempty"`
	// Templates is what the chat template did to the KV cache, per scenario of this setup
	// ([TemplateEffect]); the report's "What the template does" sets the setups side by side.
	Templates []TemplateEffect `json:"templates,omitempty"`
}

// Analyze computes the analysis of samples (of one run or of several merged: repetitions of
// different runs are kept apart by run id). It returns an empty Analysis for no samples.
func Analyze(samples []metrics.Sample) *Analysis { return analyze(metrics.RowsOf(samples), nil) }

// analyze is [Analyze] with the runs' manifests (nil or partial: the judgements that need one,
// the chat template and the sim's prefill model, then say unknown).
func analyze(rows *metrics.Rows, runs []*metrics.Manifest) *Analysis {
	a := &Analysis{Live: liveTable(rows)}
	tables := summarize(rows)
	type key struct{ scenario, arm string }
	reps := map[key]map[stats.RepKey]*RepTotals{}
	var losses lossTracker
	for _, s := range rows.All() {
		losses.add(s)
		k := key{s.Scenario, s.Arm}
		m := reps[k]
		if m == nil {
			m = map[stats.RepKey]*RepTotals{}
			reps[k] = m
		}
		rk := stats.RepKey{RunID: s.RunID, Repetition: s.Repetition}
		t := m[rk]
		if t == nil {
			t = &RepTotals{RepKey: rk}
			m[rk] = t
		}
		t.add(s)
		if v, ok := rereadOf(s); ok {
			t.RereadTokens += v
		} else {
			t.RereadUnknown++
		}
		if !t.Reread.add(s) {
			t.SplitUnknown++
		}
		if e, ok := metrics.Int64(s.ExpectedCachedTokens); ok {
			t.ExpectedCachedTokens += e
		} else {
			t.ExpectedUnknown++
		}
		if s.PrefillNs > 0 {
			t.PrefillNs += s.PrefillNs
			t.PrefillKnown++
		}
		if s.CachedTokens != nil {
			t.PromptWhereCached += s.PromptTokens
			if e, ok := metrics.Int64(s.ExpectedCachedTokens); ok {
				t.CachedWhereExpected += *s.CachedTokens
				t.ExpectedWhereCached += e
			}
		}
		if s.CostUSD != nil {
			t.CostUSD = new(*s.CostUSD + deref(t.CostUSD))
			t.CostKnown++
		}
	}
	for _, tab := range tables {
		sc := ScenarioStats{Scenario: tab.Scenario, Mismatches: tab.Mismatches}
		for _, row := range tab.Rows {
			st := armStats(row, reps[key{tab.Scenario, row.Arm}])
			st.BiggestLoss = losses.of(tab.Scenario, row.Arm)
			sc.Arms = append(sc.Arms, st)
		}
		if spec := sc.Arm(metrics.SpecArm); spec != nil {
			for i := range sc.Arms {
				if sc.Arms[i].Arm != metrics.SpecArm {
					sc.Arms[i].VsSpec = vsSpec(spec, &sc.Arms[i])
				}
			}
		}
		a.Scenarios = append(a.Scenarios, sc)
	}
	a.Claims = claims(rows, a, runs)
	a.WarmStarts = warmStarts(rows, runs)
	a.Templates = templateEffects(rows, runs)
	return a
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func armStats(row ArmRow, reps map[stats.RepKey]*RepTotals) ArmStats {
	st := ArmStats{Arm: row.Arm, Pooled: row}
	for _, t := range reps {
		st.Reps = append(st.Reps, *t)
	}
	slices.SortFunc(st.Reps, func(a, b RepTotals) int { return a.RepKey.Compare(b.RepKey) })
	col := func(f func(*RepTotals) (float64, bool)) stats.Estimate {
		var xs []float64
		for i := range st.Reps {
			if v, ok := f(&st.Reps[i]); ok {
				xs = append(xs, v)
			}
		}
		return stats.MeanCI(xs)
	}
	st.Requests = col(func(t *RepTotals) (float64, bool) { return float64(t.Requests), true })
	st.PromptTokens = col(func(t *RepTotals) (float64, bool) {
		return float64(t.PromptTokens), t.PromptUnknown < t.Requests
	})
	st.CachedTokens = col(func(t *RepTotals) (float64, bool) {
		return float64(t.CachedTokens), t.CachedUnknown < t.Requests
	})
	st.ExpectedCachedTokens = col(func(t *RepTotals) (float64, bool) {
		return float64(t.ExpectedCachedTokens), t.ExpectedUnknown < t.Requests
	})
	st.RereadTokens = col(reread)
	for i := range SegmentNames {
		st.Reread = append(st.Reread, col(func(t *RepTotals) (float64, bool) {
			return float64(t.Reread.Values()[i]), t.SplitUnknown < t.Requests
		}))
	}
	st.PrefillSeconds = col((*RepTotals).PrefillSeconds)
	st.CachedShare = col(func(t *RepTotals) (float64, bool) { v := t.CachedShare(); return deref(v), v != nil })
	st.Efficiency = col(func(t *RepTotals) (float64, bool) { v := t.Efficiency(); return deref(v), v != nil })
	if cost := col(func(t *RepTotals) (float64, bool) { return deref(t.CostUSD), t.CostUSD != nil }); cost.N > 0 {
		st.CostUSD = &cost
	}
	return st
}

// perRep returns f of each repetition where it is known.
func perRep(st *ArmStats, f func(*RepTotals) (float64, bool)) map[stats.RepKey]float64 {
	m := make(map[stats.RepKey]float64, len(st.Reps))
	for i := range st.Reps {
		if v, ok := f(&st.Reps[i]); ok {
			m[st.Reps[i].RepKey] = v
		}
	}
	return m
}

// reread is a repetition's re-read tokens, known when one of its requests' is.
func reread(t *RepTotals) (float64, bool) {
	return float64(t.RereadTokens), t.RereadUnknown < t.Requests
}

func vsSpec(spec, arm *ArmStats) *VsSpec {
	v := &VsSpec{}
	b, n, keys := stats.Pair(perRep(spec, reread), perRep(arm, reread))
	v.Pairs = len(keys)
	// Pair returns slices of equal length: the errors cannot happen.
	v.RereadRatio, _ = stats.RatioOfMeans(b, n)
	v.RereadDiff, _ = stats.PairedDiff(b, n)
	b, n, _ = stats.Pair(perRep(spec, (*RepTotals).PrefillSeconds), perRep(arm, (*RepTotals).PrefillSeconds))
	v.PrefillRatio, _ = stats.RatioOfMeans(b, n)
	v.PrefillDiff, _ = stats.PairedDiff(b, n)
	return v
}

// finite returns v, or nil when v is NaN or infinite (JSON has no NaN).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
