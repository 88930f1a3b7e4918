package plots

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"lab/metrics"
)

// segSample is a request of prompt tokens whose cache reused cached of them and whose re-read
// lies in the system prompt (sys tokens) and in a tool result (the rest).
func segSample(arm string, rep, req int32, prompt, cached, sys int64, div *int64) metrics.Sample {
	return metrics.Sample{Scenario: "s", Arm: arm, Repetition: rep, RequestIndex: req, Turn: 1,
		PromptTokens: prompt, CachedTokens: new(cached), RereadTokens: new(prompt - cached),
		RereadSystemTokens: new(sys), RereadToolsTokens: new(int64(0)), RereadMessageTokens: new(int64(0)),
		RereadToolResultTokens: new(prompt - cached - sys), RereadReasoningTokens: new(int64(0)),
		RereadNoteTokens: new(int64(0)), RereadOtherTokens: new(int64(0)), RereadUnattributedTokens: new(int64(0)),
		DivergenceToken: div}
}

func TestPromptSegments(t *testing.T) {
	t.Parallel()
	samples := []metrics.Sample{
		segSample("plain", 1, 0, 100, 0, 60, nil),
		segSample("plain", 1, 1, 200, 20, 50, new(int64(20))),
		segSample("plain", 2, 1, 200, 40, 30, new(int64(40))), // a second repetition: the mean
		segSample(metrics.SpecArm, 1, 0, 100, 0, 60, nil),
		segSample(metrics.SpecArm, 1, 1, 300, 100, 0, nil),
	}
	// Neither cached tokens nor the split known: no bar.
	unknown := segSample(metrics.SpecArm, 1, 2, 400, 0, 0, nil)
	unknown.CachedTokens = nil
	split := segSample(metrics.SpecArm, 1, 3, 400, 0, 0, nil)
	split.RereadNoteTokens = nil
	samples = append(samples, unknown, split)

	arms, bars, maxX, maxY := segmentBars(sequences("s", metrics.RowsOf(samples)))
	if strings.Join(arms, ",") != metrics.SpecArm+",plain" {
		t.Fatalf("arms %v, want spec first", arms)
	}
	if maxX != 1 || maxY != 300 {
		t.Errorf("axes up to request %d and %v tokens, want 1 and 300 (the unknown requests have no bar)", maxX, maxY)
	}
	plain := bars["plain"].bars
	if len(plain) != 2 || plain[0].x != 0 || plain[1].x != 1 {
		t.Fatalf("plain's bars %+v, want requests 0 and 1 in order", plain)
	}
	// Request 1 of plain: the mean of its two repetitions, reused 30, system 40, tool result 130.
	b := plain[1]
	if b.parts[0] != 30 || b.parts[1] != 40 || b.parts[4] != 130 || b.div != 30 {
		t.Errorf("plain request 1: parts %v, divergence %v; want reused 30, system 40, tool result 130, tick at 30", b.parts, b.div)
	}
	sum := 0.0
	for _, v := range b.parts {
		sum += v
	}
	if sum != 200 {
		t.Errorf("plain request 1's parts sum to %v, want its prompt, 200", sum)
	}
	if !math.IsNaN(plain[0].div) {
		t.Errorf("plain request 0 diverged nowhere, got a tick at %v", plain[0].div)
	}
	if n := len(bars[metrics.SpecArm].bars); n != 2 {
		t.Errorf("spec has %d bars, want 2", n)
	}

	rows := metrics.RowsOf(samples)
	p, err := PromptSegmentsRows("s", rows)
	if err != nil {
		t.Fatal(err)
	}
	w, h := PromptSegmentsSize("s", rows)
	if pw, ph := panelsSize(2); w != pw || h != ph {
		t.Errorf("size %v × %v, want two panels' %v × %v", w, h, pw, ph)
	}
	var svg bytes.Buffer
	if err := Write(&svg, p, "svg", w, h); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"spec", "plain", "reused (cached)", "re-read: system", "re-read: tool result", "first divergence"} {
		if !strings.Contains(svg.String(), ">"+s+"</text>") {
			t.Errorf("svg lacks the text %q", s)
		}
	}

	if _, err := PromptSegmentsRows("s", metrics.RowsOf([]metrics.Sample{unknown, split})); !errors.Is(err, ErrNoSamples) {
		t.Errorf("no request with a whole bar: error %v, want ErrNoSamples", err)
	}
}

