package plots

import (
	"cmp"
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// DivergenceMinLost is the rule for marking a divergence point on the [CachedShare] chart: a
// request is marked when its divergence_segment is not empty and the part of the previous
// request's prompt it could not reuse, PromptTokens(previous) − ExpectedCachedTokens, is at
// least this share of its own prompt (mean over repetitions). A step that only appends to the
// conversation loses nothing; a date rewritten in the system prompt loses nearly everything.
const DivergenceMinLost = 0.05

// MaxDivergenceLabels is the number of divergence labels a [CachedShare] chart shows at most:
// the largest losses first. Markers beyond it (and labels that find no free place) stay
// unlabelled, so that labels never overlap each other, the markers or the legend.
const MaxDivergenceLabels = 12

// CachedShare builds the chart "cached share of the prompt per request" for one scenario.
//
// The x axis is the request index (0-based, per arm: [metrics.Sample].RequestIndex); the y axis
// is cached_tokens / prompt_tokens in percent (0–100). Each arm gets one solid line with points,
// in a stable order, colour and point shape: [metrics.SpecArm] first (drawn on top), then the
// others sorted by name. A lighter dashed line of the same colour shows expected_cached_tokens /
// prompt_tokens, the share a perfect prefix cache would have reused; the gap between the two
// lines is the server's doing. Requests whose expected cached tokens are unknown
// ([metrics.Sample].ExpectedCachedTokens nil: a cloud API shows no rendering) have no expected point and
// no divergence marker. The legend names the arms, the dashed "expected" line and the
// divergence marker.
//
// Divergence points (see [DivergenceMinLost]) get a ring in the arm's colour and a short label
// naming the segment where the prompt first differed from the cache ("system", "reasoning 51");
// arms that diverge at the same request in the same segment share one label ("system, 3 arms"),
// placed near the largest drop. At most [MaxDivergenceLabels] labels are drawn, largest losses
// first, each where it overlaps no other label or marker and crosses the fewest lines.
//
// Samples of other scenarios are ignored. Requests whose cached_tokens are unknown (nil) are
// skipped: the solid line has a gap there, never a fall to 0. Requests with no prompt tokens
// (failed before the server counted them) are skipped in both lines. When a scenario×arm ran
// several repetitions ([metrics.Sample].Repetition), each point is the mean over the repetitions
// that know the value and a light band shows their minimum to maximum. It returns
// [ErrNoSamples] when no sample of the scenario has prompt tokens.
func CachedShare(scenario string, samples []metrics.Sample) (*plot.Plot, error) {
	return CachedShareRows(scenario, metrics.RowsOf(samples))
}

// CachedShareRows is [CachedShare] of the rows of a [metrics.Rows].
func CachedShareRows(scenario string, rows *metrics.Rows) (*plot.Plot, error) {
	p, _, err := cachedShare(scenario, rows)
	return p, err
}

// cachedShare is [CachedShareRows], also returning the divergence markers it added (nil when
// none).
func cachedShare(scenario string, rows *metrics.Rows) (*plot.Plot, *divergenceMarks, error) {
	seqs := sequences(scenario, rows)
	if len(seqs) == 0 {
		return nil, nil, fmt.Errorf("plot cached share of scenario %q: %w", scenario, ErrNoSamples)
	}
	measured := collect(seqs, perSample(func(s *metrics.Sample) (float64, bool) {
		if s.CachedTokens == nil {
			return 0, false
		}
		return 100 * float64(*s.CachedTokens) / float64(s.PromptTokens), true
	}))
	expected := collect(seqs, perSample(func(s *metrics.Sample) (float64, bool) {
		e, ok := metrics.Int64(s.ExpectedCachedTokens)
		return 100 * float64(e) / float64(s.PromptTokens), ok
	}))

	p := newChart(simTitle(seqs, fmt.Sprintf("%s: cached share of the prompt per request", scenario), "the lab's cache model, not a server"),
		"request (0-based)", "cached share of the prompt (%)")
	p.Y.Tick.Marker = percentTicks
	events := addSessionEvents(p, seqs)

	arms := series{}.withArms(seqs).arms() // every arm with prompt tokens, as lineChart orders them
	marks := divergences(seqs, arms, measured, expected)
	maxX := max(measured.maxX(), expected.maxX())
	if len(arms) > MaxArmsOnOneChart {
		events := addSessionEvents(plot.New(), seqs) // added to each panel
		title := fmt.Sprintf("%s: cached share of the prompt per request, one panel per arm", scenario)
		if len(measured[metrics.SpecArm]) > 0 {
			title += " against spec"
		}
		title = simTitle(seqs, title, "the lab's cache model, not a server")
		p, err := cachedSharePanels(title, arms, measured.withArms(seqs), expected, marks, events, maxX)
		return p, nil, err
	}
	keep := map[int32]bool{} // a thinned chart keeps every divergence point on its lines
	for _, m := range marks.marks {
		keep[int32(m.X)] = true
	}
	th := thinningFor(maxX, keep)
	expDashes := []vg.Length{vg.Points(5), vg.Points(3)}
	var lines []plotter.XYs
	for i, arm := range slices.Backward(arms) { // spec's expected line on top
		for _, run := range runs(expected[arm]) {
			run = th.points(run)
			xys := make(plotter.XYs, len(run))
			for j, pt := range run {
				xys[j] = plotter.XY{X: float64(pt.x), Y: pt.mean}
			}
			for _, piece := range th.chunks(xys) {
				l, err := plotter.NewLine(piece)
				if err != nil {
					return nil, nil, fmt.Errorf("plot expected share of arm %q: %w", arm, err)
				}
				l.Color = lighter(colorOf(i), 0.55)
				l.Width = vg.Points(1.25)
				l.Dashes = expDashes
				p.Add(l)
			}
			lines = append(lines, xys)
		}
	}
	drawn, _, err := thinLineChart(p, measured.withArms(seqs), th)
	if err != nil {
		return nil, nil, err
	}
	lines = append(lines, drawn...)
	p.X.Min, p.X.Max = 0, float64(max(maxX, 1))
	if len(expected) > 0 {
		p.Legend.Add("expected", keyLine(draw.LineStyle{Color: grey(0.55), Width: vg.Points(1.25), Dashes: expDashes}))
	}
	events.addLegend(p)

	if len(marks.marks) == 0 {
		marks = nil
	} else {
		marks.lines = lines
		marks.hovers = &hoverSet{}
		attachHovers(p, marks.hovers)
		p.Add(marks)
		p.Legend.Add(fmt.Sprintf("diverged: segment (≥ %.0f %% lost)", 100*DivergenceMinLost), divergenceKey{})
	}
	p.Y.Min, p.Y.Max = 0, 100 // fixed, so charts of different runs compare at a glance
	return p, marks, nil
}

// divergences finds the divergence points of every arm (see [DivergenceMinLost]) and groups
// them into labels.
func divergences(seqs map[repKey]reqs, arms []string, measured, expected series) *divergenceMarks {
	type acc struct {
		lost     stat
		segments map[string]int
		// The row of the lowest repetition, for the ring's hover text.
		tipRows *metrics.Rows
		tipIdx  int
		tipRep  int32
	}
	byArm := map[string]map[int32]*acc{}
	for k, seq := range seqs {
		var b metrics.SampleBuf
		for i := 1; i < seq.len(); i++ {
			s := seq.at(i, &b)
			e, ok := metrics.Int64(s.ExpectedCachedTokens)
			if !ok {
				continue // no divergence was computed
			}
			lost := max(0, float64(seq.rows.PromptTokens(seq.idx[i-1])-e)) / float64(s.PromptTokens)
			m := byArm[k.arm]
			if m == nil {
				m = map[int32]*acc{}
				byArm[k.arm] = m
			}
			a := m[s.RequestIndex]
			if a == nil {
				a = &acc{segments: map[string]int{}}
				m[s.RequestIndex] = a
			}
			a.lost.add(lost)
			if a.tipRows == nil || k.rep < a.tipRep {
				a.tipRows, a.tipIdx, a.tipRep = seq.rows, seq.idx[i], k.rep
			}
			if s.DivergenceSegment != "" {
				a.segments[s.DivergenceSegment]++
			}
		}
	}
	at := func(s series, arm string, x int32) (float64, bool) {
		i, ok := slices.BinarySearchFunc(s[arm], x, func(p point, x int32) int { return cmp.Compare(p.x, x) })
		if !ok {
			return 0, false
		}
		return s[arm][i].mean, true
	}

	type group struct {
		x       int32
		segment string
		lost    float64 // the largest mean lost share among its arms
		anchor  plotter.XY
		arms    int
	}
	groups := map[[2]string]*group{}
	dm := &divergenceMarks{}
	for i, arm := range arms {
		for x, a := range byArm[arm] {
			if len(a.segments) == 0 || a.lost.mean() < DivergenceMinLost {
				continue
			}
			// The most frequent segment over the repetitions; ties go to the first by name.
			segs := make([]string, 0, len(a.segments))
			for seg := range a.segments {
				segs = append(segs, seg)
			}
			slices.SortFunc(segs, func(p, q string) int {
				return cmp.Or(cmp.Compare(a.segments[q], a.segments[p]), cmp.Compare(p, q))
			})
			y, ok := at(measured, arm, x)
			if !ok {
				y, _ = at(expected, arm, x)
			}
			pt := plotter.XY{X: float64(x), Y: y}
			row := a.tipRows.At(a.tipIdx)
			dm.marks = append(dm.marks, mark{XY: pt, color: colorOf(i), arm: i, tip: divergenceTip(arm, &row, y, a.lost.n)})
			k := [2]string{fmt.Sprint(x), segs[0]}
			g := groups[k]
			if g == nil {
				g = &group{x: x, segment: segs[0]}
				groups[k] = g
			}
			g.arms++
			if l := a.lost.mean(); l > g.lost || (l == g.lost && y < g.anchor.Y) {
				g.lost, g.anchor = l, pt
			}
		}
	}
	slices.SortFunc(dm.marks, func(a, b mark) int {
		return cmp.Or(cmp.Compare(a.X, b.X), cmp.Compare(a.arm, b.arm))
	})
	ordered := make([]*group, 0, len(groups))
	for _, g := range groups {
		ordered = append(ordered, g)
	}
	slices.SortFunc(ordered, func(a, b *group) int {
		return cmp.Or(cmp.Compare(b.lost, a.lost), cmp.Compare(a.x, b.x), cmp.Compare(a.segment, b.segment))
	})
	for _, g := range ordered[:min(len(ordered), MaxDivergenceLabels)] {
		text := g.segment
		if g.arms > 1 {
			text = fmt.Sprintf("%s, %d arms", g.segment, g.arms)
		}
		dm.labels = append(dm.labels, label{text: text, anchor: g.anchor})
	}
	return dm
}
