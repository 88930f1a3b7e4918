package plots

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The heat map has a row per arm (spec at the top), a column per scenario, each ratio printed in
// its cell, blue below spec and red above on a log scale, and its scale in the legend.
func TestRatioHeatMap(t *testing.T) {
	t.Parallel()
	cells := []Cell{
		{Arm: "spec", Scenario: "midnight", Ratio: 1},
		{Arm: "plain", Scenario: "midnight", Ratio: 0.5},
		{Arm: "date-in-system-prompt", Scenario: "midnight", Ratio: 2.26},
		{Arm: "spec", Scenario: "edit-loop", Ratio: 1},
		{Arm: "plain", Scenario: "edit-loop", Ratio: 0.46},
	}
	p, err := RatioHeatMap("re-read relative to spec", cells)
	if err != nil {
		t.Fatal(err)
	}
	ys := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)
	top := ys[0]
	for _, y := range ys {
		if y.Value > top.Value {
			top = y
		}
	}
	if len(ys) != 3 || top.Label != "spec" {
		t.Errorf("rows %v: want 3 arms with spec at the top", ys)
	}
	if xs := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max); len(xs) != 2 || xs[0].Label != "midnight" || xs[1].Label != "edit-loop" {
		t.Errorf("columns %v: want midnight, edit-loop in order of appearance", xs)
	}
	var svg bytes.Buffer
	w, h := RatioHeatMapSize(cells)
	if err := Write(&svg, p, "svg", w, h); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"0.50×", "2.26×", "0.46×", "1.00×", "4.00×", "0.25×"} {
		if !strings.Contains(svg.String(), s) {
			t.Errorf("svg lacks %q", s)
		}
	}
	if got := strings.Count(svg.String(), "1.00×"); got != 3 {
		t.Errorf("1.00× printed %d times, want 3 (two spec cells and the legend)", got)
	}
	if w2, _ := RatioHeatMapSize(append(cells, Cell{Arm: "spec", Scenario: "third", Ratio: 1})); w2 <= w {
		t.Errorf("a third scenario did not widen the chart: %v then %v", w, w2)
	}
	// The colour scale: white at 1, blue below, red above, symmetric on the log scale, saturated
	// beyond 4× and ¼×.
	if c := heatColor(1); c != heatColors[5] {
		t.Errorf("colour at 1: %v, want the scheme's white %v", c, heatColors[5])
	}
	if c := heatColor(0.5); !(c.B > c.R) {
		t.Errorf("colour at 0.5: %v, want blue", c)
	}
	if c := heatColor(2); !(c.R > c.B) {
		t.Errorf("colour at 2: %v, want red", c)
	}
	if heatColor(4) != heatColors[10] || heatColor(100) != heatColors[10] || heatColor(0.25) != heatColors[0] || heatColor(0) != heatColors[0] {
		t.Error("the scale does not saturate at 4× and ¼×")
	}
	a, b := heatColor(2), heatColor(0.5)
	if int(a.R)-int(heatColors[5].R) == 0 || int(b.B)-int(heatColors[5].B) == 0 {
		t.Error("2× or 0.5× drawn as white")
	}
	if p.Legend.Top != true {
		t.Error("legend not at the top")
	}
}

func TestRatioHeatMapErrors(t *testing.T) {
	t.Parallel()
	if _, err := RatioHeatMap("x", nil); !errors.Is(err, ErrNoSamples) {
		t.Errorf("no cells: %v, want ErrNoSamples", err)
	}
	for name, cells := range map[string][]Cell{
		"ratio NaN":   {{Arm: "spec", Scenario: "s", Ratio: math.NaN()}},
		"ratio -1":    {{Arm: "plain", Scenario: "s", Ratio: -1}},
		"given twice": {{Arm: "spec", Scenario: "s", Ratio: 1}, {Arm: "spec", Scenario: "s", Ratio: 1}},
	} {
		if _, err := RatioHeatMap("x", cells); err == nil || !strings.Contains(err.Error(), "cell") {
			t.Errorf("%s: error %v, want one naming the cell", name, err)
		}
	}
}

// A long scenario name slants left of its column: the data area leaves room for it, so that it
// stays inside the canvas even when the arms' names are short.
func TestRatioHeatMapLongNameInsideCanvas(t *testing.T) {
	t.Parallel()
	long := "reasoning-tool-loops-of-a-very-long-name"
	cells := []Cell{{Arm: "spec", Scenario: long, Ratio: 1}, {Arm: "a", Scenario: long, Ratio: 2}, {Arm: "spec", Scenario: "b", Ratio: 1}}
	p, err := RatioHeatMap("x", cells)
	if err != nil {
		t.Fatal(err)
	}
	w, h := RatioHeatMapSize(cells)
	c := draw.New(vgsvg.New(w, h))
	data := p.DataCanvas(c)
	name := p.X.Tick.Label.Rectangle(long)
	if left := data.X(p.X.Norm(0)) + name.Min.X; left < c.Min.X {
		t.Errorf("the first column's name starts at %v, left of the canvas (%v)", left, c.Min.X)
	}
}
