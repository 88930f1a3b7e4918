package plots_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"lab/internal/golden"
	"lab/metrics"
	"lab/plots"
)

// fixture returns ten requests of two arms of the scenario "midnight", and one sample of
// another scenario. Midnight falls at request 6: date-in-system-prompt re-reads its whole
// prompt there (divergence in "system"), spec loses only 2 % of it (divergence in "note", below
// plots.DivergenceMinLost, so unmarked). Request 3 of spec has unknown cached tokens.
func fixture() []metrics.Sample {
	var out []metrics.Sample
	for _, arm := range []string{"date-in-system-prompt", metrics.SpecArm} {
		for i := range int32(10) {
			prompt := int64(2000 + 500*i)
			expected := max(prompt-500, 0)
			if i == 0 {
				expected = 0
			}
			segment := ""
			if i == 6 {
				if arm == metrics.SpecArm {
					expected, segment = prompt-600, "note"
				} else {
					expected, segment = 40, "system"
				}
			}
			cached := expected - 20*int64(i%3) // the server keeps a little less than it could
			s := metrics.Sample{
				RunID: "run-1", Scenario: "midnight", Arm: arm, Repetition: 1, RequestIndex: i,
				Turn: 1 + i/4, Step: 1 + i%4, Kind: metrics.KindStep,
				PromptTokens: prompt, ExpectedCachedTokens: new(int64(expected)),
				CachedTokens: new(max(cached, 0)), CachedSource: metrics.CachedSourceServerLog,
				DivergenceSegment: segment, RereadTokens: new(int64(prompt - max(cached, 0))),
				PrefillNs: (prompt - max(cached, 0)) * 1_000_000, // 1 ms per re-read token
			}
			if arm == metrics.SpecArm && i == 3 {
				s.CachedTokens, s.CachedSource = nil, ""
				s.RereadTokens = nil // unknown with the cached tokens
			}
			out = append(out, s)
		}
	}
	out = append(out, metrics.Sample{Scenario: "other", Arm: "spec", PromptTokens: 10, CachedTokens: new(int64(0))})
	return out
}

// armNames returns n arm names in the style of `lab arms`: spec, the practices harnesses use,
// plain and ablations.
func armNames(n int) []string {
	names := []string{
		metrics.SpecArm, "date-in-system-prompt", "absolute-paths", "plain", "no-stubs", "no-caps",
		"compaction-separate-request", "reasoning-never", "reasoning-always", "no-read-brackets",
		"no-recall", "no-diffs", "no-search-dedupe", "no-notes", "no-compaction", "no-relative-paths",
		"no-ids", "prune-in-place", "tools-change", "no-session-note", "no-result-store",
		"no-dedupe-rewind", "no-reasoning-return", "no-caps-on-search", "no-stable-tools",
		"no-stable-order", "no-fixed-system", "no-tool-sort", "no-trim", "no-escape",
	}
	return names[:n]
}

