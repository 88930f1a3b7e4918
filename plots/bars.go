package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// Bar is one bar of a [RelativeBars] chart: one arm's figure relative to [metrics.SpecArm]'s
// (for example its re-read tokens divided by spec's), with an optional confidence interval.
// The figures are computed by the caller (metrics' statistics); the chart only draws them.
type Bar struct {
	// Label names the bar, normally the arm; bars are ordered as [metrics.SortArms] orders their
	// labels, spec at the top.
	Label string
	// Group optionally names a group, normally the scenario: with more than one group, each arm
	// gets one bar per group, coloured by group, and the legend names the groups. "" is a group
	// like any other.
	Group string
	// Value is the ratio to spec (1 = as spec). It must be finite.
	Value float64
	// Lo and Hi are the bounds of the confidence interval of Value (the lab uses 95 %); nil
	// when unknown, for example with one repetition. Both or neither must be set, finite, with
	// Lo ≤ Hi.
	Lo, Hi *float64
}

// logRatioSpan is the ratio of the largest to the smallest figure of a [RelativeBars] chart
// beyond which its axis is logarithmic.
const logRatioSpan = 10

// RelativeBars builds a horizontal bar chart of figures relative to spec, across scenarios:
// one bar per arm (per arm and group when the bars name several groups), the arm names on the y
// axis with spec at the top, followed by the value when there is one group ("no-stubs  1.23×").
// Each bar runs from the reference line at 1 (= spec, dashed) to its value, so bars to the
// right mean more than spec and bars to the left less; a black whisker shows the confidence
// interval [Bar.Lo, Bar.Hi] where known. The x axis is linear, or logarithmic when every value
// and bound is positive and the largest is more than 10 times the smallest. title is the
// chart's title and should name the figure ("re-read tokens relative to spec, 95 % CI").
//
// Groups are drawn in the order they first appear in bars. For a readable chart of many arms,
// render it [RelativeBarsHeight] tall. It returns [ErrNoSamples] for no bars, and an error naming
// the bar for a value or bound that is not finite, a bound without the other, Lo > Hi, or two
// bars with the same label and group.
func RelativeBars(title string, bars []Bar) (*plot.Plot, error) {
	if len(bars) == 0 {
		return nil, fmt.Errorf("plot relative bars %q: %w", title, ErrNoSamples)
	}
	var labels, groups []string
	seen := map[[2]string]bool{}
	positive := true
	lo, hi := 1.0, 1.0
	for i, b := range bars {
		name := fmt.Sprintf("bar %d (%q, group %q)", i, b.Label, b.Group)
		if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) {
			return nil, fmt.Errorf("plot relative bars: %s: value %v is not finite", name, b.Value)
		}
		if (b.Lo == nil) != (b.Hi == nil) {
			return nil, fmt.Errorf("plot relative bars: %s: confidence interval has one bound; want both or neither", name)
		}
		vals := []float64{b.Value}
		if b.Lo != nil {
			if math.IsNaN(*b.Lo) || math.IsInf(*b.Lo, 0) || math.IsNaN(*b.Hi) || math.IsInf(*b.Hi, 0) {
				return nil, fmt.Errorf("plot relative bars: %s: confidence interval [%v, %v] is not finite", name, *b.Lo, *b.Hi)
			}
			if *b.Lo > *b.Hi {
				return nil, fmt.Errorf("plot relative bars: %s: confidence interval [%v, %v] has Lo > Hi", name, *b.Lo, *b.Hi)
			}
			vals = append(vals, *b.Lo, *b.Hi)
		}
		for _, v := range vals {
			lo, hi = min(lo, v), max(hi, v)
			positive = positive && v > 0
		}
		k := [2]string{b.Label, b.Group}
		if seen[k] {
			return nil, fmt.Errorf("plot relative bars: %s: a bar with this label and group came before", name)
		}
		seen[k] = true
		if !slices.Contains(labels, b.Label) {
			labels = append(labels, b.Label)
		}
		if !slices.Contains(groups, b.Group) {
			groups = append(groups, b.Group)
		}
	}
	metrics.SortArms(labels)

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "ratio to spec (spec = 1)"
	useSans(p)
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.ThumbnailWidth = vg.Points(18)

	n := len(labels)
	row := map[string]float64{} // label → y of its cluster's centre; spec at the top
	for r, l := range labels {
		row[l] = float64(n - 1 - r)
	}
	g := len(groups)
	thick := 0.6
	if g > 1 {
		thick = 0.84 / float64(g)
	}
	hb := &hbars{}
	single := map[string]float64{}
	for _, b := range bars {
		gi := slices.Index(groups, b.Group)
		y := row[b.Label]
		if g > 1 {
			y += 0.42 - thick*(float64(gi)+0.5) // the first group on top
		}
		col := colorOf(0)
		if g > 1 {
			col = colorOf(gi)
		}
		hb.bars = append(hb.bars, hbar{y: y, thick: thick * 0.9, value: b.Value, lo: b.Lo, hi: b.Hi, color: col})
		single[b.Label] = b.Value
	}
	names := make([]string, n)
	for r, l := range labels {
		name := l
		if g == 1 {
			name = l + "  " + strconv.FormatFloat(roundSig(single[l], 3), 'f', -1, 64) + "×"
		}
		names[n-1-r] = name
	}

	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	grid.Vertical.Color = lighter(ink, 0.12)
	p.Add(grid)
	p.Add(hb)
	ref, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: float64(n) - 0.5}})
	if err != nil {
		return nil, fmt.Errorf("plot relative bars: %w", err)
	}
	ref.LineStyle = draw.LineStyle{Color: grey(0.3), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
	p.Add(ref)
	p.NominalY(names...)
	if n > 18 || n*g > 24 {
		p.Y.Tick.Label.Font.Size = vg.Points(8)
	}
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5

	if positive && hi/lo > logRatioSpan {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = ratioLogTicks{}
		p.X.Min, p.X.Max = lo/1.15, hi*1.15
	} else {
		span := hi - lo
		if span == 0 {
			span = 0.2
		}
		p.X.Min, p.X.Max = lo-0.06*span, hi+0.06*span
	}

	if g > 1 {
		for gi, name := range groups {
			p.Legend.Add(name, &plotter.Polygon{Color: colorOf(gi)})
		}
	}
	p.Legend.Add("spec = 1", keyLine(ref.LineStyle))
	if slices.ContainsFunc(bars, func(b Bar) bool { return b.Lo != nil }) {
		p.Legend.Add("95 % CI", whiskerKey{})
	}
	return p, nil
}

