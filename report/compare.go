package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"lab/stats"
)

// CompareMetric is one figure [Compare] sets side by side, per repetition.
type CompareMetric struct {
	// Name is the metric's name in tables and JSON, for example "reread_tokens".
	Name string
	// HigherIsBetter says which way is an improvement.
	HigherIsBetter bool
	// format formats a value for people.
	format func(float64) string
	// value returns a repetition's value; false when it has none.
	value func(*RepTotals) (float64, bool)
}

// CompareMetrics are the metrics [Compare] compares: re-read tokens (lower is better), cached
// share of the prompt (higher), prefill seconds (lower) and cache efficiency (higher).
func CompareMetrics() []CompareMetric {
	return []CompareMetric{
		{Name: "reread_tokens", format: tok, value: reread},
		{Name: "cached_share", HigherIsBetter: true, format: pct, value: func(t *RepTotals) (float64, bool) { v := t.CachedShare(); return deref(v), v != nil }},
		{Name: "prefill_seconds", format: seconds, value: (*RepTotals).PrefillSeconds},
		{Name: "cache_efficiency", HigherIsBetter: true, format: pct, value: func(t *RepTotals) (float64, bool) { v := t.Efficiency(); return deref(v), v != nil }},
	}
}

// Change is one metric of one scenario×arm in an old and a new run.
type Change struct {
	Scenario string `json:"scenario"`
	Arm      string `json:"arm"`
	Metric   string `json:"metric"`
	// Old and New are the means over each run's repetitions with their intervals.
	Old stats.Estimate `json:"old"`
	New stats.Estimate `json:"new"`
	// Delta is mean(new) − mean(old) with Welch's 95 % interval (the runs' repetitions are
	// independent, not paired); no interval unless both have 2 repetitions or more.
	Delta stats.Estimate `json:"delta"`
	// Relative is Delta.Mean / |mean(old)|; nil when the old mean is 0 (then any worsening
	// counts as beyond the threshold).
	Relative *float64 `json:"relative"`
	// Regression is true when the new run is worse than the old by more than the threshold
	// and, when both have an interval, Welch's interval lies entirely on the worse side of 0.
	Regression bool `json:"regression"`
	// NotComparable is true for prefill seconds when a repetition of either side is of a run
	// whose prefill times are not comparable between its arms ([PrefillCheck]: a busy machine):
	// the change is shown, and is never a regression.
	NotComparable bool `json:"not_comparable,omitempty"`

	format func(float64) string
}

// Comparison is [Compare]'s result.
type Comparison struct {
	// Threshold is the relative worsening tolerated, for example 0.05 for 5 %.
	Threshold float64 `json:"threshold"`
	// Changes holds one entry per scenario×arm both runs have and metric both have values
	// for, scenarios by name, arms in [metrics.SortArms] order, metrics in [CompareMetrics]
	// order.
	Changes []Change `json:"changes"`
	// OnlyOld and OnlyNew name the scenario×arm pairs ("scenario/arm") one run lacks. A pair
	// the old run has and the new one lacks (not run, or every session of it left out as
	// incomplete) is a regression: the new run lost what the old one measured.
	OnlyOld []string `json:"only_old,omitempty"`
	OnlyNew []string `json:"only_new,omitempty"`
	// Regressions is the number of changes flagged as regressions plus the pairs of OnlyOld.
	Regressions int `json:"regressions"`
	// SetupChanges names each difference of setup or scenario content between the runs
	// ([metrics.SetupDiff]: "backend ollama vs sim", "scenario midnight content sha256:… vs
	// sha256:…"), set by the caller when it compares them anyway because the difference is the
	// point (lab compare --allow-setup-change); empty when the runs are of one setup.
	SetupChanges []string `json:"setup_changes,omitempty"`
	// Unverified names what neither run recorded, so that the comparison could not check it is
	// the same ("model file digest", "scenario midnight content").
	Unverified []string `json:"unverified,omitempty"`
	// Notes are differences that are not of setup but may explain a change of prefill times:
	// the hosts, the tags.
	Notes []string `json:"notes,omitempty"`
}

