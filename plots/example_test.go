package plots_test

import (
	"bytes"
	"fmt"

	"lab/metrics"
	"lab/plots"
)

// Build the cached-share chart of one scenario and render it as SVG; a caller would write to
// results/<run-id>/plots/<scenario>-cached-share.svg instead of a buffer.
func ExampleCachedShare() {
	samples := []metrics.Sample{
		{Scenario: "midnight", Arm: "spec", RequestIndex: 0, PromptTokens: 1000, CachedTokens: new(int64(0))},
		{Scenario: "midnight", Arm: "spec", RequestIndex: 1, PromptTokens: 1200, CachedTokens: new(int64(990)), ExpectedCachedTokens: 1000},
		{Scenario: "midnight", Arm: "spec", RequestIndex: 2, PromptTokens: 1400}, // cached unknown: a gap
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
	fmt.Println(bytes.Contains(svg.Bytes(), []byte("<svg")))
	// Output:
	// midnight: cached share of the prompt per request
	// true
}
