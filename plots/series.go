package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// stat accumulates one value per repetition: its mean, minimum and maximum.
type stat struct {
	sum, lo, hi float64
	n           int
}

func (s *stat) add(v float64) {
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	if s.n == 0 || v > s.hi {
		s.hi = v
	}
	s.sum += v
	s.n++
}

func (s *stat) mean() float64 { return s.sum / float64(s.n) }

// point is one request of one arm: the mean over the repetitions that know the value, and its
// range.
type point struct {
	x            int32
	mean, lo, hi float64
	n            int
}

// series maps an arm to its points, sorted by request index.
type series map[string][]point

// arms returns the arms of s in display order ([metrics.SortArms]).
func (s series) arms() []string {
	arms := slices.Collect(maps.Keys(s))
	metrics.SortArms(arms)
	return arms
}

// withArms adds an empty series for every arm of seqs that s lacks, so that an arm keeps its
// colour, shape and legend entry in every chart of a scenario even where it has no value.
func (s series) withArms(seqs map[repKey]reqs) series {
	for k := range seqs {
		if _, ok := s[k.arm]; !ok {
			s[k.arm] = nil
		}
	}
	return s
}

// repKey identifies one scenario×arm×repetition sequence of requests.
type repKey struct {
	arm string
	rep int32
}

// sequences returns, per arm and repetition, the samples of scenario with prompt tokens, in
// request order. Samples of other scenarios and requests that failed before the server counted
// their prompt (PromptTokens ≤ 0) are left out.
func sequences(scenario string, rows *metrics.Rows) map[repKey]reqs {
	out := map[repKey]reqs{}
	for i := range rows.Len() {
		if rows.Scenario(i) != scenario || rows.PromptTokens(i) <= 0 {
			continue
		}
		k := repKey{rows.Arm(i), rows.Repetition(i)}
		q := out[k]
		q.rows, q.idx = rows, append(q.idx, i)
		out[k] = q
	}
	for _, q := range out {
		slices.SortStableFunc(q.idx, func(a, b int) int { return cmp.Compare(rows.RequestIndex(a), rows.RequestIndex(b)) })
	}
	return out
}

// reqs is one sequence of requests: rows of a [metrics.Rows] by index, in request order. The
// rows stay in their table; a chart reads one back at a time.
type reqs struct {
	rows *metrics.Rows
	idx  []int
}

func (q reqs) len() int { return len(q.idx) }

// at reads the j-th request back into b ([metrics.Rows.Load]).
func (q reqs) at(j int, b *metrics.SampleBuf) *metrics.Sample { return q.rows.Load(q.idx[j], b) }

// req is the request index of the j-th request.
func (q reqs) req(j int) int32 { return q.rows.RequestIndex(q.idx[j]) }

// collect aggregates, per arm and request index, the values value returns for each sequence of
// seqs. value is called once per sequence with its samples in request order and returns one
// value per sample, ok false where the value is unknown; unknown values are left out of the
// mean, and a request no repetition knows is left out of the series.
func collect(seqs map[repKey]reqs, value func(seq reqs) (vals []float64, ok []bool)) series {
	acc := map[string]map[int32]*stat{}
	for k, seq := range seqs {
		vals, ok := value(seq)
		for i := range seq.len() {
			if !ok[i] {
				continue
			}
			byIdx := acc[k.arm]
			if byIdx == nil {
				byIdx = map[int32]*stat{}
				acc[k.arm] = byIdx
			}
			x := seq.req(i)
			st := byIdx[x]
			if st == nil {
				st = &stat{}
				byIdx[x] = st
			}
			st.add(vals[i])
		}
	}
	out := series{}
	for arm, byIdx := range acc {
		pts := make([]point, 0, len(byIdx))
		for x, st := range byIdx {
			pts = append(pts, point{x: x, mean: st.mean(), lo: st.lo, hi: st.hi, n: st.n})
		}
		slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.x, b.x) })
		out[arm] = pts
	}
	return out
}

// perSample returns a value function for [collect] that takes each sample alone.
func perSample(f func(*metrics.Sample) (float64, bool)) func(reqs) ([]float64, []bool) {
	return func(seq reqs) ([]float64, []bool) {
		vals, ok := make([]float64, seq.len()), make([]bool, seq.len())
		var b metrics.SampleBuf
		for i := range seq.len() {
			vals[i], ok[i] = f(seq.at(i, &b))
		}
		return vals, ok
	}
}