// manyArms returns a midnight-like session of 48 requests for n arms with reps repetitions,
// from a fixed seed: midnight at request 27 sends the date arms (date-in-system-prompt, plain)
// back to 0 % ("system"); the reasoning arms lose their reasoning at each new user turn (every
// 12th request, "reasoning N"); every fifth other arm loses a tool result now and then; and
// every arm has a few small divergences below plots.DivergenceMinLost.
func manyArms(n int, reps int32) []metrics.Sample {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []metrics.Sample
	for ai, arm := range armNames(n) {
		for rep := int32(1); rep <= reps; rep++ {
			prev := int64(0)
			for i := range int32(48) {
				prompt := int64(3000 + 420*int64(i) + int64(ai)*15)
				expected := prev // the previous prompt is reused whole
				segment := ""
				switch {
				case i == 0:
					expected = 0
				case i == 27 && (arm == "date-in-system-prompt" || arm == "plain"):
					expected, segment = 30, "system"
				case i%12 == 0 && strings.HasPrefix(arm, "reasoning"):
					expected, segment = prev-prompt/6, fmt.Sprintf("reasoning %d", 2*i-3)
				case ai%5 == 4 && i%9 == 4:
					expected, segment = prev-prompt/(8+int64(ai%3)), fmt.Sprintf("tool result %d", 2*i-1)
				case i%7 == 3:
					expected, segment = prev-prompt/100, "message 1"
				}
				cached := max(0, expected-int64(rng.IntN(200)))
				reread := prompt - cached
				sys := int64(0) // the re-read split: half in the system prompt when it diverged there
				if segment == "system" {
					sys = reread / 2
				}
				zero := new(int64(0))
				out = append(out, metrics.Sample{
					RereadSystemTokens: new(sys), RereadToolResultTokens: new(reread - sys), RereadToolsTokens: zero,
					RereadMessageTokens: zero, RereadReasoningTokens: zero, RereadNoteTokens: zero, RereadOtherTokens: zero,
					RereadUnattributedTokens: zero,
					RunID:                    "run-2", Scenario: "midnight", Arm: arm, Repetition: rep, RequestIndex: i,
					Kind: metrics.KindStep, PromptTokens: prompt, ExpectedCachedTokens: new(int64(expected)),
					CachedTokens: new(cached), CachedSource: metrics.CachedSourceServerLog,
					DivergenceSegment: segment, RereadTokens: new(int64(prompt - cached)),
					PrefillNs: (prompt - cached) * int64(900_000+rng.IntN(200_000)),
				})
				prev = prompt
			}
		}
	}
	return out
}

