// Package rowdigest digests a run's rows session by session, for comparing two runs that should
// have written the same rows: the sim matrix's golden digests (cmd/lab TestSimMatrixRowsUnchanged)
// and the comparison of two builds' sim matrix (scripts/bench-sim-matrix). The columns that
// depend on the clock (started_at and the durations) and the run's id are left out.
package rowdigest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"lab/metrics"
)

// Sessions returns one line per session (scenario, arm, repetition, in that order): its row
// count, its summed prompt, cached and re-read tokens (to make a change readable) and the first
// 12 bytes of the SHA-256 of its rows' JSON in request order, in hex, with run_id, started_at and
// the durations (ttft, prefill, total, load, retry wait) and the scenario event (a label of the
// scenario's steps, not a figure, which builds before it lack) cleared, and the divergence
// excerpt cleared too unless keepExcerpt. An error is a row that does not encode as JSON.
func Sessions(samples []metrics.Sample, keepExcerpt bool) ([]byte, error) {
	type key struct {
		scenario, arm string
		rep           int32
	}
	type session struct {
		rows                     []metrics.Sample
		prompt, cached, rereadTk int64
	}
	sessions := map[key]*session{}
	for _, s := range samples {
		k := key{s.Scenario, s.Arm, s.Repetition}
		ss := sessions[k]
		if ss == nil {
			ss = &session{}
			sessions[k] = ss
		}
		s.RunID = ""
		s.StartedAt = time.Time{}
		s.TTFTNs, s.PrefillNs, s.TotalNs, s.LoadNs, s.RetryWaitNs = 0, 0, 0, nil, 0
		if !keepExcerpt {
			s.DivergenceExcerpt = ""
		}
		s.ScenarioEvent = "" // a label of the scenario's steps, which builds before it lack
		ss.rows = append(ss.rows, s)
		ss.prompt += s.PromptTokens
		if s.CachedTokens != nil {
			ss.cached += *s.CachedTokens
		}
		if s.RereadTokens != nil {
			ss.rereadTk += *s.RereadTokens
		}
	}
	keys := make([]key, 0, len(sessions))
	for k := range sessions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.scenario != b.scenario {
			return a.scenario < b.scenario
		}
		if a.arm != b.arm {
			return a.arm < b.arm
		}
		return a.rep < b.rep
	})
	var buf bytes.Buffer
	for _, k := range keys {
		ss := sessions[k]
		sort.SliceStable(ss.rows, func(i, j int) bool { return ss.rows[i].RequestIndex < ss.rows[j].RequestIndex })
		h := sha256.New()
		for i := range ss.rows {
			line, err := json.Marshal(&ss.rows[i])
			if err != nil {
				return nil, fmt.Errorf("rowdigest: %s %s %d: row %d: %w", k.scenario, k.arm, k.rep, i, err)
			}
			h.Write(line)
			h.Write([]byte{'\n'})
		}
		fmt.Fprintf(&buf, "%s %s %d: %d rows, prompt %d, cached %d, reread %d, %x\n",
			k.scenario, k.arm, k.rep, len(ss.rows), ss.prompt, ss.cached, ss.rereadTk, h.Sum(nil)[:12])
	}
	return buf.Bytes(), nil
}
