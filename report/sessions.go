package report

import (
	"cmp"
	"fmt"
	"slices"

	"lab/metrics"
)

// The values of [LeftOut].Reason.
const (
	// LeftFailed: the session ended with an error: its manifest record says so, or, for a run
	// without records, a request of the session ended with an error (metrics.Sample.Error).
	LeftFailed = "failed"
	// LeftInterrupted: the session never ended: the run's manifest records how other sessions
	// ended but not this one, or (a run without records) the manifest says complete: false and
	// this is the run's last session (the latest started_at), the one the interruption cut.
	LeftInterrupted = "interrupted"
	// LeftRowsLost: the session's manifest record says it completed with more rows than the
	// samples hold: rows were lost since (journal lines a kill cut short or corrupted, skipped
	// when the run was read or repaired), so its totals would be understated.
	LeftRowsLost = "rows lost"
)

// LeftOut is a session (run id, scenario, arm, repetition) that [Sessions] left out of the
// statistics because it did not complete.
type LeftOut struct {
	RunID      string `json:"run_id"`
	Scenario   string `json:"scenario"`
	Arm        string `json:"arm"`
	Repetition int32  `json:"repetition"`
	// Requests is the number of rows the session has.
	Requests int `json:"requests"`
	// Recorded is, for [LeftRowsLost], the number of rows the session's manifest record counts.
	Recorded int `json:"recorded,omitempty"`
	// Reason is [LeftFailed], [LeftInterrupted] or [LeftRowsLost].
	Reason string `json:"reason"`
	// Request and Error are, for [LeftFailed], the first failed request (0-based
	// request_index) and its error; when no row carries an error, Request is -1 and Error is the
	// session's, from its manifest record.
	Request int32  `json:"request,omitempty"`
	Error   string `json:"error,omitempty"`
}

// String says which session was left out and why, in one line, for example
// "midnight/spec repetition 2 of run 20261129-231502: request 7 failed: connection refused".
func (l *LeftOut) String() string {
	who := fmt.Sprintf("%s/%s repetition %d", l.Scenario, l.Arm, l.Repetition)
	if l.RunID != "" {
		who += " of run " + l.RunID
	}
	if l.Reason == LeftFailed {
		if l.Request < 0 {
			return fmt.Sprintf("%s: the session failed: %s", who, inline(l.Error))
		}
		return fmt.Sprintf("%s: request %d failed: %s", who, l.Request, inline(l.Error))
	}
	if l.Reason == LeftRowsLost {
		return fmt.Sprintf("%s: %d of its %d rows are lost (journal lines that held no sample)", who, l.Recorded-l.Requests, l.Recorded)
	}
	return fmt.Sprintf("%s: the run was interrupted during this session (%d requests measured)", who, l.Requests)
}

// sessionKey identifies one session of samples.
type sessionKey struct {
	run, scenario, arm string
	rep                int32
}

func keyOf(s *metrics.Sample) sessionKey {
	return sessionKey{s.RunID, s.Scenario, s.Arm, s.Repetition}
}

// Sessions splits samples into those of complete sessions and the sessions left out. Sessions
// (run id, scenario, arm, repetition) are matched to their run's manifest by run id.
//
// When the manifest records how its sessions ended (metrics.Manifest.Sessions, written as each
// session ends), those records decide: a session is complete when its (last) record says
// complete, whatever its rows hold (a live turn that reached its time limit leaves a row with an
// error and end_reason "timeout", and is a normal turn end); a record that says it failed leaves
// it out as [LeftFailed]; a session without a record never ended and is left out as
// [LeftInterrupted]; a session whose record says complete but whose rows are fewer than the
// record counts lost rows since it was measured (a journal line skipped) and is left out as
// [LeftRowsLost].
//
// For a run without records (made before they existed), and samples of a run id without a
// manifest, the rows decide: a session is incomplete when one of its rows has an error (other
// than a live turn's timeout), or when its run's manifest says complete: false and it is that
// run's last session: sessions run one after the other, so the one with the latest started_at is
// the one an interruption cut (a run resumed to the end says complete: true again; rows with the
// same started_at are ordered as given, the file order). Samples of a run id without a manifest
// are judged by their errors only.
//
// complete keeps the order of samples; left is sorted by run id, scenario, arm and repetition.
// Every statistic of the package's callers (report, compare, lab check --run) is computed over
// complete only.
func Sessions(runs []*metrics.Manifest, samples []metrics.Sample) (complete []metrics.Sample, left []LeftOut) {
	left, out := leftOut(runs, metrics.RowsOf(samples))
	if len(left) == 0 {
		return samples, nil
	}
	complete = make([]metrics.Sample, 0, len(samples))
	for i := range samples {
		if !out[keyOf(&samples[i])] {
			complete = append(complete, samples[i])
		}
	}
	return complete, left
}

