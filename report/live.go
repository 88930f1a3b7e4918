package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"lab/metrics"
	"lab/stats"
)

// LiveMetric is one figure the live table compares arms on, summed or averaged per repetition.
type LiveMetric struct {
	// Name is the figure's column name, Unit its unit.
	Name, Unit string
	// Estimate is the mean over repetitions with its 95 % confidence interval.
	Estimate stats.Estimate
	// VsSpec is the paired difference arm − spec over the repetitions both ran, with its t
	// interval; nil for the spec arm, or when the spec arm was not run.
	VsSpec *stats.Estimate
	// Unknown is the number of requests whose figure is unknown (null: the server did not count
	// the reasoning, the cached tokens are unknown), left out of the sums, not counted as 0.
	Unknown int
}

// LiveRow is one scenario × arm of a live run: what the model did when it decided.
type LiveRow struct {
	Scenario, Arm string
	// Repetitions is the number of repetitions (sessions) the row covers.
	Repetitions int
	// Metrics are, in order: reasoning tokens generated per session, repeated calls per session
	// (requests whose reply repeated a call of the session), steps per turn (step requests per
	// user turn, the steps to finish), and re-read tokens per session.
	Metrics []LiveMetric
	// EndReasons counts the turns by why they ended (metrics.EndAnswered, ...), over every
	// repetition.
	EndReasons map[string]int
}

// liveReasoningGenerated is the name of the live table's figure of reasoning tokens generated.
const liveReasoningGenerated = "reasoning generated"

// LiveTable returns one row per scenario × arm from the samples of live sessions (driver
// "live"; other samples are left out), arms in display order (spec first). A repetition is a
// run id and repetition number, so repetitions of several runs stay apart. Empty when no sample
// is live.
func LiveTable(samples []metrics.Sample) []LiveRow { return liveTable(metrics.RowsOf(samples)) }

