package plots

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The default size of a chart: 8 × 4.5 inches (16:9).
const (
	DefaultWidth  = 8 * vg.Inch
	DefaultHeight = 4.5 * vg.Inch
)

// PNGDPI is the resolution of PNG output, in dots per inch: a chart of [DefaultWidth] ×
// [DefaultHeight] is 1200 × 675 pixels.
const PNGDPI = 150

var (
	// ErrUnknownFormat is returned by [Write] for a format other than "png" or "svg".
	ErrUnknownFormat = errors.New("plots: unknown format")
	// ErrNoSamples is returned by a builder given no sample it could plot.
	ErrNoSamples = errors.New("plots: no samples to plot")
)

// Formats returns the names of the formats [Write] renders: "png" and "svg".
func Formats() []string { return []string{"png", "svg"} }

// Write renders p as format ("png" or "svg", case-insensitive) of the given size to w. PNG is
// rendered at [PNGDPI]; SVG does not embed its fonts (Liberation, named in the file).
//
// The legend, when p has one, is drawn in a column right of the data area, where it hides no
// data; p.Legend.Top chooses whether it aligns with the top or the bottom of that area. p itself
// is not modified, so one plot may be written several times, in turn or at once (a chart with
// hover texts, such as [CachedShare]'s, is then drawn by one Write at a time). It returns
// [ErrUnknownFormat] for another format, an error for a nil plot or a size that is not positive,
// and any error writing to w. It does not close w.
func Write(w io.Writer, p *plot.Plot, format string, width, height vg.Length) error {
	if p == nil {
		return errors.New("write plot: nil plot")
	}
	if width <= 0 || height <= 0 || math.IsNaN(float64(width)) || math.IsNaN(float64(height)) {
		return fmt.Errorf("write plot: size %v × %v is not positive", width, height)
	}
	var wt io.WriterTo
	// A chart with hover texts is drawn by one Write at a time: a drawing refills its hover
	// set, which the SVG's texts are read from.
	h := hoversOf(p)
	if h != nil {
		h.drawing.Lock()
		defer h.drawing.Unlock()
		h.reset()
	}
	switch strings.ToLower(format) {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(PNGDPI))
		drawWithLegendRight(p, draw.New(c))
		// Fast compression: a chart's flat colours compress well anyway, and the default level
		// costs most of a report's time.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(w, c.Image()); err != nil {
			return fmt.Errorf("write plot as %s: %w", format, err)
		}
		return nil
	case "svg":
		c := vgsvg.New(width, height)
		drawWithLegendRight(p, draw.New(c))
		wt = c
		if h != nil {
			var buf bytes.Buffer
			if _, err := c.WriteTo(&buf); err != nil {
				return fmt.Errorf("write plot as %s: %w", format, err)
			}
			wt = bytes.NewReader(withHovers(buf.Bytes(), h, height))
		}
	default:
		return fmt.Errorf("write plot as %q: %w (want one of %s)", format, ErrUnknownFormat, strings.Join(Formats(), ", "))
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("write plot as %s: %w", format, err)
	}
	return nil
}

// legendGap is the space between the data area and a legend drawn right of it, and between the
// legend and the right edge.
const legendGap = 3 * vg.Millimeter

// drawWithLegendRight draws a shallow copy of p on c, the legend moved out of the data area into
// a column at the right.
func drawWithLegendRight(p *plot.Plot, c draw.Canvas) {
	q := *p
	if q.BackgroundColor != nil {
		c.SetColor(q.BackgroundColor)
		c.Fill(c.Rectangle.Path())
	}
	fitLegend(&q.Legend, c.Size().Y-2*legendGap)
	if w := q.Legend.Rectangle(c).Size().X; w > 0 {
		q.Legend.Left = false
		q.Legend.XOffs += w + legendGap
		c = draw.Crop(c, 0, -(w + 2*legendGap), 0, 0)
	}
	fitTitle(&q, c.Size().X-2*legendGap)
	q.Draw(c)
}

// minTitleFont is the smallest font size [fitTitle] shrinks a title to.
const minTitleFont = 7

// fitTitle shrinks a title's font (in steps of half a point, down to [minTitleFont] points)
// until its widest line is at most width wide, so that it stays inside the frame: the title is
// centred over the data area, and a longer one would run off the canvas's left edge.
func fitTitle(p *plot.Plot, width vg.Length) {
	t := &p.Title.TextStyle
	for t.Width(p.Title.Text) > width && t.Font.Size > vg.Points(minTitleFont) {
		t.Font.Size -= vg.Points(0.5)
	}
}

// minLegendFont is the smallest font size [fitLegend] shrinks a legend to.
const minLegendFont = 5.5

// fitLegend shrinks l's font (in steps of half a point, down to [minLegendFont] points) and drops
// its padding until it is at most height tall, so that a legend of 30 arms fits beside the data
// instead of running off the canvas. A legend that fits is left as it is.
func fitLegend(l *plot.Legend, height vg.Length) {
	tall := func() bool { return l.Rectangle(draw.Canvas{}).Size().Y > height }
	if !tall() {
		return
	}
	l.Padding = 0
	for tall() && l.TextStyle.Font.Size > vg.Points(minLegendFont) {
		l.TextStyle.Font.Size -= vg.Points(0.5)
	}
}

