package cachesim

import (
	"math"
	"testing"
	"time"
)

func TestFitPrefillRecoversTheModel(t *testing.T) {
	want := PrefillModel{Linear: 50_000, Quadratic: 20}
	var pts []PrefillPoint
	for _, n := range []int{1000, 2000, 4000, 8000, 16000} {
		pts = append(pts, PrefillPoint{Tokens: n, Prefill: want.Cost(0, n)})
	}
	got, err := FitPrefill(pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Linear-want.Linear) > 1 || math.Abs(got.Quadratic-want.Quadratic) > 1e-3 {
		t.Fatalf("FitPrefill = %+v; want %+v", got, want)
	}
	// Re-reading tokens 10,000..16,000 costs more than reading the first 6,000 (attention).
	if re, first := want.Cost(10000, 16000), want.Cost(0, 6000); re <= first || re != time.Duration(50_000*6000+20*(16000*16000-10000*10000)) {
		t.Fatalf("Cost(10000, 16000) = %v, Cost(0, 6000) = %v", re, first)
	}
	if _, err := FitPrefill(pts[:1]); err == nil {
		t.Fatal("FitPrefill(one point) succeeded")
	}
	if got := want.Cost(5, 5); got != 0 {
		t.Fatalf("Cost of a fully cached prompt = %v", got)
	}
}
