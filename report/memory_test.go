package report_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"lab/metrics"
	"lab/report"
)

// manyRows returns n rows of one run "big" (the manifest returned with them): one scenario, two
// arms of three repetitions, every session complete.
func manyRows(n int) (*metrics.Manifest, []metrics.Sample) {
	m := testManifest()
	m.RunID, m.Repetitions, m.Backend, m.Scenarios = "big", 3, "sim", []string{"midnight"}
	m.Complete, m.Sessions = true, nil
	at := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	arms := []string{metrics.SpecArm, "date-in-system-prompt"}
	per := n / 6
	var rows []metrics.Sample
	for _, arm := range arms {
		for rep := int32(1); rep <= 3; rep++ {
			for i := range per {
				prompt := int64(2000 + i)
				rows = append(rows, metrics.Sample{RunID: "big", Scenario: "midnight", Arm: arm, Repetition: rep, RequestIndex: int32(i),
					StartedAt: at.Add(time.Duration(len(rows)) * time.Second), Backend: "sim", Model: "m",
					PromptTokens: prompt, CachedTokens: new(prompt - 40), ExpectedCachedTokens: new(prompt - 40), RereadTokens: new(int64(40)),
					PrefillNs: 40_000, Warnings: "w" + strconv.Itoa(i)})
			}
			m.Sessions = append(m.Sessions, metrics.SessionRecord{Scenario: "midnight", Arm: arm, Repetition: int(rep), Requests: per, Complete: true})
		}
	}
	m.Samples = len(rows)
	return m, rows
}

// heapAlloc returns the live heap after a collection, in bytes.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The analysis keeps the tables, not the rows: once the caller drops its samples, what the
// analysis of 30,000 rows holds does not grow with them (a row is some 500 bytes; the analysis
// must hold well under 16 bytes per row).
func TestAnalysisHoldsNoRow(t *testing.T) {
	const n = 30_000
	before := heapAlloc()
	m, rows := manyRows(n)
	a := report.AnalyzeRuns([]*metrics.Manifest{m}, rows)
	rows = nil
	held := int64(heapAlloc()) - int64(before)
	runtime.KeepAlive(a)
	runtime.KeepAlive(rows)
	if per := held / n; per >= 16 {
		t.Errorf("the analysis of %d rows holds %d bytes (%d per row) once the rows are dropped; want under 16 per row", n, held, per)
	}
}

// Runs of one setup are analysed over the caller's rows, not a copy of them: GroupSetups shares
// the slice, and copies it only to rename a scenario (leaving the caller's rows as they were).
func TestGroupSetupsCopiesNoRowForOneSetup(t *testing.T) {
	m, rows := manyRows(600)
	g := report.GroupSetups([]*metrics.Manifest{m}, rows)
	if len(g) != 1 || len(g[0].Samples) != len(rows) || &g[0].Samples[0] != &rows[0] {
		t.Fatalf("one setup: %d groups; want one whose samples are the caller's rows", len(g))
	}
	// Two runs of one setup with two contents of midnight: the scenario is renamed in a copy.
	m2, rows2 := manyRows(600)
	m2.RunID = "big2"
	for i := range rows2 {
		rows2[i].RunID = "big2"
	}
	m.ScenarioDigests = map[string]string{"midnight": "sha256:aaaaaaaaaaaaaaaa"}
	m2.ScenarioDigests = map[string]string{"midnight": "sha256:bbbbbbbbbbbbbbbb"}
	all := append(rows, rows2...)
	g = report.GroupSetups([]*metrics.Manifest{m, m2}, all)
	if len(g) != 1 || g[0].Samples[0].Scenario == "midnight" || all[0].Scenario != "midnight" {
		t.Fatalf("two contents: %d groups, scenario %q in the group and %q in the caller's rows; want it renamed in the group only",
			len(g), g[0].Samples[0].Scenario, all[0].Scenario)
	}
}

// AnalyzeRunsWithRows gives what AnalyzeRuns and CompleteBySetup give, with the sessions left
// out copied out once for both.
func TestAnalyzeRunsWithRowsIsBoth(t *testing.T) {
	m, rows := manyRows(600)
	m.Sessions[1].Complete, m.Sessions[1].Error = false, "connection refused"
	a, labels, complete := report.AnalyzeRunsWithRows([]*metrics.Manifest{m}, rows)
	wantLabels, wantComplete := report.CompleteBySetup([]*metrics.Manifest{m}, rows)
	got, _ := json.Marshal(a)
	want, _ := json.Marshal(report.AnalyzeRuns([]*metrics.Manifest{m}, rows))
	if !bytes.Equal(got, want) || len(a.LeftOut) != 1 {
		t.Errorf("analysis %s\nwant %s (one session left out)", got, want)
	}
	if !slices.Equal(labels, wantLabels) || len(complete) != 1 || len(complete[0]) != len(rows)-100 ||
		!slices.EqualFunc(complete[0], wantComplete[0], func(x, y metrics.Sample) bool {
			return x.Arm == y.Arm && x.Repetition == y.Repetition && x.RequestIndex == y.RequestIndex
		}) {
		t.Errorf("labels %q, %d complete rows; want %q and %d", labels, len(complete[0]), wantLabels, len(rows)-100)
	}
}
