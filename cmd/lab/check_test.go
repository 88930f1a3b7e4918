package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/cachesim"
	"lab/chat"
	"lab/check"
	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
	"lab/metrics/metricstest"
	"lab/tools"
)

// needSimTokenizer skips a test that runs the sim backend with -short, or when the Qwen3
// tokenizer is not cached and npm cannot fetch it.
func needSimTokenizer(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs scenarios on the sim backend")
	}
	needTokenizer(t)
}

// The project's own CI file holds on the sim backend: exit 0, and the summary says so.
func TestCheckCIFilePasses(t *testing.T) {
	needSimTokenizer(t)
	code, out, errOut := runLab(t, "check", filepath.Join("..", "..", "checks", "ci.yaml"), "--quiet")
	if code != exitOK {
		t.Fatalf("lab check checks/ci.yaml: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.HasSuffix(out, " held, 0 failed\n") || strings.Contains(out, "FAIL") {
		t.Errorf("stdout %q; want only the summary with 0 failed", out)
	}
}

// A file made to fail: the date arm of midnight, held to what the spec arm keeps, loses its
// cache at midnight. Exit 3 with the FAIL lines; --results keeps the run, and --run on it gives
// the same verdict as JSON.
func TestCheckFailsOnTheDateArm(t *testing.T) {
	needSimTokenizer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "midnight.yaml")
	os.WriteFile(file, []byte(`scenarios: [midnight]
arms: [date-in-system-prompt]
expect:
  - scenario: midnight
    arm: date-in-system-prompt
    min_cached_share: 0.25
  - scenario: midnight
    arm: date-in-system-prompt
    no_divergence_before: tools
  - scenario: midnight
    arm: "*"
    max_reread_tokens: 1000000
`), 0o644)
	results := filepath.Join(dir, "results")
	code, out, errOut := runLab(t, "check", file, "--results", results, "--quiet")
	if code != exitFailed {
		t.Fatalf("exit %d; want 3\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// The kept run prints its folder first; then one failure per expectation, then the summary.
	var fails []string
	for _, l := range lines {
		if strings.HasPrefix(l, "FAIL ") {
			fails = append(fails, l)
		}
	}
	if len(fails) != 2 {
		t.Fatalf("FAIL lines %q; want 2 (one request breaks both expectations)", fails)
	}
	wantShare := "FAIL midnight/date-in-system-prompt rep 1 request "
	if !strings.HasPrefix(fails[0], wantShare) || !strings.Contains(fails[0], ": cached share 0.000 < 0.25 (cached tokens: simulation; first divergence: system) ["+file+":4]") {
		t.Errorf("first FAIL line %q", fails[0])
	}
	if !strings.HasPrefix(fails[1], wantShare) || !strings.HasSuffix(fails[1], ": diverged in system, before tools ["+file+":7]") {
		t.Errorf("second FAIL line %q", fails[1])
	}
	if got := lines[len(lines)-1]; got != "3 expectations, 1 held, 2 failed" {
		t.Errorf("summary %q", got)
	}
	if !strings.Contains(errOut, "lab: 2 of 3 expectations failed") {
		t.Errorf("stderr %q", errOut)
	}

	// The kept run, evaluated again with --run and --json: only JSON on stdout.
	runs, err := os.ReadDir(results)
	if err != nil || len(runs) != 1 {
		t.Fatalf("results folder: %v, %v; want one run", runs, err)
	}
	code, out, _ = runLab(t, "check", file, "--run", filepath.Join(results, runs[0].Name()), "--format", "json")
	if code != exitFailed {
		t.Fatalf("--run --json: exit %d; want 3", code)
	}
	var res check.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if res.Held != 1 || res.Failed != 2 || res.Expectations[0].Status != check.Failed || res.Expectations[2].Status != check.Held {
		t.Errorf("JSON result: held %d, failed %d, %+v", res.Held, res.Failed, res.Expectations)
	}
	if f := res.Expectations[0].Failures; len(f) != 1 || f[0].DivergenceSegment != "system" || f[0].CachedSource != metrics.CachedSourceSimulation {
		t.Errorf("failures %+v", f)
	}
}

// writeCheckRun writes a run folder of the old layout with the given samples.
func writeCheckRun(t *testing.T, dir string, samples []metrics.Sample) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := metricstest.WriteOldSamples(dir, metrics.FileMeta{}, samples); err != nil {
		t.Fatal(err)
	}
	man := &metrics.Manifest{RunID: filepath.Base(dir), Scenarios: []string{"my-scenario"}, Arms: []string{"spec"}, Repetitions: 1, Backend: "sim", Complete: true, Samples: len(samples)}
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.ManifestFile), man); err != nil {
		t.Fatal(err)
	}
}

