package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// MaxArmsOnOneChart is the number of arms a per-request chart of shares draws as lines on one
// plot: with more, [CachedShare] draws small multiples, one panel per arm against the spec
// arm's line, as 17 lines on one plot mostly lie on top of each other.
const MaxArmsOnOneChart = 6

// panelColumns is the number of panels per row of a small-multiples chart.
const panelColumns = 4

// The size of one panel of a small-multiples chart, and the room for the title and legend.
const (
	panelWidth   = 2.4 * vg.Inch
	panelHeight  = 1.55 * vg.Inch
	panelsLegend = 2.1 * vg.Inch
	panelsTitle  = 0.45 * vg.Inch
)

// panelGrid lays out n panels: its columns and rows.
func panelGrid(n int) (cols, rows int) {
	cols = min(n, panelColumns)
	return cols, int(math.Ceil(float64(n) / float64(cols)))
}

// CachedShareSize returns the size at which [CachedShareRows] of scenario reads well:
// [DefaultWidth] × [DefaultHeight] for up to [MaxArmsOnOneChart] arms, and for small multiples
// [panelColumns] panels of 2.4 × 1.55 inches per row, with room for the title and legend.
func CachedShareSize(scenario string, rows *metrics.Rows) (width, height vg.Length) {
	arms := map[string]bool{}
	for i := range rows.Len() {
		if rows.Scenario(i) == scenario && rows.PromptTokens(i) > 0 {
			arms[rows.Arm(i)] = true
		}
	}
	if len(arms) <= MaxArmsOnOneChart {
		return DefaultWidth, DefaultHeight
	}
	return panelsSize(len(arms))
}

// panels draws a grid of plots in its canvas, row by row, each with its own axes.
type panels struct {
	plots []*plot.Plot
	cols  int
}

// Plot implements plot.Plotter.
func (g *panels) Plot(c draw.Canvas, _ *plot.Plot) {
	cols, rows := g.cols, int(math.Ceil(float64(len(g.plots))/float64(g.cols)))
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(6), PadY: vg.Points(6), PadTop: vg.Points(2), PadRight: vg.Points(4)}
	for i, sub := range g.plots {
		sub.Draw(tiles.At(c, i%cols, i/cols))
	}
}

// panelStyle is the line of the arm a panel shows: one colour for every panel, whose title
// names the arm.
func panelStyle() (draw.LineStyle, draw.GlyphStyle) { return armStyle(0) }

// specReference is the spec arm's line on every other arm's panel.
func specReference() draw.LineStyle {
	return draw.LineStyle{Color: grey(0.62), Width: vg.Points(1.1)}
}

// cachedSharePanels builds the small-multiples form of [CachedShare]: one panel per arm in
// display order, each with the arm's measured share (points and line), its expected share
// (dashed), the spec arm's measured share as a grey reference line (when the spec arm has one:
// else neither the line nor its legend entry), the arm's divergence points as rings, and the
// session's events; every panel on the same axes (requests 0 to maxX, 0–100 %). The panel of an
// arm with no measured share (its cached tokens never known) says so in its title.
func cachedSharePanels(title string, arms []string, measured, expected series, marks *divergenceMarks, events *sessionEvents, maxX int32) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	useSans(p)
	p.HideAxes()
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(24)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	th := thinningFor(maxX, nil)
	line, glyph := panelStyle()
	expDashes := []vg.Length{vg.Points(4), vg.Points(2.5)}
	hasSpec := len(measured[metrics.SpecArm]) > 0
	g := &panels{cols: min(len(arms), panelColumns)}
	for i, arm := range arms {
		sub := plot.New()
		useSans(sub)
		sub.Title.Text = arm
		if len(measured[arm]) == 0 {
			// Only spec's reference and the expected line would be drawn: say so, lest they be
			// read as the arm's.
			sub.Title.Text = arm + " (cached share not measured)"
		}
		sub.Title.TextStyle.Font.Size = vg.Points(9)
		sub.Title.Padding = vg.Points(2)
		for _, t := range []*draw.TextStyle{&sub.X.Tick.Label, &sub.Y.Tick.Label} {
			t.Font.Size = vg.Points(7)
		}
		sub.X.Tick.Marker = integerTicks{}
		sub.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 50, Label: "50"}, {Value: 100, Label: "100"}}
		grid := plotter.NewGrid()
		grid.Vertical.Width = 0
		grid.Horizontal.Color = lighter(ink, 0.12)
		sub.Add(grid)
		if events != nil {
			quiet := *events // the turn numbers would crowd a panel: the lines only
			quiet.noLabels = true
			sub.Add(&quiet)
		}
		if arm != metrics.SpecArm {
			for _, run := range runs(measured[metrics.SpecArm]) {
				if xys := pointsXY(th.points(run)); len(xys) >= 2 {
					l, err := plotter.NewLine(xys)
					if err != nil {
						return nil, fmt.Errorf("plot spec reference: %w", err)
					}
					l.LineStyle = specReference()
					sub.Add(l)
				}
			}
		}
		for _, run := range runs(expected[arm]) {
			if xys := pointsXY(th.points(run)); len(xys) >= 2 {
				l, err := plotter.NewLine(xys)
				if err != nil {
					return nil, fmt.Errorf("plot expected share of arm %q: %w", arm, err)
				}
				l.LineStyle = draw.LineStyle{Color: lighter(colorOf(0), 0.5), Width: vg.Points(1), Dashes: expDashes}
				sub.Add(l)
			}
		}
		layer, _, _, err := armLayer(arm, 0, measured[arm], th)
		if err != nil {
			return nil, err
		}
		sub.Add(layer...)
		if marks != nil {
			var rings plotter.XYs
			for _, m := range marks.marks {
				if m.arm == i {
					rings = append(rings, m.XY)
				}
			}
			if len(rings) > 0 {
				sc, err := plotter.NewScatter(rings)
				if err != nil {
					return nil, fmt.Errorf("plot divergences of arm %q: %w", arm, err)
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: grey(0.3), Radius: vg.Points(3), Shape: ringGlyph{}}
				sub.Add(sc)
			}
		}
		sub.X.Min, sub.X.Max = 0, float64(max(maxX, 1))
		sub.Y.Min, sub.Y.Max = 0, 100
		g.plots = append(g.plots, sub)
	}
	p.Add(g)
	p.Legend.Add("the panel's arm", &plotter.Line{LineStyle: line}, &plotter.Scatter{GlyphStyle: glyph})
	if hasSpec {
		p.Legend.Add("spec", keyLine(specReference()))
	}
	if len(expected) > 0 {
		p.Legend.Add("expected", keyLine(draw.LineStyle{Color: grey(0.55), Width: vg.Points(1), Dashes: expDashes}))
	}
	if marks != nil && len(marks.marks) > 0 {
		p.Legend.Add(fmt.Sprintf("diverged (≥ %.0f %% lost)", 100*DivergenceMinLost), divergenceKey{})
	}
	events.addLegend(p)
	return p, nil
}

// pointsXY returns the means of pts as x, y pairs.
func pointsXY(pts []point) plotter.XYs {
	xys := make(plotter.XYs, len(pts))
	for j, pt := range pts {
		xys[j] = plotter.XY{X: float64(pt.x), Y: pt.mean}
	}
	return xys
}
