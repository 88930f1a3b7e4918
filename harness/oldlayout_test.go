package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/harness"
	"lab/metrics"
)

// A run of the old layout (results/<id>/manifest.json, samples.parquet) is read only: a resume
// of it, named by its id or by its folder, is refused with an error naming the folder and what
// to do, and leaves every file of it as it was.
func TestResumeOldLayoutIsRefused(t *testing.T) {
	t.Parallel()
	// An interrupted run, its part's files renamed to the old layout's.
	made := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	c := tinyRunConfig(t, made, 2, metrics.Shard{}, newFault(nil))
	c.Progress = func(done, total int, s *metrics.Sample) {
		if done == 3 {
			cancel()
		}
	}
	dir, _, err := harness.Run(ctx, c)
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	results := t.TempDir()
	// The old layout's folder is results/<id>; one named as a part-layout folder is refused too.
	for _, name := range []string{"r", "run_id=q"} {
		old := filepath.Join(results, name)
		if err := os.MkdirAll(old, 0o755); err != nil {
			t.Fatal(err)
		}
		for from, to := range map[string]string{
			metrics.PartManifestFile(metrics.Shard{}): metrics.ManifestFile,
			metrics.PartFile(metrics.Shard{}):         metrics.SamplesFile,
		} {
			b, err := os.ReadFile(filepath.Join(dir, from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(old, to), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if l, err := metrics.DetectLayout(old); l != metrics.LayoutSingle || err != nil {
			t.Fatalf("layout %v, %v; want the old one", l, err)
		}
	}
	snapshot := func() map[string]string {
		files := map[string]string{}
		filepath.WalkDir(results, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(path)
				files[path] = string(b)
			}
			return nil
		})
		return files
	}
	before := snapshot()
	for id, old := range map[string]string{"r": filepath.Join(results, "r"), "run_id=q": filepath.Join(results, "run_id=q")} {
		c := tinyRunConfig(t, results, 2, metrics.Shard{}, newFault(nil))
		c.RunID, c.Resume = id, true
		_, _, err := harness.Run(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "read only") || !strings.Contains(err.Error(), "new --run-id") {
			t.Errorf("resume %s of the old layout: %v; want an error naming %s, read only, and a new --run-id", id, err, old)
		}
		after := snapshot()
		if len(after) != len(before) {
			t.Errorf("resume %s: files %d, before %d: the old run was written", id, len(after), len(before))
		}
		for path, b := range before {
			if after[path] != b {
				t.Errorf("resume %s: %s changed: the old run was written", id, path)
			}
		}
	}
}
