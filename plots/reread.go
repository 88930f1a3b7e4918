package plots

import (
	"fmt"

	"gonum.org/v1/plot"

	"lab/metrics"
)

// CumulativeReread builds the chart "re-read tokens, cumulative" for one scenario: per arm, the
// running total of [metrics.Sample].RereadTokens (the prompt tokens the server processed again)
// over the request index, so that the arm with the steepest line is the one that re-reads most
// and the height at the last request is its total.
//
// The x axis is the request index (0-based); the y axis counts tokens of the served model's
// tokenizer, from 0, labelled with SI suffixes (20k, 1.5M). Arms are coloured, shaped and
// ordered as in [CachedShare]. The running total is taken per repetition, in request order; with
// several repetitions each point is the mean of those totals and a light band their minimum to
// maximum. Samples of other scenarios and requests with no prompt tokens (failed before the
// server counted them) are left out. A running total is known only as far as every request's
// re-read is: from the first request whose reread_tokens is unknown (null: its cached tokens are
// unknown) on, the arm's line stops, rather than count that request as 0. It returns
// [ErrNoSamples] when no sample of the scenario has prompt tokens.
func CumulativeReread(scenario string, samples []metrics.Sample) (*plot.Plot, error) {
	return CumulativeRereadRows(scenario, metrics.RowsOf(samples))
}

// CumulativeRereadRows is [CumulativeReread] of the rows of a [metrics.Rows].
func CumulativeRereadRows(scenario string, rows *metrics.Rows) (*plot.Plot, error) {
	seqs := sequences(scenario, rows)
	if len(seqs) == 0 {
		return nil, fmt.Errorf("plot cumulative re-read tokens of scenario %q: %w", scenario, ErrNoSamples)
	}
	s := collect(seqs, func(seq reqs) ([]float64, []bool) {
		vals, ok := make([]float64, seq.len()), make([]bool, seq.len())
		total, known := 0.0, true
		var b metrics.SampleBuf
		for i := range seq.len() {
			v, k := metrics.Int64(seq.at(i, &b).RereadTokens)
			known = known && k
			total += float64(v)
			vals[i], ok[i] = total, known
		}
		return vals, ok
	})
	return tokenChart(simTitle(seqs, fmt.Sprintf("%s: re-read tokens, cumulative per arm", scenario), "the lab's cache model, not a server"), "re-read tokens (cumulative)", s, seqs)
}

// PrefillTime builds the chart "prefill time per request" for one scenario: per arm, the time
// the server spent processing the prompt tokens it did not reuse ([metrics.Sample].PrefillNs, as
// the server reports it, for Ollama prompt_eval_duration), in seconds, over the request index.
//
// The x axis is the request index (0-based); the y axis is seconds, from 0. Arms are coloured,
// shaped and ordered as in [CachedShare]; with several repetitions each point is the mean and a
// light band the minimum to maximum. A prefill of 0 ns is taken as unknown (a server processes
// at least one token of every prompt; the sim backend without calibration reports none) and
// leaves a gap, as do requests with no prompt tokens; samples of other scenarios are left out.
// It returns [ErrNoSamples] when no sample of the scenario has a prefill time.
func PrefillTime(scenario string, samples []metrics.Sample) (*plot.Plot, error) {
	return PrefillTimeRows(scenario, metrics.RowsOf(samples))
}

// PrefillTimeRows is [PrefillTime] of the rows of a [metrics.Rows].
func PrefillTimeRows(scenario string, rows *metrics.Rows) (*plot.Plot, error) {
	seqs := sequences(scenario, rows)
	s := collect(seqs, perSample(func(s *metrics.Sample) (float64, bool) {
		return float64(s.PrefillNs) / 1e9, s.PrefillNs > 0
	}))
	if len(s) == 0 {
		return nil, fmt.Errorf("plot prefill time of scenario %q: %w", scenario, ErrNoSamples)
	}
	p := newChart(simTitle(seqs, fmt.Sprintf("%s: prefill time per request", scenario), "modelled from the token counts, not measured"), "request (0-based)", "prefill (s)")
	events := addSessionEvents(p, seqs)
	if _, _, err := lineChart(p, s.withArms(seqs)); err != nil {
		return nil, err
	}
	events.addLegend(p)
	p.Y.Min = 0
	return p, nil
}
