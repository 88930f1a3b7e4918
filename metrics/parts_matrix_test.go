package metrics_test

import (
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
)

// Shards of one run id that were run with different matrices (another --repeat, --arm,
// --scenario, backend, driver, --num-ctx or --warm) do not merge: session k of one matrix is not session k of the
// other, so the merged run would lack sessions and still say complete. ReadRun names both
// manifests and what differs.
func TestReadRunRefusesPartsOfDifferentMatrices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field  string
		change func(m *metrics.Manifest)
	}{
		{"repetitions", func(m *metrics.Manifest) { m.Repetitions = 2 }},
		{"arms", func(m *metrics.Manifest) { m.Arms = []string{"spec"} }},
		{"scenarios", func(m *metrics.Manifest) { m.Scenarios = []string{"midnight", "late-mcp"} }},
		{"backend", func(m *metrics.Manifest) { m.Backend = "sim" }},
		{"driver", func(m *metrics.Manifest) { m.Settings = map[string]string{"driver": "live"} }},
		// The rest of the setup: a context window and a warm start change the figures too.
		{"num_ctx", func(m *metrics.Manifest) { m.NumCtx += 4096 }},
		{"warm", func(m *metrics.Manifest) { m.CacheState = metrics.CacheWarm }},
	} {
		dir := t.TempDir()
		s1, s2 := metrics.Shard{Index: 1, Count: 2}, metrics.Shard{Index: 2, Count: 2}
		writePart(t, dir, s1, rowsOf(armOf(s1), 2), true, false)
		writePart(t, dir, s2, rowsOf(armOf(s2), 2), true, false)
		p2 := filepath.Join(dir, metrics.PartManifestFile(s2))
		m, err := metrics.ReadManifest(p2)
		if err != nil {
			t.Fatal(err)
		}
		tc.change(m)
		if err := metrics.WriteManifest(p2, m); err != nil {
			t.Fatal(err)
		}
		_, _, err = metrics.ReadRun(dir)
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), metrics.PartManifestFile(s1)) || !strings.Contains(err.Error(), metrics.PartManifestFile(s2)) {
			t.Errorf("%s differs: ReadRun error %v; want one naming both manifests and %s", tc.field, err, tc.field)
		}
	}
	// Machine-specific fields may differ.
	dir := t.TempDir()
	s1, s2 := metrics.Shard{Index: 1, Count: 2}, metrics.Shard{Index: 2, Count: 2}
	writePart(t, dir, s1, rowsOf(armOf(s1), 2), true, false)
	writePart(t, dir, s2, rowsOf(armOf(s2), 2), true, false)
	if _, rows, err := metrics.ReadRun(dir); err != nil || len(rows) != 4 {
		t.Errorf("parts of one matrix: %d rows, %v", len(rows), err)
	}
}
