package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// setupRuns returns the manifests of repsFixture's runs r1 (2 repetitions) and r2 (1), sim runs
// of midnight with the given cache models and midnight content digests.
func setupRuns(cache1, cache2, digest1, digest2 string) []*metrics.Manifest {
	mk := func(id, cache, digest string, reps int) *metrics.Manifest {
		m := testManifest()
		m.RunID, m.Repetitions, m.Backend, m.ServerVersion = id, reps, "sim", "cachesim "+cache
		m.Scenarios = []string{"midnight"}
		m.Settings = map[string]string{"driver": "scripted", "cache_model": cache, "lab_run_flags": `{"run-id":"` + id + `"}`}
		if digest != "" {
			m.ScenarioDigests = map[string]string{"midnight": digest}
		}
		return m
	}
	return []*metrics.Manifest{mk("r1", cache1, digest1, 2), mk("r2", cache2, digest2, 1)}
}

// repsOf returns the repetitions (run id/repetition) of scenario × arm in a.
func repsOf(a *report.Analysis, scenario, arm string) []string {
	for _, sc := range a.Scenarios {
		if sc.Scenario != scenario {
			continue
		}
		var out []string
		if st := sc.Arm(arm); st != nil {
			for _, r := range st.Reps {
				out = append(out, r.RunID+"/"+string(rune('0'+r.Repetition)))
			}
		}
		return out
	}
	return nil
}

