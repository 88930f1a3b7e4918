package harness_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lab "lab"
	"lab/harness"
	"lab/metrics"
	"lab/prompts"
	"lab/scenario"
	"lab/scenarios"
)

// The scenario digest is SHA-256 over the scenario file, its workspace archive, the prompts
// it uses and loop.json, in that order, each as "name length\n" and its bytes: recomputed here
// from the files, and changed by a change to any one part.
func TestScenarioDigestCoversItsParts(t *testing.T) {
	t.Parallel()
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "midnight/scenario.yaml", "scenarios/midnight/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file, err := scenarios.FS.ReadFile("midnight/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := scenarios.FS.ReadFile("midnight/" + sc.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	part := func(name string, data []byte) { fmt.Fprintf(h, "%s %d\n", name, len(data)); h.Write(data) }
	part("scenario", file)
	part("workspace", arch)
	if got := sc.Prompts(); strings.Join(got, " ") != "blocks/context.md modes/default.md system.md" {
		t.Errorf("midnight's prompts %v; want blocks/context.md modes/default.md system.md", got)
	}
	for _, p := range []string{"blocks/context.md", "modes/default.md", "system.md"} {
		data, err := prompts.FS.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		part("prompts/"+p, data)
	}
	part("loop.json", lab.LoopJSON)
	want := "sha256:" + hex.EncodeToString(h.Sum(nil))
	base := sc.Digest(lab.LoopJSON)
	if base != want {
		t.Errorf("digest %s; want %s", base, want)
	}

	// The same content from a path has the same digest; each part changed changes it.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sc.Workspace), arch, 0o644); err != nil {
		t.Fatal(err)
	}
	fromPath := load(t, filepath.Join(dir, "scenario.yaml"))
	if d := fromPath.Digest(lab.LoopJSON); d != base {
		t.Errorf("the same scenario from a path: digest %s; embedded %s", d, base)
	}
	if err := os.WriteFile(filepath.Join(dir, sc.Workspace), append(arch, "-- extra.txt --\nx\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	otherWS := load(t, filepath.Join(dir, "scenario.yaml"))
	if otherWS.Digest(lab.LoopJSON) == base {
		t.Error("another workspace archive: the digest did not change")
	}
	otherFile := *sc
	otherFile.Source = append([]byte("# a comment\n"), file...)
	if otherFile.Digest(lab.LoopJSON) == base {
		t.Error("another scenario file: the digest did not change")
	}
	if sc.Digest(append([]byte(" "), lab.LoopJSON...)) == base {
		t.Error("another loop.json: the digest did not change")
	}
	plan := "plan"
	otherMode := *sc
	otherMode.Steps = append([]scenario.Step{{Mode: &plan}}, sc.Steps...)
	if otherMode.Digest(lab.LoopJSON) == base || !strings.Contains(strings.Join(otherMode.Prompts(), " "), "modes/plan.md") {
		t.Errorf("a scenario switching to plan mode: prompts %v, the digest did not change or lacks modes/plan.md", otherMode.Prompts())
	}
}

// A run's manifest records the model file's digest, each scenario's content digest, the host
// (with the load at the start and at the end) and the user's tags; a warm run says warm from
// the start.
func TestRunRecordsSetupHostAndTags(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	cfg := tinyRunConfig(t, results, 1, metrics.Shard{}, newFault(nil))
	cfg.LoopJSON = lab.LoopJSON
	cfg.ModelDigest = "sha256:abc"
	cfg.Tags = map[string]string{"machine": "ci-1"}
	cfg.Warm = true
	cores := 3
	cfg.Host = func() *metrics.Host {
		return &metrics.Host{CPUModel: "Test CPU", LogicalCores: &cores, OS: "linux", Arch: "amd64", LoadStart: &metrics.LoadAverage{One: 1}}
	}
	cfg.Load = func() *metrics.LoadAverage { return &metrics.LoadAverage{One: 2} }
	var during *metrics.Manifest
	cfg.Progress = func(done, _ int, _ *metrics.Sample) {
		if done == 1 {
			during, _ = metrics.ReadManifest(filepath.Join(metrics.RunDir(results, "r"), metrics.PartManifestFile(metrics.Shard{})))
		}
	}
	dir, _, err := harness.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if during == nil || during.CacheState != metrics.CacheWarm {
		t.Errorf("a warm run's manifest during the run: %+v; want cache_state warm from the start", during)
	}
	m, err := metrics.ReadRunManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Scenarios[0]
	if m.ModelDigest != "sha256:abc" || m.ScenarioDigests[sc.Name] != sc.Digest(lab.LoopJSON) || m.Tags["machine"] != "ci-1" {
		t.Errorf("manifest model digest %q, scenario digests %v, tags %v", m.ModelDigest, m.ScenarioDigests, m.Tags)
	}
	if h := m.Host; h == nil || h.CPUModel != "Test CPU" || h.LogicalCores == nil || *h.LogicalCores != 3 || h.LoadStart == nil || h.LoadStart.One != 1 || h.LoadEnd == nil || h.LoadEnd.One != 2 {
		t.Errorf("manifest host %+v; want the test CPU, 3 cores, load 1 at the start and 2 at the end", m.Host)
	}

	// Resumed with a scenario whose content changed, the run is refused.
	results2 := t.TempDir()
	cfg2 := tinyRunConfig(t, results2, 1, metrics.Shard{}, newFault(nil))
	cfg2.LoopJSON = lab.LoopJSON
	ctx, cancel := context.WithCancel(context.Background())
	cfg2.Progress = func(done, _ int, _ *metrics.Sample) {
		if done == 2 {
			cancel()
		}
	}
	if _, _, err := harness.Run(ctx, cfg2); err == nil {
		t.Fatal("an interrupted run succeeded")
	}
	cfg3 := tinyRunConfig(t, results2, 1, metrics.Shard{}, newFault(nil))
	cfg3.LoopJSON = lab.LoopJSON
	changed := *cfg3.Scenarios[0]
	changed.Source = append([]byte("# changed\n"), changed.Source...)
	cfg3.Scenarios[0] = &changed
	cfg3.Resume = true
	if _, _, err := harness.Run(context.Background(), cfg3); err == nil || !strings.Contains(err.Error(), "content changed") {
		t.Errorf("resume with a changed scenario: %v; want an error saying its content changed", err)
	}

	// Resumed on another kind of machine, the run's host names both CPUs, cores and loads
	// unknown.
	cfg4 := tinyRunConfig(t, results2, 1, metrics.Shard{}, newFault(nil))
	cfg4.LoopJSON, cfg4.Resume = lab.LoopJSON, true
	eight := 8
	cfg4.Host = func() *metrics.Host {
		return &metrics.Host{CPUModel: "Other CPU", LogicalCores: &eight, OS: "linux", Arch: "arm64", LoadStart: &metrics.LoadAverage{One: 3}}
	}
	cfg4.Load = func() *metrics.LoadAverage { return &metrics.LoadAverage{One: 4} }
	dir4, _, err := harness.Run(context.Background(), cfg4)
	if err != nil {
		t.Fatal(err)
	}
	m4, err := metrics.ReadRunManifest(dir4)
	if err != nil {
		t.Fatal(err)
	}
	here := metrics.CurrentHost().CPUModel
	if h := m4.Host; h == nil || h.CPUModel != strings.TrimPrefix(here+", Other CPU", ", ") || h.LogicalCores != nil || h.LoadStart != nil || h.LoadEnd != nil {
		t.Errorf("resumed on another machine: host %+v; want both CPUs, cores and loads unknown", m4.Host)
	}
}
