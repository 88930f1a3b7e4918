package metrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lab/metrics"
)

func TestParseHostFiles(t *testing.T) {
	t.Parallel()
	cpuinfo := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Other\n"
	if got := metrics.ParseCPUModel([]byte(cpuinfo)); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("CPU model %q", got)
	}
	if got := metrics.ParseCPUModel([]byte("processor: 0\nBogoMIPS: 50\n")); got != "" {
		t.Errorf("no model name: %q; want empty (unknown)", got)
	}
	l, err := metrics.ParseLoadAvg([]byte("0.52 1.25 3.00 2/345 6789\n"))
	if err != nil || *l != (metrics.LoadAverage{One: 0.52, Five: 1.25, Fifteen: 3}) {
		t.Errorf("load %+v, %v", l, err)
	}
	for _, bad := range []string{"", "0.5 x 1", "1 2"} {
		if _, err := metrics.ParseLoadAvg([]byte(bad)); err == nil || !strings.Contains(err.Error(), "/proc/loadavg") {
			t.Errorf("load %q: %v; want an error naming /proc/loadavg", bad, err)
		}
	}
	if h := metrics.CurrentHost(); h.LogicalCores == nil || *h.LogicalCores < 1 || h.OS == "" || h.Arch == "" {
		t.Errorf("current host %+v", h)
	}
}

func setupManifest() *metrics.Manifest {
	return &metrics.Manifest{RunID: "a", Backend: "sim", Model: "qwen3", ServerVersion: "cachesim llamacpp", NumCtx: 32768,
		Scenarios: []string{"midnight", "late-mcp"}, ScenarioDigests: map[string]string{"midnight": "sha256:aa", "late-mcp": "sha256:bb"},
		CacheState: metrics.CacheColdVerified,
		Settings:   map[string]string{"driver": "scripted", "cache_model": "llamacpp", "run_flags": `{"run-id":"a"}`, "resumed_at": "x"}}
}

// Two runs' setups differ in each part that changes figures, known against known or against
// unknown; bookkeeping settings, tags and hosts are no difference; scenarios are compared by
// content, only those both runs have.
func TestSetupDiff(t *testing.T) {
	t.Parallel()
	a := setupManifest()
	b := setupManifest()
	b.RunID, b.Settings = "b", map[string]string{"driver": "scripted", "cache_model": "llamacpp", "run_flags": `{"run-id":"b"}`}
	b.Tags = map[string]string{"k": "v"}
	cores := 2
	b.Host = &metrics.Host{CPUModel: "other", LogicalCores: &cores}
	if d, u := metrics.SetupDiff(a, b); len(d) != 0 || !reflect.DeepEqual(u, []string{"model file digest"}) {
		t.Errorf("same setup: diffs %v, unverified %v; want none and the model file digest", d, u)
	}
	if metrics.SetupOf(a).Key() != metrics.SetupOf(b).Key() {
		t.Error("same setup: different keys")
	}
	for _, tc := range []struct {
		change func(m *metrics.Manifest)
		want   string
	}{
		{func(m *metrics.Manifest) { m.Backend = "ollama" }, "backend sim vs ollama"},
		{func(m *metrics.Manifest) { m.ServerVersion = "0.17.4" }, "server version cachesim llamacpp vs 0.17.4"},
		{func(m *metrics.Manifest) { m.ModelDigest = "sha256:cc" }, "model file digest unknown vs sha256:cc"},
		{func(m *metrics.Manifest) { m.NumCtx = 8192 }, "num_ctx 32768 vs 8192"},
		{func(m *metrics.Manifest) { m.CacheState = metrics.CacheWarm }, "cache start cold vs warm"},
		{func(m *metrics.Manifest) { m.Settings["cache_model"] = "vllm" }, "cache_model llamacpp vs vllm"},
		{func(m *metrics.Manifest) { m.Settings["ollama_flash_attention"] = "0" }, "ollama_flash_attention not set vs 0"},
		// A setting not set reads otherwise than any value it may take ("none": no caching).
		{func(m *metrics.Manifest) { m.Settings["cache_breakpoints"] = "none" }, "cache_breakpoints not set vs none"},
		{func(m *metrics.Manifest) { m.ScenarioDigests["midnight"] = "sha256:dd" }, "scenario midnight content sha256:aa vs sha256:dd"},
		{func(m *metrics.Manifest) { delete(m.ScenarioDigests, "late-mcp") }, "scenario late-mcp content sha256:bb vs unknown"},
	} {
		c := setupManifest()
		tc.change(c)
		d, _ := metrics.SetupDiff(a, c)
		if len(d) != 1 || d[0] != tc.want {
			t.Errorf("diffs %q; want [%q]", d, tc.want)
		}
		if tc.want[:8] != "scenario" && metrics.SetupOf(a).Key() == metrics.SetupOf(c).Key() {
			t.Errorf("%s: the setup keys are equal", tc.want)
		}
	}
	// A scenario only one run has is no difference of setup; unknown in both is unverified.
	c := setupManifest()
	c.Scenarios = []string{"midnight"}
	a2 := setupManifest()
	a2.ScenarioDigests, c.ScenarioDigests = nil, nil
	if d, u := metrics.SetupDiff(a2, c); len(d) != 0 || !reflect.DeepEqual(u, []string{"model file digest", "scenario midnight content"}) {
		t.Errorf("old runs: diffs %v, unverified %v", d, u)
	}
}

func TestDigestFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	// SHA-256 of "abc" (FIPS 180-2, appendix B.1).
	if d, err := metrics.DigestFile(p); err != nil || d != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("digest %s, %v", d, err)
	}
	if _, err := metrics.DigestFile(p + ".missing"); err == nil || !strings.Contains(err.Error(), "m.gguf.missing") {
		t.Errorf("missing file: %v; want an error naming it", err)
	}
}

// The merged manifest of parts keeps their machine when they agree (load from the first start
// to the last end) and says they differ otherwise; tags are the union; parts with different
// model files or scenario contents do not merge.
func TestMergePartsHostsTagsAndDigests(t *testing.T) {
	t.Parallel()
	cores := 2
	four := 4
	mk := func(i int, cpu string, c *int, tags map[string]string) metrics.Part {
		m := setupManifest()
		m.Shard = &metrics.Shard{Index: i, Count: 2}
		m.StartedAt = m.StartedAt.AddDate(2026, 0, i)
		m.EndedAt = m.StartedAt.Add(1)
		m.Host = &metrics.Host{CPUModel: cpu, LogicalCores: c, OS: "linux", Arch: "amd64",
			LoadStart: &metrics.LoadAverage{One: float64(i)}, LoadEnd: &metrics.LoadAverage{One: float64(10 + i)}}
		m.Tags = tags
		return metrics.Part{Shard: *m.Shard, Manifest: m}
	}
	m := metrics.MergeParts([]metrics.Part{mk(1, "X", &cores, map[string]string{"a": "1", "m": "one"}), mk(2, "X", &cores, map[string]string{"m": "two"})})
	if h := m.Host; h == nil || h.CPUModel != "X" || *h.LogicalCores != 2 || h.LoadStart.One != 1 || h.LoadEnd.One != 12 {
		t.Errorf("same machine: host %+v", m.Host)
	}
	if !reflect.DeepEqual(m.Tags, map[string]string{"a": "1", "m": "one, two"}) {
		t.Errorf("tags %v", m.Tags)
	}
	m = metrics.MergeParts([]metrics.Part{mk(1, "X", &cores, nil), mk(2, "Y", &four, nil)})
	if h := m.Host; h == nil || h.CPUModel != "X, Y" || h.LogicalCores != nil || h.LoadStart != nil || m.Tags != nil {
		t.Errorf("two machines: host %+v, tags %v", m.Host, m.Tags)
	}

	for _, tc := range []struct {
		field  string
		change func(m *metrics.Manifest)
	}{
		{"model file digest", func(m *metrics.Manifest) { m.ModelDigest = "sha256:ff" }},
		{"scenario midnight content", func(m *metrics.Manifest) { m.ScenarioDigests = map[string]string{"midnight": "sha256:ee"} }},
		{"ollama_flash_attention", func(m *metrics.Manifest) { m.Settings = map[string]string{"ollama_flash_attention": "1"} }},
		{"arm spec definition", func(m *metrics.Manifest) {
			m.ArmDefinitions = []json.RawMessage{json.RawMessage(`{"name":"spec","base":"plain","measures_on":[]}`)}
		}},
	} {
		dir := t.TempDir()
		for i := 1; i <= 2; i++ {
			p := mk(i, "X", &cores, nil)
			p.Manifest.ModelDigest = "sha256:00"
			p.Manifest.Settings = map[string]string{"ollama_flash_attention": "0"}
			p.Manifest.Arms, p.Manifest.ArmDefinitions = []string{"spec"}, []json.RawMessage{json.RawMessage(`{"name":"spec","base":"spec","measures_on":["stubs"]}`)}
			if i == 2 {
				tc.change(p.Manifest)
			}
			if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(p.Shard)), p.Manifest); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := metrics.ReadParts(dir); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("parts with different %s: %v; want an error naming it", tc.field, err)
		}
	}
}

