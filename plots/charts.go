package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"lab/metrics"
)

// Chart is one standard per-scenario chart: its name and its builder.
type Chart struct {
	// Name is the chart's part of a file name, for example "cached-share": [Names.Base] makes
	// it results/run_id=<run-id>/plots/<scenario>-<Name>.<format> ([File]).
	Name string
	// Build builds the chart of one scenario from a run's samples (samples of other scenarios
	// are ignored). It returns an error wrapping [ErrNoSamples] when the scenario has nothing
	// to draw in this chart, which a caller may skip.
	Build func(scenario string, samples []metrics.Sample) (*plot.Plot, error)
	// Rows is Build from the rows of a [metrics.Rows] (what lab report holds), with the same
	// result and errors.
	Rows func(scenario string, rows *metrics.Rows) (*plot.Plot, error)
	// Size, when set, returns the size the chart of scenario reads well at; without it the
	// chart is drawn [DefaultWidth] × [DefaultHeight].
	Size func(scenario string, rows *metrics.Rows) (width, height vg.Length)
}

// ScenarioCharts returns the standard charts of one scenario, in the order a report shows them:
// "cached-share" ([CachedShare]), "cumulative-reread" ([CumulativeReread]), "prefill"
// ([PrefillTime]) and "prompt-segments" ([PromptSegments]). The slice is new on every call; the caller may modify it.
func ScenarioCharts() []Chart {
	return []Chart{
		{Name: "cached-share", Build: CachedShare, Rows: CachedShareRows, Size: CachedShareSize},
		{Name: "cumulative-reread", Build: CumulativeReread, Rows: CumulativeRereadRows},
		{Name: "prefill", Build: PrefillTime, Rows: PrefillTimeRows},
		{Name: "prompt-segments", Build: PromptSegments, Rows: PromptSegmentsRows, Size: PromptSegmentsSize},
	}
}
