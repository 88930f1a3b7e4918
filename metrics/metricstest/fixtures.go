package metricstest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"lab/metrics"
)

// Manifest returns the manifest the metrics and report tests start from: run
// 20250309-235900-midnight of lab v0.1.0, scenario midnight, arms spec and date-in-system-prompt,
// one repetition, on Ollama 0.17.4 at http://127.0.0.1:41234 serving qwen3-synth with num_ctx
// 32768, started 2025-03-09 23:59:00 UTC and ended five minutes later, complete. A test sets the
// fields its case needs (samples, settings, session records) on the copy it gets.
func Manifest() *metrics.Manifest {
	return &metrics.Manifest{
		LabVersion:    "v0.1.0",
		RunID:         "20250309-235900-midnight",
		Scenarios:     []string{"midnight"},
		Arms:          []string{"spec", "date-in-system-prompt"},
		Repetitions:   1,
		Backend:       "ollama",
		Model:         "qwen3-synth",
		ServerVersion: "0.17.4",
		ServerURL:     "http://127.0.0.1:41234",
		NumCtx:        32768,
		StartedAt:     time.Date(2025, 3, 9, 23, 59, 0, 0, time.UTC),
		EndedAt:       time.Date(2025, 3, 10, 0, 4, 0, 0, time.UTC),
		Complete:      true,
	}
}

// CopyRun copies the files of the run folder dir (not its subfolders) into to/<base of dir> and
// returns that folder: the files as a killed run left them, with no process holding them. It
// fails t on any error reading or writing.
func CopyRun(t testing.TB, dir, to string) string {
	t.Helper()
	dst := filepath.Join(to, filepath.Base(dir))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