// sessionsOfRows is [Sessions] of rows: the rows of complete sessions (rows itself when none is
// left out) and the sessions left out.
func sessionsOfRows(runs []*metrics.Manifest, rows *metrics.Rows) (complete *metrics.Rows, left []LeftOut) {
	left, out := leftOut(runs, rows)
	if len(left) == 0 {
		return rows, nil
	}
	return rows.Select(func(i int) bool {
		return !out[sessionKey{rows.RunID(i), rows.Scenario(i), rows.Arm(i), rows.Repetition(i)}]
	}), left
}

// leftOut returns the sessions of rows that [Sessions] leaves out, sorted as it returns them,
// and their keys.
func leftOut(runs []*metrics.Manifest, rows *metrics.Rows) (left []LeftOut, out map[sessionKey]bool) {
	interrupted := map[string]bool{}
	records := map[sessionKey]*metrics.SessionRecord{}
	recorded := map[string]bool{} // run ids whose manifest has records
	for _, m := range runs {
		if m == nil {
			continue
		}
		if !m.Complete {
			interrupted[m.RunID] = true
		}
		for i := range m.Sessions {
			r := &m.Sessions[i]
			recorded[m.RunID] = true
			records[sessionKey{m.RunID, r.Scenario, r.Arm, int32(r.Repetition)}] = r
		}
	}
	type info struct {
		rows int
		// failed says a request failed; failedAt and failedErr are the first one's index and error.
		failed    bool
		failedAt  int32
		failedErr string
	}
	by := map[sessionKey]*info{}
	last := map[string]sessionKey{} // run id → its last session
	lastAt := map[string]int{}      // run id → index of the run's latest sample
	for i, s := range rows.All() {
		k := keyOf(s)
		in := by[k]
		if in == nil {
			in = &info{}
			by[k] = in
		}
		in.rows++
		if s.Failed() && (!in.failed || s.RequestIndex < in.failedAt) {
			in.failed, in.failedAt, in.failedErr = true, s.RequestIndex, s.Error
		}
		if j, ok := lastAt[s.RunID]; !ok || rows.StartedAtUnixNano(i) >= rows.StartedAtUnixNano(j) {
			lastAt[s.RunID], last[s.RunID] = i, k
		}
	}
	cut := map[sessionKey]bool{}
	for run, k := range last {
		if interrupted[run] {
			cut[k] = true
		}
	}
	for k, in := range by {
		if recorded[k.run] {
			rec := records[k]
			switch {
			case rec == nil:
				left = append(left, LeftOut{RunID: k.run, Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, Requests: in.rows,
					Reason: LeftInterrupted})
			case rec.Complete && in.rows < rec.Requests:
				left = append(left, LeftOut{RunID: k.run, Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, Requests: in.rows,
					Reason: LeftRowsLost, Recorded: rec.Requests})
			case rec.Complete:
			case in.failed:
				left = append(left, LeftOut{RunID: k.run, Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, Requests: in.rows,
					Reason: LeftFailed, Request: in.failedAt, Error: in.failedErr})
			default:
				left = append(left, LeftOut{RunID: k.run, Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, Requests: in.rows,
					Reason: LeftFailed, Request: -1, Error: rec.Error})
			}
			continue
		}
		switch {
		case in.failed:
			left = append(left, LeftOut{RunID: k.run, Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, Requests: in.rows,
				Reason: LeftFailed, Request: in.failedAt, Error: in.failedErr})
		case cut[k]:
			left = append(left, LeftOut{RunID: k.run, Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, Requests: in.rows,
				Reason: LeftInterrupted})
		}
	}
	if len(left) == 0 {
		return nil, nil
	}
	slices.SortFunc(left, func(a, b LeftOut) int {
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Arm, b.Arm), cmp.Compare(a.Repetition, b.Repetition))
	})
	out = make(map[sessionKey]bool, len(left))
	for _, l := range left {
		out[sessionKey{l.RunID, l.Scenario, l.Arm, l.Repetition}] = true
	}
	return left, out
}

// AnalyzeRuns is [Analyze] over the complete sessions of runs' samples ([Sessions]), with the
// sessions left out recorded in [Analysis].LeftOut, setup by setup ([GroupSetups]): runs of one
// setup are pooled as repetitions and the analysis's Setup says which; runs of several setups
// are never pooled: each setup gets an analysis of its own in [Analysis].Setups (the top-level
// figures are then empty). A scenario name with several contents among the runs of a setup is
// analysed as several scenarios ([ContentName]).
func AnalyzeRuns(runs []*metrics.Manifest, samples []metrics.Sample) *Analysis {
	a, _, _ := AnalyzeRunsWithRows(runs, samples)
	return a
}

