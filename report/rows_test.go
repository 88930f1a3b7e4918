package report_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"lab/metrics"
	"lab/report"
)

// AnalyzeRunRows, lab report's path over compact rows, gives what AnalyzeRunsWithRows gives over
// samples: the same analysis, setup labels and complete rows, for runs of one setup and of two,
// a scenario of two contents, a failed session left out and rows of a run id without a manifest.
// The caller's rows are not renamed.
func TestAnalyzeRunRowsIsAnalyzeRunsWithRows(t *testing.T) {
	t.Parallel()
	failed := repsFixture()
	failed[1].Error = "request 1: unexpected EOF"
	orphan := append(repsFixture(), metrics.Sample{RunID: "r9", Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 1, PromptTokens: 10})
	for _, c := range []struct {
		name    string
		runs    []*metrics.Manifest
		samples []metrics.Sample
		labels  string // the setups' labels: "" for runs of one setup or none
	}{
		{"one setup", setupRuns("llamacpp", "llamacpp", "sha256:aa", "sha256:aa"), repsFixture(), "[]"},
		{"two setups", setupRuns("llamacpp", "vllm", "sha256:aa", "sha256:aa"), repsFixture(), "[A B]"},
		{"two contents", setupRuns("llamacpp", "llamacpp", "sha256:aaaaaaaaaaaaaaaa", "sha256:bbbbbbbbbbbbbbbb"), repsFixture(), "[]"},
		{"a failed session", setupRuns("llamacpp", "llamacpp", "sha256:aa", "sha256:aa"), failed, "[]"},
		{"two setups and an orphan", setupRuns("llamacpp", "vllm", "sha256:aa", "sha256:aa"), orphan, "[A B C]"},
		{"no manifest", nil, failed, "[]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantA, wantLabels, wantComplete := report.AnalyzeRunsWithRows(c.runs, c.samples)
			rows := metrics.RowsOf(c.samples)
			gotA, gotLabels, gotComplete := report.AnalyzeRunRows(c.runs, rows)
			want, _ := json.Marshal(wantA)
			got, _ := json.Marshal(gotA)
			if string(got) != string(want) {
				t.Errorf("analysis:\n got %s\nwant %s", got, want)
			}
			if fmt.Sprint(wantLabels) != c.labels {
				t.Errorf("labels %q; want %s", wantLabels, c.labels)
			}
			if fmt.Sprint(gotLabels) != fmt.Sprint(wantLabels) || len(gotComplete) != len(wantComplete) {
				t.Fatalf("labels %q, %d setups of rows; want %q, %d", gotLabels, len(gotComplete), wantLabels, len(wantComplete))
			}
			for i := range wantComplete {
				var g, w []string
				for j := range gotComplete[i].Len() {
					s := gotComplete[i].At(j)
					g = append(g, fmt.Sprintf("%s/%s/%s/%d/%d", s.RunID, s.Scenario, s.Arm, s.Repetition, s.RequestIndex))
				}
				for _, s := range wantComplete[i] {
					w = append(w, fmt.Sprintf("%s/%s/%s/%d/%d", s.RunID, s.Scenario, s.Arm, s.Repetition, s.RequestIndex))
				}
				if fmt.Sprint(g) != fmt.Sprint(w) {
					t.Errorf("setup %d: complete rows\n got %v\nwant %v", i, g, w)
				}
			}
			if c.name == "a failed session" && len(gotA.LeftOut) == 0 {
				t.Errorf("a failed session: none left out")
			}
			if c.name == "two contents" && gotComplete[0].Scenario(0) == "midnight" {
				t.Errorf("two contents: the rows' scenario not renamed")
			}
			for i := range rows.Len() {
				if rows.Scenario(i) != c.samples[i].Scenario {
					t.Errorf("the caller's row %d renamed to %q", i, rows.Scenario(i))
				}
			}
		})
	}
}
