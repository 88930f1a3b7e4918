package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The look of divergence markers and their labels.
const (
	markRadius = vg.Length(4.5) // pt
	markWidth  = vg.Length(1.2) // pt
	labelSize  = vg.Length(7.5) // pt
	labelPad   = vg.Length(1.5) // pt around the text
	maxNudges  = 12             // label positions tried above and below
)

// mark is one divergence point in data coordinates, drawn in its arm's colour.
type mark struct {
	plotter.XY
	color color.NRGBA
	arm   int
	tip   string // the hover text of its ring in the SVG ("" for none)
}

// label is a divergence label and the point it names, in data coordinates.
type label struct {
	text   string
	anchor plotter.XY
}

// divergenceMarks draws the divergence markers of a chart and places their labels when the
// chart is drawn, in canvas coordinates, where text sizes are known: each label, in order, goes
// to the free place nearest its anchor (beside it, then nudged up or down) that overlaps no
// marker or placed label and crosses the fewest lines. A label that finds no free place is left
// out.
type divergenceMarks struct {
	marks  []mark
	labels []label
	lines  []plotter.XYs // every line of the chart, which labels avoid crossing
	hovers *hoverSet     // where the rings' hover texts go when drawn; nil for none
}

// ringGlyph is an open circle with a line width of markWidth.
type ringGlyph struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (ringGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: markWidth})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// divergenceKey is the legend thumbnail of a divergence marker.
type divergenceKey struct{}

// Thumbnail implements plot.Thumbnailer.
func (divergenceKey) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(draw.GlyphStyle{Color: grey(0.25), Radius: markRadius, Shape: ringGlyph{}}, c.Center())
}

// placed is a label placed on the canvas: its text, backing rectangle and anchor, and whether it
// was nudged away from its marker (and so needs a leader line).
type placed struct {
	text   string
	rect   vg.Rectangle
	anchor vg.Point
	nudged bool
}

// labelStyle returns the text style of divergence labels, derived from p's tick labels.
func labelStyle(p *plot.Plot) text.Style {
	sty := p.X.Tick.Label
	sty.Font.Size = labelSize
	sty.Color = grey(0.15)
	sty.XAlign, sty.YAlign = text.XLeft, text.YBottom
	sty.Rotation = 0
	return sty
}

// layout places the labels on c, the data area of p, in order: each goes to the free place
// nearest its anchor (beside it, right before left, then nudged up or down) that lies inside c,
// overlaps no marker and no label placed before, and crosses the fewest lines. A label with no
// free place is left out.
func (d *divergenceMarks) layout(c draw.Canvas, p *plot.Plot) []placed {
	trX, trY := p.Transforms(&c)
	at := func(xy plotter.XY) vg.Point { return vg.Point{X: trX(xy.X), Y: trY(xy.Y)} }
	var occupied []vg.Rectangle
	for _, m := range d.marks {
		pt := at(m.XY)
		r := markRadius + markWidth
		occupied = append(occupied, vg.Rectangle{Min: vg.Point{X: pt.X - r, Y: pt.Y - r}, Max: vg.Point{X: pt.X + r, Y: pt.Y + r}})
	}
	var segs [][2]vg.Point
	for _, l := range d.lines {
		for i := 1; i < len(l); i++ {
			segs = append(segs, [2]vg.Point{at(l[i-1]), at(l[i])})
		}
	}
	sty := labelStyle(p)
	var out []placed
	for _, l := range d.labels {
		a := at(l.anchor)
		w := sty.Width(l.text) + 2*labelPad
		h := sty.Height(l.text) + 2*labelPad
		gap := markRadius + markWidth + vg.Points(1.5)
		best, bestCost, bestStep, found := vg.Rectangle{}, 0, 0, false
		for k := 0; k <= 2*maxNudges; k++ {
			step := (k + 1) / 2 // 0, 1, 1, 2, 2, …: up first, then down
			if k%2 == 0 {
				step = -step
			}
			dy := vg.Length(-step) * (h + vg.Points(1))
			for side, x := range []vg.Length{a.X + gap, a.X - gap - w} {
				r := vg.Rectangle{Min: vg.Point{X: x, Y: a.Y - h/2 + dy}}
				r.Max = vg.Point{X: r.Min.X + w, Y: r.Min.Y + h}
				if !inside(r, c.Rectangle) || overlapsAny(r, occupied) {
					continue
				}
				cost := 20*crossings(r, segs) + 2*max(step, -step) + side
				if !found || cost < bestCost {
					best, bestCost, bestStep, found = r, cost, step, true
				}
			}
		}
		if !found {
			continue
		}
		occupied = append(occupied, best)
		out = append(out, placed{text: l.text, rect: best, anchor: a, nudged: bestStep != 0})
	}
	return out
}