// runs splits pts into runs of consecutive request indices: a missing request leaves a gap.
func runs(pts []point) [][]point {
	var out [][]point
	for i, p := range pts {
		if i == 0 || p.x != pts[i-1].x+1 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], p)
	}
	return out
}

// bandAlpha is the opacity of a min–max band over repetitions.
const bandAlpha = 0x38

// armLayer builds the plotters of one arm's series: a min–max band over repetitions where the
// repetitions differ, one line per run of consecutive requests, and a point per request, each
// thinned as th says ([ThinAbove], [ThinGlyphColumns]). It returns the plotters, whether it
// drew a band, and every line it drew (for label placement).
func armLayer(arm string, i int, pts []point, th thinning) (layer []plot.Plotter, band bool, lines []plotter.XYs, err error) {
	line, glyph := armStyle(i)
	var drawn [][]point // the runs as drawn
	for _, run := range runs(pts) {
		drawn = append(drawn, th.points(run))
	}
	for _, run := range drawn {
		if len(run) >= 2 && slices.ContainsFunc(run, func(p point) bool { return p.hi > p.lo }) {
			for _, piece := range th.bandChunks(run) {
				ring := make(plotter.XYs, 0, 2*len(piece))
				for _, p := range piece {
					ring = append(ring, plotter.XY{X: float64(p.x), Y: p.hi})
				}
				for _, p := range slices.Backward(piece) {
					ring = append(ring, plotter.XY{X: float64(p.x), Y: p.lo})
				}
				poly, err := plotter.NewPolygon(ring)
				if err != nil {
					return nil, false, nil, fmt.Errorf("plot band of arm %q: %w", arm, err)
				}
				c := colorOf(i)
				c.A = bandAlpha
				poly.Color = c
				poly.LineStyle.Width = 0
				layer = append(layer, poly)
			}
			band = true
		}
	}
	var all plotter.XYs // the points whose glyphs are drawn
	for _, run := range drawn {
		xys := make(plotter.XYs, len(run))
		for j, p := range run {
			xys[j] = plotter.XY{X: float64(p.x), Y: p.mean}
		}
		if th.on() {
			for _, p := range th.glyphs(run) {
				all = append(all, plotter.XY{X: float64(p.x), Y: p.mean})
			}
		} else {
			all = append(all, xys...)
		}
		if len(xys) < 2 {
			continue // a lone point: the scatter draws it
		}
		for _, piece := range th.chunks(xys) {
			l, err := plotter.NewLine(piece)
			if err != nil {
				return nil, false, nil, fmt.Errorf("plot arm %q: %w", arm, err)
			}
			l.LineStyle = line
			layer = append(layer, l)
		}
		lines = append(lines, xys)
	}
	if len(all) > 0 {
		sc, err := plotter.NewScatter(all)
		if err != nil {
			return nil, false, nil, fmt.Errorf("plot arm %q: %w", arm, err)
		}
		sc.GlyphStyle = glyph
		layer = append(layer, extremeScatter{sc})
	}
	return layer, band, lines, nil
}

// newChart returns an empty chart with the lab's look: title, axis labels, light grid, sans
// text, the legend at the top right (drawn beside the data by [Write]).
func newChart(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker = integerTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = lighter(ink, 0.12)
	grid.Horizontal.Color = grid.Vertical.Color
	p.Add(grid)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	useSans(p)
	return p
}

// bandKey is the legend entry of the min–max bands.
func bandKey() *plotter.Polygon {
	c := lighter(ink, 0.45)
	c.A = bandAlpha * 2
	return &plotter.Polygon{Color: c}
}

// tokenChart is the line chart of token counts s over the request index: titled title, the y
// axis labelled yLabel with SI ticks, from 0 to at least 1 token.
func tokenChart(title, yLabel string, s series, seqs map[repKey]reqs) (*plot.Plot, error) {
	p := newChart(title, "request (0-based)", yLabel)
	p.Y.Tick.Marker = siTicks{}
	events := addSessionEvents(p, seqs)
	if _, _, err := lineChart(p, s); err != nil {
		return nil, err
	}
	events.addLegend(p)
	p.Y.Min = 0
	p.Y.Max = max(p.Y.Max, 1)
	return p, nil
}