func TestCachedShare(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	svg := render(t, p, plots.DefaultHeight)
	for _, want := range []string{
		"midnight: cached share of the prompt per request",
		"cached share of the prompt (%)", "request (0-based)",
		">spec<", ">date-in-system-prompt<", ">expected<",
		">system<", // the divergence label of date-in-system-prompt at midnight
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(svg, ">note<") {
		t.Errorf("SVG labels spec's divergence in the note, which lost 2 %% of the prompt; want it unmarked")
	}
	if strings.Index(svg, ">spec<") > strings.Index(svg, ">date-in-system-prompt<") {
		t.Errorf("legend does not list spec first")
	}
	golden.Check(t, "TestCachedShare.golden.svg", []byte(svg))
}

func TestCachedShareRepetitions(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", manyArms(5, 2))
	if err != nil {
		t.Fatal(err)
	}
	svg := render(t, p, plots.DefaultHeight)
	for _, want := range []string{">min–max of 2 repetitions<", ">system, 2 arms<", ">tool result 7<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if strings.Contains(svg, ">message 1") {
		t.Errorf("SVG labels a divergence that lost 1 %% of the prompt")
	}
	golden.Check(t, "TestCachedShareRepetitions.golden.svg", []byte(svg))
}

// TestManyArms builds every chart with 30 arms and 3 repetitions twice: the SVG must be the
// same bytes (no map order leaks into it) and the date arms' midnight label must be there.
func TestManyArms(t *testing.T) {
	t.Parallel()
	for _, ch := range plots.ScenarioCharts() {
		t.Run(ch.Name, func(t *testing.T) {
			t.Parallel()
			var out [2]string
			for i := range out {
				p, err := ch.Build("midnight", manyArms(30, 3))
				if err != nil {
					t.Fatal(err)
				}
				out[i] = render(t, p, plots.DefaultHeight)
			}
			if out[0] != out[1] {
				t.Errorf("%s: two builds from the same samples differ", ch.Name)
			}
			if ch.Name == "cached-share" && !strings.Contains(out[0], "one panel per arm") {
				t.Errorf("%s: 30 arms not drawn as small multiples", ch.Name)
			}
			if !strings.Contains(out[0], ">tools-change<") {
				t.Errorf("%s: legend lacks the 30th arm", ch.Name)
			}
		})
	}
}

func TestCumulativeReread(t *testing.T) {
	t.Parallel()
	samples := fixture()
	p, err := plots.CumulativeReread("midnight", samples)
	if err != nil {
		t.Fatal(err)
	}
	// The y axis reaches the largest total: date-in-system-prompt's, which re-read midnight whole.
	totals := map[string]int64{}
	for _, s := range samples {
		if s.Scenario == "midnight" {
			v, _ := metrics.Int64(s.RereadTokens)
			totals[s.Arm] += v
		}
	}
	if want := float64(totals["date-in-system-prompt"]); p.Y.Max != want || totals["spec"] >= totals["date-in-system-prompt"] {
		t.Errorf("CumulativeReread: y max = %v; want date-in-system-prompt's total %v (> spec's %v)", p.Y.Max, want, totals["spec"])
	}
	svg := render(t, p, plots.DefaultHeight)
	for _, want := range []string{"midnight: re-read tokens, cumulative per arm", "re-read tokens (cumulative)", "request (0-based)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	golden.Check(t, "TestCumulativeReread.golden.svg", []byte(svg))
}

// TestCumulativeRereadRepetitions: the running total is taken per repetition, and the band
// reaches the largest repetition's total.
func TestCumulativeRereadRepetitions(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for rep, reread := range [][]int64{{100, 50}, {300, 10}} {
		for i, r := range reread {
			samples = append(samples, metrics.Sample{Scenario: "s", Arm: "spec", Repetition: int32(rep + 1),
				RequestIndex: int32(i), PromptTokens: 1000, RereadTokens: new(int64(r))})
		}
	}
	p, err := plots.CumulativeReread("s", samples)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max != 310 {
		t.Errorf("CumulativeReread(two repetitions): y max = %v; want 310, the larger total", p.Y.Max)
	}
}

func TestPrefillTime(t *testing.T) {
	t.Parallel()
	p, err := plots.PrefillTime("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	// The longest prefill: date-in-system-prompt at midnight re-read 5000 − 40 tokens at 1 ms each.
	if want := 4.96; p.Y.Max != want {
		t.Errorf("PrefillTime: y max = %v s; want %v", p.Y.Max, want)
	}
	svg := render(t, p, plots.DefaultHeight)
	for _, want := range []string{"midnight: prefill time per request", "prefill (s)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	golden.Check(t, "TestPrefillTime.golden.svg", []byte(svg))

	// A prefill of 0 is unknown: with none known there is nothing to draw.
	s := fixture()
	for i := range s {
		s[i].PrefillNs = 0
	}
	if _, err := plots.PrefillTime("midnight", s); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("PrefillTime(no prefill known) = %v; want ErrNoSamples", err)
	}
}

func TestScenarioCharts(t *testing.T) {
	t.Parallel()
	var names []string
	for _, ch := range plots.ScenarioCharts() {
		names = append(names, ch.Name)
		for _, tc := range []struct {
			name     string
			scenario string
			samples  []metrics.Sample
		}{
			{"no samples", "midnight", nil},
			{"missing scenario", "missing", fixture()},
			{"no prompt tokens", "midnight", []metrics.Sample{{Scenario: "midnight", Arm: "spec", CachedTokens: new(int64(0))}}},
		} {
			if _, err := ch.Build(tc.scenario, tc.samples); !errors.Is(err, plots.ErrNoSamples) {
				t.Errorf("%s(%s) = %v; want ErrNoSamples", ch.Name, tc.name, err)
			}
		}
	}
	if got, want := strings.Join(names, " "), "cached-share cumulative-reread prefill prompt-segments"; got != want {
		t.Errorf("ScenarioCharts() names = %q; want %q", got, want)
	}
}

func TestRelativeBars(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bars []plots.Bar
		log  bool
	}{
		{"TestRelativeBars30", bars30(), true},
		{"TestRelativeBarsGrouped", barsGrouped(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := plots.RelativeBars("re-read tokens relative to spec", tc.bars)
			if err != nil {
				t.Fatal(err)
			}
			if _, isLog := p.X.Scale.(plot.LogScale); isLog != tc.log {
				t.Errorf("RelativeBars: log scale = %v; want %v", isLog, tc.log)
			}
			// spec is the top row: the tick with the largest y.
			ticks := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)
			if top := ticks[len(ticks)-1].Label; !strings.HasPrefix(top, "spec") {
				t.Errorf("RelativeBars: top row = %q; want spec", top)
			}
			if len(ticks) != 30 && tc.log {
				t.Errorf("RelativeBars: %d rows; want 30", len(ticks))
			}
			svg := render(t, p, plots.RelativeBarsHeight(tc.bars))
			for _, want := range []string{"ratio to spec (spec = 1)", ">spec = 1<", ">95 % CI<"} {
				if !strings.Contains(svg, want) {
					t.Errorf("SVG lacks %q", want)
				}
			}
			golden.Check(t, tc.name+".golden.svg", []byte(svg))
		})
	}
	if h := plots.RelativeBarsHeight(bars30()); h <= plots.DefaultHeight {
		t.Errorf("RelativeBarsHeight(30 arms) = %v; want more than the default %v", h, plots.DefaultHeight)
	}
	if h := plots.RelativeBarsHeight(barsGrouped()[:2]); h != plots.DefaultHeight {
		t.Errorf("RelativeBarsHeight(2 arms) = %v; want the default %v", h, plots.DefaultHeight)
	}
}

func TestRelativeBarsErrors(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		bars []plots.Bar
	}{
		{"NaN value", []plots.Bar{{Label: "spec", Value: nan}}},
		{"infinite value", []plots.Bar{{Label: "spec", Value: math.Inf(1)}}},
		{"one bound", []plots.Bar{{Label: "spec", Value: 1, Lo: new(0.9)}}},
		{"Lo > Hi", []plots.Bar{{Label: "spec", Value: 1, Lo: new(1.1), Hi: new(0.9)}}},
		{"NaN bound", []plots.Bar{{Label: "spec", Value: 1, Lo: new(nan), Hi: new(1.1)}}},
		{"duplicate", []plots.Bar{{Label: "spec", Value: 1}, {Label: "spec", Value: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := plots.RelativeBars("t", tc.bars); err == nil || !strings.Contains(err.Error(), `"spec"`) {
				t.Errorf("RelativeBars(%s) = %v; want an error naming the bar", tc.name, err)
			}
		})
	}
	if _, err := plots.RelativeBars("t", nil); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("RelativeBars(nil) = %v; want ErrNoSamples", err)
	}
	// Exactly at the bounds: Lo = Value = Hi is a valid interval.
	if _, err := plots.RelativeBars("t", []plots.Bar{{Label: "spec", Value: 1, Lo: new(1.0), Hi: new(1.0)}}); err != nil {
		t.Errorf("RelativeBars(Lo = Hi) = %v; want nil", err)
	}
}