// Plot implements plot.Plotter.
func (d *divergenceMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, m := range d.marks {
		at := vg.Point{X: trX(m.X), Y: trY(m.Y)}
		c.DrawGlyph(draw.GlyphStyle{Color: m.color, Radius: markRadius, Shape: ringGlyph{}}, at)
		if d.hovers != nil && m.tip != "" {
			d.hovers.add(hotspot{at: at, r: markRadius + markWidth + vg.Points(1), text: m.tip})
		}
	}
	sty := labelStyle(p)
	back := color.NRGBA{0xFF, 0xFF, 0xFF, 0xCC}
	leader := draw.LineStyle{Color: grey(0.45), Width: vg.Points(0.6)}
	for _, l := range d.layout(c, p) {
		r, a := l.rect, l.anchor
		if l.nudged {
			// A thin leader line from the ring to the nearest point of the label.
			to := vg.Point{X: min(max(a.X, r.Min.X), r.Max.X), Y: min(max(a.Y, r.Min.Y), r.Max.Y)}
			from := a
			if d := to.Sub(a); d.Dot(d) > 0 {
				from = a.Add(d.Scale(markRadius / vg.Length(math.Sqrt(float64(d.Dot(d))))))
			}
			c.StrokeLine2(leader, from.X, from.Y, to.X, to.Y)
		}
		c.FillPolygon(back, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
		tr := sty.Rectangle(l.text) // the text's extent drawn at (0, 0), descent included
		c.FillText(sty, vg.Point{X: r.Min.X + labelPad - tr.Min.X, Y: r.Min.Y + labelPad - tr.Min.Y}, l.text)
	}
}

// DataRange implements plot.DataRanger.
func (d *divergenceMarks) DataRange() (xmin, xmax, ymin, ymax float64) {
	for i, m := range d.marks {
		if i == 0 {
			xmin, xmax, ymin, ymax = m.X, m.X, m.Y, m.Y
		}
		xmin, xmax, ymin, ymax = min(xmin, m.X), max(xmax, m.X), min(ymin, m.Y), max(ymax, m.Y)
	}
	return xmin, xmax, ymin, ymax
}

// GlyphBoxes implements plot.GlyphBoxer, so that markers at the edges are not cut off.
func (d *divergenceMarks) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	r := markRadius + markWidth
	boxes := make([]plot.GlyphBox, len(d.marks))
	for i, m := range d.marks {
		boxes[i] = plot.GlyphBox{X: p.X.Norm(m.X), Y: p.Y.Norm(m.Y),
			Rectangle: vg.Rectangle{Min: vg.Point{X: -r, Y: -r}, Max: vg.Point{X: r, Y: r}}}
	}
	return boxes
}

// inside reports whether r lies within outer.
func inside(r, outer vg.Rectangle) bool {
	return r.Min.X >= outer.Min.X && r.Min.Y >= outer.Min.Y && r.Max.X <= outer.Max.X && r.Max.Y <= outer.Max.Y
}

// overlapsAny reports whether r overlaps one of rs.
func overlapsAny(r vg.Rectangle, rs []vg.Rectangle) bool {
	for _, o := range rs {
		if r.Min.X < o.Max.X && o.Min.X < r.Max.X && r.Min.Y < o.Max.Y && o.Min.Y < r.Max.Y {
			return true
		}
	}
	return false
}

// crossings counts the segments that pass through r.
func crossings(r vg.Rectangle, segs [][2]vg.Point) int {
	n := 0
	for _, s := range segs {
		if segmentHitsRect(s[0], s[1], r) {
			n++
		}
	}
	return n
}

// segmentHitsRect reports whether the segment a–b meets r, by clipping it to r (Liang–Barsky).
func segmentHitsRect(a, b vg.Point, r vg.Rectangle) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	for _, e := range [4][2]float64{
		{-dx, float64(a.X - r.Min.X)}, {dx, float64(r.Max.X - a.X)},
		{-dy, float64(a.Y - r.Min.Y)}, {dy, float64(r.Max.Y - a.Y)},
	} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = max(t0, t)
		} else {
			t1 = min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}
