package harness_test

import (
	"context"
	"io"
	"testing"

	"lab/harness"
	"lab/metrics"
)

// memOutput is a harness.Output in memory: rows in a MemorySink, the sessions' records, and the
// sessions already done.
type memOutput struct {
	metrics.MemorySink
	done  map[string]bool
	ended []metrics.SessionRecord
}

func (m *memOutput) Requests() io.Writer { return nil }
func (m *memOutput) Done(scenario, arm string, rep int) bool {
	return m.done[scenario+"/"+arm+"/"+string(rune('0'+rep))]
}
func (m *memOutput) EndSession(rec metrics.SessionRecord) error {
	m.ended = append(m.ended, rec)
	return nil
}

// RunMatrix is a loop over the matrix writing to any Output: it runs, in order, the sessions the
// output has not done, writes their rows, and ends each with a record of its request count; the
// rows kept are counted in the progress; SessionDone hears of each session as its record, after
// its requests' progress.
func TestRunMatrixWritesToAnOutput(t *testing.T) {
	t.Parallel()
	cfg := tinyRunConfig(t, t.TempDir(), 2, metrics.Shard{}, newFault(nil))
	out := &memOutput{done: map[string]bool{"tiny/spec/1": true}}
	kept := make([]metrics.Sample, 7) // the done session's rows, as a resume keeps them
	var last, total int
	cfg.Progress = func(done, tot int, s *metrics.Sample) { last, total = done, tot }
	var heard []metrics.SessionRecord
	var doneAtEnd []int
	cfg.SessionDone = func(rec metrics.SessionRecord) { heard, doneAtEnd = append(heard, rec), append(doneAtEnd, last) }
	state, err := harness.RunMatrix(context.Background(), cfg, "r", kept, out)
	if err != nil {
		t.Fatal(err)
	}
	if n := out.Len(); n != 3*7 {
		t.Errorf("%d rows written; want the 3 sessions not done × 7", n)
	}
	if last != 28 || total != 28 {
		t.Errorf("progress ended at %d of %d; want 28 of 28 (the 7 kept rows counted)", last, total)
	}
	want := []string{"date-in-system-prompt/1", "spec/2", "date-in-system-prompt/2"}
	if len(out.ended) != len(want) {
		t.Fatalf("sessions ended: %+v; want %v", out.ended, want)
	}
	for i, rec := range out.ended {
		if got := rec.Arm + "/" + string(rune('0'+rec.Repetition)); got != want[i] || rec.Requests != 7 || !rec.Complete || rec.Scenario != "tiny" {
			t.Errorf("session %d: %+v; want %s, 7 requests, complete", i, rec, want[i])
		}
	}
	if len(heard) != len(out.ended) || len(doneAtEnd) != 3 || doneAtEnd[0] != 14 || doneAtEnd[2] != 28 {
		t.Errorf("SessionDone heard %+v at requests done %v; want the 3 records, at 14, 21 and 28", heard, doneAtEnd)
	}
	for i := range heard {
		if i < len(out.ended) && heard[i] != out.ended[i] {
			t.Errorf("SessionDone %d: %+v; want the record written, %+v", i, heard[i], out.ended[i])
		}
	}
	for _, s := range out.Samples() {
		if s.RunID != "r" || (s.Arm == "spec" && s.Repetition == 1) {
			t.Errorf("row %s/%d/%d of run %q: want run r and none of the done session", s.Arm, s.Repetition, s.RequestIndex, s.RunID)
		}
	}
	if state == "" {
		t.Error("no cache state")
	}
}
