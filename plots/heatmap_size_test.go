package plots

import (
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// At RatioHeatMapSize a heat map whose first column has a long name, longer than the arms' (a
// setup named by backend and model, with non-ASCII letters), keeps its cells about 52 points
// wide: the size has room for how far that slanted name reaches left of the cells.
func TestRatioHeatMapSizeLongColumnName(t *testing.T) {
	t.Parallel()
	long := "setup A llamacpp deepseek-r1-distill-qwen-32b-ünïcødé: compaction-in-loop"
	cells := []Cell{{Arm: "spec", Scenario: long, Ratio: 1}, {Arm: "no-dedupe", Scenario: long, Ratio: 2},
		{Arm: "spec", Scenario: "setup B ollama: x", Ratio: 1}, {Arm: "no-dedupe", Scenario: "setup B ollama: x", Ratio: 0.5}}
	p, err := RatioHeatMap("title", cells)
	if err != nil {
		t.Fatal(err)
	}
	w, h := RatioHeatMapSize(cells)
	c := draw.New(vgimg.New(w, h))
	// The data area as Write draws it: the legend (the colour scale) in a column right of it.
	if lw := p.Legend.Rectangle(c).Size().X; lw > 0 {
		c = draw.Crop(c, 0, -(lw + 2*legendGap), 0, 0)
	}
	if got, want := p.DataCanvas(c).Size().X, vg.Points(2*52*0.9); got < want {
		t.Errorf("at %v × %v the two columns are %v wide, want at least %v", w, h, got, want)
	}
}
