package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"lab/metrics"
	"lab/plots"
	"lab/report"
	"lab/stats"
)

// setupAnalysis is a setup of label label measuring scenario with spec and plain, plain
// re-reading ratio times spec's.
func setupAnalysis(label, backend, model, renderer, scenario string, ratio float64) *report.Analysis {
	set := map[string]string{}
	if renderer != "" {
		set["renderer"] = renderer
	}
	return &report.Analysis{
		Setup: &report.SetupInfo{Label: label, Setup: metrics.Setup{Backend: backend, Model: model, Settings: set}},
		Scenarios: []report.ScenarioStats{{Scenario: scenario, Arms: []report.ArmStats{
			{Arm: metrics.SpecArm, RereadTokens: stats.Estimate{N: 1, Mean: 100}},
			{Arm: "plain", RereadTokens: stats.Estimate{N: 1, Mean: 100 * ratio}, VsSpec: &report.VsSpec{RereadRatio: stats.Ratio{N: 1, Value: ratio}}},
		}}},
	}
}

// The setups heat map names each setup by what tells it apart (one model file served by two
// servers is one name, so only the backend is named), a column per setup; with more setups than
// it has room for across and than arms, a row per setup.
func TestSetupCells(t *testing.T) {
	t.Parallel()
	two := &report.Analysis{Setups: []*report.Analysis{
		setupAnalysis("A", "ollama", "lab-qwen3-synth", "qwen3.5", "midnight", 1.27),
		setupAnalysis("B", "llamacpp", "lab-qwen3-synth-6a56884edb10.gguf", "", "midnight", 1.30),
	}}
	cells, title := setupCells(two)
	if !strings.HasPrefix(title, "midnight: ") || strings.Contains(title, "a row each") {
		t.Errorf("two setups of one scenario: title %q", title)
	}
	want := []plots.Cell{{Arm: "spec", Scenario: "setup A ollama qwen3.5", Ratio: 1}, {Arm: "plain", Scenario: "setup A ollama qwen3.5", Ratio: 1.27},
		{Arm: "spec", Scenario: "setup B llamacpp qwen3", Ratio: 1}, {Arm: "plain", Scenario: "setup B llamacpp qwen3", Ratio: 1.30}}
	if !slices.Equal(cells, want) {
		t.Errorf("two setups: cells %v, want %v", cells, want)
	}

	var many report.Analysis
	for i := range 13 {
		scenario := "reasoning-tool-loops"
		if i == 12 {
			scenario = "compaction-in-loop"
		}
		many.Setups = append(many.Setups, setupAnalysis(string(rune('A'+i)), "ollama", fmt.Sprintf("lab-m%d-synth", i), "", scenario, 0.5))
	}
	cells, title = setupCells(&many)
	if !strings.Contains(title, "per setup (a row each) and arm") || strings.HasPrefix(title, "reasoning") {
		t.Errorf("13 setups: title %q, want turned, no one scenario", title)
	}
	if len(cells) != 26 || cells[1] != (plots.Cell{Arm: "setup A m0: reasoning-tool-loops", Scenario: "plain", Ratio: 0.5}) ||
		cells[25].Arm != "setup M m12: compaction-in-loop" {
		t.Errorf("13 setups: cells %v, want a row per setup and scenario, the backend (the same) not named", cells)
	}
	if cells, _ := setupCells(&report.Analysis{Setups: many.Setups[:1]}); cells != nil {
		t.Errorf("one setup: cells %v, want none", cells)
	}
}
