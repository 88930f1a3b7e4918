package stats_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"lab/stats"
)

// Student's sleep data (Cushny & Peebles 1905, R's datasets::sleep): extra hours of sleep of
// ten patients under two drugs.
var (
	sleep1 = []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	sleep2 = []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestTQuantile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, df, want float64
	}{
		{0.975, 1, 12.706204736174698},
		{0.975, 2, 4.302652729749464},
		{0.975, 9, 2.262157162798205},
		{0.975, 30, 2.042272456301238},
		{0.5, 5, 0},
		{0.025, 2, -4.302652729749464},
	} {
		if got := stats.TQuantile(tc.p, tc.df); !near(got, tc.want, 1e-9) {
			t.Errorf("TQuantile(%v, %v) = %.15g; want %.15g", tc.p, tc.df, got, tc.want)
		}
	}
	for _, tc := range []struct{ p, df float64 }{{0.975, 0}, {0.975, -1}, {0, 2}, {1, 2}, {math.NaN(), 2}} {
		if got := stats.TQuantile(tc.p, tc.df); !math.IsNaN(got) {
			t.Errorf("TQuantile(%v, %v) = %v; want NaN", tc.p, tc.df, got)
		}
	}
}

func TestMeanCI(t *testing.T) {
	t.Parallel()
	// {1, 2, 3}: mean 2, sd 1, half width t(0.975, 2)/√3 = 2.484138…
	e := stats.MeanCI([]float64{1, 2, 3})
	if e.N != 3 || e.Mean != 2 || !near(e.SD, 1, 1e-15) || e.CI == nil ||
		!near(e.CI.Lo, 2-2.4841377118, 1e-9) || !near(e.CI.Hi, 2+2.4841377118, 1e-9) {
		t.Errorf("MeanCI({1,2,3}) = %+v %+v; want mean 2, sd 1, CI [-0.484138, 4.484138]", e, e.CI)
	}
	// One value: a mean, no interval (not ±0).
	if e := stats.MeanCI([]float64{7}); e.N != 1 || e.Mean != 7 || e.SD != 0 || e.CI != nil {
		t.Errorf("MeanCI({7}) = %+v; want mean 7 and no interval", e)
	}
	if e := stats.MeanCI(nil); e.N != 0 || e.Mean != 0 || e.CI != nil {
		t.Errorf("MeanCI(nil) = %+v; want the zero Estimate", e)
	}
	// Identical repetitions: a real interval of width 0.
	if e := stats.MeanCI([]float64{5, 5, 5}); e.CI == nil || e.CI.Lo != 5 || e.CI.Hi != 5 {
		t.Errorf("MeanCI({5,5,5}) = %+v; want CI [5, 5]", e)
	}
	if got := stats.StdDev([]float64{2, 4, 4, 4, 5, 5, 7, 9}); !near(got, 2.138089935299395, 1e-12) {
		t.Errorf("StdDev = %v; want 2.138089935299395", got)
	}
	if got := stats.StdDev([]float64{1}); !math.IsNaN(got) {
		t.Errorf("StdDev({1}) = %v; want NaN", got)
	}
}

// R: t.test(sleep2, sleep1, paired = TRUE): mean difference 1.58, 95 % CI 0.7001142 2.4598858.
func TestPairedDiff(t *testing.T) {
	t.Parallel()
	e, err := stats.PairedDiff(sleep1, sleep2)
	if err != nil {
		t.Fatal(err)
	}
	if e.N != 10 || !near(e.Mean, 1.58, 1e-12) || !near(e.SD, 1.229995, 1e-6) || e.CI == nil ||
		!near(e.CI.Lo, 0.7001142, 1e-7) || !near(e.CI.Hi, 2.4598858, 1e-7) {
		t.Errorf("PairedDiff(sleep) = %+v %+v; want 1.58 [0.7001142, 2.4598858]", e, e.CI)
	}
	if _, err := stats.PairedDiff([]float64{1}, []float64{1, 2}); !errors.Is(err, stats.ErrUnpaired) {
		t.Errorf("PairedDiff(1 and 2 values) error = %v; want ErrUnpaired", err)
	}
}

// R: t.test(sleep1, sleep2) (Welch): 95 % CI -3.3654832 0.2054832 for mean(sleep1) − mean(sleep2).
func TestWelchDiff(t *testing.T) {
	t.Parallel()
	e := stats.WelchDiff(sleep2, sleep1)
	if !near(e.Mean, -1.58, 1e-12) || e.CI == nil || !near(e.CI.Lo, -3.3654832, 1e-7) || !near(e.CI.Hi, 0.2054832, 1e-7) {
		t.Errorf("WelchDiff(sleep) = %+v %+v; want -1.58 [-3.3654832, 0.2054832]", e, e.CI)
	}
	if e := stats.WelchDiff([]float64{1}, []float64{2, 3}); e.Mean != 1.5 || e.CI != nil {
		t.Errorf("WelchDiff(1 value, 2 values) = %+v; want mean 1.5, no interval", e)
	}
	if e := stats.WelchDiff([]float64{1, 1}, []float64{3, 3}); e.CI == nil || e.CI.Lo != 2 || e.CI.Hi != 2 {
		t.Errorf("WelchDiff(constant) = %+v; want CI [2, 2]", e)
	}
}

