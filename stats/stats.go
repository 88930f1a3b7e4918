// Package stats is the statistics over repetitions: pure numbers, in the unit of the values
// given, importing no lab package (the report pairs its rows' figures and calls it).
//
// Every interval is at [ConfidenceLevel] (95 %): the mean of one sample with Student's t
// interval ([MeanCI]), the paired difference with the paired t interval ([PairedDiff]), the
// difference of two independent samples with Welch's t interval and Welch–Satterthwaite
// degrees of freedom ([WelchDiff]), and the ratio of two paired means with Fieller's interval
// ([RatioOfMeans]). Repetitions are matched by [RepKey] ([Pair]).
//
// It imports gonum.org/v1/gonum/stat/distuv for Student's t quantile, because the quantile of
// the t distribution (an inverse regularized incomplete beta function) is easy to get subtly
// wrong and gonum's is well tested.
package stats

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// ConfidenceLevel is the level of every interval this package computes: 95 %.
const ConfidenceLevel = 0.95

// Interval is a closed interval [Lo, Hi] of a statistic, in the statistic's unit.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Contains reports whether v lies in [Lo, Hi].
func (iv Interval) Contains(v float64) bool { return iv.Lo <= v && v <= iv.Hi }

// Estimate is the mean of N values (repetitions) with its 95 % confidence interval.
//
// SD is the sample standard deviation (divisor N−1). CI is the Student t interval of the mean,
// Mean ± t(0.975, N−1)·SD/√N. With fewer than 2 values there is no interval: SD is 0 and CI is
// nil (never a fake ±0). With N ≥ 2 identical values the interval has width 0, which is a real
// statement (every repetition measured the same). The zero Estimate (N = 0) has Mean 0 and no
// interval; its JSON writes mean and sd as null ([Estimate.MarshalJSON]).
type Estimate struct {
	N    int       `json:"n"`
	Mean float64   `json:"mean"`
	SD   float64   `json:"sd"`
	CI   *Interval `json:"ci,omitempty"`
}

// MarshalJSON writes e as {"n", "mean", "sd", "ci"}, with mean and sd null when N is 0: no value
// was measured, which a reader must not take for a measured 0.
func (e Estimate) MarshalJSON() ([]byte, error) {
	type plain Estimate
	if e.N > 0 {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		N    int       `json:"n"`
		Mean *float64  `json:"mean"`
		SD   *float64  `json:"sd"`
		CI   *Interval `json:"ci,omitempty"`
	}{N: 0, CI: e.CI})
}

// RepKey identifies one repetition of a scenario×arm: repetitions of several runs merged into
// one analysis are kept apart by run id. RunID is a row's run id and Repetition its repetition
// number (1-based), the pair a caller copies from its rows; stats knows nothing else of a row.
type RepKey struct {
	RunID      string `json:"run_id"`
	Repetition int32  `json:"repetition"`
}

// Compare orders keys by run id, then repetition.
func (k RepKey) Compare(o RepKey) int {
	if c := cmp.Compare(k.RunID, o.RunID); c != 0 {
		return c
	}
	return cmp.Compare(k.Repetition, o.Repetition)
}

