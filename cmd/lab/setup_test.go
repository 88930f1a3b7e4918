package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"lab/metrics"
	"lab/scenarios"
)

// runMidnightSim runs midnight's spec arm on the sim backend into results with run id id and the extra
// flags, and fails the test unless it exits 0.
func runMidnightSim(t *testing.T, results, id string, extra ...string) string {
	t.Helper()
	args := append([]string{"run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", id, "--quiet"}, extra...)
	if code, out, errOut := runLab(t, args...); code != exitOK {
		t.Fatalf("lab %v: exit %d\n%s\n%s", args, code, out, errOut)
	}
	return metrics.RunDir(results, id)
}

// reportReps returns, per setup analysis of lab report --format json's output (the top-level
// analysis when there is one setup), how many repetitions of midnight/spec it pools.
func reportReps(t *testing.T, runs ...string) []int {
	t.Helper()
	code, out, errOut := runLab(t, append([]string{"report", "--format", "json"}, runs...)...)
	if code != exitOK {
		t.Fatalf("lab report: exit %d: %s", code, errOut)
	}
	type analysis struct {
		Scenarios []struct {
			Scenario string
			Arms     []struct {
				Arm  string
				Reps []json.RawMessage
			}
		}
		Setups []analysis
	}
	var doc struct{ Analysis analysis }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	groups := doc.Analysis.Setups
	if len(groups) == 0 {
		groups = []analysis{doc.Analysis}
	}
	var reps []int
	for _, g := range groups {
		n := 0
		for _, sc := range g.Scenarios {
			for _, a := range sc.Arms {
				if sc.Scenario == "midnight" && a.Arm == "spec" {
					n += len(a.Reps)
				}
			}
		}
		reps = append(reps, n)
	}
	return reps
}

// Two sim runs of midnight/spec with different cache models are two setups: lab report keeps
// them apart (each setup one repetition, its own section and charts), and lab compare refuses
// them (exit 2, naming the difference) unless --allow-setup-change, when it compares and says
// what differs. Two runs of one setup pool as repetitions and compare as before.
func TestReportAndCompareKeepSetupsApart(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	a := runMidnightSim(t, results, "a", "--tag", "machine=one")
	a2 := runMidnightSim(t, results, "a2")
	b := runMidnightSim(t, results, "b", "--cache-model", "vllm")

	if got := reportReps(t, a, b); len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Errorf("runs of two cache models: midnight/spec repetitions per setup %v; want [1 1], never pooled", got)
	}
	if got := reportReps(t, a, a2); len(got) != 1 || got[0] != 2 {
		t.Errorf("two runs of one setup: midnight/spec repetitions per setup %v; want [2], pooled", got)
	}
	out := filepath.Join(t.TempDir(), "both")
	if code, _, errOut := runLab(t, "report", "--out", out, a, b); code != exitOK {
		t.Fatalf("lab report --out: exit %d: %s", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Setups", "## Setup A", "## Setup B", "cache_model: A llamacpp, B vllm", "Tags: machine=one",
		"plots/setup-A-midnight-cached-share.svg", "plots/setup-B-midnight-cached-share.svg"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md of two setups lacks %q", want)
		}
	}

	code, stdout, errOut := runLab(t, "compare", a, b)
	if code != exitBadInput || !strings.Contains(errOut, "cache_model llamacpp vs vllm") || !strings.Contains(errOut, "server version cachesim llamacpp vs cachesim vllm") ||
		!strings.Contains(errOut, "--allow-setup-change") || stdout != "" {
		t.Errorf("compare of two setups: exit %d, stdout %q, stderr %q; want 2 naming each difference and the flag", code, stdout, errOut)
	}
	code, stdout, errOut = runLab(t, "compare", "--allow-setup-change", a, b)
	if code == exitBadInput || !strings.Contains(stdout, "The runs differ in setup, compared because the difference is the point: server version cachesim llamacpp vs cachesim vllm; cache_model llamacpp vs vllm.") {
		t.Errorf("compare --allow-setup-change: exit %d, stdout %q, stderr %q; want the comparison, naming the differences", code, stdout, errOut)
	}
	code, stdout, errOut = runLab(t, "compare", a, a2)
	if code != exitOK || strings.Contains(stdout, "differ in setup") || !strings.Contains(stdout, "tag machine \"one\" vs (none)") {
		t.Errorf("compare of one setup: exit %d, stdout %q, stderr %q; want 0, no setup change, the tag noted", code, stdout, errOut)
	}
}

