package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// The reasoning claim on the sim's rows (Ollama's qwen3.5 renderer): inside a turn both arms
// re-read the step's tool calls (no </think> before a call without text), so the saving there is
// about 0; at a new user message the Qwen3 format drops the spec arm's earlier reasoning, so the
// saving there is 0 or negative. The report names those rules and, the run being scripted, gives
// no verdict on the claim.
func TestSimReasoningClaim(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "all", "--arm", "spec,reasoning-never",
		"--results", results, "--run-id", "claims", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	dir := metrics.RunDir(results, "claims")
	man, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := report.AnalyzeRuns([]*metrics.Manifest{man}, samples)
	if len(a.Claims.Reasoning) == 0 {
		t.Fatal("no reasoning claim")
	}
	loops := false
	for _, rc := range a.Claims.Reasoning {
		loops = loops || rc.Scenario == "reasoning-tool-loops"
		if rc.Template.Name != "Ollama's qwen3.5 renderer" || rc.WithinTurn.Rule == "" || rc.NewUserMessage.Rule == "" || rc.Behaviour != nil {
			t.Errorf("%s: template %+v, behaviour %+v; want the qwen3.5 renderer's rules and no behaviour verdict", rc.Scenario, rc.Template, rc.Behaviour)
		}
		w, n := rc.WithinTurn, rc.NewUserMessage
		if w.SpecRequests == 0 || w.Saved == nil || math.Abs(*w.Saved) > 0.01 {
			t.Errorf("%s inside a turn: %d requests, saved %v; want about 0 (within 1 %%)", rc.Scenario, w.SpecRequests, w.Saved)
		}
		if n.SpecRequests == 0 || n.Diff.Mean > 0 {
			t.Errorf("%s at a new user message: %d requests, reasoning-never − spec %v tokens; want ≤ 0", rc.Scenario, n.SpecRequests, n.Diff.Mean)
		}
	}
	if !loops {
		t.Error("no claim for reasoning-tool-loops")
	}
	if p := a.Claims.Prefill; len(p) != 1 || p[0].Modelled == "" {
		t.Errorf("prefill checks %+v; want one, modelled", p)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the cache effect of sending reasoning back", "prefill is modelled, not measured",
		"| reasoning-tool-loops | first after a new user message | 1 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// "What the template does" checks §8's sentence on templates, a cache effect a scripted run
	// decides (on the sim's Qwen3 format it does not hold); the claims are judged in their section.
	claims := string(md)[strings.Index(string(md), "## The spec's claims"):]
	if !strings.Contains(string(md), "midnight: §8 does not hold") {
		t.Errorf("report.md lacks the §8 check of midnight")
	}
	if strings.Contains(claims, "does not hold") {
		t.Errorf("report.md judges the claims of a scripted run without the data to:\n%s", md)
	}
}