// Runs of different setups (here the sim's cache model) are never pooled as repetitions: each
// setup is analysed alone, its arms compared with its own spec arm; the report gives each its
// section and sets them side by side; CSV and benchfmt keep them apart by setup label.
func TestAnalyzeRunsKeepsSetupsApart(t *testing.T) {
	t.Parallel()
	runs := setupRuns("llamacpp", "vllm", "sha256:aa", "sha256:aa")
	a := report.AnalyzeRuns(runs, repsFixture())
	if len(a.Setups) != 2 || len(a.Scenarios) != 0 {
		t.Fatalf("two setups: %d setup analyses, %d pooled scenarios; want 2 and none", len(a.Setups), len(a.Scenarios))
	}
	A, B := a.Setups[0], a.Setups[1]
	if A.Setup.Label != "A" || !slices.Equal(A.Setup.Runs, []string{"r1"}) || B.Setup.Label != "B" || !slices.Equal(B.Setup.Runs, []string{"r2"}) {
		t.Errorf("setups %+v, %+v", A.Setup, B.Setup)
	}
	if got := repsOf(A, "midnight", "spec"); !slices.Equal(got, []string{"r1/1", "r1/2"}) {
		t.Errorf("setup A's spec repetitions %v; want r1/1 r1/2", got)
	}
	if got := repsOf(B, "midnight", report.CliffArm); !slices.Equal(got, []string{"r2/1"}) {
		t.Errorf("setup B's date arm repetitions %v; want r2/1", got)
	}
	if v := B.Scenarios[0].Arm(report.CliffArm).VsSpec; v == nil || v.Pairs != 1 {
		t.Errorf("setup B's comparison with spec: %+v; want 1 pair, its own spec arm", v)
	}

	var text bytes.Buffer
	if err := report.Text(&text, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Run r1 (setup A):", "These runs are of 2 setups", "They differ in: server version: A cachesim llamacpp, B cachesim vllm; cache_model: A llamacpp, B",
		"sets the two setups' figures side by side", "\nSetup A\n", "\nSetup B\n", "Runs r2: backend sim"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var csv bytes.Buffer
	if err := report.CSV(&csv, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 7 || !strings.HasSuffix(lines[1], ",A,true") || !strings.HasSuffix(lines[6], ",B,true") ||
		!strings.HasPrefix(lines[1], "midnight,spec,2,") || !strings.HasPrefix(lines[4], "midnight,spec,1,") {
		t.Errorf("csv: want a header and 3 arms per setup, setup A's spec of 2 repetitions, B's of 1:\n%s", csv.String())
	}
	var bench bytes.Buffer
	if err := report.Benchfmt(&bench, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(bench.String(), "/arm=spec/setup=A "); n != 2 || strings.Count(bench.String(), "/arm=spec/setup=B ") != 1 {
		t.Errorf("benchfmt: %d lines of spec in setup A; want 2, and 1 in B:\n%s", n, bench.String())
	}
}

// Three setups: the Setups section sets them side by side, a row per setup under each
// scenario×arm, each with its re-read tokens relative to its own spec arm, and shows the charts
// marked SideBySide there and nowhere else.
func TestSetupsSideBySide(t *testing.T) {
	t.Parallel()
	runs := setupRuns("llamacpp", "vllm", "sha256:aa", "sha256:aa")
	third := *runs[1]
	third.RunID, third.ServerVersion = "r3", "cachesim sglang"
	third.Settings = map[string]string{"driver": "scripted", "cache_model": "sglang", "lab_run_flags": `{"run-id":"r3"}`}
	runs = append(runs, &third)
	samples := repsFixture()
	for _, s := range samples {
		if s.RunID == "r2" {
			s.RunID = "r3"
			if s.Arm == report.CliffArm && s.RequestIndex == 2 { // r3's date arm re-reads all of request 2
				s.CachedTokens, s.ExpectedCachedTokens, s.RereadTokens, s.RereadSystemTokens = new(int64(0)), new(int64(0)), new(s.PromptTokens), new(s.PromptTokens)
			}
			samples = append(samples, s)
		}
	}
	a := report.AnalyzeRuns(runs, samples)
	if len(a.Setups) != 3 {
		t.Fatalf("%d setups, want 3", len(a.Setups))
	}
	r := &report.Report{Runs: runs, Analysis: a, Figures: []report.Figure{
		{SideBySide: true, Title: "setups side by side", Files: map[string]string{"svg": "plots/setups-reread-vs-spec.svg"}}}}
	var text bytes.Buffer
	if err := report.Text(&text, r); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	setups := out[strings.Index(out, "\nSetups\n"):strings.Index(out, "\nServers side by side")]
	for _, want := range []string{"scenario  arm                    setup  repetitions  cached share  re-read tokens  re-read vs spec",
		"midnight  date-in-system-prompt  A      2            30.2% ± 1.9%  2,305 ± 64      1.89× [1.79×, 1.99×]",
		// r3's date arm re-reads request 2 whole, 20 tokens more than r2's: 2,310 over spec's 1,230.
		"                                 B      1            30.6%         2,290           1.86×",
		"                                 C      1            30.0%         2,310           1.88×", "setups side by side"} {
		if !strings.Contains(setups, want) {
			t.Errorf("the Setups section lacks %q:\n%s", want, setups)
		}
	}
	if n := strings.Count(out, "setups side by side"); n != 1 {
		t.Errorf("the side-by-side chart is shown %d times, want once (in Setups)", n)
	}
}

// Runs of one setup pool as repetitions; a scenario whose content differs between them is two
// scenarios; runs without digests (made before the lab recorded them) pool, and the analysis
// names what was not recorded.
func TestAnalyzeRunsPoolsOneSetup(t *testing.T) {
	t.Parallel()
	a := report.AnalyzeRuns(setupRuns("llamacpp", "llamacpp", "sha256:aa", "sha256:aa"), repsFixture())
	if len(a.Setups) != 0 || a.Setup == nil || !slices.Equal(a.Setup.Runs, []string{"r1", "r2"}) {
		t.Fatalf("one setup: %d setups, setup %+v", len(a.Setups), a.Setup)
	}
	if got := repsOf(a, "midnight", "spec"); len(got) != 3 {
		t.Errorf("one setup: spec repetitions %v; want all 3 pooled", got)
	}

	a = report.AnalyzeRuns(setupRuns("llamacpp", "llamacpp", "sha256:aaaaaaaaaaaaaaaa", "sha256:bbbbbbbbbbbbbbbb"), repsFixture())
	one, other := report.ContentName("midnight", "sha256:aaaaaaaaaaaaaaaa"), report.ContentName("midnight", "sha256:bbbbbbbbbbbbbbbb")
	if one != "midnight [content aaaaaaaaaaaa]" {
		t.Errorf("content name %q", one)
	}
	if got := repsOf(a, one, "spec"); !slices.Equal(got, []string{"r1/1", "r1/2"}) {
		t.Errorf("midnight of one content: spec repetitions %v; want r1's", got)
	}
	if got := repsOf(a, other, "spec"); !slices.Equal(got, []string{"r2/1"}) {
		t.Errorf("midnight of the other content: spec repetitions %v; want r2's", got)
	}
	if got := repsOf(a, "midnight", "spec"); got != nil {
		t.Errorf("a scenario named midnight pooling both contents: %v", got)
	}

	a = report.AnalyzeRuns(setupRuns("llamacpp", "llamacpp", "", ""), repsFixture())
	if got := repsOf(a, "midnight", "spec"); len(got) != 3 || a.Setup == nil ||
		!slices.Equal(a.Setup.Unknown, []string{"model file digest", "scenario contents of run r1", "host of run r1", "scenario contents of run r2", "host of run r2"}) {
		t.Errorf("old runs: spec repetitions %v, unknown %v", got, a.Setup)
	}
}

// A comparison of different setups, made because the difference is the point, says so first.
func TestComparisonNamesSetupChanges(t *testing.T) {
	t.Parallel()
	a := report.Analyze(repsFixture())
	c := report.Compare(a, a, 0.05)
	c.SetupChanges = []string{"cache_model llamacpp vs vllm"}
	c.Unverified = []string{"model file digest"}
	c.Notes = []string{"CPU X vs Y"}
	for _, format := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := c.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"differ in setup, compared because the difference is the point: cache_model llamacpp vs vllm.",
			"not checked to be the same: model file digest.", "not part of the setup): CPU X vs Y."} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s comparison lacks %q:\n%s", format, want, b.String())
			}
		}
	}
}

