package plots

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/plot/plotter"

	"lab/metrics"
)

// A chart of at most ThinAbove requests is drawn point for point; above, each column keeps its
// first and last point, its extremes of mean, minimum and maximum, and every kept request, and
// each glyph column its extremes of mean and every kept request.
func TestThinningKeepsEnvelope(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var pts []point
	for x := range int32(30_000) {
		if x >= 10_000 && x < 10_500 {
			continue // a gap: two runs
		}
		m := rng.Float64() * 100
		pts = append(pts, point{x: x, mean: m, lo: m - rng.Float64()*10, hi: m + rng.Float64()*10, n: 3})
	}
	if th := thinningFor(ThinAbove-1, nil); th.on() || len(th.points(pts)) != len(pts) {
		t.Fatalf("a chart of %d requests is thinned", ThinAbove)
	}
	keep := map[int32]bool{7: true, 8: true, 9: true, 12_345: true, 29_998: true}
	th := thinningFor(pts[len(pts)-1].x, keep)
	if want := int32((30_000 + ThinColumns - 1) / ThinColumns); th.width != want {
		t.Fatalf("column width %d; want %d", th.width, want)
	}
	for _, run := range runs(pts) {
		got := th.points(run)
		if got[0] != run[0] || got[len(got)-1] != run[len(run)-1] {
			t.Errorf("run from %d: first or last point dropped", run[0].x)
		}
		if !slices.IsSortedFunc(got, func(a, b point) int { return int(a.x - b.x) }) {
			t.Errorf("run from %d: points out of order", run[0].x)
		}
		if limit := 6*(len(run)/int(th.width)+2) + len(keep); len(got) > limit {
			t.Errorf("run from %d: %d of %d points kept; want at most %d", run[0].x, len(got), len(run), limit)
		}
		type ext struct{ hiMean, loMean, hi, lo float64 }
		extremes := func(ps []point) map[int32]ext {
			out := map[int32]ext{}
			for _, p := range ps {
				c := p.x / th.width
				e, ok := out[c]
				if !ok {
					e = ext{p.mean, p.mean, p.hi, p.lo}
				}
				e.hiMean, e.loMean, e.hi, e.lo = max(e.hiMean, p.mean), min(e.loMean, p.mean), max(e.hi, p.hi), min(e.lo, p.lo)
				out[c] = e
			}
			return out
		}
		all, kept := extremes(run), extremes(got)
		for c, e := range all {
			if kept[c] != e {
				t.Errorf("column %d: extremes %+v kept; want %+v", c, kept[c], e)
			}
		}
		glyphs := th.glyphs(got)
		if limit := 2*(len(run)/int(th.glyph)+2) + len(keep); len(glyphs) > limit {
			t.Errorf("run from %d: %d glyphs of %d points; want at most %d", run[0].x, len(glyphs), len(run), limit)
		}
		type span struct{ hi, lo float64 }
		spans := func(ps []point) map[int32]span {
			out := map[int32]span{}
			for _, p := range ps {
				c := p.x / th.glyph
				e, ok := out[c]
				if !ok {
					e = span{p.mean, p.mean}
				}
				out[c] = span{max(e.hi, p.mean), min(e.lo, p.mean)}
			}
			return out
		}
		allSpans, glyphSpans := spans(run), spans(glyphs)
		for c, e := range allSpans {
			if glyphSpans[c] != e {
				t.Errorf("glyph column %d: means %+v drawn; want %+v", c, glyphSpans[c], e)
			}
		}
		for x := range keep {
			in := slices.ContainsFunc(run, func(p point) bool { return p.x == x })
			if in != slices.ContainsFunc(got, func(p point) bool { return p.x == x }) {
				t.Errorf("kept request %d dropped", x)
			}
			if in != slices.ContainsFunc(glyphs, func(p point) bool { return p.x == x }) {
				t.Errorf("kept request %d has no glyph", x)
			}
		}
	}
}