// Mean returns the arithmetic mean of xs; NaN for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// StdDev returns the sample standard deviation of xs (divisor n−1); NaN for fewer than 2 values.
func StdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// TQuantile returns the p quantile of Student's t distribution with df degrees of freedom, for
// example TQuantile(0.975, 2) = 4.302652…; NaN when df is not positive or p is outside (0, 1).
func TQuantile(p, df float64) float64 {
	if !(df > 0) || !(p > 0 && p < 1) {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// tCrit is the two-sided critical value of t at [ConfidenceLevel] with df degrees of freedom.
func tCrit(df float64) float64 { return TQuantile(1-(1-ConfidenceLevel)/2, df) }

// MeanCI returns the mean of xs with its Student t 95 % confidence interval (n−1 degrees of
// freedom); see [Estimate] for fewer than 2 values.
func MeanCI(xs []float64) Estimate {
	e := Estimate{N: len(xs)}
	if len(xs) == 0 {
		return e
	}
	e.Mean = Mean(xs)
	if len(xs) < 2 {
		return e
	}
	e.SD = StdDev(xs)
	h := tCrit(float64(len(xs)-1)) * e.SD / math.Sqrt(float64(len(xs)))
	e.CI = &Interval{e.Mean - h, e.Mean + h}
	return e
}

// ErrUnpaired is returned (wrapped, with both lengths) by [PairedDiff] and [RatioOfMeans] for
// slices of different lengths; test for it with errors.Is.
var ErrUnpaired = errors.New("stats: paired values of different lengths")

// Pair matches two sets of per-repetition values by repetition key and returns the values of
// the keys both have, in key order ([RepKey.Compare]), with those keys. A repetition only one
// side ran is left out.
func Pair(base, next map[RepKey]float64) (b, n []float64, keys []RepKey) {
	for k := range base {
		if _, ok := next[k]; ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, RepKey.Compare)
	for _, k := range keys {
		b = append(b, base[k])
		n = append(n, next[k])
	}
	return b, n, keys
}

// PairedDiff returns the mean of the paired differences next[i] − base[i] with its t interval
// (the paired t interval, n−1 degrees of freedom). It returns [ErrUnpaired] when the slices
// differ in length.
func PairedDiff(base, next []float64) (Estimate, error) {
	if len(base) != len(next) {
		return Estimate{}, fmt.Errorf("paired difference of %d and %d values: %w", len(base), len(next), ErrUnpaired)
	}
	d := make([]float64, len(base))
	for i := range base {
		d[i] = next[i] - base[i]
	}
	return MeanCI(d), nil
}

// WelchDiff returns the difference of the means mean(next) − mean(base) of two independent
// samples (for example repetitions of two runs, which are not paired) with Welch's t interval
// (Welch–Satterthwaite degrees of freedom). N is the smaller of the two sizes and SD the
// standard error of the difference. The interval is nil when either side has fewer than 2
// values; when both sides have zero variance it has width 0.
func WelchDiff(base, next []float64) Estimate {
	e := Estimate{N: min(len(base), len(next))}
	if len(base) == 0 || len(next) == 0 {
		return e
	}
	e.Mean = Mean(next) - Mean(base)
	if len(base) < 2 || len(next) < 2 {
		return e
	}
	vb := sq(StdDev(base)) / float64(len(base))
	vn := sq(StdDev(next)) / float64(len(next))
	se := math.Sqrt(vb + vn)
	e.SD = se
	if se == 0 {
		e.CI = &Interval{e.Mean, e.Mean}
		return e
	}
	df := sq(vb+vn) / (sq(vb)/float64(len(base)-1) + sq(vn)/float64(len(next)-1))
	h := tCrit(df) * se
	e.CI = &Interval{e.Mean - h, e.Mean + h}
	return e
}

// Ratio is a ratio of two means, mean(next) / mean(base), with its 95 % confidence interval.
type Ratio struct {
	// N is the number of pairs.
	N int `json:"n"`
	// Value is mean(next) / mean(base); NaN (null in JSON) when there are no pairs or
	// mean(base) is 0.
	Value float64 `json:"value"`
	// CI is Fieller's interval; nil with fewer than 2 pairs, when mean(base) is 0, or when the
	// interval is unbounded (mean(base) is not significantly different from 0).
	CI *Interval `json:"ci,omitempty"`
}

// RatioOfMeans returns mean(next) / mean(base) over paired values (next[i] and base[i] measured
// in the same repetition) with Fieller's 95 % confidence interval for a ratio of means of
// correlated variables (Fieller 1954; e.g. Franz 2007, "Ratios: A short guide to confidence
// limits and proper use", eq. 7). With x̄ = mean(base), ȳ = mean(next), sample variances sxx,
// syy, sample covariance sxy, n pairs and t = t(0.975, n−1), the interval is the set of ρ with
//
//	(ȳ − ρx̄)² ≤ t²·(syy − 2ρ·sxy + ρ²·sxx)/n,
//
// whose ends are the roots of a quadratic; it is bounded only when x̄² > t²·sxx/n. Fieller's
// interval is used rather than a t interval of the per-repetition ratios because the point
// estimate is then the ratio of the means, the figure a table shows. It returns [ErrUnpaired]
// when the slices differ in length.
func RatioOfMeans(base, next []float64) (Ratio, error) {
	if len(base) != len(next) {
		return Ratio{}, fmt.Errorf("ratio of %d and %d values: %w", len(base), len(next), ErrUnpaired)
	}
	n := len(base)
	r := Ratio{N: n, Value: math.NaN()}
	if n == 0 {
		return r, nil
	}
	x, y := Mean(base), Mean(next)
	if x == 0 {
		return r, nil
	}
	r.Value = y / x
	if n < 2 {
		return r, nil
	}
	var sxx, syy, sxy float64
	for i := range base {
		dx, dy := base[i]-x, next[i]-y
		sxx += dx * dx
		syy += dy * dy
		sxy += dx * dy
	}
	df := float64(n - 1)
	sxx, syy, sxy = sxx/df, syy/df, sxy/df
	t2 := sq(tCrit(df)) / float64(n)
	a := x*x - t2*sxx
	b := -2 * (x*y - t2*sxy)
	c := y*y - t2*syy
	if a <= 0 {
		return r, nil // unbounded
	}
	disc := b*b - 4*a*c
	if disc < 0 {
		// Only rounding can make it negative when a > 0 (the point estimate always satisfies
		// the inequality): the interval is the single point.
		disc = 0
	}
	s := math.Sqrt(disc)
	lo, hi := (-b-s)/(2*a), (-b+s)/(2*a)
	// Rounding must not leave the point estimate outside its own interval.
	r.CI = &Interval{min(lo, r.Value), max(hi, r.Value)}
	return r, nil
}

// MarshalJSON encodes r with a NaN or infinite Value as null (JSON has no NaN).
func (r Ratio) MarshalJSON() ([]byte, error) {
	type plain struct {
		N     int       `json:"n"`
		Value *float64  `json:"value"`
		CI    *Interval `json:"ci,omitempty"`
	}
	p := plain{N: r.N, CI: r.CI}
	if !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
		p.Value = &r.Value
	}
	return json.Marshal(p)
}

func sq(x float64) float64 { return x * x }
