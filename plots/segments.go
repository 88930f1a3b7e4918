package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// segmentKinds are the kinds of prompt segment the re-read split of a request names
// ([metrics.Sample].RereadSystemTokens and the rest), in the order [PromptSegments] stacks them,
// with their colours: the Okabe–Ito set, which stays distinct for colour-blind readers.
var segmentKinds = []struct {
	name  string
	color color.NRGBA
	of    func(*metrics.Sample) *int64
}{
	{"system", color.NRGBA{0xD5, 0x5E, 0x00, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadSystemTokens }},
	{"tools", color.NRGBA{0xE6, 0x9F, 0x00, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadToolsTokens }},
	{"message", color.NRGBA{0x00, 0x72, 0xB2, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadMessageTokens }},
	{"tool result", color.NRGBA{0x00, 0x9E, 0x73, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadToolResultTokens }},
	{"reasoning", color.NRGBA{0xCC, 0x79, 0xA7, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadReasoningTokens }},
	{"note", color.NRGBA{0x56, 0xB4, 0xE9, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadNoteTokens }},
	{"other", color.NRGBA{0xF0, 0xE4, 0x42, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadOtherTokens }},
	{"unattributed", color.NRGBA{0x33, 0x33, 0x33, 0xFF}, func(s *metrics.Sample) *int64 { return s.RereadUnattributedTokens }},
}

// reusedColor is the part of a prompt the server reused from its KV cache.
var reusedColor = color.NRGBA{0xD9, 0xD9, 0xD9, 0xFF}

// PromptSegments builds the chart "where each request's prompt was read again" for one
// scenario: one panel per arm (in [metrics.SortArms] order), one bar per request, as tall as
// its prompt: at the bottom in grey the cached tokens the server reused from its KV cache (the
// prefix up to where it stopped matching), above it the re-read tokens stacked by the kind of
// segment they lie in (system, tools, message, tool result, reasoning, note, other,
// unattributed: [metrics.Sample]'s re-read split, whose kinds are stacked in that order, not in
// the order they appear in the prompt), and a black tick at the first token that differed from
// the cache ([metrics.Sample].DivergenceToken). With several repetitions each part is the mean
// over those that know the whole bar. Every panel has the same axes. A request whose cached
// tokens or split is unknown has no bar; it returns [ErrNoSamples] when no request has one.
func PromptSegments(scenario string, samples []metrics.Sample) (*plot.Plot, error) {
	return PromptSegmentsRows(scenario, metrics.RowsOf(samples))
}

// PromptSegmentsRows is [PromptSegments] of the rows of a [metrics.Rows].
func PromptSegmentsRows(scenario string, rows *metrics.Rows) (*plot.Plot, error) {
	seqs := sequences(scenario, rows)
	arms, panelsOf, maxX, maxY := segmentBars(seqs)
	if len(arms) == 0 {
		return nil, fmt.Errorf("plot prompt segments of scenario %q: %w", scenario, ErrNoSamples)
	}
	p := plot.New()
	p.Title.Text = simTitle(seqs, fmt.Sprintf("%s: where each request's prompt was read again, one panel per arm", scenario), "the lab's cache model, not a server")
	useSans(p)
	p.HideAxes()
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(14)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	events := addSessionEvents(plot.New(), seqs)
	g := &panels{cols: min(len(arms), panelColumns)}
	for _, arm := range arms {
		sub := plot.New()
		useSans(sub)
		sub.Title.Text = arm
		sub.Title.TextStyle.Font.Size = vg.Points(9)
		sub.Title.Padding = vg.Points(2)
		for _, t := range []*draw.TextStyle{&sub.X.Tick.Label, &sub.Y.Tick.Label} {
			t.Font.Size = vg.Points(7)
		}
		sub.X.Tick.Marker = integerTicks{}
		sub.Y.Tick.Marker = siTicks{}
		if events != nil {
			quiet := *events
			quiet.noLabels = true
			sub.Add(&quiet)
		}
		sub.Add(panelsOf[arm])
		sub.X.Min, sub.X.Max = -0.5, float64(maxX)+0.5
		sub.Y.Min, sub.Y.Max = 0, maxY
		g.plots = append(g.plots, sub)
	}
	p.Add(g)
	p.Legend.Add("reused (cached)", swatch{reusedColor})
	for _, k := range segmentKinds {
		p.Legend.Add("re-read: "+k.name, swatch{k.color})
	}
	p.Legend.Add("first divergence", keyLine(divergenceTick()))
	events.addLegend(p)
	return p, nil
}

