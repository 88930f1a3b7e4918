package plots

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A scatter of many points pads the plot exactly as gonum's own, a glyph box per point, does:
// the same data area and the same SVG, with points inside and outside the axes and at their
// edges, while it hands the plot at most four boxes.
func TestExtremeScatterPadsAsEveryBox(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		xys := make(plotter.XYs, 500)
		for i := range xys {
			xys[i] = plotter.XY{X: rng.Float64()*120 - 10, Y: rng.Float64()*120 - 10}
		}
		if trial%2 == 0 { // points exactly at the axes' ends
			xys[0], xys[1] = plotter.XY{X: 0, Y: 100}, plotter.XY{X: 100, Y: 0}
		}
		build := func(extreme bool) (*plot.Plot, plot.Plotter) {
			p := newChart("t", "x", "y")
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				t.Fatal(err)
			}
			sc.GlyphStyle.Radius = vg.Points(1 + float64(trial%4))
			var pl plot.Plotter = sc
			if extreme {
				pl = extremeScatter{sc}
			}
			p.Add(pl)
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 100, 0, 100
			return p, pl
		}
		pa, _ := build(false)
		pb, sb := build(true)
		if n := len(sb.(plot.GlyphBoxer).GlyphBoxes(pb)); n > 4 {
			t.Errorf("trial %d: %d glyph boxes; want at most 4", trial, n)
		}
		c := draw.New(vgsvg.New(DefaultWidth, DefaultHeight))
		if a, b := pa.DataCanvas(c).Rectangle, pb.DataCanvas(c).Rectangle; a != b {
			t.Errorf("trial %d: data area %v; gonum's scatter gives %v", trial, b, a)
		}
		var wa, wb bytes.Buffer
		if err := Write(&wa, pa, "svg", DefaultWidth, DefaultHeight); err != nil {
			t.Fatal(err)
		}
		if err := Write(&wb, pb, "svg", DefaultWidth, DefaultHeight); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wa.Bytes(), wb.Bytes()) {
			t.Errorf("trial %d: the SVG differs from gonum's scatter's", trial)
		}
	}
}

// The bytes a chart's drawing allocates per point, SVG and PNG: with a glyph box per point on
// every draw (gonum's scatter) they include several boxes' worth per point more.
func BenchmarkChartWrite(b *testing.B) {
	var pts []point
	for i := range int32(20_000) {
		pts = append(pts, point{x: i, mean: float64(i % 100), lo: float64(i % 100), hi: float64(i % 100), n: 1})
	}
	p := newChart("t", "x", "y")
	if _, _, err := lineChart(p, series{"spec": pts}); err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"svg", "png"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Write(&bytes.Buffer{}, p, format, DefaultWidth, DefaultHeight); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
