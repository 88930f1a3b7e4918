package plots

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"lab/metrics"
)

// sessionEvents marks, on a per-request chart, where the session's user turns begin (a thin
// grey line before the turn's first request, labelled with its number at the top), where it
// compacted (a dashed line through each [metrics.KindCompaction] request) and where the
// scenario changed something ([metrics.Sample].ScenarioEvent: its clock crossed midnight, its
// permission mode switched; a dotted line before the request, labelled with the event, joined
// to the turn's number when the turn starts there), as the reference
// sequence has them: the spec arm's first repetition, or the first arm's when there is no spec
// arm. Arms whose requests shift against it (one that compacts in a request of its own) are
// drawn against the same marks.
type sessionEvents struct {
	turns      []turnStart
	compaction []float64
	scenario   []scenarioMark
	label      draw.TextStyle
	noLabels   bool // the lines without the turn numbers
}

// scenarioMark is a scenario event before a request: x as [turnStart]'s, its label.
type scenarioMark struct {
	x     float64
	label string
}

type turnStart struct {
	x    float64 // between the last request of the turn before and the first of this one
	turn int32
}

// maxTurnLabels is the number of turn numbers a chart prints at most: beyond it every n-th
// turn is labelled, so that the numbers never run into each other.
const maxTurnLabels = 12

// addSessionEvents adds the session's events of seqs to p (before its lines, so they are drawn
// beneath them) and returns what it added (nil for none), whose legend entries
// [sessionEvents.addLegend] adds after the arms'.
func addSessionEvents(p *plot.Plot, seqs map[repKey]reqs) *sessionEvents {
	if len(seqs) == 0 {
		return nil
	}
	keys := make([]repKey, 0, len(seqs))
	for k := range seqs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b repKey) int {
		if c := metrics.CompareArms(a.arm, b.arm); c != 0 {
			return c
		}
		return int(a.rep - b.rep)
	})
	ref := seqs[keys[0]]
	e := &sessionEvents{label: p.X.Tick.Label}
	e.label.Font.Size = vg.Points(7)
	e.label.Color = grey(0.55)
	e.label.XAlign, e.label.YAlign = draw.XCenter, draw.YBottom
	var b metrics.SampleBuf
	last := int32(0)
	for j := range ref.len() {
		s := ref.at(j, &b)
		if j > 0 && s.Turn != last && s.Turn > 0 {
			e.turns = append(e.turns, turnStart{x: float64(ref.req(j)) - 0.5, turn: s.Turn})
		}
		last = s.Turn
		if s.Kind == metrics.KindCompaction {
			e.compaction = append(e.compaction, float64(ref.req(j)))
		}
		if s.ScenarioEvent != "" {
			e.scenario = append(e.scenario, scenarioMark{x: float64(ref.req(j)) - 0.5, label: s.ScenarioEvent})
		}
	}
	if len(e.turns) == 0 && len(e.compaction) == 0 && len(e.scenario) == 0 {
		return nil
	}
	if len(e.turns) > 0 || len(e.scenario) > 0 {
		// The turn numbers go above the data area, in a band between it and the title, so
		// that they never cover a line or a point.
		p.Title.Padding += e.label.Rectangle("t0").Size().Y + vg.Points(2)
	}
	p.Add(e)
	return e
}

// addLegend adds the legend entries of e's marks to p, after the arms'; nothing for nil.
func (e *sessionEvents) addLegend(p *plot.Plot) {
	if e == nil {
		return
	}
	if len(e.turns) > 0 {
		p.Legend.Add("user turn starts", keyLine(turnStyle()))
	}
	if len(e.compaction) > 0 {
		p.Legend.Add("compaction", keyLine(compactionStyle()))
	}
	if len(e.scenario) > 0 {
		p.Legend.Add("scenario event (named at the top)", keyLine(scenarioStyle()))
	}
}

func scenarioStyle() draw.LineStyle {
	return draw.LineStyle{Color: grey(0.25), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(0.8), vg.Points(1.6)}}
}

// markLabel returns the scenario events at x joined, "" for none.
func (e *sessionEvents) markLabel(x float64) string {
	var out []string
	for _, m := range e.scenario {
		if m.x == x {
			out = append(out, m.label)
		}
	}
	return strings.Join(out, ", ")
}

func turnStyle() draw.LineStyle { return draw.LineStyle{Color: grey(0.8), Width: vg.Points(0.75)} }

func compactionStyle() draw.LineStyle {
	return draw.LineStyle{Color: grey(0.45), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
}

// Plot implements plot.Plotter.
func (e *sessionEvents) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	every := 1
	if n := len(e.turns); n > maxTurnLabels {
		every = int(math.Ceil(float64(n) / maxTurnLabels))
	}
	for i, t := range e.turns {
		x := tx(t.x)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		c.StrokeLine2(turnStyle(), x, c.Min.Y, x, c.Max.Y)
		ev := e.markLabel(t.x)
		if !e.noLabels && ((i+1)%every == 0 || ev != "") {
			label := "t" + strconv.Itoa(int(t.turn))
			if ev != "" {
				label += " " + ev
			}
			c.FillText(e.label, vg.Point{X: x, Y: c.Max.Y + vg.Points(1)}, label)
		}
	}
	for _, m := range e.scenario {
		x := tx(m.x)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		c.StrokeLine2(scenarioStyle(), x, c.Min.Y, x, c.Max.Y)
		if !e.noLabels && !slices.ContainsFunc(e.turns, func(t turnStart) bool { return t.x == m.x }) {
			c.FillText(e.label, vg.Point{X: x, Y: c.Max.Y + vg.Points(1)}, e.markLabel(m.x))
		}
	}
	for _, v := range e.compaction {
		x := tx(v)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		c.StrokeLine2(compactionStyle(), x, c.Min.Y, x, c.Max.Y)
	}
}

// simTitle returns title with a note when every sequence of seqs is of the sim backend: its
// figures are the lab's cache model (and, for prefill, its cost model), not a server's.
func simTitle(seqs map[repKey]reqs, title, what string) string {
	if len(seqs) == 0 {
		return title
	}
	var b metrics.SampleBuf
	for _, q := range seqs {
		if q.len() == 0 || q.at(0, &b).Backend != "sim" {
			return title
		}
	}
	return title + " (sim: " + what + ")"
}