func TestRatioOfMeans(t *testing.T) {
	t.Parallel()
	// Exactly proportional pairs: the interval is the point.
	r, err := stats.RatioOfMeans([]float64{10, 11, 12}, []float64{20, 22, 24})
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 3 || r.Value != 2 || r.CI == nil || !near(r.CI.Lo, 2, 1e-9) || !near(r.CI.Hi, 2, 1e-9) {
		t.Errorf("RatioOfMeans(proportional) = %+v %+v; want 2 [2, 2]", r, r.CI)
	}

	// At each end of Fieller's interval the t statistic of ȳ − ρx̄ is exactly t(0.975, n−1).
	base := []float64{1000, 1100, 950, 1020}
	next := []float64{800, 910, 700, 820}
	r, err = stats.RatioOfMeans(base, next)
	if err != nil {
		t.Fatal(err)
	}
	if want := (800 + 910 + 700 + 820) / (1000 + 1100 + 950 + 1020.0); !near(r.Value, want, 1e-12) {
		t.Errorf("RatioOfMeans value = %v; want %v", r.Value, want)
	}
	if r.CI == nil || !(r.CI.Lo < r.Value && r.Value < r.CI.Hi) {
		t.Fatalf("RatioOfMeans CI = %+v; want an interval around %v", r.CI, r.Value)
	}
	tc := stats.TQuantile(0.975, 3)
	for _, rho := range []float64{r.CI.Lo, r.CI.Hi} {
		d := make([]float64, len(base))
		for i := range base {
			d[i] = next[i] - rho*base[i]
		}
		e := stats.MeanCI(d)
		tstat := math.Abs(e.Mean) / (e.SD / 2) // √n = 2
		if !near(tstat, tc, 1e-6) {
			t.Errorf("t statistic at ρ = %v is %v; want %v", rho, tstat, tc)
		}
	}
	// Hand-checked: the interval of this data is [0.727538, 0.848806] (roots of the quadratic).
	if !near(r.CI.Lo, 0.727538, 1e-6) || !near(r.CI.Hi, 0.848806, 1e-6) {
		t.Errorf("RatioOfMeans CI = [%v, %v]", r.CI.Lo, r.CI.Hi)
	}

	for _, tc := range []struct {
		name       string
		base, next []float64
		value      float64 // NaN: NaN
	}{
		{"one pair", []float64{4}, []float64{2}, 0.5},
		{"zero base", []float64{0, 0}, []float64{1, 2}, math.NaN()},
		{"none", nil, nil, math.NaN()},
		{"base not away from 0", []float64{-10, 12}, []float64{5, 6}, 5.5},
	} {
		r, err := stats.RatioOfMeans(tc.base, tc.next)
		if err != nil {
			t.Fatal(err)
		}
		if r.CI != nil || !(r.Value == tc.value || math.IsNaN(r.Value) && math.IsNaN(tc.value)) {
			t.Errorf("%s: RatioOfMeans = %v %+v; want %v and no interval", tc.name, r.Value, r.CI, tc.value)
		}
	}
	if _, err := stats.RatioOfMeans([]float64{1}, nil); !errors.Is(err, stats.ErrUnpaired) {
		t.Errorf("RatioOfMeans(unpaired) error = %v; want ErrUnpaired", err)
	}
}

func TestPair(t *testing.T) {
	t.Parallel()
	base := map[stats.RepKey]float64{{"b", 1}: 10, {"a", 2}: 20, {"a", 1}: 30, {"c", 1}: 99}
	next := map[stats.RepKey]float64{{"a", 1}: 3, {"b", 1}: 1, {"a", 2}: 2, {"d", 1}: 77}
	b, n, keys := stats.Pair(base, next)
	wantKeys := []stats.RepKey{{"a", 1}, {"a", 2}, {"b", 1}}
	if len(keys) != 3 || keys[0] != wantKeys[0] || keys[1] != wantKeys[1] || keys[2] != wantKeys[2] {
		t.Fatalf("Pair keys = %v; want %v", keys, wantKeys)
	}
	if b[0] != 30 || b[1] != 20 || b[2] != 10 || n[0] != 3 || n[1] != 2 || n[2] != 1 {
		t.Errorf("Pair = %v, %v; want [30 20 10], [3 2 1]", b, n)
	}
}

// An Estimate of no values writes its mean and standard deviation as JSON null, not 0: a reader
// of lab report --format json must not take "nothing was measured" for a measured 0.
func TestEstimateOfNothingIsNullInJSON(t *testing.T) {
	b, err := json.Marshal(stats.MeanCI(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"n":0,"mean":null,"sd":null}` {
		t.Errorf("MeanCI(nil) as JSON = %s; want n 0 and null mean and sd", b)
	}
	b, _ = json.Marshal(stats.MeanCI([]float64{0}))
	if string(b) != `{"n":1,"mean":0,"sd":0}` {
		t.Errorf("MeanCI([0]) as JSON = %s; want a measured 0", b)
	}
	var e stats.Estimate
	if err := json.Unmarshal([]byte(`{"n":0,"mean":null,"sd":null}`), &e); err != nil || e.N != 0 {
		t.Errorf("read back: %+v, %v", e, err)
	}
}
