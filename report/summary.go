package report

import (
	"maps"
	"math"
	"slices"

	"lab/metrics"
)

// ScenarioTable is the summary of one scenario: one row per arm.
type ScenarioTable struct {
	// Scenario is the scenario's name.
	Scenario string
	// Rows holds one row per arm, [metrics.SpecArm] first, then the others sorted by name.
	Rows []ArmRow
	// Mismatches are the requests whose measured cached tokens differ from the expected ones by
	// more than [MismatchTolerance] of the expected, in request order per arm.
	Mismatches []Mismatch
}

// MismatchTolerance is how far measured cached tokens may differ from the expected ones, as a
// share of the expected (1 %), before the report names the request.
const MismatchTolerance = 0.01

// Mismatch is one request where the server reused a different amount than a perfect prefix cache
// would have: the server's doing (eviction, a reload, a bug), or a rendering the lab did not
// foresee.
type Mismatch struct {
	Arm                  string `json:"arm"`
	Repetition           int32  `json:"repetition"`
	RequestIndex         int32  `json:"request_index"`
	CachedTokens         int64  `json:"cached_tokens"`
	ExpectedCachedTokens int64  `json:"expected_cached_tokens"`
	// DivergenceSegment is where the request first differed from what the cache held.
	DivergenceSegment string `json:"divergence_segment"`
	// LoadNs is the server's load time for the request: large after a reload, which drops the
	// cache and explains a shortfall.
	// nil when the server does not report one.
	LoadNs *int64 `json:"load_ns"`
	// AfterOverflow: the previous request of the same session overflowed the context window
	// (its prompt and reply took more than num_ctx, [metrics.Sample].ContextOverflow), so the
	// server truncated or shifted its context and kept almost nothing of its KV cache.
	AfterOverflow bool `json:"after_overflow,omitempty"`
	// Overflow: this request's own prompt was longer than the context window; the server
	// truncated it.
	Overflow bool `json:"overflow,omitempty"`
}

// ArmRow sums the requests of one scenario×arm, over all its repetitions. Token counts are in
// tokens of the served model's tokenizer.
type ArmRow struct {
	// Arm is the arm's name.
	Arm string `json:"arm"`
	Counts
	// ExpectedCachedTokens is the sum of expected_cached_tokens over the requests where the lab
	// could compute it ([metrics.Sample].ExpectedUnknown false).
	ExpectedCachedTokens int64 `json:"expected_cached_tokens"`
	// ExpectedUnknown is the number of requests whose expected cached tokens are unknown (a
	// cloud API shows no rendering): left out of ExpectedCachedTokens and Efficiency.
	ExpectedUnknown int `json:"expected_unknown"`
	// RereadTokens is the sum of reread_tokens (prompt tokens the server processed again) over
	// the requests where it is known; RereadUnknown counts the others (cached tokens unknown),
	// left out, not counted as 0.
	RereadTokens  int64 `json:"reread_tokens"`
	RereadUnknown int   `json:"reread_unknown"`
	// PrefillNs is the sum of prefill_ns, in nanoseconds, over the requests that have one;
	// PrefillUnknown counts the others.
	PrefillNs      int64 `json:"prefill_ns"`
	PrefillUnknown int   `json:"prefill_unknown"`
	// Efficiency is the server's cache efficiency, the sum of cached_tokens divided by the sum of
	// expected_cached_tokens over the requests whose cached and expected cached tokens are both
	// known (1 = it reused all a perfect prefix cache could). nil when undefined: no such
	// request, or nothing expected.
	Efficiency *float64 `json:"efficiency"`
	// RereadVsSpec is RereadTokens divided by the spec arm's RereadTokens in the same scenario
	// (1 for the spec arm itself). nil when the scenario has no spec arm or spec re-read nothing.
	RereadVsSpec *float64 `json:"reread_vs_spec"`
}

// PrefillSeconds returns PrefillNs in seconds.
func (r *ArmRow) PrefillSeconds() float64 { return float64(r.PrefillNs) / 1e9 }

// Summarize adds samples up into one table per scenario, scenarios sorted by name, arms in the
// order of [metrics.SortArms]. Several repetitions of a scenario×arm are summed into one row. It
// returns nil for no samples.
func Summarize(samples []metrics.Sample) []ScenarioTable { return summarize(metrics.RowsOf(samples)) }

// summarize is [Summarize] of rows.
func summarize(rows *metrics.Rows) []ScenarioTable {
	type key struct{ scenario, arm string }
	type acc struct {
		row                                      ArmRow
		expectedWhereCached, cachedWhereExpected int64
	}
	accs := map[key]*acc{}
	arms := map[string][]string{}
	mismatches := map[string][]Mismatch{}
	type session struct {
		run, scenario, arm string
		rep                int32
	}
	overflowed := map[session]bool{} // the session's previous request overflowed
	for _, s := range rows.All() {
		sess := session{s.RunID, s.Scenario, s.Arm, s.Repetition}
		after := overflowed[sess]
		overflowed[sess] = s.ContextOverflow
		k := key{s.Scenario, s.Arm}
		a := accs[k]
		if a == nil {
			a = &acc{row: ArmRow{Arm: s.Arm}}
			accs[k] = a
			arms[s.Scenario] = append(arms[s.Scenario], s.Arm)
		}
		r := &a.row
		r.add(s)
		e := s.ExpectedCachedTokens
		if e == nil {
			r.ExpectedUnknown++
		} else {
			r.ExpectedCachedTokens += *e
		}
		if v, ok := rereadOf(s); ok {
			r.RereadTokens += v
		} else {
			r.RereadUnknown++
		}
		if s.PrefillNs > 0 {
			r.PrefillNs += s.PrefillNs
		} else {
			r.PrefillUnknown++
		}
		// A request whose expected cached tokens are unknown has nothing to differ from.
		if c := s.CachedTokens; c != nil && s.Error == "" && e != nil && math.Abs(float64(*c-*e)) > MismatchTolerance*float64(max(*e, 1)) {
			mismatches[s.Scenario] = append(mismatches[s.Scenario], Mismatch{
				Arm: s.Arm, Repetition: s.Repetition, RequestIndex: s.RequestIndex, CachedTokens: *c,
				ExpectedCachedTokens: *e, DivergenceSegment: s.DivergenceSegment, LoadNs: s.LoadNs,
				AfterOverflow: after, Overflow: s.ContextOverflow && *c < *e,
			})
		}
		if s.CachedTokens != nil && e != nil {
			a.expectedWhereCached += *e
			a.cachedWhereExpected += *s.CachedTokens
		}
	}
	if len(arms) == 0 {
		return nil
	}
	scenarios := slices.Sorted(maps.Keys(arms))

	tables := make([]ScenarioTable, 0, len(scenarios))
	for _, sc := range scenarios {
		names := arms[sc]
		metrics.SortArms(names)
		t := ScenarioTable{Scenario: sc, Mismatches: mismatches[sc]}
		var spec *acc
		if a, ok := accs[key{sc, metrics.SpecArm}]; ok {
			spec = a
		}
		for _, arm := range names {
			a := accs[key{sc, arm}]
			r := a.row
			if a.expectedWhereCached > 0 {
				r.Efficiency = new(float64(a.cachedWhereExpected) / float64(a.expectedWhereCached))
			}
			if spec != nil && spec.row.RereadTokens != 0 {
				r.RereadVsSpec = new(float64(r.RereadTokens) / float64(spec.row.RereadTokens))
			}
			t.Rows = append(t.Rows, r)
		}
		tables = append(tables, t)
	}
	return tables
}