// A thinned arm's line and band are drawn in pieces of at most lineChunk points.
func TestThinnedArmLayerPieces(t *testing.T) {
	t.Parallel()
	var pts []point
	for x := range int32(10_000) {
		pts = append(pts, point{x: x, mean: float64(x % 16), lo: float64(x%16) - 1, hi: float64(x%16) + 1, n: 2})
	}
	layer, band, lines, err := armLayer("spec", 0, pts, thinningFor(9_999, nil))
	if err != nil || !band || len(lines) != 1 {
		t.Fatalf("armLayer: band %v, %d lines, %v; want a band and one line", band, len(lines), err)
	}
	strokes, fills := 0, 0
	for _, pl := range layer {
		switch v := pl.(type) {
		case *plotter.Line:
			strokes++
			if len(v.XYs) > lineChunk {
				t.Errorf("a stroke of %d points; want at most %d", len(v.XYs), lineChunk)
			}
		case *plotter.Polygon:
			fills++
			for _, ring := range v.XYs {
				if len(ring) > 2*lineChunk {
					t.Errorf("a band piece of %d vertices; want at most %d", len(ring), 2*lineChunk)
				}
			}
		}
	}
	if strokes < 2 || fills < 2 {
		t.Errorf("%d strokes and %d band pieces; want the line and the band in pieces", strokes, fills)
	}
}

// A thinned line is drawn in pieces of at most lineChunk points that share a segment, so that
// together they draw every point and every segment once more at most.
func TestThinningChunks(t *testing.T) {
	t.Parallel()
	th := thinning{width: 2}
	for _, n := range []int{2, lineChunk, lineChunk + 1, 1000} {
		xys := make(plotter.XYs, n)
		for i := range xys {
			xys[i].X = float64(i)
		}
		pieces := th.chunks(xys)
		var joined plotter.XYs
		for i, p := range pieces {
			if len(p) > lineChunk || len(p) < 2 {
				t.Errorf("n=%d: piece %d has %d points", n, i, len(p))
			}
			if i > 0 {
				prev := pieces[i-1]
				if p[0] != prev[len(prev)-2] || p[1] != prev[len(prev)-1] {
					t.Errorf("n=%d: piece %d does not start on the last segment of piece %d", n, i, i-1)
				}
				p = p[2:]
			}
			joined = append(joined, p...)
		}
		if !slices.Equal(joined, xys) {
			t.Errorf("n=%d: the pieces draw %d points; want the %d of the line in order", n, len(joined), n)
		}
		bands := th.bandChunks(make([]point, n))
		total := 0
		for i, b := range bands {
			if len(b) > lineChunk {
				t.Errorf("n=%d: band piece %d has %d points", n, i, len(b))
			}
			total += len(b)
		}
		if total-(len(bands)-1) != n {
			t.Errorf("n=%d: band pieces cover %d points; want %d", n, total-(len(bands)-1), n)
		}
	}
}

// A cached-share chart of 20,000 requests is thinned, yet marks every divergence, and each marker
// sits on a point its line draws.
func TestThinnedCachedShareKeepsDivergences(t *testing.T) {
	t.Parallel()
	const n = 20_000
	var samples []metrics.Sample
	divergent := 0
	for rep := int32(1); rep <= 2; rep++ {
		for i := range int32(n) {
			prompt := int64(1000 + i)
			expected, seg := prompt-10, ""
			if i%37 == 5 {
				expected, seg = 0, "system"
				if rep == 1 {
					divergent++
				}
			}
			samples = append(samples, metrics.Sample{Scenario: "s", Arm: metrics.SpecArm, Repetition: rep, RequestIndex: i,
				PromptTokens: prompt, ExpectedCachedTokens: new(expected), CachedTokens: new(max(0, expected-int64(rep))),
				DivergenceSegment: seg})
		}
	}
	_, marks, err := cachedShare("s", metrics.RowsOf(samples))
	if err != nil {
		t.Fatal(err)
	}
	if marks == nil || len(marks.marks) != divergent {
		t.Fatalf("divergence markers: %v; want %d", marks, divergent)
	}
	drawn := 0
	for _, l := range marks.lines {
		drawn += len(l)
	}
	if drawn >= n {
		t.Errorf("the lines draw %d points of 2 lines × %d requests: not thinned", drawn, n)
	}
	onLine := map[plotter.XY]bool{}
	for _, l := range marks.lines {
		for _, xy := range l {
			onLine[xy] = true
		}
	}
	for _, m := range marks.marks {
		if !onLine[m.XY] {
			t.Errorf("the marker at request %v (%.1f %%) is on no drawn point", m.X, m.Y)
		}
	}
}
