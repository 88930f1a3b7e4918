package main

import (
	"regexp"
	"strings"
	"testing"

	"lab/internal/golden"
)

// moreFiles is the count of the run folder's other files in the closing lines, which depends on
// the charts drawn: the goldens hold "N".
var moreFiles = regexp.MustCompile(`\(and \d+ more files`)

// lab run ends with the answer: the summary of the run (per scenario and arm the cached share,
// the re-read tokens, re-read vs spec, the biggest loss and where the prompt diverged; the
// claims' verdicts), then where the report is, in at most 30 lines for the main job's arms;
// off a terminal its progress is one line per session, not per request.
func TestRunSummary(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	t.Setenv("TMPDIR", "/tmp")
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "midnight", "--arm", "spec,date-in-system-prompt",
		"--results", results, "--run-id", "summary")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	got := moreFiles.ReplaceAllString(strings.ReplaceAll(out, results, "RESULTS"), "(and N more files")
	golden.Check(t, "TestRunSummary.golden", []byte(got))
	if n := strings.Count(out, "\n"); n > 30 {
		t.Errorf("%d lines; want at most 30:\n%s", n, out)
	}
	for _, want := range []string{
		"date-in-system-prompt  91.8%   62,623          1.27×    request 27: 17,074, in system",
		"midnight cliff (§10, 99% cached to 0% when the date changed): holds",
		"  report.html", "  report.md",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	sessions := regexp.MustCompile(`(?m)^\[(48|96)/96\] midnight/(spec|date-in-system-prompt) repetition 1: 48 requests, 9\d\.\d% cached, `).FindAllString(errOut, -1)
	if len(sessions) != 2 || strings.Contains(errOut, "prompt tokens") {
		t.Errorf("progress off a terminal: want one line per session (2), no line per request:\n%s", errOut)
	}
}

// A run without the spec arm compares no arm with it: its summary has no vs spec column and
// never says an arm differs from spec.
func TestRunSummaryWithoutSpecArm(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	t.Setenv("TMPDIR", "/tmp")
	code, out, errOut := runLab(t, "run", "--backend", "sim", "--scenario", "midnight", "--arm", "plain,no-caps",
		"--results", results, "--run-id", "nospec")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	header := regexp.MustCompile(`(?m)^scenario +arm +cached +re-read tokens +biggest loss`)
	if !header.MatchString(out) || strings.Contains(out, "vs spec") || strings.Contains(out, "differ from spec") {
		t.Errorf("summary of a run without spec: want the table without a vs spec column:\n%s", out)
	}
	for _, arm := range []string{"plain", "no-caps"} {
		if !regexp.MustCompile(`(?m)^(midnight)? +` + arm + `  `).MatchString(out) {
			t.Errorf("summary lacks arm %s:\n%s", arm, out)
		}
	}
}