// render writes p as SVG at the default width and the given height.
func render(t *testing.T, p *plot.Plot, height vg.Length) string {
	t.Helper()
	var buf bytes.Buffer
	if err := plots.Write(&buf, p, "svg", plots.DefaultWidth, height); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestCachedSharePNG(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := plots.Write(&buf, p, "PNG", plots.DefaultWidth, plots.DefaultHeight); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("PNG output starts with %q; want the PNG signature", buf.Bytes()[:min(8, buf.Len())])
	}
	if buf.Len() < 10_000 {
		t.Errorf("PNG output is %d bytes; want a full chart", buf.Len())
	}
}

func TestCachedShareErrors(t *testing.T) {
	t.Parallel()
	if _, err := plots.CachedShare("missing", fixture()); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("CachedShare(missing scenario) = %v; want ErrNoSamples", err)
	}
	if _, err := plots.CachedShare("midnight", nil); !errors.Is(err, plots.ErrNoSamples) {
		t.Errorf("CachedShare(no samples) = %v; want ErrNoSamples", err)
	}
	// Every cached count unknown: the chart still draws the expected lines.
	s := fixture()
	for i := range s {
		s[i].CachedTokens = nil
	}
	p, err := plots.CachedShare("midnight", s)
	if err != nil {
		t.Fatalf("CachedShare(all unknown) = %v", err)
	}
	if err := plots.Write(&bytes.Buffer{}, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err != nil {
		t.Errorf("Write(all unknown) = %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	p, err := plots.CachedShare("midnight", fixture())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		format string
		w, h   float64
	}{
		{"unknown format", "gif", 8, 4.5},
		{"zero width", "svg", 0, 4.5},
		{"negative height", "png", 8, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := plots.Write(&bytes.Buffer{}, p, tc.format, vgInch(tc.w), vgInch(tc.h))
			if err == nil {
				t.Errorf("Write(%q, %v×%v) = nil; want error", tc.format, tc.w, tc.h)
			}
			if tc.format == "gif" && !errors.Is(err, plots.ErrUnknownFormat) {
				t.Errorf("Write(gif) = %v; want ErrUnknownFormat", err)
			}
		})
	}
	if err := plots.Write(&bytes.Buffer{}, nil, "svg", plots.DefaultWidth, plots.DefaultHeight); err == nil {
		t.Errorf("Write(nil plot) = nil; want error")
	}
	if err := plots.Write(failWriter{}, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err == nil {
		t.Errorf("Write(failing writer) = nil; want error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func vgInch(v float64) vg.Length { return vg.Length(v) * vg.Inch }

// bars30 returns one bar per arm of armNames(30): spec at 1, the date arms far above it (so the
// axis is logarithmic), the others near 1, each with a confidence interval except spec's.
func bars30() []plots.Bar {
	var bars []plots.Bar
	for i, arm := range armNames(30) {
		v := 0.8 + 0.03*float64(i%13)
		switch arm {
		case metrics.SpecArm:
			bars = append(bars, plots.Bar{Label: arm, Value: 1})
			continue
		case "date-in-system-prompt", "plain":
			v = 14 + float64(i%3)
		}
		bars = append(bars, plots.Bar{Label: arm, Value: v, Lo: new(v * 0.93), Hi: new(v * 1.08)})
	}
	return bars
}

// barsGrouped returns bars of four arms in two scenarios, in an order that is not the display
// order, on a linear axis.
func barsGrouped() []plots.Bar {
	var bars []plots.Bar
	for _, scenario := range []string{"midnight", "reasoning"} {
		for i, arm := range []string{"no-stubs", "date-in-system-prompt", metrics.SpecArm, "reasoning-never"} {
			v := 1 + 0.25*float64(i) - 0.1*float64(len(scenario)%3)
			if arm == metrics.SpecArm {
				v = 1
			}
			bars = append(bars, plots.Bar{Label: arm, Group: scenario, Value: v, Lo: new(v - 0.1), Hi: new(v + 0.15)})
		}
	}
	return bars
}

// Requests whose expected cached tokens are unknown (a cloud API) get no expected line and no
// divergence marker, even where their zero expected count would be a drop.
func TestCachedShareExpectedUnknown(t *testing.T) {
	t.Parallel()
	svg := func(unknown bool) string {
		samples := fixture()
		for i := range samples {
			samples[i].ExpectedUnknown = unknown
			if unknown {
				samples[i].ExpectedCachedTokens, samples[i].DivergenceSegment = nil, ""
				if samples[i].RequestIndex == 6 {
					samples[i].DivergenceSegment = "system" // a stale value the reader must ignore
				}
			}
		}
		p, err := plots.CachedShare("midnight", samples)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := plots.Write(&b, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	known, unknown := svg(false), svg(true)
	if !strings.Contains(known, "stroke-dasharray") || !strings.Contains(known, ">expected<") || !strings.Contains(known, ">diverged: segment") {
		t.Fatalf("with known expected counts the chart lacks the expected line or the divergence key")
	}
	if strings.Contains(unknown, "stroke-dasharray") || strings.Contains(unknown, ">expected<") || strings.Contains(unknown, ">diverged: segment") {
		t.Errorf("with unknown expected counts the chart draws an expected line or divergence markers")
	}
}