// palette holds the line colours, in the order arms (or groups of bars) get them: 20
// qualitative colours, so that up to 20 series differ by colour. The first seven are the
// Okabe–Ito colours, which stay distinct for colour-blind readers; the other thirteen are from
// Sasha Trubetskoy's list of 20 distinct colours, leaving out those close to the first seven.
var palette = []color.NRGBA{
	{0x00, 0x72, 0xB2, 0xFF}, // blue
	{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xFF}, // orange
	{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	{0x00, 0x00, 0x00, 0xFF}, // black
	{0xE6, 0x19, 0x4B, 0xFF}, // red
	{0x3C, 0xB4, 0x4B, 0xFF}, // green
	{0x91, 0x1E, 0xB4, 0xFF}, // purple
	{0x9A, 0x63, 0x24, 0xFF}, // brown
	{0x00, 0x00, 0x75, 0xFF}, // navy
	{0xF0, 0x32, 0xE6, 0xFF}, // magenta
	{0x80, 0x80, 0x00, 0xFF}, // olive
	{0x80, 0x00, 0x00, 0xFF}, // maroon
	{0xA9, 0xA9, 0xA9, 0xFF}, // grey
	{0xBF, 0xEF, 0x45, 0xFF}, // lime
	{0x46, 0x99, 0x90, 0xFF}, // teal
	{0xFF, 0xD8, 0xB1, 0xFF}, // apricot
	{0xDC, 0xBE, 0xFF, 0xFF}, // lavender
}

// ink is the colour the grid and neutral keys are mixed from.
var ink = color.NRGBA{0x00, 0x00, 0x00, 0xFF}

// colorOf returns the colour of the i-th arm.
func colorOf(i int) color.NRGBA { return palette[i%len(palette)] }

// glyphs holds the point shapes of the arms: the first len(palette) arms get circles, the next
// squares, and so on, so that up to len(palette)*len(glyphs) (120) arms differ in colour or
// shape. The ring is kept for divergence markers.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{},
	draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// dashes holds the line patterns of the arms beside their shapes: solid for the first
// len(palette) arms, then dashed, dotted and dash-dotted, so that arms sharing a colour differ
// in line too.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)},
}

// armStyle returns the line and point style of the i-th arm in display order.
func armStyle(i int) (draw.LineStyle, draw.GlyphStyle) {
	col := colorOf(i)
	round := i / len(palette)
	return draw.LineStyle{Color: col, Width: vg.Points(1.5), Dashes: dashes[round%len(dashes)]},
		draw.GlyphStyle{Color: col, Radius: vg.Points(2), Shape: glyphs[round%len(glyphs)]}
}

// lighter mixes c with white, keeping frac of c.
func lighter(c color.NRGBA, frac float64) color.NRGBA {
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v)*frac + 255*(1-frac))) }
	return color.NRGBA{mix(c.R), mix(c.G), mix(c.B), 0xFF}
}

// integerTicks marks whole numbers only, with a step of 1, 2 or 5 times a power of ten chosen
// so that there are at most about 10 labelled ticks.
type integerTicks struct{}

// Ticks implements plot.Ticker.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	step := 1.0
	for i := 0; span/step > 10; i++ {
		step *= []float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50, …
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f", v+0)}) // v+0: -0 is 0
	}
	return ticks
}

// percentTicks marks 0, 20, …, 100, with unlabelled minor ticks every 10.
var percentTicks = plot.ConstantTicks{
	{Value: 0, Label: "0"}, {Value: 10}, {Value: 20, Label: "20"}, {Value: 30},
	{Value: 40, Label: "40"}, {Value: 50}, {Value: 60, Label: "60"}, {Value: 70},
	{Value: 80, Label: "80"}, {Value: 90}, {Value: 100, Label: "100"},
}

// siTicks places ticks as plot.DefaultTicks does and labels them with an SI suffix: 0, 500,
// 1.5k, 20k, 1.2M. It suits token counts.
type siTicks struct{}

// Ticks implements plot.Ticker.
func (siTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = siLabel(ticks[i].Value)
		}
	}
	return ticks
}

// siLabel formats v with at most three significant digits and a k, M or G suffix.
func siLabel(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.div {
			return strconv.FormatFloat(roundSig(v/u.div, 3), 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(roundSig(v, 3), 'f', -1, 64)
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow10(n - 1 - int(math.Floor(math.Log10(math.Abs(v)))))
	return math.Round(v*scale) / scale
}

// useSans sets every text of p in Liberation Sans instead of gonum's default serif face. The
// font ships with gonum (no system fonts needed).
func useSans(p *plot.Plot) {
	for _, f := range []*font.Font{
		&p.Title.TextStyle.Font, &p.Legend.TextStyle.Font,
		&p.X.Label.TextStyle.Font, &p.X.Tick.Label.Font,
		&p.Y.Label.TextStyle.Font, &p.Y.Tick.Label.Font,
	} {
		f.Variant = "Sans"
	}
}
