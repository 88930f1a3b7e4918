package plots

import (
	"fmt"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"lab/metrics"
)

// crowded returns as many arms as one chart draws (MaxArmsOnOneChart) that each lose a tenth of the prompt at every other request, in a
// different segment per arm and request: far more divergence groups than labels.
func crowded() []metrics.Sample {
	var out []metrics.Sample
	for a := range MaxArmsOnOneChart {
		prev := int64(0)
		for i := range int32(40) {
			prompt := int64(1000 + 100*int64(i))
			expected, segment := prev, ""
			if i%2 == 1 {
				expected, segment = prev-prompt/10, fmt.Sprintf("tool result %d", int(i)+a)
			}
			out = append(out, metrics.Sample{Scenario: "s", Arm: fmt.Sprintf("arm-%02d", a), Repetition: 1,
				RequestIndex: i, PromptTokens: prompt, ExpectedCachedTokens: new(int64(expected)),
				CachedTokens: new(expected), DivergenceSegment: segment})
			prev = prompt
		}
	}
	return out
}

// TestLabelLayout checks the placement rule on a crowded chart: at most MaxDivergenceLabels
// labels, none overlapping another or a marker, all inside the data area.
func TestLabelLayout(t *testing.T) {
	t.Parallel()
	samples := crowded()
	p, err := CachedShare("s", samples)
	if err != nil {
		t.Fatal(err)
	}
	seqs := sequences("s", metrics.RowsOf(samples))
	measured := collect(seqs, perSample(func(s *metrics.Sample) (float64, bool) {
		return 100 * float64(*s.CachedTokens) / float64(s.PromptTokens), true
	}))
	dm := divergences(seqs, measured.arms(), measured, measured)
	if got, want := len(dm.marks), MaxArmsOnOneChart*20; got != want {
		t.Errorf("divergences: %d marks; want %d (every odd request of every arm)", got, want)
	}
	if len(dm.labels) != MaxDivergenceLabels {
		t.Errorf("divergences: %d labels; want MaxDivergenceLabels = %d", len(dm.labels), MaxDivergenceLabels)
	}
	c := p.DataCanvas(draw.New(vgsvg.New(DefaultWidth, DefaultHeight)))
	placed := dm.layout(c, p)
	if len(placed) == 0 || len(placed) > MaxDivergenceLabels {
		t.Fatalf("layout placed %d labels; want 1 to %d", len(placed), MaxDivergenceLabels)
	}
	trX, trY := p.Transforms(&c)
	for i, a := range placed {
		if !inside(a.rect, c.Rectangle) {
			t.Errorf("label %q at %v lies outside the data area %v", a.text, a.rect, c.Rectangle)
		}
		for _, b := range placed[i+1:] {
			if overlapsAny(a.rect, []vg.Rectangle{b.rect}) {
				t.Errorf("labels %q and %q overlap", a.text, b.text)
			}
		}
		for _, m := range dm.marks {
			x, y := trX(m.X), trY(m.Y)
			r := markRadius
			if overlapsAny(a.rect, []vg.Rectangle{{Min: vg.Point{X: x - r, Y: y - r}, Max: vg.Point{X: x + r, Y: y + r}}}) {
				t.Errorf("label %q covers the marker at request %v", a.text, m.X)
			}
		}
	}
}

// TestUnknownCachedLeftOut: a request with unknown cached tokens is missing from the measured
// series (a gap in the line), not a point at 0, while the expected series keeps it.
func TestUnknownCachedLeftOut(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for i := range int32(3) {
		s := metrics.Sample{Scenario: "s", Arm: "spec", RequestIndex: i, PromptTokens: 100, ExpectedCachedTokens: new(int64(50)), CachedTokens: new(int64(40))}
		if i == 1 {
			s.CachedTokens = nil
		}
		samples = append(samples, s)
	}
	seqs := sequences("s", metrics.RowsOf(samples))
	measured := collect(seqs, perSample(func(s *metrics.Sample) (float64, bool) {
		if s.CachedTokens == nil {
			return 0, false
		}
		return float64(*s.CachedTokens), true
	}))
	var xs []int32
	for _, pt := range measured["spec"] {
		xs = append(xs, pt.x)
		if pt.mean != 40 {
			t.Errorf("measured point %d = %v; want 40", pt.x, pt.mean)
		}
	}
	if fmt.Sprint(xs) != "[0 2]" {
		t.Errorf("measured requests = %v; want [0 2] (request 1 unknown)", xs)
	}
	if r := runs(measured["spec"]); len(r) != 2 {
		t.Errorf("runs = %d; want 2 (a gap at request 1)", len(r))
	}
}

func TestStat(t *testing.T) {
	t.Parallel()
	var s stat
	for _, v := range []float64{3, -1, 4} {
		s.add(v)
	}
	if s.mean() != 2 || s.lo != -1 || s.hi != 4 || s.n != 3 {
		t.Errorf("stat of 3, -1, 4 = mean %v, lo %v, hi %v, n %d; want 2, -1, 4, 3", s.mean(), s.lo, s.hi, s.n)
	}
}

func TestSILabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1k"}, {1500, "1.5k"}, {20000, "20k"}, {1234567, "1.23M"}, {-2500, "-2.5k"}, {3e9, "3G"}} {
		if got := siLabel(tc.v); got != tc.want {
			t.Errorf("siLabel(%v) = %q; want %q", tc.v, got, tc.want)
		}
	}
}

// TestFitLegend: a legend of 60 entries is shrunk to fit the height; a short one is left alone.
func TestFitLegend(t *testing.T) {
	t.Parallel()
	p := newChart("t", "x", "y")
	for i := range 60 {
		line, _ := armStyle(i)
		p.Legend.Add(fmt.Sprintf("arm-%02d", i), keyLine(line))
	}
	l := p.Legend
	fitLegend(&l, DefaultHeight)
	if h := l.Rectangle(draw.Canvas{}).Size().Y; h > DefaultHeight || l.TextStyle.Font.Size >= p.Legend.TextStyle.Font.Size {
		t.Errorf("fitLegend(60 entries): height %v, font %v; want at most %v, smaller than %v", h, l.TextStyle.Font.Size, DefaultHeight, p.Legend.TextStyle.Font.Size)
	}
	short := newChart("t", "x", "y")
	short.Legend.Add("spec")
	l = short.Legend
	fitLegend(&l, DefaultHeight)
	if l.TextStyle.Font.Size != short.Legend.TextStyle.Font.Size {
		t.Errorf("fitLegend(1 entry) changed the font to %v", l.TextStyle.Font.Size)
	}
}