// Compare sets two analyses side by side per scenario×arm on [CompareMetrics] and flags
// regressions: the new run worse than the old by more than threshold (a share: 0.05 = 5 %)
// and, when both runs have at least 2 repetitions, beyond Welch's 95 % interval of the
// difference. A scenario×arm of old that next lacks counts as a regression too. Prefill seconds
// of a run whose prefill times are not comparable between its arms ([PrefillCheck]) are marked
// [Change].NotComparable and are never a regression. A nil analysis
// counts as empty.
func Compare(old, next *Analysis, threshold float64) *Comparison {
	c := &Comparison{Threshold: threshold}
	index := func(a *Analysis) map[string]*ArmStats {
		m := map[string]*ArmStats{}
		if a == nil {
			return m
		}
		for i := range a.Scenarios {
			for j := range a.Scenarios[i].Arms {
				m[a.Scenarios[i].Scenario+"/"+a.Scenarios[i].Arms[j].Arm] = &a.Scenarios[i].Arms[j]
			}
		}
		return m
	}
	om, nm := index(old), index(next)
	// The runs whose prefill times draw no conclusion.
	bad := map[string]bool{}
	for _, a := range []*Analysis{old, next} {
		if a != nil {
			for id := range a.Claims.prefillNotComparable() {
				bad[id] = true
			}
		}
	}
	notComparable := func(sts ...*ArmStats) bool {
		for _, st := range sts {
			if anyRunIn(st.Reps, bad) {
				return true
			}
		}
		return false
	}
	if old != nil {
		for _, sc := range old.Scenarios {
			for i := range sc.Arms {
				k := sc.Scenario + "/" + sc.Arms[i].Arm
				ns, ok := nm[k]
				if !ok {
					c.OnlyOld = append(c.OnlyOld, k)
					c.Regressions++
					continue
				}
				for _, m := range CompareMetrics() {
					ch, ok := compareArm(m, &sc.Arms[i], ns, threshold)
					if !ok {
						continue
					}
					ch.Scenario, ch.Arm = sc.Scenario, sc.Arms[i].Arm
					if m.Name == "prefill_seconds" && notComparable(&sc.Arms[i], ns) {
						ch.NotComparable, ch.Regression = true, false
					}
					if ch.Regression {
						c.Regressions++
					}
					c.Changes = append(c.Changes, ch)
				}
			}
		}
	}
	if next != nil {
		for _, sc := range next.Scenarios {
			for _, st := range sc.Arms {
				if k := sc.Scenario + "/" + st.Arm; om[k] == nil {
					c.OnlyNew = append(c.OnlyNew, k)
				}
			}
		}
	}
	return c
}

func compareArm(m CompareMetric, old, next *ArmStats, threshold float64) (Change, bool) {
	values := func(st *ArmStats) []float64 {
		var xs []float64
		for i := range st.Reps {
			if v, ok := m.value(&st.Reps[i]); ok {
				xs = append(xs, v)
			}
		}
		return xs
	}
	o, n := values(old), values(next)
	if len(o) == 0 || len(n) == 0 {
		return Change{}, false
	}
	ch := Change{Metric: m.Name, Old: stats.MeanCI(o), New: stats.MeanCI(n), Delta: stats.WelchDiff(o, n), format: m.format}
	worse := ch.Delta.Mean // > 0 is worse
	if m.HigherIsBetter {
		worse = -worse
	}
	beyond := false
	if ch.Old.Mean != 0 {
		ch.Relative = new(ch.Delta.Mean / math.Abs(ch.Old.Mean))
		beyond = worse/math.Abs(ch.Old.Mean) > threshold
	} else {
		beyond = worse > 0
	}
	if ci := ch.Delta.CI; beyond && ci != nil {
		if m.HigherIsBetter {
			beyond = ci.Hi < 0
		} else {
			beyond = ci.Lo > 0
		}
	}
	ch.Regression = beyond
	return ch, true
}