// A scenario whose content differs between runs of one setup is split in two, and its sessions
// are still judged by their runs' session records: a run that recorded how each session ended
// (every run of today's lab) keeps its complete sessions in the figures, under the scenario's
// content name.
func TestAnalyzeRunsSplitContentKeepsRecordedSessions(t *testing.T) {
	t.Parallel()
	runs := setupRuns("llamacpp", "llamacpp", "sha256:aaaaaaaaaaaaaaaa", "sha256:bbbbbbbbbbbbbbbb")
	for _, m := range runs {
		for rep := 1; rep <= m.Repetitions; rep++ {
			for _, arm := range []string{metrics.SpecArm, report.CliffArm, report.ReasoningNeverArm} {
				m.Sessions = append(m.Sessions, metrics.SessionRecord{Scenario: "midnight", Arm: arm, Repetition: rep, Requests: 3, Complete: true})
			}
		}
	}
	a := report.AnalyzeRuns(runs, repsFixture())
	if len(a.LeftOut) != 0 {
		t.Errorf("complete sessions left out: %v", a.LeftOut)
	}
	one, other := report.ContentName("midnight", "sha256:aaaaaaaaaaaaaaaa"), report.ContentName("midnight", "sha256:bbbbbbbbbbbbbbbb")
	if got := repsOf(a, one, "spec"); !slices.Equal(got, []string{"r1/1", "r1/2"}) {
		t.Errorf("midnight of one content: spec repetitions %v; want r1's", got)
	}
	if got := repsOf(a, other, "spec"); !slices.Equal(got, []string{"r2/1"}) {
		t.Errorf("midnight of the other content: spec repetitions %v; want r2's", got)
	}
	labels, complete := report.CompleteBySetup(runs, repsFixture())
	if len(labels) != 1 || len(complete[0]) != len(repsFixture()) {
		t.Errorf("CompleteBySetup: %d setups, %d complete samples; want 1 and %d", len(labels), len(complete[0]), len(repsFixture()))
	}
	// The caller's manifests keep their records as they were.
	if runs[0].Sessions[0].Scenario != "midnight" {
		t.Errorf("the run's own session record renamed to %q", runs[0].Sessions[0].Scenario)
	}
}

