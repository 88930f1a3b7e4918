package plots

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// CachedShare builds the chart "cached share of the prompt per request" for one scenario.
//
// The x axis is the request index (0-based, per arm: [metrics.Sample].RequestIndex); the y axis
// is cached_tokens / prompt_tokens in percent (0–100). Each arm gets one solid line with points,
// in a stable order and colour: [metrics.SpecArm] first (drawn on top), then the others sorted by
// name. A lighter dashed line of the same colour shows expected_cached_tokens / prompt_tokens, the
// share a perfect prefix cache would have reused; the gap between the two lines is the server's
// doing. The legend names the arms and the dashed "expected" line.
//
// Samples of other scenarios are ignored. Requests whose cached_tokens are unknown (nil) are
// skipped: the solid line has a gap there, never a fall to 0. Requests with no prompt tokens
// (failed before the server counted them) are skipped in both lines. When a scenario×arm ran
// several repetitions, each point is the mean over the repetitions that know the value. It
// returns [ErrNoSamples] when no sample of the scenario has prompt tokens.
func CachedShare(scenario string, samples []metrics.Sample) (*plot.Plot, error) {
	type acc struct{ cached, nCached, expected, nExpected float64 }
	byArm := map[string]map[int32]*acc{}
	for i := range samples {
		s := &samples[i]
		if s.Scenario != scenario || s.PromptTokens <= 0 {
			continue
		}
		idx := byArm[s.Arm]
		if idx == nil {
			idx = map[int32]*acc{}
			byArm[s.Arm] = idx
		}
		a := idx[s.RequestIndex]
		if a == nil {
			a = &acc{}
			idx[s.RequestIndex] = a
		}
		prompt := float64(s.PromptTokens)
		a.expected += 100 * float64(s.ExpectedCachedTokens) / prompt
		a.nExpected++
		if s.CachedTokens != nil {
			a.cached += 100 * float64(*s.CachedTokens) / prompt
			a.nCached++
		}
	}
	if len(byArm) == 0 {
		return nil, fmt.Errorf("plot cached share of scenario %q: %w", scenario, ErrNoSamples)
	}
	arms := make([]string, 0, len(byArm))
	for arm := range byArm {
		arms = append(arms, arm)
	}
	metrics.SortArms(arms)

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: cached share of the prompt per request", scenario)
	p.X.Label.Text = "request"
	p.Y.Label.Text = "cached share of prompt (%)"
	p.X.Tick.Marker = integerTicks{}
	p.Y.Tick.Marker = percentTicks
	grid := plotter.NewGrid()
	grid.Vertical.Color = lighter(palette[len(palette)-1], 0.12)
	grid.Horizontal.Color = grid.Vertical.Color
	p.Add(grid)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	useSans(p)

	// Build every arm's plotters, then add them in reverse so that spec, listed first, is drawn
	// last, on top of the lines it coincides with.
	var layers [][]plot.Plotter
	maxIdx := int32(0)
	for i, arm := range arms {
		idx := byArm[arm]
		keys := make([]int32, 0, len(idx))
		for k := range idx {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		maxIdx = max(maxIdx, keys[len(keys)-1])

		var expected plotter.XYs
		var segments []plotter.XYs // runs of consecutive requests with known cached tokens
		var points plotter.XYs
		prev := int32(-2)
		for _, k := range keys {
			a := idx[k]
			x := float64(k)
			expected = append(expected, plotter.XY{X: x, Y: a.expected / a.nExpected})
			if a.nCached == 0 {
				prev = -2
				continue
			}
			pt := plotter.XY{X: x, Y: a.cached / a.nCached}
			points = append(points, pt)
			if k != prev+1 || len(segments) == 0 {
				segments = append(segments, nil)
			}
			segments[len(segments)-1] = append(segments[len(segments)-1], pt)
			prev = k
		}

		col := colorOf(i)
		var layer []plot.Plotter
		exp, err := plotter.NewLine(expected)
		if err != nil {
			return nil, fmt.Errorf("plot expected share of arm %q: %w", arm, err)
		}
		exp.Color = lighter(col, 0.55)
		exp.Width = vg.Points(1.25)
		exp.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		layer = append(layer, exp)

		style := draw.LineStyle{Color: col, Width: vg.Points(1.5)}
		for _, seg := range segments {
			if len(seg) < 2 {
				continue // a lone point: the scatter draws it
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("plot cached share of arm %q: %w", arm, err)
			}
			l.LineStyle = style
			layer = append(layer, l)
		}
		glyph := draw.GlyphStyle{Color: col, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		if len(points) > 0 {
			sc, err := plotter.NewScatter(points)
			if err != nil {
				return nil, fmt.Errorf("plot cached share of arm %q: %w", arm, err)
			}
			sc.GlyphStyle = glyph
			layer = append(layer, sc)
		}
		// The legend shows a line with a point, whether or not the arm has a line segment.
		p.Legend.Add(arm, &plotter.Line{LineStyle: style}, &plotter.Scatter{GlyphStyle: glyph})
		layers = append(layers, layer)
	}
	for _, layer := range slices.Backward(layers) {
		p.Add(layer...)
	}
	expectedKey := &plotter.Line{LineStyle: draw.LineStyle{
		Color: lighter(palette[len(palette)-1], 0.45), Width: vg.Points(1.25),
		Dashes: []vg.Length{vg.Points(5), vg.Points(3)},
	}}
	p.Legend.Add("expected", expectedKey)
	p.X.Min, p.X.Max = 0, float64(max(maxIdx, 1))
	p.Y.Min, p.Y.Max = 0, 100 // fixed, so charts of different runs compare at a glance
	return p, nil
}
