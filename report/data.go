package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"lab/metrics"
	"lab/stats"
)

// CSV writes one row per scenario×arm after a header row: the means over repetitions with the
// ends of their 95 % intervals, the comparison with the spec arm and the re-read tokens by
// segment kind. Columns (tokens, seconds, shares in 0–1, dollars): scenario, arm, repetitions,
// requests, prompt_tokens, cached_tokens, cached_unknown (requests, pooled over repetitions),
// expected_cached_tokens, reread_tokens, reread_tokens_lo, reread_tokens_hi,
// reread_<segment>_tokens for each of [SegmentNames], prefill_s, prefill_s_lo, prefill_s_hi,
// cached_share, cache_efficiency, reread_vs_spec, reread_vs_spec_lo, reread_vs_spec_hi,
// reread_diff_vs_spec, reread_diff_vs_spec_lo, reread_diff_vs_spec_hi, cost_usd,
// expected_unknown (requests whose expected cached tokens are unknown, pooled; they are left
// out of expected_cached_tokens, the reread_<segment>_tokens and cache_efficiency), setup (the
// label of the setup whose runs the row pools, [SetupInfo]; runs of several setups have rows
// of their own per setup, never pooled; "" without manifests), prefill_comparable ("false"
// when a run of the row failed the prefill check, [PrefillCheck]: its prefill_s cells are then
// empty; "true"; "" without prefill times). A value that
// does not exist (an interval with one repetition, a comparison without a spec arm, an unknown
// count) is an empty cell. It returns an error for a report without analysis or runs and any
// error writing to w (one Write call).
func CSV(w io.Writer, r *Report) error {
	if err := check(r, "csv"); err != nil {
		return err
	}
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	head := []string{"scenario", "arm", "repetitions", "requests", "prompt_tokens", "cached_tokens", "cached_unknown",
		"expected_cached_tokens", "reread_tokens", "reread_tokens_lo", "reread_tokens_hi"}
	for _, s := range SegmentNames {
		head = append(head, "reread_"+s+"_tokens")
	}
	head = append(head, "prefill_s", "prefill_s_lo", "prefill_s_hi", "cached_share", "cache_efficiency",
		"reread_vs_spec", "reread_vs_spec_lo", "reread_vs_spec_hi",
		"reread_diff_vs_spec", "reread_diff_vs_spec_lo", "reread_diff_vs_spec_hi", "cost_usd", "expected_unknown",
		"prompt_unknown", "reread_unknown", "prefill_unknown", "setup", "prefill_comparable")
	_ = cw.Write(head)
	for _, g := range r.Analysis.Groups() {
		label := ""
		if g.Setup != nil {
			label = g.Setup.Label
		}
		bad := g.Claims.prefillNotComparable()
		for _, sc := range g.Scenarios {
			for _, st := range sc.Arms {
				comparable := prefillComparable(st, bad)
				row := []string{sc.Scenario, st.Arm, strconv.Itoa(len(st.Reps)), mean(st.Requests), mean(st.PromptTokens),
					mean(st.CachedTokens), strconv.Itoa(st.Pooled.CachedUnknown), mean(st.ExpectedCachedTokens)}
				row = append(row, withEnds(st.RereadTokens)...)
				for _, e := range st.Reread {
					row = append(row, mean(e))
				}
				if comparable == "false" {
					row = append(row, "", "", "") // no conclusion from these prefill times
				} else {
					row = append(row, withEnds(st.PrefillSeconds)...)
				}
				row = append(row, mean(st.CachedShare), mean(st.Efficiency))
				if v := st.VsSpec; v != nil {
					row = append(row, num(finite(v.RereadRatio.Value)), lo(v.RereadRatio.CI), hi(v.RereadRatio.CI))
					row = append(row, withEnds(v.RereadDiff)...)
				} else {
					row = append(row, "", "", "", "", "", "")
				}
				if st.CostUSD != nil {
					row = append(row, mean(*st.CostUSD))
				} else {
					row = append(row, "")
				}
				row = append(row, strconv.Itoa(st.Pooled.ExpectedUnknown), strconv.Itoa(st.Pooled.PromptUnknown),
					strconv.Itoa(st.Pooled.RereadUnknown), strconv.Itoa(st.Pooled.PrefillUnknown), label, comparable)
				_ = cw.Write(row)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv report: %w", err)
	}
	return write(w, "csv", b.Bytes())
}

func num(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

func mean(e stats.Estimate) string {
	if e.N == 0 {
		return ""
	}
	return num(&e.Mean)
}

func lo(ci *stats.Interval) string {
	if ci == nil {
		return ""
	}
	return num(&ci.Lo)
}

func hi(ci *stats.Interval) string {
	if ci == nil {
		return ""
	}
	return num(&ci.Hi)
}

func withEnds(e stats.Estimate) []string { return []string{mean(e), lo(e.CI), hi(e.CI)} }

// JSON writes the report as one indented JSON object: "runs" (the manifests, as in a run's
// manifest files; a run split into shards as its parts' manifests merged, metrics.MergeParts),
// "analysis" (the [Analysis] with its json field names) and "figures" (scenario,
// title and files of each figure, without the SVG). Ratios that do not exist are null. It
// returns an error for a report without analysis or runs and any error writing to w.
func JSON(w io.Writer, r *Report) error {
	if err := check(r, "json"); err != nil {
		return err
	}
	type figure struct {
		Scenario string            `json:"scenario"`
		Title    string            `json:"title"`
		Files    map[string]string `json:"files"`
	}
	figs := make([]figure, len(r.Figures))
	for i, f := range r.Figures {
		figs[i] = figure{f.Scenario, f.Title, f.Files}
	}
	data, err := json.MarshalIndent(struct {
		Runs     []*metrics.Manifest `json:"runs"`
		Analysis *Analysis           `json:"analysis"`
		Figures  []figure            `json:"figures"`
	}{r.Runs, r.Analysis, figs}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode json report: %w", err)
	}
	return write(w, "json", append(data, '\n'))
}

// prefillComparable says whether the prefill seconds of st may be read ([PrefillCheck]): "false"
// when a repetition is of a run in bad (the runs whose check failed), "" when st has no
// prefill time, else "true".
func prefillComparable(st ArmStats, bad map[string]bool) string {
	if st.PrefillSeconds.N == 0 {
		return ""
	}
	if anyRunIn(st.Reps, bad) {
		return "false"
	}
	return "true"
}

// BenchName is the benchmark name of the benchfmt lines: BenchmarkLab/scenario=S/arm=A.
const BenchName = "BenchmarkLab"

// Benchfmt writes the report in the Go benchmark data format (golang.org/design/14313-benchmark-format),
// so that `benchstat old.txt new.txt` compares two runs. It writes:
//
//   - configuration lines "backend: B" and "model: M" when every run has the same value (values
//     that differ between the two files would make benchstat put them in separate tables, so no
//     run id or version is written);
//   - unit metadata lines "Unit cached-tokens better=higher" and "Unit expected-cached-tokens
//     better=higher" (the other units are better lower, benchstat's default), each when a line
//     uses the unit;
//   - one result line per scenario×arm×repetition (and setup: when the runs are of several
//     setups, [SetupInfo], the name ends in "/setup=<label>", so that benchstat never takes two
//     setups for samples of one benchmark), for example
//     "BenchmarkLab/scenario=midnight/arm=spec 48 728063 prompt-tokens 678347 cached-tokens
//     678000 expected-cached-tokens 49716 reread-tokens 107600000000 prefill-ns": the name with
//     the scenario and arm as sub-name keys, the number of requests as iterations, then value–unit
//     pairs, totals of the repetition. Each unit is left out when a request of the repetition
//     lacks the figure (a sum short of a request is no sample): prompt-tokens, cached-tokens,
//     reread-tokens, expected-cached-tokens (a cloud API shows no rendering), prefill-ns (also
//     when the run failed the prefill check, [PrefillCheck]: its prefill times draw no
//     conclusion) and cost-usd; a repetition left with no unit has no line.
//
// Repetitions with the same name are samples of one benchmark for benchstat. The format splits
// a name into parts at "/" and ends it at a space, so each scenario and arm name is escaped
// with [BenchNamePart]. An arm name ending in "-<digits>" would be read by benchstat as a
// GOMAXPROCS suffix; the lab's arms have none. It returns an error for a report without
// analysis or runs and any error writing to w (one Write call).
func Benchfmt(w io.Writer, r *Report) error {
	if err := check(r, "benchfmt"); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, kv := range []struct {
		key string
		get func(*metrics.Manifest) string
	}{
		{"backend", func(m *metrics.Manifest) string { return m.Backend }},
		{"model", func(m *metrics.Manifest) string { return m.Model }},
	} {
		v := kv.get(r.Runs[0])
		same := v != "" && !strings.ContainsAny(v, "\n")
		for _, m := range r.Runs[1:] {
			same = same && kv.get(m) == v
		}
		if same {
			fmt.Fprintf(&b, "%s: %s\n", kv.key, v)
		}
	}
	var lines bytes.Buffer
	cachedUnit, expectedUnit := false, false
	groups := r.Analysis.Groups()
	for _, g := range groups {
		setup := ""
		if len(groups) > 1 {
			setup = "/setup=" + BenchNamePart(g.Setup.Label)
		}
		bad := g.Claims.prefillNotComparable()
		for _, sc := range g.Scenarios {
			for _, st := range sc.Arms {
				for _, t := range st.Reps {
					// Each unit only where every request of the repetition has the figure: a
					// sum short of a request is not a sample benchstat can compare.
					var b bytes.Buffer
					if t.PromptUnknown == 0 {
						fmt.Fprintf(&b, " %d prompt-tokens", t.PromptTokens)
					}
					if t.CachedUnknown == 0 {
						fmt.Fprintf(&b, " %d cached-tokens", t.CachedTokens)
						cachedUnit = true
					}
					if t.ExpectedUnknown == 0 {
						fmt.Fprintf(&b, " %d expected-cached-tokens", t.ExpectedCachedTokens)
						expectedUnit = true
					}
					if t.RereadUnknown == 0 {
						fmt.Fprintf(&b, " %d reread-tokens", t.RereadTokens)
					}
					if t.PrefillKnown == t.Requests && !bad[t.RunID] {
						fmt.Fprintf(&b, " %d prefill-ns", t.PrefillNs)
					}
					if t.CostUSD != nil && t.CostKnown == t.Requests {
						fmt.Fprintf(&b, " %s cost-usd", strconv.FormatFloat(*t.CostUSD, 'g', -1, 64))
					}
					if b.Len() == 0 {
						continue // nothing of the repetition was measured
					}
					fmt.Fprintf(&lines, "%s/scenario=%s/arm=%s%s %d%s\n", BenchName, BenchNamePart(sc.Scenario), BenchNamePart(st.Arm), setup, t.Requests, b.String())
				}
			}
		}
	}
	if cachedUnit {
		b.WriteString("Unit cached-tokens better=higher\n")
	}
	if expectedUnit {
		b.WriteString("Unit expected-cached-tokens better=higher\n")
	}
	b.Write(lines.Bytes())
	return write(w, "benchfmt", b.Bytes())
}

// BenchNamePart escapes a scenario or arm name for a part of a benchmark name: the Go benchmark
// format (golang.org/design/14313-benchmark-format) splits a name into parts at "/", ends it at
// white space and reads "key=value" in each part, so "/", "%", "=", white space and other bytes
// outside printable ASCII are written as "%XX" (percent-encoding, upper-case hex). A name of
// letters, digits, "-", "_" and "." is returned as is.
func BenchNamePart(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '/' || c == '%' || c == '=' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