// Two runs that define an arm of one name otherwise differ in that arm's definition; the source
// line and description are not part of it, and a run without definitions cannot tell.
func TestSetupDiffNamesArmDefinitions(t *testing.T) {
	t.Parallel()
	withArm := func(def string) *metrics.Manifest {
		m := setupManifest()
		m.Arms, m.ArmDefinitions = []string{"prune-20k"}, []json.RawMessage{json.RawMessage(def)}
		return m
	}
	a := withArm(`{"name":"prune-20k","source":"a.yaml:1","practices":[{"prune":{"threshold_tokens":20000}}]}`)
	b := withArm(`{"name":"prune-20k","source":"a.yaml:4","description":"x","practices":[{"prune":{"threshold_tokens":30000}}]}`)
	d, _ := metrics.SetupDiff(a, b)
	da, db := a.ArmDigests()["prune-20k"], b.ArmDigests()["prune-20k"]
	if want := "arm prune-20k definition " + metrics.ShortDigest(da) + " vs " + metrics.ShortDigest(db); len(d) != 1 || d[0] != want {
		t.Errorf("diffs %q; want [%q]", d, want)
	}
	c := withArm(`{"name":"prune-20k","source":"b.yaml:9","description":"y","practices":[{"prune":{"threshold_tokens":20000}}]}`)
	if d, _ := metrics.SetupDiff(a, c); len(d) != 0 {
		t.Errorf("same definition at another line: diffs %q", d)
	}
	if d, _ := metrics.SetupDiff(a, setupManifest()); len(d) != 0 {
		t.Errorf("a run without the arm: diffs %q", d)
	}
}

// How an arm file wrote its measures does not change the arm: a base and a switch that switches
// nothing digest as the same measures on.
func TestArmDigestIsWhatRuns(t *testing.T) {
	t.Parallel()
	m := func(def string) string {
		man := &metrics.Manifest{Arms: []string{"a"}, ArmDefinitions: []json.RawMessage{json.RawMessage(def)}}
		return man.ArmDigests()["a"]
	}
	plain := m(`{"name":"a","base":"spec","measures_on":["stubs","caps"]}`)
	switched := m(`{"name":"a","base":"spec","switched":{"date_in_note":true},"measures_on":["stubs","caps"]}`)
	other := m(`{"name":"a","base":"spec","measures_on":["stubs"]}`)
	if plain == "" || plain != switched || plain == other {
		t.Errorf("digests: plain %s, with a no-op switch %s, with a measure off %s; want the first two equal, the third not", plain, switched, other)
	}
}
