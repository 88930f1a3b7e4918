package cachesim

import (
	"errors"
	"fmt"
	"time"
)

// PrefillModel is the time a server takes to prefill prompt tokens, as a function of how many it
// processes and where: processing tokens c+1..p of a prompt (c reused from the cache) costs
// Linear·(p−c) + Quadratic·(p²−c²) nanoseconds. The quadratic term is attention over the tokens
// before each one, which is why re-reading a long prefix costs more than its length alone.
// `lab calibrate` fits it on a real server ([FitPrefill]); the zero value costs nothing.
type PrefillModel struct {
	// Linear is in nanoseconds per token.
	Linear float64 `json:"ns_per_token"`
	// Quadratic is in nanoseconds per token squared.
	Quadratic float64 `json:"ns_per_token_squared"`
}

// Cost returns the prefill time of a prompt of prompt tokens of which cached were reused. A
// negative result (a fit with a negative term on a tiny range) is 0.
func (m PrefillModel) Cost(cached, prompt int) time.Duration {
	if prompt <= cached {
		return 0
	}
	p, c := float64(prompt), float64(cached)
	ns := m.Linear*(p-c) + m.Quadratic*(p*p-c*c)
	if ns < 0 {
		return 0
	}
	return time.Duration(ns)
}

// PrefillPoint is one measurement: a cold prompt of Tokens tokens prefilled in Prefill.
type PrefillPoint struct {
	Tokens  int           `json:"tokens"`
	Prefill time.Duration `json:"prefill_ns"`
}

// FitPrefill fits a PrefillModel to cold measurements by least squares (t = a·n + b·n², no
// constant). It needs at least two points of different sizes.
func FitPrefill(points []PrefillPoint) (PrefillModel, error) {
	// Normal equations for the two unknowns a, b with x1 = n, x2 = n².
	var s11, s12, s22, s1y, s2y float64
	for _, pt := range points {
		n, y := float64(pt.Tokens), float64(pt.Prefill)
		x1, x2 := n, n*n
		s11 += x1 * x1
		s12 += x1 * x2
		s22 += x2 * x2
		s1y += x1 * y
		s2y += x2 * y
	}
	det := s11*s22 - s12*s12
	if len(points) < 2 || det == 0 {
		return PrefillModel{}, errors.New("cachesim: fit prefill: need at least two measurements of different sizes")
	}
	m := PrefillModel{Linear: (s1y*s22 - s2y*s12) / det, Quadratic: (s11*s2y - s12*s1y) / det}
	if m.Linear < 0 && m.Quadratic < 0 {
		return m, fmt.Errorf("cachesim: fit prefill: both terms negative (%g, %g): the measurements are noise", m.Linear, m.Quadratic)
	}
	return m, nil
}
