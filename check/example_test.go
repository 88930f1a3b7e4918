package check_test

import (
	"fmt"
	"os"

	"lab/check"
	"lab/metrics"
)

// A check file with two expectations, evaluated on three requests of a session whose system
// prompt changed at request 2.
func Example() {
	f, err := check.Parse("ci.yaml", []byte(`expect:
  - scenario: midnight
    arm: date-in-system-prompt
    min_cached_share: 0.5
  - scenario: "*"
    arm: "*"
    max_reread_tokens: 5000
`), check.Known{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cached := func(n int64) *int64 { return &n }
	samples := []metrics.Sample{
		{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, RequestIndex: 0, Turn: 1, Step: 1, PromptTokens: 1000, CachedTokens: cached(0), CachedSource: "simulation", RereadTokens: new(int64(1000))},
		{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, RequestIndex: 1, Turn: 1, Step: 2, PromptTokens: 1500, CachedTokens: cached(1000), CachedSource: "simulation", RereadTokens: new(int64(500)), DivergenceSegment: "message 2"},
		{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, RequestIndex: 2, Turn: 2, Step: 1, PromptTokens: 2000, CachedTokens: cached(5), CachedSource: "simulation", RereadTokens: new(int64(1995)), DivergenceSegment: "system"},
	}
	res := check.Evaluate(f, samples)
	check.WriteText(os.Stdout, res)
	// Output:
	// FAIL midnight/date-in-system-prompt rep 1 request 2: cached share 0.003 < 0.5 (cached tokens: simulation; first divergence: system) [ci.yaml:2]
	// 2 expectations, 1 held, 1 failed
}
