package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/metrics"
)

// Bad driver flags exit 2 and name the flag, before anything runs.
func TestLiveFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--driver", "dream"}, `--driver "dream"`},
		{[]string{"--max-steps", "3"}, "--max-steps is for --driver live"},
		{[]string{"--sampling-seed", "3"}, "--sampling-seed is for --driver live"},
		{[]string{"--driver", "live", "--backend", "anthropic", "--temperature", "1.5"}, "--temperature 1.5"},
		{[]string{"--driver", "live", "--backend", "sim", "--max-steps", "0"}, "--max-steps 0"},
		{[]string{"--driver", "live", "--backend", "sim", "--max-tokens", "-1"}, "--max-tokens -1"},
		{[]string{"--driver", "live", "--backend", "sim", "--turn-timeout", "0s"}, "--turn-timeout 0s"},
		{[]string{"--tool-timeout", "0s"}, "--tool-timeout 0s"},
		{[]string{"--driver", "live", "--backend", "sim", "--tool-timeout", "-1s"}, "--tool-timeout -1s"},
		{[]string{"--unsandboxed-shell"}, "--unsandboxed-shell is for --driver live"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			results := t.TempDir()
			code, _, errOut := runLab(t, append([]string{"run", "--results", results, "--quiet"}, tc.args...)...)
			if code != exitBadInput || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 naming %q", code, errOut, tc.want)
			}
			if entries, _ := os.ReadDir(results); len(entries) != 0 {
				t.Fatalf("a results folder was written: %v", entries)
			}
		})
	}
}

func TestLiveOptionsToDriver(t *testing.T) {
	o := liveOptions{Driver: "live", MaxSteps: 5, MaxTokens: 100, TurnTimeout: time.Minute, Seed: 9, Temperature: 0.3, ToolTimeout: 7 * time.Second, UnsandboxedShell: true}
	d := o.driver()
	if !d.Live() || d.MaxSteps != 5 || d.MaxTokens != 100 || d.TurnTimeout != time.Minute || d.Seed != 9 || d.ToolTimeout != 7*time.Second || !d.UnsandboxedShell {
		t.Fatalf("driver() = %+v", d)
	}
	settings := map[string]string{}
	o.record(settings)
	if settings["driver"] != "live" || settings["max_steps"] != "5" || settings["max_tokens"] != "100" || settings["turn_timeout"] != "1m0s" || settings["temperature"] != "0.3" ||
		settings["tool_timeout"] != "7s" || settings["unsandboxed_shell"] != "true" {
		t.Fatalf("record() = %v", settings)
	}
	// The tool time limit bounds a scripted run's tools too.
	scripted := liveOptions{Driver: "scripted", MaxSteps: 5, ToolTimeout: 3 * time.Second}
	if d := scripted.driver(); d.Live() || d.MaxSteps != 0 || d.ToolTimeout != 3*time.Second {
		t.Fatalf("scripted driver() = %+v; want the zero Driver with the tool time limit", d)
	}
	settings = map[string]string{}
	scripted.record(settings)
	if settings["tool_timeout"] != "3s" {
		t.Fatalf("scripted record() = %v", settings)
	}
}

// lab run --backend sim --driver live: the scripted model drives the live loop end to end; every
// row says live, every turn's last request says why it ended, and the report is written.
func TestRunLiveOnTheSim(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--driver", "live", "--scenario", "midnight",
		"--arm", "spec,reasoning-never", "--repeat", "2", "--max-steps", "4", "--results", results, "--run-id", "live", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "live"))
	if err != nil {
		t.Fatal(err)
	}
	if !man.Complete || man.Settings["driver"] != "live" || man.Settings["max_steps"] != "4" {
		t.Fatalf("manifest: complete %v, settings %v", man.Complete, man.Settings)
	}
	ends := map[string]int{}
	for _, s := range samples {
		if s.Driver != metrics.DriverLive || s.Step > 4 && s.Kind == metrics.KindStep {
			t.Fatalf("%s/%s request %d: driver %q, step %d; want live and at most 4 steps", s.Scenario, s.Arm, s.RequestIndex, s.Driver, s.Step)
		}
		if s.EndReason != "" {
			ends[s.EndReason]++
		}
	}
	// midnight's turns are longer than 4 steps: the bound ends some of them.
	if ends[metrics.EndMaxSteps] == 0 {
		t.Errorf("end reasons %v; want some max_steps", ends)
	}
	if _, err := os.Stat(filepath.Join(metrics.RunDir(results, "live"), "report.md")); err != nil {
		t.Errorf("no report: %v", err)
	}
}

// lab run --help says what the live shell may touch, that a shell without the sandbox is not
// one, and the tools' time limit.
func TestRunHelpSaysWhatTheShellMayTouch(t *testing.T) {
	code, out, errOut := runLab(t, "run", "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"sees the project copy and its HOME (read-write)", "not the results folder", "a /proc of its own processes",
		"runs no command, unless --unsandboxed-shell", "a real shell that is not a sandbox",
		"runs within --tool-timeout (default 30s)", "--unsandboxed-shell ", "--tool-timeout duration",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lab run --help does not say %q", want)
		}
	}
}
