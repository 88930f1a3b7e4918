package metrics_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// A folder of the old layout is not resumed: ReadResumeManifest and OpenRun refuse it with
// ErrOldLayout, naming the folder, and write nothing.
func TestOldLayoutIsReadOnly(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	old := filepath.Join(results, "old")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteManifest(filepath.Join(old, metrics.ManifestFile), &metrics.Manifest{RunID: "old"}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.ReadResumeManifest(old, metrics.Shard{}); !errors.Is(err, metrics.ErrOldLayout) || !strings.Contains(err.Error(), old) {
		t.Errorf("ReadResumeManifest: %v; want ErrOldLayout naming %s", err, old)
	}
	f, err := metrics.OpenRun(metrics.RunSpec{ResultsDir: results, RunID: "old", Resume: true, Manifest: &metrics.Manifest{}})
	if f != nil || !errors.Is(err, metrics.ErrOldLayout) || !strings.Contains(err.Error(), old) {
		t.Errorf("OpenRun: %v, %v; want nil and ErrOldLayout naming %s", f, err, old)
	}
	if ents, _ := os.ReadDir(old); len(ents) != 1 {
		t.Errorf("the old folder holds %d files; want its manifest only", len(ents))
	}
	// A new run of that id goes beside it, into run_id=old: the old folder is left alone.
	if err := metrics.CheckNewRun(results, "old", metrics.Shard{}); err != nil {
		t.Errorf("CheckNewRun(old): %v; want nil: the new run's folder is run_id=old", err)
	}
}

// A run resumed with an arm of the same name but another definition (an arm file edited since
// the run started) is refused, naming the arm; the same definition with another description
// and line resumes.
func TestResumeRefusesAnEditedArm(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	man := func(threshold, line int) *metrics.Manifest {
		return &metrics.Manifest{Scenarios: []string{"midnight"}, Arms: []string{"spec", "prune-20k"}, Repetitions: 1, Backend: "sim",
			ArmDefinitions: []json.RawMessage{
				json.RawMessage(`{"name":"spec","base":"spec","source":"built-in"}`),
				json.RawMessage(fmt.Sprintf(`{"name":"prune-20k","base":"spec","source":"arms.yaml:%d","description":"line %d","practices":[{"prune":{"threshold_tokens":%d}}]}`, line, line, threshold)),
			}}
	}
	f, err := metrics.OpenRun(metrics.RunSpec{ResultsDir: results, RunID: "r", Manifest: man(20000, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.EndSession(metrics.SessionRecord{Scenario: "midnight", Arm: "spec", Repetition: 1, Complete: true}); err != nil {
		t.Fatal(err)
	}
	f.Finish(errors.New("interrupted"), "") // the run ends incomplete: it can be resumed
	_, err = metrics.OpenRun(metrics.RunSpec{ResultsDir: results, RunID: "r", Resume: true, Manifest: man(30000, 1)})
	if err == nil || !strings.Contains(err.Error(), "arm prune-20k's definition changed since the run started") {
		t.Fatalf("resume with an edited arm: %v; want the arm's definition named", err)
	}
	f, err = metrics.OpenRun(metrics.RunSpec{ResultsDir: results, RunID: "r", Resume: true, Manifest: man(20000, 7)})
	if err != nil {
		t.Fatalf("resume with the same definition at another line: %v", err)
	}
	f.Finish(nil, "")
}
