package report

import (
	"slices"
	"strings"

	"lab/metrics"
)

// PrefillSpreadLimit is how far apart, as a factor, the arms of one run may lie in prefill
// seconds per re-read token before the report calls the run's prefill times not comparable
// (2×). The arms of a run send their requests to one server on one machine, so a re-read token
// costs them about the same; a wider spread means the machine was busy with something else
// during part of the run, or a server setting changed between arms, and a prefill time would
// then contradict the token counts. A re-read token late in a long prompt costs more than one
// early (attention), but on the lab's scenarios that moves the arms apart by about 10 % (a cost
// per position fitted to the prefill times of the local server's notes), far below 2×.
const PrefillSpreadLimit = 2.0

// PrefillCheck is the prefill sanity check of one run: each arm's prefill seconds per re-read
// token, and whether the arms agree within [PrefillSpreadLimit].
type PrefillCheck struct {
	// RunID is the run checked.
	RunID string `json:"run_id"`
	// Setup describes what the run ran on, from its manifest: server, model, the settings that
	// change prefill speed and the host with its load average; "" without a manifest.
	Setup string `json:"setup,omitempty"`
	// Modelled is the prefill model of a sim run (its manifest's prefill setting, for example
	// "300µs per token (placeholder)"; "modelled" when the manifest does not say): its prefill
	// times are computed from the re-read tokens, not measured. "" for a measured run.
	Modelled string `json:"modelled,omitempty"`
	// Arms holds each arm with at least one request whose prefill time and re-read tokens are
	// both known, in the order of [metrics.SortArms].
	Arms []ArmPrefill `json:"arms"`
	// Spread is the largest arm's seconds per re-read token over the smallest's; nil with fewer
	// than two arms that re-read anything.
	Spread *float64 `json:"spread,omitempty"`
	// Comparable is false when Spread exceeds [PrefillSpreadLimit]: the report then draws no
	// conclusion from this run's prefill times (it keeps its token figures).
	Comparable bool `json:"comparable"`
}

// ArmPrefill is one arm's prefill time against its re-read tokens, summed over the requests of
// a run (every scenario and repetition) whose prefill time and re-read tokens are both known.
type ArmPrefill struct {
	Arm string `json:"arm"`
	// Requests is the number of requests summed.
	Requests int `json:"requests"`
	// RereadTokens is the sum of their re-read tokens; PrefillNs the sum of their prefill
	// times, in nanoseconds.
	RereadTokens int64 `json:"reread_tokens"`
	PrefillNs    int64 `json:"prefill_ns"`
	// SecondsPerToken is PrefillNs / RereadTokens in seconds per token; nil when the arm
	// re-read nothing.
	SecondsPerToken *float64 `json:"seconds_per_token"`
}

// prefillChecks checks every run of samples, sorted by run id. runs gives the manifests (may be
// nil, or lack a run): a run is a sim run when its manifest's backend, or else its rows'
// backend, is "sim".
func prefillChecks(rows *metrics.Rows, runs []*metrics.Manifest) []PrefillCheck {
	type key struct{ run, arm string }
	sums := map[key]*ArmPrefill{}
	sim := map[string]bool{}
	var ids []string
	for _, s := range rows.All() {
		p, okP := prefillOf(s)
		r, okR := rereadOf(s)
		if !okP || !okR {
			continue
		}
		k := key{s.RunID, s.Arm}
		a := sums[k]
		if a == nil {
			a = &ArmPrefill{Arm: s.Arm}
			sums[k] = a
			if !slices.Contains(ids, s.RunID) {
				ids = append(ids, s.RunID)
			}
		}
		a.Requests++
		a.RereadTokens += r
		a.PrefillNs += p
		sim[s.RunID] = sim[s.RunID] || s.Backend == "sim"
	}
	slices.Sort(ids)
	var out []PrefillCheck
	for _, id := range ids {
		c := PrefillCheck{RunID: id, Comparable: true}
		m := manifestOf(runs, id)
		if m != nil {
			c.Setup = setupOf(m)
			sim[id] = m.Backend == "sim"
		}
		if sim[id] {
			c.Modelled = "modelled"
			if m != nil && m.Settings["prefill"] != "" {
				c.Modelled = m.Settings["prefill"]
			}
		}
		var arms []string
		for k := range sums {
			if k.run == id {
				arms = append(arms, k.arm)
			}
		}
		metrics.SortArms(arms)
		lo, hi := 0.0, 0.0
		n := 0
		for _, arm := range arms {
			a := *sums[key{id, arm}]
			if a.RereadTokens > 0 {
				v := float64(a.PrefillNs) / 1e9 / float64(a.RereadTokens)
				a.SecondsPerToken = &v
				if n == 0 || v < lo {
					lo = v
				}
				if n == 0 || v > hi {
					hi = v
				}
				n++
			}
			c.Arms = append(c.Arms, a)
		}
		if n >= 2 {
			c.Spread = new(hi / lo)
			c.Comparable = *c.Spread <= PrefillSpreadLimit
		}
		out = append(out, c)
	}
	return out
}

// manifestOf returns the manifest of run id among runs; nil when there is none.
func manifestOf(runs []*metrics.Manifest, id string) *metrics.Manifest {
	for _, m := range runs {
		if m != nil && m.RunID == id {
			return m
		}
	}
	return nil
}

// setupOf describes what a run ran on, for the prefill check: the backend and server version,
// the model, the manifest's settings that change the prefill speed (Ollama's flash attention, a
// generic build) and, where the manifest records it, the host (CPU model, logical cores, OS and
// architecture, load average at the start and end: a busy machine is what the check most often
// finds).
func setupOf(m *metrics.Manifest) string {
	parts := []string{orDash(m.Backend) + " " + orDash(m.ServerVersion), "model " + orDash(m.Model)}
	for _, k := range []string{"ollama_flash_attention", "generic_build"} {
		if v := m.Settings[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	if m.Host != nil {
		parts = append(parts, "host "+strings.TrimPrefix(hostFacts(m.Host), "Host: "))
	}
	return strings.Join(parts, ", ")
}

// anyRunIn reports whether one of reps is of a run whose id is in runs.
func anyRunIn(reps []RepTotals, runs map[string]bool) bool {
	for _, t := range reps {
		if runs[t.RunID] {
			return true
		}
	}
	return false
}

// prefillNotComparable returns the ids of the runs whose prefill times are not comparable
// ([PrefillCheck].Comparable false).
func (c *Claims) prefillNotComparable() map[string]bool {
	out := map[string]bool{}
	for _, p := range c.Prefill {
		if !p.Comparable {
			out[p.RunID] = true
		}
	}
	return out
}