// liveTable is [LiveTable] of the rows of tab.
func liveTable(tab *metrics.Rows) []LiveRow {
	type key struct{ scenario, arm string }
	type rep struct {
		reasoning, repeated, reread float64
		turns                       map[int32]bool
		steps                       float64
	}
	type unknown struct{ reasoning, reread int }
	unknowns := map[key]*unknown{}
	reps := map[key]map[stats.RepKey]*rep{}
	ends := map[key]map[string]int{}
	for _, s := range tab.All() {
		if s.Driver != metrics.DriverLive {
			continue
		}
		k := key{s.Scenario, s.Arm}
		if reps[k] == nil {
			reps[k], ends[k] = map[stats.RepKey]*rep{}, map[string]int{}
		}
		rk := stats.RepKey{RunID: s.RunID, Repetition: s.Repetition}
		r := reps[k][rk]
		if r == nil {
			r = &rep{turns: map[int32]bool{}}
			reps[k][rk] = r
		}
		u := unknowns[k]
		if u == nil {
			u = &unknown{}
			unknowns[k] = u
		}
		if v, ok := metrics.Int64(s.ReasoningTokensGenerated); ok {
			r.reasoning += float64(v)
		} else {
			u.reasoning++
		}
		if v, ok := rereadOf(s); ok {
			r.reread += float64(v)
		} else {
			u.reread++
		}
		if s.RepeatedCall {
			r.repeated++
		}
		if s.Kind == metrics.KindStep {
			r.steps++
			r.turns[s.Turn] = true
		}
		if s.EndReason != "" {
			ends[k][s.EndReason]++
		}
	}
	figures := []struct {
		name, unit string
		f          func(*rep) float64
		unknown    func(*unknown) int
	}{
		{liveReasoningGenerated, "tokens", func(r *rep) float64 { return r.reasoning }, func(u *unknown) int { return u.reasoning }},
		{"repeated calls", "requests", func(r *rep) float64 { return r.repeated }, nil},
		{"steps per turn", "steps", func(r *rep) float64 { return r.steps / float64(max(len(r.turns), 1)) }, nil},
		{"re-read", "tokens", func(r *rep) float64 { return r.reread }, func(u *unknown) int { return u.reread }},
	}
	keys := make([]key, 0, len(reps))
	for k := range reps {
		keys = append(keys, k)
	}
	rank := func(arm string) int {
		if arm == metrics.SpecArm {
			return 0
		}
		return 1
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.scenario, b.scenario); c != 0 {
			return c
		}
		if c := rank(a.arm) - rank(b.arm); c != 0 {
			return c
		}
		return strings.Compare(a.arm, b.arm)
	})
	perRep := func(k key, f func(*rep) float64) map[stats.RepKey]float64 {
		out := map[stats.RepKey]float64{}
		for rk, r := range reps[k] {
			out[rk] = f(r)
		}
		return out
	}
	var rows []LiveRow
	for _, k := range keys {
		row := LiveRow{Scenario: k.scenario, Arm: k.arm, Repetitions: len(reps[k]), EndReasons: ends[k]}
		_, hasSpec := reps[key{k.scenario, metrics.SpecArm}]
		for _, fig := range figures {
			vals := perRep(k, fig.f)
			var xs []float64
			var rks []stats.RepKey
			for rk := range vals {
				rks = append(rks, rk)
			}
			slices.SortFunc(rks, stats.RepKey.Compare)
			for _, rk := range rks {
				xs = append(xs, vals[rk])
			}
			m := LiveMetric{Name: fig.name, Unit: fig.unit, Estimate: stats.MeanCI(xs)}
			if fig.unknown != nil {
				m.Unknown = fig.unknown(unknowns[k])
			}
			if hasSpec && k.arm != metrics.SpecArm {
				b, n, _ := stats.Pair(perRep(key{k.scenario, metrics.SpecArm}, fig.f), vals)
				if len(b) > 0 {
					if d, err := stats.PairedDiff(b, n); err == nil {
						m.VsSpec = &d
					}
				}
			}
			row.Metrics = append(row.Metrics, m)
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteLiveMarkdown writes the live table as a markdown section: a heading, one table with a
// row per scenario × arm (each figure's mean with its 95 % interval, and the paired difference to
// spec), and how the turns ended. It writes nothing for no rows.
func WriteLiveMarkdown(w io.Writer, rows []LiveRow) error {
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("## Live sessions: what the model did\n\n")
	b.WriteString("The model decided every step (`--driver live`). Per session, mean over repetitions [95 % CI]; Δ spec is the paired difference to the spec arm [95 % CI].\n\n")
	head := []string{"scenario", "arm", "n"}
	for _, m := range rows[0].Metrics {
		head = append(head, fmt.Sprintf("%s (%s)", m.Name, m.Unit), "Δ spec")
	}
	head = append(head, "turns ended")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(head)) + "\n")
	for _, r := range rows {
		cells := []string{r.Scenario, r.Arm, fmt.Sprint(r.Repetitions)}
		for _, m := range r.Metrics {
			cells = append(cells, liveEstimate(m.Estimate), "–")
			if m.VsSpec != nil {
				cells[len(cells)-1] = liveEstimate(*m.VsSpec)
			}
		}
		reasons := make([]string, 0, len(r.EndReasons))
		for name, n := range r.EndReasons {
			reasons = append(reasons, fmt.Sprintf("%s %d", name, n))
		}
		slices.Sort(reasons)
		cells = append(cells, strings.Join(reasons, ", "))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String()+"\n")
	return err
}

// liveEstimate writes a mean with its interval: "12.5 [10.1, 14.9]", or the mean alone when
// there is no interval (one repetition).
func liveEstimate(e stats.Estimate) string {
	if e.CI == nil {
		return fmt.Sprintf("%.4g", e.Mean)
	}
	return fmt.Sprintf("%.4g [%.4g, %.4g]", e.Mean, e.CI.Lo, e.CI.Hi)
}
