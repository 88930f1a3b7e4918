package plots

import (
	"slices"

	"gonum.org/v1/plot/plotter"
)

// A chart of many requests (a generated run, a session of thousands of steps) is drawn from fewer
// points than it has requests, and its lines and bands in short pieces: the PNG rasteriser
// (github.com/golang/freetype/raster, through gonum's vgimg) spends time in proportion to the
// product of a path's length and the edges it lays on each pixel row, so one line of thousands of
// points that falls and climbs back at every divergence took seconds per chart. Charts of at most
// [ThinAbove] requests (the lab's scenarios' sessions) are drawn as before, point for point.
const (
	// ThinAbove is the span of a chart's x axis, in requests (its largest request index + 1),
	// above which the chart is thinned: the requests are cut into columns of
	// ceil(span / [ThinColumns]) consecutive indices, and each run of consecutive requests of an
	// arm keeps, in each column, its first and last point, the points of the highest and lowest
	// mean, the highest maximum and the lowest minimum over repetitions (so the line's and the
	// band's envelope stay as they were), and every request the chart marks (a divergence).
	ThinAbove = 2000
	// ThinColumns is the number of columns a thinned chart's x axis is cut into: more than the
	// data area's width in pixels at [PNGDPI] and [DefaultWidth] (under 800), so that a
	// column is less than a pixel wide and the PNG shows what every point would.
	ThinColumns = 1200
	// ThinGlyphColumns is the number of columns a thinned chart draws its points (the glyphs
	// of an arm's requests) in: in each, the point of the highest and of the lowest mean and
	// every request the chart marks. At [DefaultWidth] a column is about a quarter of a glyph
	// wide, so that the glyphs overlap as before and cover what every point's glyph would,
	// but for points between the extremes of a column, which the line still passes through.
	ThinGlyphColumns = 400
	// lineChunk is the most points one stroke or one band polygon of a thinned chart holds;
	// consecutive pieces share their end points, a line's pieces one segment, so that every
	// vertex of the line is drawn with its join.
	lineChunk = 64
)

// thinning says how a chart's series are drawn: width is the column width in requests (0: not
// thinned, every point drawn as one line), glyph the width of a glyph column, keep the request
// indices kept in every column.
type thinning struct {
	width, glyph int32
	keep         map[int32]bool
}

// thinningFor returns the thinning of a chart whose largest request index is maxX ([ThinAbove]),
// keeping the request indices of keep.
func thinningFor(maxX int32, keep map[int32]bool) thinning {
	span := int64(maxX) + 1
	if span <= ThinAbove {
		return thinning{}
	}
	return thinning{width: int32((span + ThinColumns - 1) / ThinColumns), glyph: int32((span + ThinGlyphColumns - 1) / ThinGlyphColumns), keep: keep}
}

// on reports whether the chart is thinned.
func (t thinning) on() bool { return t.width > 1 }

// points returns the points of one run of consecutive requests (sorted by request index) that a
// thinned chart draws, in order; pts itself when the chart is not thinned.
func (t thinning) points(pts []point) []point {
	if !t.on() {
		return pts
	}
	return t.pick(pts, t.width, true)
}

// glyphs returns the points of one run, as [thinning.points] returned them, whose glyphs a
// thinned chart draws ([ThinGlyphColumns]); pts itself when the chart is not thinned.
func (t thinning) glyphs(pts []point) []point {
	if !t.on() || t.glyph <= t.width {
		return pts
	}
	return t.pick(pts, t.glyph, false)
}

// pick returns the points of pts kept in columns of width requests: each column's points of the
// highest and lowest mean and the requests of t.keep, and with all also its first and last point
// and those of the highest maximum and lowest minimum.
func (t thinning) pick(pts []point, width int32, all bool) []point {
	if len(pts) <= 2 {
		return pts
	}
	out := make([]point, 0, min(len(pts), 8*(len(pts)/int(width)+2)))
	take := make([]int, 0, 8)
	for from := 0; from < len(pts); {
		col := pts[from].x / width
		to := from + 1
		for to < len(pts) && pts[to].x/width == col {
			to++
		}
		take = take[:0]
		hiMean, loMean, hi, lo := from, from, from, from
		for j := from; j < to; j++ {
			p := pts[j]
			if p.mean > pts[hiMean].mean {
				hiMean = j
			}
			if p.mean < pts[loMean].mean {
				loMean = j
			}
			if p.hi > pts[hi].hi {
				hi = j
			}
			if p.lo < pts[lo].lo {
				lo = j
			}
			if t.keep[p.x] {
				take = append(take, j)
			}
		}
		take = append(take, hiMean, loMean)
		if all {
			take = append(take, from, to-1, hi, lo)
		}
		slices.Sort(take)
		for _, j := range slices.Compact(take) {
			out = append(out, pts[j])
		}
		from = to
	}
	return out
}

// chunks cuts xys into the pieces a chart draws as separate strokes: xys itself when the chart is
// not thinned or xys is short, else pieces of at most [lineChunk] points of which each starts one
// segment before the previous one ends.
func (t thinning) chunks(xys plotter.XYs) []plotter.XYs {
	if !t.on() || len(xys) <= lineChunk {
		return []plotter.XYs{xys}
	}
	var out []plotter.XYs
	for from := 0; ; from += lineChunk - 2 {
		to := min(from+lineChunk, len(xys))
		out = append(out, xys[from:to])
		if to == len(xys) {
			return out
		}
	}
}

// bandChunks cuts one run's points into the pieces its min–max band is filled as: run itself when
// the chart is not thinned or run is short, else pieces of at most [lineChunk] points of which
// each starts where the previous one ends.
func (t thinning) bandChunks(run []point) [][]point {
	if !t.on() || len(run) <= lineChunk {
		return [][]point{run}
	}
	var out [][]point
	for from := 0; ; from += lineChunk - 1 {
		to := min(from+lineChunk, len(run))
		out = append(out, run[from:to])
		if to == len(run) {
			return out
		}
	}
}