// An arm without a whole bar anywhere has no panel, and the size leaves no room for one: the
// canvas of five arms of which one is unknown holds one row of four panels.
func TestPromptSegmentsSizeCountsPanels(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for _, arm := range []string{metrics.SpecArm, "a", "b", "c", "unknown"} {
		s := segSample(arm, 1, 0, 100, 40, 10, new(int64(40)))
		if arm == "unknown" {
			s.CachedTokens = nil
		}
		samples = append(samples, s)
	}
	rows := metrics.RowsOf(samples)
	arms, _, _, _ := segmentBars(sequences("s", rows))
	if len(arms) != 4 {
		t.Fatalf("%d panels, want 4 (the unknown arm has none)", len(arms))
	}
	w, h := PromptSegmentsSize("s", rows)
	if pw, ph := panelsSize(4); w != pw || h != ph {
		t.Errorf("size %v × %v, want four panels' %v × %v (one row), not five's", w, h, pw, ph)
	}
}

// A divergence ring of the cached-share chart has a hover text in the SVG (a transparent circle
// holding a <title>): the arm, the request, its figures, where it diverged and the excerpt,
// escaped; the PNG has none, and a chart drawn twice has its hover texts once.
func TestCachedShareHover(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for i, cached := range []int64{0, 990, 10} {
		s := metrics.Sample{Scenario: "s", Arm: "date-in-system-prompt", Repetition: 1, RequestIndex: int32(i), Turn: 1, Step: int32(i + 1),
			PromptTokens: 1000 + 100*int64(i), CachedTokens: new(cached), ExpectedCachedTokens: new(cached), RereadTokens: new(1000 + 100*int64(i) - cached)}
		if i == 2 {
			s.DivergenceToken, s.DivergenceSegment = new(int64(10)), "system"
			s.DivergenceExcerpt = `{"before":"Today is ","cached":"Wednesday <b>","prompt":"Thursday & co","before_cut":true,"cached_cut":true}`
		}
		samples = append(samples, s)
	}
	p, err := CachedShare("s", samples)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	for range 2 { // drawn twice: the hover texts of the last drawing only
		svg.Reset()
		if err := Write(&svg, p, "svg", DefaultWidth, DefaultHeight); err != nil {
			t.Fatal(err)
		}
	}
	out := svg.String()
	want := "<title>date-in-system-prompt, request 2 (turn 1, step 3): cached share 0.8%\n1,200 prompt tokens, 10 cached (expected 10), 1,190 re-read\n" +
		"diverged at token 10, in system\nshared: …&#34;Today is &#34;\ncache held: &#34;Wednesday &lt;b&gt;&#34;…\nprompt has: &#34;Thursday &amp; co&#34;</title>"
	if !strings.Contains(out, want) {
		t.Errorf("svg lacks the ring's hover text %q:\n%s", want, out[max(0, strings.Index(out, `<g class="hover">`)):])
	}
	if n := strings.Count(out, "<circle "); n != 1 {
		t.Errorf("%d hover circles, want 1 (one ring)", n)
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "</g>\n</svg>") && !strings.HasSuffix(strings.TrimSpace(out), "</svg>") {
		t.Errorf("svg does not end in </svg>")
	}
	var png bytes.Buffer
	if err := Write(&png, p, "png", DefaultWidth, DefaultHeight); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(png.Bytes(), []byte("<title>")) {
		t.Error("the PNG holds hover texts")
	}
}
