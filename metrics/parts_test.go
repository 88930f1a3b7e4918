package metrics_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"lab/metrics"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want metrics.Shard
		ok   bool
	}{
		{"1/4", metrics.Shard{Index: 1, Count: 4}, true},
		{"4/4", metrics.Shard{Index: 4, Count: 4}, true},
		{"1/1", metrics.Shard{Index: 1, Count: 1}, true},
		{" 2/3 ", metrics.Shard{Index: 2, Count: 3}, true},
		{"0/3", metrics.Shard{}, false},
		{"4/3", metrics.Shard{}, false},
		{"a/b", metrics.Shard{}, false},
		{"3", metrics.Shard{}, false},
		{"-1/3", metrics.Shard{}, false},
		{"1/0", metrics.Shard{}, false},
		{"", metrics.Shard{}, false},
	} {
		got, err := metrics.ParseShard(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestPartNames(t *testing.T) {
	t.Parallel()
	s := metrics.Shard{Index: 3, Count: 12}
	for _, tc := range []struct{ got, want string }{
		{metrics.PartFile(s), "part-0003-of-0012.parquet"},
		{metrics.PartManifestFile(s), "manifest-0003-of-0012.json"},
		{metrics.PartRequestsFile(s), "requests-0003-of-0012.jsonl"},
		{metrics.PartFile(metrics.Shard{}), "part-0001-of-0001.parquet"},
		{metrics.JournalPath(metrics.PartFile(s)), "part-0003-of-0012.journal.jsonl"},
		{metrics.RunDir("results", "x"), filepath.Join("results", "run_id=x")},
		{metrics.Shard{}.String(), "1/1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q; want %q", tc.got, tc.want)
		}
	}
}

// Round robin: every session number is in exactly one shard of n.
func TestShardHasIsAPartition(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 7} {
		for k := range 20 {
			in := 0
			for i := 1; i <= n; i++ {
				if (metrics.Shard{Index: i, Count: n}).Has(k) {
					in++
					if want := k%n + 1; i != want {
						t.Errorf("session %d in shard %d/%d; want %d/%d", k, i, n, want, n)
					}
				}
			}
			if in != 1 {
				t.Errorf("session %d is in %d shards of %d", k, in, n)
			}
		}
	}
}