// The same scenario name with another content (here its file with a comment added) is another
// scenario: lab compare refuses it, naming the scenario and both digests.
func TestCompareRefusesOtherScenarioContent(t *testing.T) {
	needTokenizer(t)
	dir := t.TempDir()
	file, err := scenarios.FS.ReadFile("midnight/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := scenarios.FS.ReadFile("midnight/workspace.txtar")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "scenario.yaml"), append([]byte("# another content, the same name\n"), file...), 0o644)
	os.WriteFile(filepath.Join(dir, "workspace.txtar"), ws, 0o644)
	results := t.TempDir()
	a := runMidnightSim(t, results, "a")
	b := runMidnightSim(t, results, "b", "--scenario", filepath.Join(dir, "scenario.yaml"))
	ma, _ := metrics.ReadRunManifest(a)
	mb, _ := metrics.ReadRunManifest(b)
	if ma.ScenarioDigests["midnight"] == "" || ma.ScenarioDigests["midnight"] == mb.ScenarioDigests["midnight"] {
		t.Fatalf("digests %v and %v; want two of midnight", ma.ScenarioDigests, mb.ScenarioDigests)
	}
	code, _, errOut := runLab(t, "compare", a, b)
	want := "scenario midnight content " + ma.ScenarioDigests["midnight"] + " vs " + mb.ScenarioDigests["midnight"]
	if code != exitBadInput || !strings.Contains(errOut, want) {
		t.Errorf("compare of two midnight contents: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
	if got := reportReps(t, a, b); len(got) != 1 || got[0] != 0 {
		t.Errorf("report of two midnight contents: midnight/spec repetitions %v; want none under the bare name (two scenarios)", got)
	}
}

// --tag key=value is recorded in the manifest; a bad tag is exit 2 naming the flag, before
// anything runs.
func TestRunTags(t *testing.T) {
	for _, tc := range []struct{ tag, want string }{
		{"novalue", "want key=value"},
		{"=x", "the key"},
		{"a b=x", "the key"},
		{"k=a,b", "comma"},
	} {
		results := t.TempDir()
		code, _, errOut := runLab(t, "run", "--backend", "sim", "--tag", tc.tag, "--results", results, "--quiet")
		if code != exitBadInput || !strings.Contains(errOut, "--tag") || !strings.Contains(errOut, tc.want) {
			t.Errorf("--tag %q: exit %d, stderr %q; want 2 naming --tag and %q", tc.tag, code, errOut, tc.want)
		}
		if ents, _ := os.ReadDir(results); len(ents) > 0 {
			t.Errorf("--tag %q: the run wrote %d entries", tc.tag, len(ents))
		}
	}
	if code, _, errOut := runLab(t, "run", "--backend", "sim", "--tag", "k=1", "--tag", "k=2", "--quiet", "--results", t.TempDir()); code != exitBadInput || !strings.Contains(errOut, "given twice") {
		t.Errorf("a tag given twice: exit %d, %q", code, errOut)
	}
	needTokenizer(t)
	results := t.TempDir()
	m, err := metrics.ReadRunManifest(runMidnightSim(t, results, "t", "--tag", "machine=ci-1", "--tag", "note=first try"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Tags["machine"] != "ci-1" || m.Tags["note"] != "first try" || len(m.Tags) != 2 || m.Host == nil || m.Host.LoadEnd == nil && m.Host.LoadStart != nil {
		t.Errorf("manifest tags %v, host %+v", m.Tags, m.Host)
	}
}

// lab proxy takes --tag as lab run does: recorded in the capture's manifest with the host; a
// bad one is exit 2 naming the flag.
func TestProxyTags(t *testing.T) {
	t.Setenv("LAB_CACHE", t.TempDir())
	results := t.TempDir()
	proxy := func(tag string) (int, string) {
		// A cancelled context: a proxy that accepted the flags stops at once (exit 0).
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb bytes.Buffer
		return run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--results", results, "--run-id", "p" + strconv.Itoa(len(tag)), "--tag", tag}, &out, &errb), errb.String()
	}
	if code, stderr := proxy("oops"); code != exitBadInput || !strings.Contains(stderr, "--tag") {
		t.Errorf("--tag oops: exit %d, %q; want 2 naming --tag", code, stderr)
	}
	if code, stderr := proxy("harness=mine"); code != exitOK {
		t.Fatalf("--tag harness=mine: exit %d, %q", code, stderr)
	}
	m, err := metrics.ReadRunManifest(metrics.RunDir(results, "p"+strconv.Itoa(len("harness=mine"))))
	if err != nil {
		t.Fatal(err)
	}
	if m.Tags["harness"] != "mine" || m.Host == nil || m.Host.OS == "" {
		t.Errorf("capture manifest tags %v, host %+v", m.Tags, m.Host)
	}
}