// RelativeBarsHeight returns a height at which a [RelativeBars] chart of bars reads well: at
// least [DefaultHeight], and about 14 points per arm (9 per bar when there are groups) plus room
// for the title and the axis.
func RelativeBarsHeight(bars []Bar) vg.Length {
	var labels, groups []string
	for _, b := range bars {
		if !slices.Contains(labels, b.Label) {
			labels = append(labels, b.Label)
		}
		if !slices.Contains(groups, b.Group) {
			groups = append(groups, b.Group)
		}
	}
	perArm := vg.Points(14)
	if len(groups) > 1 {
		perArm = vg.Points(9*float64(len(groups)) + 5)
	}
	return max(DefaultHeight, vg.Length(len(labels))*perArm+vg.Points(80))
}

// hbar is one bar in data coordinates: a band of the given thickness centred on y, from 1 to
// value, with an optional whisker from lo to hi.
type hbar struct {
	y, thick, value float64
	lo, hi          *float64
	color           color.NRGBA
}

// hbars draws horizontal bars that start at 1.
type hbars struct{ bars []hbar }

// whiskerStyle is the line style of confidence-interval whiskers.
var whiskerStyle = draw.LineStyle{Color: color.NRGBA{A: 0xFF}, Width: vg.Points(1)}

// Plot implements plot.Plotter.
func (h *hbars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range h.bars {
		x0, x1 := trX(1), trX(b.value)
		y0, y1 := trY(b.y-b.thick/2), trY(b.y+b.thick/2)
		left, right := min(x0, x1), max(x0, x1)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{{X: left, Y: y0}, {X: right, Y: y0}, {X: right, Y: y1}, {X: left, Y: y1}}))
		// A darker tick at the value, so that a bar of length 0 (spec itself) still shows.
		c.StrokeLine2(draw.LineStyle{Color: darker(b.color), Width: vg.Points(1.5)}, x1, y0, x1, y1)
		if b.lo != nil {
			yc := trY(b.y)
			capH := (y1 - y0) * 0.35
			l, r := trX(*b.lo), trX(*b.hi)
			c.StrokeLine2(whiskerStyle, l, yc, r, yc)
			c.StrokeLine2(whiskerStyle, l, yc-capH, l, yc+capH)
			c.StrokeLine2(whiskerStyle, r, yc-capH, r, yc+capH)
		}
	}
}

// DataRange implements plot.DataRanger.
func (h *hbars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 1, 1
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, b := range h.bars {
		xmin, xmax = min(xmin, b.value), max(xmax, b.value)
		if b.lo != nil {
			xmin, xmax = min(xmin, *b.lo), max(xmax, *b.hi)
		}
		ymin, ymax = min(ymin, b.y-b.thick/2), max(ymax, b.y+b.thick/2)
	}
	return xmin, xmax, ymin, ymax
}

// whiskerKey is the legend thumbnail of a confidence-interval whisker.
type whiskerKey struct{}

// Thumbnail implements plot.Thumbnailer.
func (whiskerKey) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	l, r := c.Min.X+vg.Points(2), c.Max.X-vg.Points(2)
	capH := vg.Points(3)
	c.StrokeLine2(whiskerStyle, l, y, r, y)
	c.StrokeLine2(whiskerStyle, l, y-capH, l, y+capH)
	c.StrokeLine2(whiskerStyle, r, y-capH, r, y+capH)
}

// darker mixes c with black, keeping 65 % of it.
func darker(c color.NRGBA) color.NRGBA {
	f := func(v uint8) uint8 { return uint8(math.Round(float64(v) * 0.65)) }
	return color.NRGBA{f(c.R), f(c.G), f(c.B), c.A}
}

// ratioLogTicks marks a logarithmic ratio axis at 1, 2 and 5 times powers of ten (labelled) and
// the other integers times powers of ten (unlabelled).
type ratioLogTicks struct{}

// Ticks implements plot.Ticker.
func (ratioLogTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for d := math.Floor(math.Log10(lo)); d <= math.Ceil(math.Log10(hi)); d++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, d)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(roundSig(v, 1), 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