// lineChart draws s on p, one line per arm in display order with spec drawn last (on top), adds
// the legend entries and returns every line drawn. maxX is the largest request index. A chart
// of more than [ThinAbove] requests is thinned.
func lineChart(p *plot.Plot, s series) (lines []plotter.XYs, maxX int32, err error) {
	return thinLineChart(p, s, thinningFor(s.maxX(), nil))
}

// maxX returns the largest request index of s, 0 when s has no point.
func (s series) maxX() int32 {
	var m int32
	for _, pts := range s {
		if len(pts) > 0 {
			m = max(m, pts[len(pts)-1].x)
		}
	}
	return m
}

// thinLineChart is [lineChart] thinned as th says.
func thinLineChart(p *plot.Plot, s series, th thinning) (lines []plotter.XYs, maxX int32, err error) {
	arms := s.arms()
	var layers [][]plot.Plotter
	anyBand := false
	maxReps := 0
	for i, arm := range arms {
		layer, band, ls, err := armLayer(arm, i, s[arm], th)
		if err != nil {
			return nil, 0, err
		}
		anyBand = anyBand || band
		lines = append(lines, ls...)
		for _, pt := range s[arm] {
			maxX = max(maxX, pt.x)
			maxReps = max(maxReps, pt.n)
		}
		line, glyph := armStyle(i)
		p.Legend.Add(arm, &plotter.Line{LineStyle: line}, &plotter.Scatter{GlyphStyle: glyph})
		layers = append(layers, layer)
	}
	// spec, listed first, is drawn last, on top of the lines it coincides with.
	for _, layer := range slices.Backward(layers) {
		p.Add(layer...)
	}
	if anyBand {
		p.Legend.Add(fmt.Sprintf("min–max of %d repetitions", maxReps), bandKey())
	}
	p.X.Min, p.X.Max = 0, float64(max(maxX, 1))
	return lines, maxX, nil
}

// grey returns a neutral grey of the given lightness (0 black, 1 white).
func grey(l float64) color.NRGBA { return lighter(color.NRGBA{A: 0xFF}, 1-l) }

// keyLine is a legend thumbnail of a line style.
func keyLine(sty draw.LineStyle) *plotter.Line { return &plotter.Line{LineStyle: sty} }

// extremeScatter is a scatter whose glyph boxes are only those that can set the plot's padding:
// the glyphs farthest left, right, down and up among those inside the axes. Every glyph of one
// scatter has the same size, so the plot pads exactly as for a box per point (gonum keeps the
// boxes whose normalised position is in [0, 1] on both axes and pads for the outermost) without
// a box per point on every draw.
type extremeScatter struct{ *plotter.Scatter }

// GlyphBoxes implements plot.GlyphBoxer.
func (s extremeScatter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	r := s.GlyphStyle.Radius
	if r <= 0 {
		return nil // an empty box pads nothing
	}
	var lo, hi [2]float64 // the least and greatest normalised x and y of the glyphs inside the axes
	var found [2][2]bool
	for _, xy := range s.XYs {
		// The plot leaves out a box outside the axes on either coordinate.
		nx, ny := p.X.Norm(xy.X), p.Y.Norm(xy.Y)
		if !(nx >= 0 && nx <= 1 && ny >= 0 && ny <= 1) {
			continue
		}
		for a, v := range [2]float64{nx, ny} {
			if !found[a][0] || v < lo[a] {
				lo[a], found[a][0] = v, true
			}
			if !found[a][1] || v > hi[a] {
				hi[a], found[a][1] = v, true
			}
		}
	}
	var out []plot.GlyphBox
	box := vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: r, Y: r}}
	// The other coordinate of an extreme box is never read by the padding; 0.5 keeps it inside.
	for a := range 2 {
		for e, v := range [2]float64{lo[a], hi[a]} {
			if !found[a][e] {
				continue
			}
			b := plot.GlyphBox{X: 0.5, Y: 0.5, Rectangle: box}
			if a == 0 {
				b.X = v
			} else {
				b.Y = v
			}
			out = append(out, b)
		}
	}
	return out
}