// writePart writes shard s of a run into dir: its manifest and its rows, closed unless killed.
func writePart(t *testing.T, dir string, s metrics.Shard, rows []metrics.Sample, complete, killed bool) {
	t.Helper()
	m := testManifest()
	m.Shard = &s
	m.Complete, m.Samples = complete, len(rows)
	m.Sessions = []metrics.SessionRecord{{Scenario: "midnight", Arm: armOf(s), Repetition: 1, Requests: len(rows), Complete: complete}}
	if !complete {
		m.Error = "interrupted"
		m.EndedAt = time.Time{}
	}
	m.StartedAt = m.StartedAt.Add(time.Duration(s.Index) * time.Minute)
	m.ServerURL = "http://127.0.0.1:1" + string(rune('0'+s.Index))
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s)), m); err != nil {
		t.Fatal(err)
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
	if killed {
		return
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
}

func armOf(s metrics.Shard) string { return "arm-" + s.String() }

// rowsOf returns n rows of the given arm.
func rowsOf(arm string, n int) []metrics.Sample {
	rows := testSamples(n)
	for i := range rows {
		rows[i].Arm = arm
		rows[i].RequestIndex = int32(i)
	}
	return utc(rows)
}

// A run written as parts (two of three shards closed, one killed with only its journal):
// ReadRun returns every part's rows in shard order, and the merged manifest names what is
// missing; the folder holds no part file without its footer under a *.parquet name.
func TestReadRunMergesParts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1, s2, s3 := metrics.Shard{Index: 1, Count: 4}, metrics.Shard{Index: 2, Count: 4}, metrics.Shard{Index: 3, Count: 4}
	r1, r2, r3 := rowsOf("a", 3), rowsOf("b", metrics.RowGroupRows+2), rowsOf("c", 4)
	// Written out of order: readers sort by shard.
	writePart(t, dir, s3, r3, false, true)
	writePart(t, dir, s2, r2, true, false)
	writePart(t, dir, s1, r1, true, false)

	if _, err := os.Stat(filepath.Join(dir, metrics.PartFile(s3))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a killed part left %s (stat: %v): a *.parquet glob would meet a file without footer", metrics.PartFile(s3), err)
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.JournalPath(metrics.PartFile(s1)))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a closed part kept its journal (stat: %v)", err)
	}
	man, got, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(r1, r2, r3)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if man.Complete || man.Shard != nil || man.Samples != len(want) {
		t.Errorf("merged manifest: complete %v, shard %v, samples %d; want false, nil, %d", man.Complete, man.Shard, man.Samples, len(want))
	}
	if man.Error != "missing shard 4/4; shard 3/4: interrupted" {
		t.Errorf("merged manifest error %q", man.Error)
	}
	if !man.EndedAt.IsZero() {
		t.Errorf("ended_at %v: a part has not ended", man.EndedAt)
	}
	if want := testManifest().StartedAt.Add(time.Minute); !man.StartedAt.Equal(want) {
		t.Errorf("started_at %v; want the earliest part's %v", man.StartedAt, want)
	}
	if man.ServerURL != "http://127.0.0.1:11, http://127.0.0.1:12, http://127.0.0.1:13" {
		t.Errorf("server_url %q; want the parts' distinct values", man.ServerURL)
	}
	var arms []string
	for _, r := range man.Sessions {
		arms = append(arms, r.Arm)
	}
	if !slices.Equal(arms, []string{"arm-1/4", "arm-2/4", "arm-3/4"}) {
		t.Errorf("sessions %v; want the parts' records in shard order", arms)
	}
	parts, err := metrics.ReadParts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if miss := metrics.MissingShards(parts); !slices.Equal(miss, []metrics.Shard{{Index: 4, Count: 4}}) {
		t.Errorf("MissingShards = %v; want [4/4]", miss)
	}
	if m2, err := metrics.ReadRunManifest(dir); err != nil || m2.Error != man.Error {
		t.Errorf("ReadRunManifest = %v, %v; want the merged manifest", m2, err)
	}

	// The last shard arrives (copied from another machine) and the killed one is rerun: the run
	// is whole.
	other := t.TempDir()
	r4 := rowsOf("d", 2)
	writePart(t, other, metrics.Shard{Index: 4, Count: 4}, r4, true, false)
	for _, name := range []string{metrics.PartFile(metrics.Shard{Index: 4, Count: 4}), metrics.PartManifestFile(metrics.Shard{Index: 4, Count: 4})} {
		data, err := os.ReadFile(filepath.Join(other, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sink, err := metrics.ReplacePart(dir, s3, r3[:1], metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(&r3[1]); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	m3 := testManifest()
	m3.Shard, m3.Complete = &s3, true
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(s3)), m3); err != nil {
		t.Fatal(err)
	}
	man, got, err = metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Concat(r1, r2, r3[:2], r4); !cmp.Equal(want, got) {
		t.Errorf("after the merge: %d rows; want %d", len(got), len(want))
	}
	if !man.Complete || man.Error != "" {
		t.Errorf("after the merge: complete %v, error %q; want complete", man.Complete, man.Error)
	}
}

// A shard with no session (n > sessions) writes a valid empty part.
func TestEmptyPart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := metrics.Shard{Index: 2, Count: 2}
	writePart(t, dir, s, nil, true, false)
	rows, recovered, err := metrics.ReadPart(dir, s)
	if err != nil || recovered || len(rows) != 0 {
		t.Fatalf("ReadPart of an empty part = %d rows, %v, %v", len(rows), recovered, err)
	}
	if _, err := metrics.ReadParquet(filepath.Join(dir, metrics.PartFile(s))); err != nil {
		t.Fatalf("the empty part is not a Parquet file: %v", err)
	}
}

