package plots_test

import (
	"bytes"
	"errors"
	"fmt"

	"lab/metrics"
	"lab/plots"
)

// Build the cached-share chart of one scenario and render it as SVG; a caller would write to
// results/<run-id>/plots/<scenario>-cached-share.svg instead of a buffer.
func ExampleCachedShare() {
	samples := []metrics.Sample{
		{Scenario: "midnight", Arm: "spec", RequestIndex: 0, PromptTokens: 1000, CachedTokens: new(int64(0))},
		{Scenario: "midnight", Arm: "spec", RequestIndex: 1, PromptTokens: 1200, CachedTokens: new(int64(990)), ExpectedCachedTokens: new(int64(1000))},
		{Scenario: "midnight", Arm: "spec", RequestIndex: 2, PromptTokens: 1400}, // cached unknown: a gap
		// The date changed: the prompt differs from the cache in the system prompt.
		{Scenario: "midnight", Arm: "spec", RequestIndex: 3, PromptTokens: 1600, CachedTokens: new(int64(12)), ExpectedCachedTokens: new(int64(12)), DivergenceSegment: "system"},
	}
	p, err := plots.CachedShare("midnight", samples)
	if err != nil {
		fmt.Println(err)
		return
	}
	var svg bytes.Buffer
	if err := plots.Write(&svg, p, "svg", plots.DefaultWidth, plots.DefaultHeight); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Title.Text)
	fmt.Println(bytes.Contains(svg.Bytes(), []byte(">system<")))
	// Output:
	// midnight: cached share of the prompt per request
	// true
}

// Build every standard chart of a scenario; a caller writes each to
// results/<run-id>/plots/<scenario>-<name>.svg and .png, skipping ErrNoSamples.
func ExampleScenarioCharts() {
	samples := []metrics.Sample{
		{Scenario: "midnight", Arm: "spec", RequestIndex: 0, PromptTokens: 1000, RereadTokens: new(int64(1000)), PrefillNs: 2e9},
		{Scenario: "midnight", Arm: "spec", RequestIndex: 1, PromptTokens: 1200, RereadTokens: new(int64(200)), PrefillNs: 4e8},
	}
	for _, ch := range plots.ScenarioCharts() {
		p, err := ch.Build("midnight", samples)
		if errors.Is(err, plots.ErrNoSamples) {
			fmt.Printf("midnight-%s: nothing to draw\n", ch.Name)
			continue
		}
		if err != nil {
			fmt.Println(ch.Name, err)
			continue
		}
		fmt.Printf("midnight-%s.svg: %s\n", ch.Name, p.Title.Text)
	}
	// Output:
	// midnight-cached-share.svg: midnight: cached share of the prompt per request
	// midnight-cumulative-reread.svg: midnight: re-read tokens, cumulative per arm
	// midnight-prefill.svg: midnight: prefill time per request
	// midnight-prompt-segments: nothing to draw
}

// Draw each arm's re-read tokens relative to spec with its 95 % confidence interval, computed
// elsewhere; the chart is as tall as its arms need.
func ExampleRelativeBars() {
	bars := []plots.Bar{
		{Label: "date-in-system-prompt", Value: 3.2, Lo: new(2.9), Hi: new(3.6)},
		{Label: "spec", Value: 1},
		{Label: "reasoning-never", Value: 1.21, Lo: new(1.15), Hi: new(1.27)},
	}
	p, err := plots.RelativeBars("midnight: re-read tokens relative to spec (95 % CI)", bars)
	if err != nil {
		fmt.Println(err)
		return
	}
	var svg bytes.Buffer
	if err := plots.Write(&svg, p, "svg", plots.DefaultWidth, plots.RelativeBarsHeight(bars)); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		fmt.Println(t.Label) // bottom to top: spec is the top row
	}
	// Output:
	// reasoning-never  1.21×
	// date-in-system-prompt  3.2×
	// spec  1×
}