// --run checks any results folder, with no tokenizer and no server: a scenario of the run's own
// (not embedded) is a known name there.
func TestCheckRunFolder(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r")
	cached := func(n int64) *int64 { return &n }
	writeCheckRun(t, run, []metrics.Sample{
		{Scenario: "my-scenario", Arm: "spec", Repetition: 1, RequestIndex: 0, Turn: 1, Step: 1, PromptTokens: 1000, CachedTokens: cached(0), CachedSource: metrics.CachedSourceServerLog, ExpectedCachedTokens: new(int64(0)), RereadTokens: new(int64(1000))},
		{Scenario: "my-scenario", Arm: "spec", Repetition: 1, RequestIndex: 1, Turn: 1, Step: 2, PromptTokens: 2000, CachedTokens: cached(1900), CachedSource: metrics.CachedSourceServerLog, ExpectedCachedTokens: new(int64(1900)), RereadTokens: new(int64(100)), DivergenceSegment: "message 2"},
		{Scenario: "my-scenario", Arm: "spec", Repetition: 1, RequestIndex: 2, Turn: 2, Step: 1, PromptTokens: 2500, ExpectedCachedTokens: new(int64(500)), RereadTokens: new(int64(2000)), DivergenceSegment: "tools"},
	})
	file := filepath.Join(dir, "c.yaml")
	for _, tc := range []struct {
		name, yaml string
		code       int
		out        string
	}{
		{"holds", "expect:\n  - {scenario: my-scenario, arm: spec, min_cached_share: 0.2}\n  - {scenario: '*', arm: spec, no_divergence_before: tools}\n",
			exitOK, "2 expectations, 2 held, 0 failed\n"},
		{"fails", "expect:\n  - {scenario: my-scenario, arm: spec, min_cached_share: 0.5}\n  - {scenario: '*', arm: spec, no_divergence_before: conversation}\n  - {scenario: '*', arm: spec, max_reread_tokens: 3000}\n",
			exitFailed, "FAIL my-scenario/spec rep 1 request 2: cached share 0.200 < 0.5 (expected cached tokens: the server did not say; first divergence: tools) [" + file + ":2]\n" +
				"FAIL my-scenario/spec rep 1 request 2: diverged in tools, before conversation [" + file + ":3]\n" +
				// Request 2's cached tokens are unknown, so is its re-read: the check cannot pass.
				"FAIL my-scenario/spec: re-read tokens unknown on 1 of 3 requests (the server did not say how many tokens it reused, or the request failed): at most 3,000 cannot be checked [" + file + ":4]\n" +
				"3 expectations, 0 held, 3 failed\n"},
		{"a scenario the run lacks", "expect:\n  - {scenario: midnight, arm: spec, max_reread_tokens: 3000}\n",
			exitFailed, "FAIL midnight/spec: no requests of midnight/spec in the samples [" + file + ":2]\n1 expectation, 0 held, 1 failed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(file, []byte(tc.yaml), 0o644)
			code, out, errOut := runLab(t, "check", file, "--run", run)
			if code != tc.code || out != tc.out {
				t.Errorf("exit %d, stdout\n%s\nwant exit %d, stdout\n%s\n(stderr %q)", code, out, tc.code, tc.out, errOut)
			}
		})
	}
}

