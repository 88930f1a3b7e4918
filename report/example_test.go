package report_test

import (
	"fmt"

	"lab/metrics"
	"lab/report"
)

// Summarize a run's samples into one table per scenario.
func ExampleSummarize() {
	samples := []metrics.Sample{
		{Scenario: "midnight", Arm: "spec", PromptTokens: 1000, CachedTokens: new(int64(900)), ExpectedCachedTokens: new(int64(950)), RereadTokens: new(int64(100))},
		{Scenario: "midnight", Arm: "date-in-system-prompt", PromptTokens: 1000, CachedTokens: new(int64(40)), ExpectedCachedTokens: new(int64(40)), RereadTokens: new(int64(960))},
		{Scenario: "midnight", Arm: "date-in-system-prompt", PromptTokens: 1100}, // cached unknown
	}
	for _, t := range report.Summarize(samples) {
		for _, r := range t.Rows {
			fmt.Printf("%s %s: %d requests, %d cached (%d unknown), efficiency %.2f, re-read vs spec %.1f\n",
				t.Scenario, r.Arm, r.Requests, r.CachedTokens, r.CachedUnknown, *r.Efficiency, *r.RereadVsSpec)
		}
	}
	// Output:
	// midnight spec: 1 requests, 900 cached (0 unknown), efficiency 0.95, re-read vs spec 1.0
	// midnight date-in-system-prompt: 2 requests, 40 cached (1 unknown), efficiency 1.00, re-read vs spec 9.6
}
