package report_test

import (
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

func leftNames(left []report.LeftOut) string {
	var out []string
	for _, l := range left {
		out = append(out, l.Arm+" "+string(rune('0'+l.Repetition))+" "+l.Reason)
	}
	return strings.Join(out, ",")
}

// With the sessions recorded in the manifest, the run's last session counts when it finished,
// although the manifest says complete: false because an earlier session failed; a session with
// rows but no record never ended.
func TestSessionsUseTheManifestsRecords(t *testing.T) {
	t.Parallel()
	samples := sessionsFixture() // spec 1 whole, spec 2 failed at request 1, date 1 last (2 rows)
	recs := []metrics.SessionRecord{
		{Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 1, Requests: 3, Complete: true},
		{Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 2, Requests: 2, Error: "connection refused"},
		{Scenario: "midnight", Arm: report.CliffArm, Repetition: 1, Requests: 2, Complete: true},
	}
	man := &metrics.Manifest{RunID: "r", Complete: false, Error: "1 of 3 sessions failed", Sessions: recs}
	complete, left := report.Sessions([]*metrics.Manifest{man}, samples)
	if got := leftNames(left); got != "spec 2 failed" || len(complete) != 5 {
		t.Errorf("finished last session: left %q, %d rows; want only spec 2 failed and 5 rows", got, len(complete))
	}
	// Killed during the last session: it has rows but no record.
	man.Sessions = recs[:2]
	if complete, left := report.Sessions([]*metrics.Manifest{man}, samples); leftNames(left) != "date-in-system-prompt 1 interrupted,spec 2 failed" || len(complete) != 3 {
		t.Errorf("last session without record: left %q, %d rows", leftNames(left), len(complete))
	}
	// A session whose record says it failed, though no row carries an error (the samples file
	// could not be written, say).
	man.Sessions = []metrics.SessionRecord{recs[0], recs[1], {Scenario: "midnight", Arm: report.CliffArm, Repetition: 1, Requests: 2, Error: "write samples: disk full"}}
	_, left = report.Sessions([]*metrics.Manifest{man}, samples)
	if len(left) != 2 || left[0].Reason != report.LeftFailed || left[0].Request != -1 ||
		left[0].String() != "midnight/date-in-system-prompt repetition 1 of run r: the session failed: write samples: disk full" {
		t.Errorf("failed by its record: %+v", left)
	}
}

// A live turn that reached its time limit ends normally: its session counts, with or without
// records.
func TestSessionsKeepATimedOutLiveTurn(t *testing.T) {
	t.Parallel()
	samples := sessionsFixture()[:2] // date-in-system-prompt rep 1, requests 0–1, the last started
	for i := range samples {
		samples[i].Driver = metrics.DriverLive
	}
	samples[1].Error, samples[1].EndReason = "context deadline exceeded", metrics.EndTimeout
	for _, man := range []*metrics.Manifest{
		{RunID: "r", Complete: true},
		{RunID: "r", Complete: true, Sessions: []metrics.SessionRecord{{Scenario: "midnight", Arm: report.CliffArm, Repetition: 1, Requests: 2, Complete: true}}},
	} {
		complete, left := report.Sessions([]*metrics.Manifest{man}, samples)
		if len(left) != 0 || len(complete) != 2 {
			t.Errorf("%d records: left %v, %d rows; want the timed-out session kept whole", len(man.Sessions), left, len(complete))
		}
	}
	// Any other error still fails the session.
	samples[1].EndReason = metrics.EndError
	if _, left := report.Sessions([]*metrics.Manifest{{RunID: "r", Complete: true}}, samples); leftNames(left) != "date-in-system-prompt 1 failed" {
		t.Errorf("an error row: left %q; want the session failed", leftNames(left))
	}
}

// A session whose record says it completed with more rows than the samples hold lost rows since
// (a journal line a kill cut short, skipped when the run was read or repaired): it is left out,
// not reported with understated totals; one with all its rows counts.
func TestSessionsLeaveOutLostRows(t *testing.T) {
	t.Parallel()
	samples := sessionsFixture() // spec 1: 3 rows, spec 2: 2 rows, date 1: 2 rows
	recs := []metrics.SessionRecord{
		{Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 1, Requests: 4, Complete: true},
		{Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 2, Requests: 2, Error: "connection refused"},
		{Scenario: "midnight", Arm: report.CliffArm, Repetition: 1, Requests: 2, Complete: true},
	}
	man := &metrics.Manifest{RunID: "r", Complete: true, Sessions: recs}
	complete, left := report.Sessions([]*metrics.Manifest{man}, samples)
	if got := leftNames(left); got != "spec 1 rows lost,spec 2 failed" || len(complete) != 2 {
		t.Fatalf("left %q, %d rows; want spec 1 rows lost, spec 2 failed and 2 rows", got, len(complete))
	}
	if got, want := left[0].String(), "midnight/spec repetition 1 of run r: 1 of its 4 rows are lost (journal lines that held no sample)"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}
