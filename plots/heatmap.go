package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// Cell is one cell of a [RatioHeatMap]: one arm's figure in one scenario relative to
// [metrics.SpecArm]'s there (for example its re-read tokens divided by spec's). The caller
// computes the ratio (metrics' statistics); the chart only draws it.
type Cell struct {
	// Arm names the cell's row; rows are ordered as [metrics.SortArms] orders them, spec first.
	Arm string
	// Scenario names the cell's column; columns are in the order scenarios first appear.
	Scenario string
	// Ratio is the figure relative to spec; it must be finite and positive (a ratio of 0, an arm
	// that re-read nothing, is drawn at the scale's low end and printed as is).
	Ratio float64
}

// heatSpan is the ratio at which a [RatioHeatMap]'s colour scale saturates: 4× above spec or
// a quarter of it.
const heatSpan = 4

// heatColors is ColorBrewer's RdBu diverging scheme (11 classes, colour-blind safe), blue for
// less than spec through white at spec to red for more.
var heatColors = []color.NRGBA{
	{0x05, 0x30, 0x61, 0xFF}, {0x21, 0x66, 0xAC, 0xFF}, {0x43, 0x93, 0xC3, 0xFF}, {0x92, 0xC5, 0xDE, 0xFF},
	{0xD1, 0xE5, 0xF0, 0xFF}, {0xF7, 0xF7, 0xF7, 0xFF}, {0xFD, 0xDB, 0xC7, 0xFF}, {0xF4, 0xA5, 0x82, 0xFF},
	{0xD6, 0x60, 0x4D, 0xFF}, {0xB2, 0x18, 0x2B, 0xFF}, {0x67, 0x00, 0x1F, 0xFF},
}

// heatColor returns the colour of ratio r on the log scale: white at 1, saturated at
// [heatSpan] and 1/[heatSpan], interpolated between the scheme's classes.
func heatColor(r float64) color.NRGBA {
	t := 0.0 // -1 … 1
	if r <= 0 {
		t = -1
	} else {
		t = math.Max(-1, math.Min(1, math.Log(r)/math.Log(heatSpan)))
	}
	x := (t + 1) / 2 * float64(len(heatColors)-1)
	i := min(int(math.Floor(x)), len(heatColors)-2)
	f := x - float64(i)
	a, b := heatColors[i], heatColors[i+1]
	mix := func(u, v uint8) uint8 { return uint8(math.Round(float64(u)*(1-f) + float64(v)*f)) }
	return color.NRGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xFF}
}

// ratioLabel prints a ratio as the report does: "1.27×".
func ratioLabel(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) + "×" }

// RatioHeatMap builds an arm × scenario heat map of figures relative to spec: one row per arm
// (spec at the top), one column per scenario (names at the bottom, slanted), each cell coloured
// on a logarithmic diverging scale (ColorBrewer RdBu: blue below spec, white at it, red above,
// saturated at 4× and ¼×) with its ratio printed inside; a cell the arm did not run, or where
// there is no ratio, is left blank. The legend, right of the cells, shows the scale at ¼×, ½×,
// 1×, 2× and 4×. title should name the figure ("re-read tokens relative to spec"). Render it
// [RatioHeatMapSize] large. It returns [ErrNoSamples] for no cells, and an error naming the cell
// for a ratio that is not finite or is negative, or for two cells of the same arm and scenario.
func RatioHeatMap(title string, cells []Cell) (*plot.Plot, error) {
	if len(cells) == 0 {
		return nil, fmt.Errorf("plot heat map %q: %w", title, ErrNoSamples)
	}
	arms, scenarios := heatAxes(cells)
	seen := map[[2]string]bool{}
	for i, c := range cells {
		if math.IsNaN(c.Ratio) || math.IsInf(c.Ratio, 0) || c.Ratio < 0 {
			return nil, fmt.Errorf("plot heat map: cell %d (arm %q, scenario %q): ratio %v is not finite and ≥ 0", i, c.Arm, c.Scenario, c.Ratio)
		}
		k := [2]string{c.Arm, c.Scenario}
		if seen[k] {
			return nil, fmt.Errorf("plot heat map: cell %d: arm %q, scenario %q given twice", i, c.Arm, c.Scenario)
		}
		seen[k] = true
	}
	p := plot.New()
	p.Title.Text = title
	useSans(p)
	p.Title.TextStyle.Font.Size = vg.Points(12)
	col := map[string]int{}
	for i, s := range scenarios {
		col[s] = i
	}
	row := map[string]int{}
	for i, a := range arms {
		row[a] = len(arms) - 1 - i // spec at the top
	}
	var xt, yt plot.ConstantTicks
	for i, s := range scenarios {
		xt = append(xt, plot.Tick{Value: float64(i), Label: s})
	}
	for _, a := range arms {
		yt = append(yt, plot.Tick{Value: float64(row[a]), Label: a})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	// Ticks of no width and some length: room between the cells and their names.
	p.X.Tick.Length, p.Y.Tick.Length = vg.Points(6), vg.Points(4)
	p.X.Tick.LineStyle.Width, p.Y.Tick.LineStyle.Width = 0, 0
	p.X.LineStyle.Width, p.Y.LineStyle.Width = 0, 0
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Min, p.X.Max = -0.5, float64(len(scenarios))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(arms))-0.5
	h := &heatCells{}
	for _, c := range cells {
		h.cells = append(h.cells, placedCell{x: col[c.Scenario], y: row[c.Arm], ratio: c.Ratio})
	}
	h.text = p.Y.Tick.Label
	h.text.Font.Size = vg.Points(8)
	h.text.XAlign, h.text.YAlign = draw.XCenter, draw.YCenter
	p.Add(h)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Padding = vg.Points(2)
	for _, r := range []float64{heatSpan, 2, 1, 0.5, 1.0 / heatSpan} {
		p.Legend.Add(ratioLabel(r), swatch{heatColor(r)})
	}
	return p, nil
}