// CompareFormats returns the formats [Comparison.Write] knows: text, markdown, json.
func CompareFormats() []string { return []string{"text", "markdown", "json"} }

// Write writes the comparison to w as format: "text" (aligned columns), "markdown" (a table)
// or "json" (indented). It wraps [ErrUnknownFormat] for another format and returns any error
// writing to w (one Write call).
func (c *Comparison) Write(w io.Writer, format string) error {
	var b bytes.Buffer
	head := []string{"scenario", "arm", "metric", "old", "new", "change", ""}
	rows := make([][]string, len(c.Changes))
	for i, ch := range c.Changes {
		f := ch.format
		change := "—"
		if ch.Relative != nil {
			change = fmt.Sprintf("%+.1f%%", 100**ch.Relative)
			if change == "+0.0%" || change == "-0.0%" {
				change = "0.0%" // a change that rounds to nothing has no sign
			}
		} else if ch.Delta.Mean != 0 {
			change = "new"
		} else {
			change = "0.0%"
		}
		flag := ""
		switch {
		case ch.Regression:
			flag = "REGRESSION"
		case ch.NotComparable:
			flag = notComparable + " (prefill check)"
		}
		rows[i] = []string{ch.Scenario, ch.Arm, ch.Metric, estimate(ch.Old, f), estimate(ch.New, f), change, flag}
	}
	summary := fmt.Sprintf("%d regressions beyond %s (and beyond the 95 %% interval where both runs have 2 or more repetitions).",
		c.Regressions-len(c.OnlyOld), strconv.FormatFloat(100*c.Threshold, 'f', -1, 64)+" %")
	if n := len(c.OnlyOld); n > 0 {
		summary += fmt.Sprintf(" %d scenario×arm pair%s of the old run missing from the new run, each a regression.", n, plural(n))
	}
	only := func(label string, ks []string) string {
		if len(ks) == 0 {
			return ""
		}
		return fmt.Sprintf("%s: %s.", label, strings.Join(ks, ", "))
	}
	missing := "only in the old run (missing from the new run: REGRESSION)"
	var about, after []string // what the reader must know before the figures, and beside them
	if len(c.SetupChanges) > 0 {
		about = append(about, "The runs differ in setup, compared because the difference is the point: "+strings.Join(c.SetupChanges, "; ")+".")
	}
	if len(c.Unverified) > 0 {
		after = append(after, "Not recorded by either run, so not checked to be the same: "+strings.Join(c.Unverified, "; ")+".")
	}
	if len(c.Notes) > 0 {
		after = append(after, "Also differs (not part of the setup): "+strings.Join(c.Notes, "; ")+".")
	}
	switch format {
	case "text":
		for _, s := range about {
			b.WriteString(s + "\n")
		}
		if len(about) > 0 {
			b.WriteString("\n")
		}
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		_ = tw.Flush()
		for _, s := range append([]string{only(missing, c.OnlyOld), only("only in the new run", c.OnlyNew), summary}, after...) {
			if s != "" {
				b.WriteString(s + "\n")
			}
		}
	case "markdown":
		for _, s := range about {
			b.WriteString(escapeHTML(s) + "\n\n")
		}
		b.WriteString("| scenario | arm | metric | old | new | change | |\n|---|---|---|--:|--:|--:|---|\n")
		for _, r := range rows {
			for i := range r {
				r[i] = cell(r[i])
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
		}
		for _, s := range append([]string{only("Only in the old run (missing from the new run: REGRESSION)", c.OnlyOld), only("Only in the new run", c.OnlyNew), summary}, after...) {
			if s != "" {
				b.WriteString("\n" + escapeHTML(s) + "\n")
			}
		}
	case "json":
		data, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return fmt.Errorf("encode comparison: %w", err)
		}
		b.Write(append(data, '\n'))
	default:
		return fmt.Errorf("comparison format %q: %w (want one of %s)", format, ErrUnknownFormat, strings.Join(CompareFormats(), ", "))
	}
	return write(w, "comparison", b.Bytes())
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