// Folders of the old layout (results/<id>/manifest.json + samples.parquet) read as before, and
// a folder holding both layouts, or parts of two splits or two runs, is an error naming them.
func TestReadRunLayouts(t *testing.T) {
	t.Parallel()
	old := t.TempDir()
	want := rowsOf("a", 5)
	sink, err := metrics.CreateParquet(filepath.Join(old, metrics.SamplesFile), metrics.FileMeta{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		sink.Write(&want[i])
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteManifest(filepath.Join(old, metrics.ManifestFile), testManifest()); err != nil {
		t.Fatal(err)
	}
	if l, err := metrics.DetectLayout(old); l != metrics.LayoutSingle || err != nil {
		t.Errorf("DetectLayout(old) = %v, %v", l, err)
	}
	man, got, err := metrics.ReadRun(old)
	if err != nil || !cmp.Equal(want, got) || man.RunID != testManifest().RunID {
		t.Errorf("ReadRun(old layout) = %v, %d rows, %v", man, len(got), err)
	}

	if l, err := metrics.DetectLayout(filepath.Join(old, "none")); l != metrics.LayoutNone || err != nil {
		t.Errorf("DetectLayout(missing) = %v, %v", l, err)
	}
	if _, _, err := metrics.ReadRun(filepath.Join(old, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRun(missing) error %v; want fs.ErrNotExist", err)
	}

	both := t.TempDir()
	writePart(t, both, metrics.Shard{Index: 1, Count: 1}, want, true, false)
	metrics.WriteManifest(filepath.Join(both, metrics.ManifestFile), testManifest())
	if _, _, err := metrics.ReadRun(both); err == nil || !strings.Contains(err.Error(), "two layouts") {
		t.Errorf("ReadRun(both layouts) error %v", err)
	}

	mixed := t.TempDir()
	writePart(t, mixed, metrics.Shard{Index: 1, Count: 2}, want, true, false)
	writePart(t, mixed, metrics.Shard{Index: 2, Count: 3}, want, true, false)
	if _, _, err := metrics.ReadRun(mixed); err == nil || !strings.Contains(err.Error(), "shards of 2 and of 3 parts") {
		t.Errorf("ReadRun(two splits) error %v", err)
	}

	wrong := t.TempDir()
	writePart(t, wrong, metrics.Shard{Index: 1, Count: 2}, want, true, false)
	data, _ := os.ReadFile(filepath.Join(wrong, metrics.PartManifestFile(metrics.Shard{Index: 1, Count: 2})))
	os.WriteFile(filepath.Join(wrong, metrics.PartManifestFile(metrics.Shard{Index: 2, Count: 2})), data, 0o644)
	if _, _, err := metrics.ReadRun(wrong); err == nil || !strings.Contains(err.Error(), "says shard 1/2") {
		t.Errorf("ReadRun(a manifest under another shard's name) error %v", err)
	}
}

// The part to resume: named, or the only one; a split run without a name is an error naming the
// shards that are not complete.
func TestReadResumeManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePart(t, dir, metrics.Shard{Index: 1, Count: 3}, rowsOf("a", 1), true, false)
	writePart(t, dir, metrics.Shard{Index: 2, Count: 3}, rowsOf("b", 1), false, true)
	m, err := metrics.ReadResumeManifest(dir, metrics.Shard{Index: 2, Count: 3})
	if err != nil || m.Shard == nil || *m.Shard != (metrics.Shard{Index: 2, Count: 3}) {
		t.Errorf("ReadResumeManifest(2/3) = %v, %v", m, err)
	}
	_, err = metrics.ReadResumeManifest(dir, metrics.Shard{})
	if err == nil || !strings.Contains(err.Error(), "--shard") || !strings.Contains(err.Error(), "2/3, 3/3 (missing)") {
		t.Errorf("ReadResumeManifest(no shard) error %v; want one naming 2/3 and 3/3", err)
	}
	if _, err := metrics.ReadResumeManifest(dir, metrics.Shard{Index: 3, Count: 3}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadResumeManifest(3/3) error %v; want fs.ErrNotExist", err)
	}
	one := t.TempDir()
	writePart(t, one, metrics.Shard{}, rowsOf("a", 1), false, true)
	if m, err := metrics.ReadResumeManifest(one, metrics.Shard{}); err != nil || !strings.Contains(m.Error, "interrupted") {
		t.Errorf("ReadResumeManifest(unsharded) = %v, %v", m, err)
	}
}
