package metrics_test

import (
	"path/filepath"
	"slices"
	"testing"

	"lab/metrics"
)

// A part whose sessions are its rows' (a capture killed before it wrote its last manifest) reads
// with one record per scenario, in order of first appearance: its rows counted, complete unless
// the row of its highest request index has an error, whatever the rows' order; its scenarios,
// samples and model from the rows, and its backend the rows' one backend. A part that wrote its
// records keeps them.
func TestReadRunTakesSessionsFromRows(t *testing.T) {
	dir := t.TempDir()
	s := metrics.Shard{Index: 1, Count: 1}
	m := testManifest()
	m.Shard, m.Complete, m.Samples, m.Model, m.Backend, m.Scenarios, m.Sessions = &s, false, 0, "", "proxy", []string{}, nil
	m.SessionsFromRows = true
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s)), m); err != nil {
		t.Fatal(err)
	}
	rows := utc(testSamples(5))
	for i, c := range []struct {
		scenario string
		index    int32
		err      string
	}{{"conversation-0002", 0, ""}, {"conversation-0001", 1, ""}, {"conversation-0001", 0, "boom"}, {"conversation-0002", 1, "boom"}, {"conversation-0002", 2, ""}} {
		rows[i].Scenario, rows[i].Arm, rows[i].Repetition, rows[i].RequestIndex, rows[i].Error = c.scenario, "capture", 1, c.index, c.err
		rows[i].Model, rows[i].Backend = "m", "proxy:openai-chat"
	}
	sink, err := metrics.CreatePart(dir, s, metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := sink.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Killed: no Close, the rows are in the journal only.
	got, read, err := metrics.ReadRun(dir)
	if err != nil || len(read) != 5 {
		t.Fatalf("%d rows, %v", len(read), err)
	}
	want := []metrics.SessionRecord{
		{Scenario: "conversation-0002", Arm: "capture", Repetition: 1, Requests: 3, Complete: true},
		{Scenario: "conversation-0001", Arm: "capture", Repetition: 1, Requests: 2, Complete: true},
	}
	if !slices.Equal(got.Sessions, want) {
		t.Errorf("sessions %+v; want %+v", got.Sessions, want)
	}
	if !slices.Equal(got.Scenarios, []string{"conversation-0002", "conversation-0001"}) || got.Samples != 5 || got.Model != "m" || got.Backend != "proxy:openai-chat" || got.Complete {
		t.Errorf("scenarios %v, samples %d, model %q, backend %q, complete %v", got.Scenarios, got.Samples, got.Model, got.Backend, got.Complete)
	}

	// Its last request failed: the conversation is not complete. Two backends: the manifest's stays.
	if err := sink.Write(&metrics.Sample{RunID: rows[0].RunID, Scenario: "conversation-0001", Arm: "capture", Repetition: 1, RequestIndex: 2,
		Error: "upstream: boom", Model: "m", Backend: "proxy:anthropic", StartedAt: rows[4].StartedAt}); err != nil {
		t.Fatal(err)
	}
	got, _, err = metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 2 || got.Sessions[1].Complete || got.Sessions[1].Requests != 3 || got.Sessions[1].Error == "" || got.Backend != "proxy" {
		t.Errorf("sessions %+v, backend %q; want conversation-0001 incomplete after 3 requests, backend proxy", got.Sessions, got.Backend)
	}

	// Closed with its records: they decide.
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	m.Complete, m.Samples, m.Sessions = true, 6, []metrics.SessionRecord{{Scenario: "conversation-0002", Arm: "capture", Repetition: 1, Requests: 3, Complete: true}}
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s)), m); err != nil {
		t.Fatal(err)
	}
	got, _, err = metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 1 || !got.Complete {
		t.Errorf("sessions %+v; want the manifest's one record", got.Sessions)
	}
}
