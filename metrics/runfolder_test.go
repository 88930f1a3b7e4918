package metrics_test

import (
	"errors"
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