// Each setup's section carries its own prefill check and spec's claims, judged on its own runs:
// a report of several setups loses neither.
func TestSetupSectionsKeepTheirClaims(t *testing.T) {
	t.Parallel()
	runs := setupRuns("llamacpp", "vllm", "sha256:aa", "sha256:aa")
	runs[1].Backend = "ollama" // setup B is measured, setup A the sim
	rows := repsFixture()
	a := report.AnalyzeRuns(runs, rows)
	if len(a.Setups) != 2 || a.Setups[0].Claims.Cliff == nil || a.Setups[1].Claims.Cliff == nil {
		t.Fatalf("setups %d; want 2, each with its cliff claim", len(a.Setups))
	}
	var text bytes.Buffer
	if err := report.Text(&text, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	iA, iB := strings.Index(out, "\nSetup A\n"), strings.Index(out, "\nSetup B\n")
	if iA < 0 || iB < iA {
		t.Fatalf("no setup sections:\n%s", out)
	}
	secA, secB := out[iA:iB], out[iB:]
	for name, sec := range map[string]string{"A": secA, "B": secB} {
		for _, want := range []string{"Prefill time against the token counts", "The midnight cliff", "Reasoning sent back"} {
			if !strings.Contains(sec, want) {
				t.Errorf("setup %s's section lacks %q:\n%s", name, want, sec)
			}
		}
	}
	// The sim caveat and the modelled prefill belong to setup A's sim run only.
	if !strings.Contains(secA, "these figures come from the sim backend") || strings.Contains(secB, "these figures come from the sim backend") {
		t.Errorf("the sim caveat: in A %v, in B %v; want A only", strings.Contains(secA, "sim backend"), strings.Contains(secB, "sim backend"))
	}
}

// A setting one setup does not set reads "not set", never like a value of it ("none").
func TestSetupDiffsNotSet(t *testing.T) {
	t.Parallel()
	runs := setupRuns("anthropic", "anthropic", "sha256:aa", "sha256:aa")
	runs[1].Settings["cache_breakpoints"] = "none"
	a := report.AnalyzeRuns(runs, repsFixture())
	var text bytes.Buffer
	if err := report.Text(&text, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), "cache_breakpoints: A not set, B none") {
		t.Errorf("text report does not tell an unset setting from \"none\":\n%s", text.String())
	}
}

// An arm whose definition differs between runs of one setup (an arm file edited between them)
// is two arms, each named by its definition's digest; an arm defined alike in both pools, and a
// description or the line of its name does not count as a change of definition.
func TestAnalyzeRunsSplitsArmDefinitions(t *testing.T) {
	t.Parallel()
	runs := setupRuns("llamacpp", "llamacpp", "sha256:aa", "sha256:aa")
	for i, m := range runs {
		m.Arms = []string{metrics.SpecArm, report.CliffArm}
		m.ArmDefinitions = []json.RawMessage{
			json.RawMessage(`{"name":"spec","base":"spec","source":"built-in"}`),
			json.RawMessage(fmt.Sprintf(`{"name":"date-in-system-prompt","base":"spec","description":"run %d","source":"arms.yaml:%d","practices":[{"clock":{"granularity":"%s"}}]}`, i, i+1, []string{"day", "minute"}[i])),
		}
	}
	a := report.AnalyzeRuns(runs, repsFixture())
	if a.Setup == nil {
		t.Fatalf("one setup expected, got %d", len(a.Setups))
	}
	if got := repsOf(a, "midnight", "spec"); len(got) != 3 {
		t.Errorf("spec, defined alike: repetitions %v; want all 3 pooled", got)
	}
	d := runs[0].ArmDigests()[report.CliffArm]
	one := report.DefinitionName(report.CliffArm, d)
	if want := report.CliffArm + " [definition " + metrics.ShortDigest(d) + "]"; one != want || len(metrics.ShortDigest(d)) != 12 {
		t.Errorf("definition name %q; want %q", one, want)
	}
	if got := repsOf(a, "midnight", one); !slices.Equal(got, []string{"r1/1", "r1/2"}) {
		t.Errorf("%s: repetitions %v; want r1's", one, got)
	}
	if got := repsOf(a, "midnight", report.CliffArm); got != nil {
		t.Errorf("one arm pooling two definitions: %v", got)
	}
	// The definition without its description and source is what counts.
	runs[1].ArmDefinitions[1] = json.RawMessage(`{"name":"date-in-system-prompt","base":"spec","description":"other","source":"x.yaml:9","practices":[{"clock":{"granularity":"day"}}]}`)
	if x, y := runs[0].ArmDigests()[report.CliffArm], runs[1].ArmDigests()[report.CliffArm]; x != y {
		t.Errorf("same definition, other description and source: digests %s and %s", x, y)
	}
	a = report.AnalyzeRuns(runs, repsFixture())
	if got := repsOf(a, "midnight", report.CliffArm); len(got) != 3 {
		t.Errorf("arm defined alike: repetitions %v; want all 3 pooled", got)
	}
}