// Bad input exits 2 before anything runs: a check file error names the file and line.
func TestCheckBadInputExits2(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("expect:\n  - scenario: midnight\n    arm: spec\n    min_cached_share: 1.5\n"), 0o644)
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("expect:\n  - scenario: midnite\n    arm: spec\n    max_reread_tokens: 1\n"), 0o644)
	starOnly := filepath.Join(dir, "star.yaml")
	os.WriteFile(starOnly, []byte("expect:\n  - scenario: '*'\n    arm: spec\n    max_reread_tokens: 1\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", bad}, bad + ":4: min_cached_share: 1.5 is outside 0..1"},
		{[]string{"check", unknown}, unknown + `:2: scenario: unknown scenario "midnite"`},
		{[]string{"check", starOnly}, starOnly + ": nothing to run: list the scenarios"},
		{[]string{"check", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
		{[]string{"check", bad, "--backend", "vllm"}, `--backend "vllm": want sim or ollama`},
		{[]string{"check", bad, "--run", filepath.Join(dir, "no-such-run")}, "--run " + filepath.Join(dir, "no-such-run")},
		{[]string{"check", bad, "--run", dir, "--backend", "ollama"}, "--run evaluates a run folder and runs nothing"},
		{[]string{"check"}, "accepts 1 arg"},
	} {
		code, out, errOut := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
		if out != "" {
			t.Errorf("lab %s: stdout %q; want nothing", strings.Join(tc.args, " "), out)
		}
	}
}