// AnalyzeRunsWithRows returns what [AnalyzeRuns] and [CompleteBySetup] return, sorting the rows
// into setups and complete sessions once: where sessions are left out, the complete rows are
// copied once for both (a report's tables and its charts), not once for each.
func AnalyzeRunsWithRows(runs []*metrics.Manifest, samples []metrics.Sample) (a *Analysis, labels []string, complete [][]metrics.Sample) {
	groups := GroupSetups(runs, samples)
	return analyzeBySetup(runs, samples, len(groups),
		func(i int) (SetupInfo, []*metrics.Manifest, []metrics.Sample) {
			return groups[i].Info, groups[i].Runs, groups[i].Samples
		}, Sessions, metrics.RowsOf)
}

// AnalyzeRunRows is [AnalyzeRunsWithRows] of a [metrics.Rows] (what lab report reads a run into):
// the analysis, the label of each setup ("" for runs of one setup or none) and the rows of each
// setup's complete sessions, scenarios renamed as AnalyzeRuns renames them, for its charts. Where
// no session is left out and no scenario renamed, the one setup's rows are rows itself, shared;
// otherwise each setup's rows are a compact copy.
func AnalyzeRunRows(runs []*metrics.Manifest, rows *metrics.Rows) (a *Analysis, labels []string, complete []*metrics.Rows) {
	groups := groupSetupRows(runs, rows)
	return analyzeBySetup(runs, rows, len(groups),
		func(i int) (SetupInfo, []*metrics.Manifest, *metrics.Rows) {
			return groups[i].Info, groups[i].Runs, groups[i].rows
		}, sessionsOfRows, func(r *metrics.Rows) *metrics.Rows { return r })
}

// analyzeBySetup analyses each of n setups' complete sessions, of rows R (samples or
// [metrics.Rows]): group gives setup i's description, runs and rows, sessions the rows of the
// complete sessions and the sessions left out ([Sessions]), rowsOf the columns of R. With no
// setup (n 0: no runs) it analyses all of runs and rows as one. It returns the analysis (one
// setup's, or each setup's with the servers side by side), each setup's label ("" for one setup
// or none) and each setup's complete rows.
func analyzeBySetup[R any](runs []*metrics.Manifest, rows R, n int, group func(i int) (SetupInfo, []*metrics.Manifest, R),
	sessions func([]*metrics.Manifest, R) (R, []LeftOut), rowsOf func(R) *metrics.Rows) (*Analysis, []string, []R) {
	one := func(runs []*metrics.Manifest, rows R) (*Analysis, R) {
		c, left := sessions(runs, rows)
		a := analyze(rowsOf(c), runs)
		a.LeftOut = left
		return a, c
	}
	if n == 0 {
		a, c := one(runs, rows)
		return a, []string{""}, []R{c}
	}
	var subs []*Analysis
	var labels []string
	var complete []R
	setupRuns := make([][]*metrics.Manifest, n)
	for i := range n {
		// info is a copy of the setup's description: a pointer into the groups would keep
		// every group's rows alive as long as the analysis.
		info, gruns, grows := group(i)
		a, c := one(gruns, grows)
		a.Setup = &info
		subs = append(subs, a)
		label := info.Label
		if n == 1 {
			label = ""
		}
		labels, complete, setupRuns[i] = append(labels, label), append(complete, c), gruns
	}
	if n == 1 {
		return subs[0], labels, complete
	}
	sides := make([]serverSide, n)
	for i := range subs {
		sides[i] = serverSide{subs[i], setupRuns[i], rowsOf(complete[i])}
	}
	return withServers(sides), labels, complete
}

// CompleteBySetup returns, per setup of the runs ([GroupSetups]), the samples of the complete
// sessions ([Sessions]), scenarios renamed as [AnalyzeRuns] renames them: what a setup's charts
// draw. The setup's label is "" when the runs are of one setup (or none).
func CompleteBySetup(runs []*metrics.Manifest, samples []metrics.Sample) (labels []string, complete [][]metrics.Sample) {
	_, labels, complete = AnalyzeRunsWithRows(runs, samples)
	return labels, complete
}

// withServers returns the analysis of the setups of sides (two or more): each setup's analysis,
// and each setup after the first set beside the first as servers ([ServerComparison]).
func withServers(sides []serverSide) *Analysis {
	all := &Analysis{}
	for _, s := range sides {
		all.Setups = append(all.Setups, s.an)
	}
	for i := 1; i < len(sides); i++ {
		all.Servers = append(all.Servers, compareServers(sides[0], sides[i]))
	}
	return all
}