// segmentBars returns the bars of a [PromptSegments] chart: the arms that have one, in
// [metrics.SortArms] order, each arm's bars, the last request index and the tallest bar (at
// least 1).
func segmentBars(seqs map[repKey]reqs) (arms []string, panelsOf map[string]*stackedBars, maxX int32, maxY float64) {
	type acc struct {
		parts []float64 // reused, then each kind
		div   float64
		n     int
		ndiv  int
	}
	byArm := map[string]map[int32]*acc{}
	var b metrics.SampleBuf
	for k, q := range seqs {
		for j := range q.len() {
			s := q.at(j, &b)
			if !wholeBar(s) {
				continue
			}
			parts := []float64{float64(*s.CachedTokens)}
			for _, kind := range segmentKinds {
				parts = append(parts, float64(*kind.of(s)))
			}
			m := byArm[k.arm]
			if m == nil {
				m = map[int32]*acc{}
				byArm[k.arm] = m
			}
			a := m[s.RequestIndex]
			if a == nil {
				a = &acc{parts: make([]float64, len(parts))}
				m[s.RequestIndex] = a
			}
			for i, v := range parts {
				a.parts[i] += v
			}
			a.n++
			if s.DivergenceToken != nil {
				a.div += float64(*s.DivergenceToken)
				a.ndiv++
			}
		}
	}
	arms = make([]string, 0, len(byArm))
	for arm := range byArm {
		arms = append(arms, arm)
	}
	metrics.SortArms(arms)
	maxY = 1.0
	panelsOf = map[string]*stackedBars{}
	for _, arm := range arms {
		sb := &stackedBars{}
		for x, a := range byArm[arm] {
			bar := stackedBar{x: float64(x), parts: make([]float64, len(a.parts)), div: math.NaN()}
			total := 0.0
			for i, v := range a.parts {
				bar.parts[i] = v / float64(a.n)
				total += bar.parts[i]
			}
			if a.ndiv > 0 {
				bar.div = a.div / float64(a.ndiv)
			}
			maxY = math.Max(maxY, total)
			maxX = max(maxX, x)
			sb.bars = append(sb.bars, bar)
		}
		slices.SortFunc(sb.bars, func(a, b stackedBar) int { return cmp.Compare(a.x, b.x) })
		panelsOf[arm] = sb
	}
	return arms, panelsOf, maxX, maxY
}

// PromptSegmentsSize returns the size at which [PromptSegmentsRows] of scenario reads well: a
// panel per arm that has a bar (an arm whose cached tokens or re-read split are never known
// has no panel, and takes no room), [panelColumns] per row.
func PromptSegmentsSize(scenario string, rows *metrics.Rows) (width, height vg.Length) {
	arms := map[string]bool{}
	for _, s := range rows.All() {
		if s.Scenario == scenario && s.PromptTokens > 0 && wholeBar(s) {
			arms[s.Arm] = true
		}
	}
	return panelsSize(len(arms))
}

// wholeBar reports whether request s has a bar in a [PromptSegments] chart: its cached tokens
// and every kind of its re-read split are known.
func wholeBar(s *metrics.Sample) bool {
	if s.CachedTokens == nil {
		return false
	}
	for _, kind := range segmentKinds {
		if kind.of(s) == nil {
			return false
		}
	}
	return true
}

// panelsSize returns the size of a small-multiples chart of n panels: [panelColumns] per row,
// larger panels when there are at most two.
func panelsSize(n int) (width, height vg.Length) {
	n = max(n, 1)
	cols, rows := panelGrid(n)
	w, h := panelWidth, panelHeight
	if n <= 2 {
		w, h = 3.4*vg.Inch, 2.4*vg.Inch
	}
	return vg.Length(cols)*w + panelsLegend, vg.Length(rows)*h + panelsTitle
}

func divergenceTick() draw.LineStyle { return draw.LineStyle{Color: ink, Width: vg.Points(1.4)} }

// stackedBar is one request's bar: its parts from the bottom, and its divergence token (NaN
// when none).
type stackedBar struct {
	x     float64
	parts []float64 // reused, then each of segmentKinds
	div   float64
}

// stackedBars draws one panel's bars of a [PromptSegments] chart.
type stackedBars struct {
	bars []stackedBar
}

// Plot implements plot.Plotter.
func (s *stackedBars) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for _, b := range s.bars {
		x0, x1 := tx(b.x-0.4), tx(b.x+0.4)
		y := 0.0
		for i, v := range b.parts {
			if v <= 0 {
				continue
			}
			col := reusedColor
			if i > 0 {
				col = segmentKinds[i-1].color
			}
			y0, y1 := ty(y), ty(y+v)
			c.FillPolygon(col, c.ClipPolygonY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}))
			y += v
		}
		if !math.IsNaN(b.div) {
			yd := ty(b.div)
			c.StrokeLine2(divergenceTick(), x0-vg.Points(1), yd, x1+vg.Points(1), yd)
		}
	}
}