// lab check runs scenarios with lab run's defaults.
func TestRunDefaults(t *testing.T) {
	o := runDefaults(&streams{out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	if o.NumCtx != gguf.DefaultContextLength || o.CacheModel != cachesim.ModelLlamaCpp || o.ModelName != localserver.DefaultModelName || o.Repeat != 1 || o.Model != gguf.DefaultModelOptions() ||
		o.Live.ToolTimeout != tools.DefaultToolTimeout || o.MaxReplyBytes != chat.DefaultMaxReplyBytes || o.Reliability.RequestTimeout <= 0 {
		t.Errorf("runDefaults = %+v", o)
	}
}

// A run folder whose samples cannot be read is bad input (exit 2) for lab check --run, as for
// lab report; so is a missing folder.
func TestCheckRunUnreadable(t *testing.T) {
	dir := t.TempDir()
	run := writeRun(t, dir, "a", 0)
	if err := os.WriteFile(filepath.Join(run, metrics.SamplesFile), []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("expect:\n  - scenario: midnight\n    arm: spec\n    max_reread_tokens: 10\n"), 0o644)
	for _, r := range []string{run, filepath.Join(dir, "nope")} {
		code, _, errOut := runLab(t, "check", file, "--run", r)
		if code != exitBadInput || !strings.Contains(errOut, r) {
			t.Errorf("check --run %s: exit %d, stderr %q; want 2 naming it", r, code, errOut)
		}
	}
	if code, _, errOut := runLab(t, "report", run); code != exitBadInput {
		t.Errorf("report of the same folder: exit %d, stderr %q; want 2", code, errOut)
	}
}

// lab check runs its matrix with the run configuration lab run builds for the same matrix and
// no other flag: the two manifests record the same setup (the backend, model, server, context
// length and every setting, the flags recorded for a resume included) and the same number of
// rows.
func TestCheckRunsLabRunsConfiguration(t *testing.T) {
	needTokenizer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("scenarios: [midnight]\narms: [spec]\nrepeat: 1\nexpect:\n  - scenario: midnight\n    arm: spec\n    max_reread_tokens: 1000000000\n"), 0o644)
	checked := filepath.Join(dir, "check")
	if code, out, errOut := runLab(t, "check", file, "--results", checked, "--quiet"); code != exitOK {
		t.Fatalf("lab check: exit %d\n%s%s", code, out, errOut)
	}
	ran := filepath.Join(dir, "run")
	if code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec", "--repeat", "1", "--results", ran, "--run-id", "r", "--quiet"); code != exitOK {
		t.Fatalf("lab run: exit %d\n%s%s", code, out, errOut)
	}
	runs, err := os.ReadDir(checked)
	if err != nil || len(runs) != 1 {
		t.Fatalf("lab check --results kept %v (%v); want one run folder", runs, err)
	}
	a, as, err := metrics.ReadRun(filepath.Join(checked, runs[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	b, bs, err := metrics.ReadRun(metrics.RunDir(ran, "r"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Backend != b.Backend || a.Model != b.Model || a.ServerVersion != b.ServerVersion || a.NumCtx != b.NumCtx ||
		!maps.Equal(a.Settings, b.Settings) || len(as) != len(bs) {
		t.Errorf("lab check's run: backend %q, model %q, server %q, num_ctx %d, %d rows, settings %v\nlab run's: backend %q, model %q, server %q, num_ctx %d, %d rows, settings %v",
			a.Backend, a.Model, a.ServerVersion, a.NumCtx, len(as), a.Settings, b.Backend, b.Model, b.ServerVersion, b.NumCtx, len(bs), b.Settings)
	}
}

// A check file may name an arm of the user's own (--arms): a clock at minute granularity at the
// end of the system prompt breaks no_divergence_before tools on midnight, attributed to the
// clock line, and an arm the file does not define is an error naming the check file's line.
func TestCheckNamesUserArms(t *testing.T) {
	needSimTokenizer(t)
	dir := t.TempDir()
	armsFile := filepath.Join(dir, "arms.yaml")
	os.WriteFile(armsFile, []byte(`arms:
  - name: minute-clock
    description: a time line at minute granularity at the end of the system prompt
    practices:
      - clock: {granularity: minute, place: system_end}
`), 0o644)
	file := filepath.Join(dir, "check.yaml")
	os.WriteFile(file, []byte(`scenarios: [midnight]
arms: [minute-clock]
expect:
  - scenario: midnight
    arm: minute-clock
    no_divergence_before: tools
`), 0o644)
	code, out, errOut := runLab(t, "check", file, "--arms", armsFile, "--quiet", "--format", "json")
	if code != exitFailed {
		t.Fatalf("exit %d; want 3\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var res check.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	f := res.Expectations[0].Failures
	if len(f) == 0 || f[0].Arm != "minute-clock" || f[0].DivergenceSegment != "clock in system" {
		t.Errorf("failures %+v; want the user arm's requests, diverging at the clock in the system prompt", f)
	}
	// Without the arm file the arm is unknown: bad input naming the check file's line.
	code, _, errOut = runLab(t, "check", file, "--quiet")
	if code != exitBadInput || !strings.Contains(errOut, file+":2") || !strings.Contains(errOut, "minute-clock") {
		t.Errorf("without --arms: exit %d, stderr %q; want 2 and %s:2 naming the arm", code, errOut, file)
	}
}

// A run records --arms as an absolute path, so that a resume started from another folder reads
// the same file.
func TestRunRecordsTheArmsFileAbsolute(t *testing.T) {
	needSimTokenizer(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "arms.yaml"), []byte("arms:\n  - name: mine\n    description: a day clock\n    practices:\n      - clock: {}\n"), 0o644)
	t.Chdir(dir)
	results := filepath.Join(dir, "results")
	code, _, errOut := runLab(t, "run", "--backend", "sim", "--arms", "arms.yaml", "--arm", "mine", "--scenario", "midnight", "--results", results, "--run-id", "abs", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	man, err := metrics.ReadRunManifest(metrics.RunDir(results, "abs"))
	if err != nil {
		t.Fatal(err)
	}
	var flags map[string]string
	if err := json.Unmarshal([]byte(man.Settings[settingRunFlags]), &flags); err != nil || flags["arms"] != filepath.Join(dir, "arms.yaml") {
		t.Errorf("recorded --arms %q (%v); want %s", flags["arms"], err, filepath.Join(dir, "arms.yaml"))
	}
}
