package plots

import (
	"fmt"

	"gonum.org/v1/plot"

	"lab/metrics"
)

// ServerLine is one server's line of [ServerReread]: its name in the legend and the rows of its
// runs.
type ServerLine struct {
	// Name names the server in the legend, for example "A: ollama 0.17.4". Lines are drawn in
	// the order of their names ([metrics.SortArms] order), so a leading setup label keeps the
	// order of the report's setups.
	Name string
	// Rows are the server's rows; rows of other scenarios and arms are ignored.
	Rows *metrics.Rows
}

// ServerReread builds the chart "re-read tokens per request, one line per server" for one
// scenario and arm: per server, [metrics.Sample].RereadTokens (the prompt tokens the server
// processed again: prompt − cached tokens) over the request index, so that where the lines part
// the servers' caches diverged at different places of the same history.
//
// The x axis is the request index (0-based); the y axis counts tokens of each server's
// tokenizer, from 0, labelled with SI suffixes. With several repetitions each point is the mean
// and a light band the minimum to maximum. A request whose re-read is unknown (null: its cached
// tokens are unknown) leaves a gap, as do requests with no prompt tokens. It returns
// [ErrNoSamples] when no line has a known re-read in the scenario and arm.
func ServerReread(scenario, arm string, lines []ServerLine) (*plot.Plot, error) {
	s := series{}
	known := false
	for _, l := range lines {
		seqs := sequences(scenario, l.Rows)
		for k := range seqs {
			if k.arm != arm {
				delete(seqs, k)
			}
		}
		pts := collect(seqs, perSample(func(x *metrics.Sample) (float64, bool) {
			v, ok := metrics.Int64(x.RereadTokens)
			return float64(v), ok
		}))[arm]
		known = known || len(pts) > 0
		s[l.Name] = pts
	}
	if !known {
		return nil, fmt.Errorf("plot re-read tokens per server of scenario %q, arm %q: %w", scenario, arm, ErrNoSamples)
	}
	return tokenChart(fmt.Sprintf("%s, arm %s: re-read tokens per request, per server", scenario, arm), "re-read tokens", s, nil)
}