// The Setups section of two servers of one model shows no table (their own section sets them
// side by side), so its introduction promises none.
func TestSetupsOfTwoServersPromiseNoTable(t *testing.T) {
	t.Parallel()
	runs := setupRuns("llamacpp", "vllm", "sha256:aa", "sha256:aa")
	a := report.AnalyzeRuns(runs, repsFixture())
	if len(a.Setups) != 2 || len(a.Servers) != 1 {
		t.Fatalf("%d setups, %d server comparisons; want 2 and 1", len(a.Setups), len(a.Servers))
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	setups := out[strings.Index(out, "## Setups\n"):strings.Index(out, "## Servers side by side")]
	if strings.Contains(setups, "| scenario | arm | setup |") {
		t.Fatalf("the Setups section has the long table:\n%s", setups)
	}
	if strings.Contains(setups, "this table") {
		t.Errorf("the Setups section refers to a table it does not show:\n%s", setups)
	}
}

// A report of many runs names the first three and the last in its title, with their count;
// What was run names every one.
func TestTitleOfManyRuns(t *testing.T) {
	t.Parallel()
	var runs []*metrics.Manifest
	for i := range 6 {
		m := testManifest()
		m.RunID, m.Backend, m.Scenarios = fmt.Sprintf("run-%d", i+1), "sim", []string{"midnight"}
		runs = append(runs, m)
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, &report.Report{Runs: runs, Analysis: report.AnalyzeRuns(runs, nil)}); err != nil {
		t.Fatal(err)
	}
	title, _, _ := strings.Cut(md.String(), "\n")
	if title != "# 6 runs: run-1, run-2, run-3, … run-6" {
		t.Errorf("title %q", title)
	}
	for i := range 6 {
		if !strings.Contains(md.String(), fmt.Sprintf("Run run-%d:", i+1)) {
			t.Errorf("What was run does not name run-%d", i+1)
		}
	}
}

// With more than three setups At a glance is one table, a row per setup and scenario and a
// column per arm, each setup's ratio to its own spec arm.
func TestGlanceOfManySetups(t *testing.T) {
	t.Parallel()
	var runs []*metrics.Manifest
	var samples []metrics.Sample
	for i, cache := range []string{"llamacpp", "vllm", "sglang", "openai"} {
		r := setupRuns(cache, cache, "sha256:aa", "sha256:aa")[1] // run r2 of that cache model
		m := *r
		m.RunID = fmt.Sprintf("s%d", i)
		runs = append(runs, &m)
		for _, s := range repsFixture() {
			if s.RunID == "r2" {
				s.RunID = m.RunID
				samples = append(samples, s)
			}
		}
	}
	a := report.AnalyzeRuns(runs, samples)
	if len(a.Setups) != 4 {
		t.Fatalf("%d setups, want 4", len(a.Setups))
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	glance := out[strings.Index(out, "## At a glance"):strings.Index(out, "## What was run")]
	for _, want := range []string{"| setup: scenario | spec | date-in-system-prompt | reasoning-never |",
		"| A: midnight | 1.00× | 1.86× | 1.07× |", "| D: midnight | 1.00× | 1.86× | 1.07× |"} {
		if !strings.Contains(glance, want) {
			t.Errorf("At a glance lacks %q:\n%s", want, glance)
		}
	}
	if strings.Count(glance, "| arm |") != 0 {
		t.Errorf("At a glance of 4 setups has a table per setup:\n%s", glance)
	}
}
