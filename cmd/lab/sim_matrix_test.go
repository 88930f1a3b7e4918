package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"lab/internal/golden"
	"lab/metrics"
)

// The whole sim matrix (every scenario of the library under every arm) writes the same rows,
// column for column, as when the golden digests were recorded: a change of the harness, the
// hygiene measures, the sim's cache model or the row's author that changes any figure, any
// divergence, any warning shows here, named by scenario, arm and repetition. The columns that
// depend on the clock (started_at and the durations) and the run's id are left out. After a
// change that should alter rows, `go test ./cmd/lab -run TestSimMatrixRowsUnchanged -update`
// rewrites testdata/TestSimMatrixRowsUnchanged.golden; review its diff.
func TestSimMatrixRowsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole sim matrix takes some 15 s")
	}
	needTokenizer(t)
	results := t.TempDir()
	// The sandbox path (<temp>/lab-sandbox/<scenario>) is in answers that name absolute paths,
	// so the rows depend on the temporary folder: the same one on every machine.
	t.Setenv("TMPDIR", "/tmp")
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "all", "--arm", "all",
		"--results", results, "--run-id", "matrix", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	parts, err := filepath.Glob(filepath.Join(metrics.RunDir(results, "matrix"), "part-*.parquet"))
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts %v (%v): want one", parts, err)
	}
	samples, _, err := metrics.ReadSamples(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "TestSimMatrixRowsUnchanged.golden", matrixDigests(t, samples))
}

// matrixDigests returns one line per session (scenario, arm, repetition, in that order): its row
// count, its summed prompt, cached and re-read tokens (to make a change readable) and the SHA-256
// of its rows' JSON in request order, with run_id, started_at and the durations cleared.
func matrixDigests(t *testing.T, samples []metrics.Sample) []byte {
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
		// The divergence excerpt is a view of the texts these digests predate; it is checked
		// where it is made (cachesim.ExcerptAt) and read (report).
		s.DivergenceExcerpt = ""
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
				t.Fatal(err)
			}
			h.Write(line)
			h.Write([]byte{'\n'})
		}
		fmt.Fprintf(&buf, "%s %s %d: %d rows, prompt %d, cached %d, reread %d, %x\n",
			k.scenario, k.arm, k.rep, len(ss.rows), ss.prompt, ss.cached, ss.rereadTk, h.Sum(nil)[:12])
	}
	return buf.Bytes()
}
