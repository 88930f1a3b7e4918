package plots

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"weak"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"lab/cachesim"
	"lab/metrics"
)

// A chart's hover texts: points of it where a reader who hovers in a browser sees a text (an
// SVG <title>, shown as a tooltip without any script), written into its SVG by [Write]; a PNG
// has none. The cached-share chart has one on each divergence ring: the arm, the request, its
// cached share, where it diverged and the excerpt of what the cache held against what the prompt
// has there.

// hotspot is a point of a drawn chart in canvas coordinates (points from the bottom-left), the
// radius around it that shows the text, and the text.
type hotspot struct {
	at   vg.Point
	r    vg.Length
	text string
}

// hoverSet is the hotspots one drawing of a chart placed; a plotter adds them as it draws.
// [Write] holds drawing from the reset before a drawing to the last read of its spots, so that
// drawings of one chart at once do not add to each other's set: reset, add and [withHovers]
// run with it held.
type hoverSet struct {
	drawing sync.Mutex
	spots   []hotspot
}

func (h *hoverSet) reset() { h.spots = h.spots[:0] }

func (h *hoverSet) add(s hotspot) { h.spots = append(h.spots, s) }

// hoverSets maps a chart (weakly: the entry goes with the chart) to the hover set its plotters
// fill when it is drawn.
var hoverSets sync.Map // weak.Pointer[plot.Plot] → *hoverSet

// attachHovers makes h the hover set [Write] adds to p's SVG.
func attachHovers(p *plot.Plot, h *hoverSet) {
	key := weak.Make(p)
	hoverSets.Store(key, h)
	runtime.AddCleanup(p, func(k weak.Pointer[plot.Plot]) { hoverSets.Delete(k) }, key)
}

// hoversOf returns p's hover set, nil when it has none.
func hoversOf(p *plot.Plot) *hoverSet {
	if v, ok := hoverSets.Load(weak.Make(p)); ok {
		return v.(*hoverSet)
	}
	return nil
}

// withHovers returns svg (the document vgsvg wrote, height points tall) with h's hotspots added
// as its last group: each a transparent circle that takes the pointer, holding its text as a
// <title>. svg as it is when h has none or the document does not end in </svg>.
func withHovers(svg []byte, h *hoverSet, height vg.Length) []byte {
	if h == nil {
		return svg
	}
	end := bytes.LastIndex(svg, []byte("</svg>"))
	if len(h.spots) == 0 || end < 0 {
		return svg
	}
	var b bytes.Buffer
	b.Grow(len(svg) + 256*len(h.spots))
	b.Write(svg[:end])
	b.WriteString("<g class=\"hover\">\n")
	for _, s := range h.spots {
		fmt.Fprintf(&b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"#000\" fill-opacity=\"0\" pointer-events=\"all\"><title>%s</title></circle>\n",
			s.at.X.Points(), (height - s.at.Y).Points(), s.r.Points(), html.EscapeString(s.text))
	}
	b.WriteString("</g>\n")
	b.Write(svg[end:])
	return b.Bytes()
}

// divergenceTip is the hover text of a divergence ring: the point (arm, request, cached share as
// drawn: share, the mean over reps repetitions), then the figures of s, the request's row of the
// lowest repetition that has it: tokens, where it diverged and the excerpt there (strings
// quoted, cut ends marked "…").
func divergenceTip(arm string, s *metrics.Sample, share float64, reps int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, request %d (turn %d, step %d): cached share %.1f%%", arm, s.RequestIndex, s.Turn, s.Step, share)
	if reps > 1 {
		fmt.Fprintf(&b, ", the mean of %d repetitions\nrepetition %d: ", reps, s.Repetition)
	} else {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s prompt tokens", tokens(s.PromptTokens))
	if s.CachedTokens != nil {
		fmt.Fprintf(&b, ", %s cached", tokens(*s.CachedTokens))
	}
	if e, ok := metrics.Int64(s.ExpectedCachedTokens); ok {
		fmt.Fprintf(&b, " (expected %s)", tokens(e))
	}
	if s.RereadTokens != nil {
		fmt.Fprintf(&b, ", %s re-read", tokens(*s.RereadTokens))
	}
	switch {
	case s.DivergenceToken != nil:
		fmt.Fprintf(&b, "\ndiverged at token %s, in %s", tokens(*s.DivergenceToken), cmp.Or(s.DivergenceSegment, "an unnamed segment"))
	case s.DivergenceSegment != "":
		fmt.Fprintf(&b, "\ndiverged in %s", s.DivergenceSegment)
	}
	var ex cachesim.Excerpt
	if s.DivergenceExcerpt != "" && json.Unmarshal([]byte(s.DivergenceExcerpt), &ex) == nil {
		cut := func(text string, start, end bool) string {
			q := strconv.Quote(text)
			if start {
				q = "…" + q
			}
			if end {
				q += "…"
			}
			return q
		}
		fmt.Fprintf(&b, "\nshared: %s\ncache held: %s\nprompt has: %s", cut(ex.Before, ex.BeforeCut, false), cut(ex.Cached, false, ex.CachedCut), cut(ex.Prompt, false, ex.PromptCut))
	}
	return b.String()
}

// tokens prints a token count with thousands separators: 17,074.
func tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