// RatioHeatMapSize returns the size at which a [RatioHeatMap] of cells reads well: about 52
// points per scenario and 17 per arm, with room for the arms' names left of the cells and the
// scenarios' slanted below them (and left of the cells, as far as a long one reaches), each measured in the chart's font (never smaller than 260
// points wide and 150 + 17 per arm high).
func RatioHeatMapSize(cells []Cell) (width, height vg.Length) {
	arms, scenarios := heatAxes(cells)
	// The names as the chart sets them (its tick labels' font): the arms' across, left of the
	// cells; the scenarios' slanted at 45°, below them.
	p := plot.New()
	useSans(p)
	sty := p.Y.Tick.Label
	var rowNames, colNames vg.Length
	for _, a := range arms {
		rowNames = max(rowNames, sty.Width(a))
	}
	// left is the room left of the cells: the arms' names, or as far as a slanted name reaches
	// left of its column's middle past the columns before it (the chart pads its data area
	// for that reach, heatCells.GlyphBoxes, so a size without it squeezes the cells).
	left := rowNames
	for i, sc := range scenarios {
		w := sty.Width(sc)
		colNames = max(colNames, w)
		left = max(left, (w+sty.Height(sc))*math.Sqrt2/2-vg.Points(52*(float64(i)+0.5)))
	}
	width = max(left+vg.Points(130+52*float64(len(scenarios))), vg.Points(260))
	height = colNames*math.Sqrt2/2 + vg.Points(76+17*float64(len(arms)))
	return width, max(height, vg.Points(150+17*float64(len(arms))))
}

// heatAxes returns the arms in [metrics.SortArms] order and the scenarios in order of first
// appearance.
func heatAxes(cells []Cell) (arms, scenarios []string) {
	for _, c := range cells {
		if !slices.Contains(arms, c.Arm) {
			arms = append(arms, c.Arm)
		}
		if !slices.Contains(scenarios, c.Scenario) {
			scenarios = append(scenarios, c.Scenario)
		}
	}
	metrics.SortArms(arms)
	return arms, scenarios
}

type placedCell struct {
	x, y  int
	ratio float64
}

// heatCells draws the cells of a [RatioHeatMap], each a filled square with its ratio.
type heatCells struct {
	cells []placedCell
	text  draw.TextStyle
}

// Plot implements plot.Plotter.
func (h *heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, cl := range h.cells {
		x0, x1 := tx(float64(cl.x)-0.5), tx(float64(cl.x)+0.5)
		y0, y1 := ty(float64(cl.y)-0.5), ty(float64(cl.y)+0.5)
		fill := heatColor(cl.ratio)
		c.FillPolygon(fill, c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
		sty := h.text
		sty.Color = color.Black
		if lum := 0.2126*float64(fill.R) + 0.7152*float64(fill.G) + 0.0722*float64(fill.B); lum < 110 {
			sty.Color = color.White
		}
		c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, ratioLabel(cl.ratio))
	}
}

// GlyphBoxes implements plot.GlyphBoxer: the slanted scenario names under the cells, so that
// the plot leaves room left of the first column for its name, which reaches further left than
// the cell (gonum pads the left side of the data area for its plotters' boxes only, not for the
// x axis's labels). A name may reach under the arms' names, which lie above it: only what
// reaches further left than they do counts. The boxes have no height: the x axis already makes
// room below for them.
func (h *heatCells) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	var under vg.Length // the width of the y axis as gonum sizes it: its tick labels and a space
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		under = max(under, p.Y.Tick.Label.Width(t.Label))
	}
	under += p.Y.Label.TextStyle.Width(" ")
	if p.Y.Tick.LineStyle.Width > 0 {
		under += p.Y.Tick.Length
	}
	var boxes []plot.GlyphBox
	for _, t := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if t.IsMinor() {
			continue
		}
		r := p.X.Tick.Label.Rectangle(t.Label)
		r.Min.X = min(r.Min.X+under, r.Max.X)
		r.Min.Y, r.Max.Y = 0, 0
		boxes = append(boxes, plot.GlyphBox{X: p.X.Norm(t.Value), Rectangle: r})
	}
	return boxes
}

// DataRange implements plot.DataRanger.
func (h *heatCells) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, cl := range h.cells {
		xmin, xmax = math.Min(xmin, float64(cl.x)-0.5), math.Max(xmax, float64(cl.x)+0.5)
		ymin, ymax = math.Min(ymin, float64(cl.y)-0.5), math.Max(ymax, float64(cl.y)+0.5)
	}
	return xmin, xmax, ymin, ymax
}

// swatch is a legend entry of one colour.
type swatch struct{ c color.NRGBA }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	box := []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(s.c, box)
	c.StrokeLines(draw.LineStyle{Color: lighter(ink, 0.35), Width: vg.Points(0.5)}, append(box, box[0]))
}
