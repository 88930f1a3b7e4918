package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"lab/metrics"
	"lab/metrics/metricstest"
)

// A run killed with SIGKILL, end to end: lab run (midnight × spec through the openai backend) is
// copied as it is on disk at its 20th request, nothing closed. lab report reads the copy from
// its journal and points at lab repair; with a corrupt journal line it names the line, reports
// every other row and exits 1 (it used to print "No samples." and exit 0); lab repair writes the
// part file from the journal (exit 0, or 1 naming the line when one was lost), and says the run
// is whole the second time, as it does for the run that was never killed.
func TestKilledRunReportAndRepair(t *testing.T) {
	t.Parallel()
	results, killed := t.TempDir(), t.TempDir()
	dir := metrics.RunDir(results, "f")
	var snap string
	srv := httptest.NewServer(&faultServer{fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 20 {
			snap = metricstest.CopyRun(t, dir, killed)
		}
		return false
	}})
	defer srv.Close()
	code, _, errOut := runLab(t, "run", "--backend", "openai", "--base-url", srv.URL+"/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "f", "--quiet")
	if _, whole, err := metrics.ReadRun(dir); code != 0 || err != nil || len(whole) != 48 || snap == "" {
		t.Fatalf("the run: exit %d (%s), %d rows, %v", code, errOut, len(whole), err)
	}
	s := metrics.Shard{Index: 1, Count: 1}
	jname := metrics.JournalPath(metrics.PartFile(s))
	journal, err := metrics.ReadJournal(filepath.Join(snap, jname))
	if err != nil || len(journal) < 10 {
		t.Fatalf("the killed run's journal: %d rows, %v", len(journal), err)
	}
	if _, err := os.Stat(filepath.Join(snap, metrics.PartFile(s))); !os.IsNotExist(err) {
		t.Fatalf("the killed run has its part file: %v", err)
	}
	corrupt := metricstest.CopyRun(t, snap, t.TempDir())
	cut := metricstest.CopyRun(t, snap, t.TempDir())
	editLines := func(dir string, edit func([]string) []string) {
		path := filepath.Join(dir, jname)
		data, _ := os.ReadFile(path)
		lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
		os.WriteFile(path, []byte(strings.Join(edit(lines), "")), 0o644)
	}
	editLines(corrupt, func(l []string) []string { l[4] = `{"run_id":"f","scen` + "\n"; return l })
	editLines(cut, func(l []string) []string { l[len(l)-1] = l[len(l)-1][:30]; return l })

	// lab report reads the killed run from its journal, says so, and exits 0. (The run's one
	// session was cut, so the analysis leaves it out, counting its rows.)
	requests := func(n int) string { return `"requests": ` + strconv.Itoa(n) + "," }
	code, out, errOut := runLab(t, "report", "--format", "json", snap)
	if code != 0 || !strings.Contains(errOut, "lab repair "+snap) || !strings.Contains(out, requests(len(journal))) {
		t.Errorf("report of the killed run: exit %d, stderr %q, stdout %q; want 0, %d rows, and a pointer to lab repair", code, errOut, out, len(journal))
	}
	// With a corrupt line: every other row is reported, the line named, exit 1.
	code, out, errOut = runLab(t, "report", "--format", "json", corrupt)
	if code != exitError || !strings.Contains(errOut, filepath.Join(corrupt, jname)+":5:") || !strings.Contains(errOut, "lab repair") ||
		!strings.Contains(out, requests(len(journal)-1)) {
		t.Errorf("report with a corrupt journal line: exit %d, stderr %q, stdout %q; want 1, the line named, %d rows", code, errOut, out, len(journal)-1)
	}
	// The text report's header counts the rows read and the journal's lines, the lost one too.
	_, out, _ = runLab(t, "report", "--format", "text", corrupt)
	if want := fmt.Sprintf("samples: %d read (%d from the journal of a samples file the run left unclosed, which held %d lines; 1 held no sample: row lost)", len(journal)-1, len(journal)-1, len(journal)); !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		t.Errorf("text report with a corrupt journal line: stdout %q; want the header %q", out, want)
	}
	// Written into the run folder, the same.
	code, _, errOut = runLab(t, "report", corrupt)
	if _, err := os.Stat(filepath.Join(corrupt, reportMarkdown)); code != exitError || !strings.Contains(errOut, ":5:") || err != nil {
		t.Errorf("report files with a corrupt journal line: exit %d, stderr %q, %v; want 1, the line named, report.md written", code, errOut, err)
	}
	code, _, errOut = runLab(t, "compare", snap, corrupt, "--allow-incomplete")
	if code == exitOK || !strings.Contains(errOut, ":5:") {
		t.Errorf("compare with a corrupt journal line: exit %d, stderr %q; want non-zero, the line named", code, errOut)
	}

	// lab repair: the part file is written from the journal, the manifest records it.
	code, out, errOut = runLab(t, "repair", snap)
	if code != exitOK || !strings.Contains(out, "wrote "+metrics.PartFile(s)+" from "+jname) || errOut != "" {
		t.Errorf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	man, rows, err := metrics.ReadRun(snap)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(journal, rows); diff != "" {
		t.Errorf("repaired rows differ from the journal's (-journal +repaired):\n%s", diff)
	}
	if man.Complete || len(man.Repairs) != 1 || man.Repairs[0].Rows != len(journal) || man.Repairs[0].LabVersion == "" {
		t.Errorf("manifest after repair: complete %v, repairs %+v", man.Complete, man.Repairs)
	}
	if _, err := os.Stat(filepath.Join(snap, jname)); !os.IsNotExist(err) {
		t.Errorf("the journal is left after the repair: %v", err)
	}
	if _, err := os.Stat(filepath.Join(snap, metrics.PartFile(s)+metrics.PartialSuffix)); !os.IsNotExist(err) {
		t.Errorf("the partial file is left after the repair: %v", err)
	}
	for _, d := range []string{snap, dir} {
		code, out, errOut = runLab(t, "repair", d)
		if code != exitOK || !strings.Contains(out, "nothing to repair") {
			t.Errorf("repair of a whole run %s: exit %d, stdout %q, stderr %q", d, code, out, errOut)
		}
	}
	if code, _, errOut = runLab(t, "report", snap); code != exitOK || errOut != "" {
		t.Errorf("report of the repaired run: exit %d, stderr %q", code, errOut)
	}

	// A corrupt middle line, a cut last line: named, skipped, every other row kept, exit 1.
	for _, tc := range []struct {
		dir  string
		line int
		drop int
	}{{corrupt, 5, 4}, {cut, len(journal), len(journal) - 1}} {
		code, out, errOut = runLab(t, "repair", tc.dir)
		if code != exitError || !strings.Contains(errOut, filepath.Join(tc.dir, jname)+":"+strconv.Itoa(tc.line)+":") ||
			!strings.Contains(errOut, "1 row lost") || !strings.Contains(out, "1 journal line skipped") {
			t.Errorf("repair of %s: exit %d, stdout %q, stderr %q; want 1 naming line %d", tc.dir, code, out, errOut, tc.line)
		}
		want := append(append([]metrics.Sample{}, journal[:tc.drop]...), journal[tc.drop+1:]...)
		_, rows, err := metrics.ReadRun(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, rows); diff != "" {
			t.Errorf("%s: repaired rows (-want +got):\n%s", tc.dir, diff)
		}
	}
	if code, _, errOut = runLab(t, "repair", filepath.Join(results, "none")); code != exitBadInput {
		t.Errorf("repair of no run folder: exit %d, %q; want 2", code, errOut)
	}
}

// labHelperEnv holds, for TestLabHelperProcess, the arguments of the lab command that the test
// binary, run again as a child process, executes.
const labHelperEnv = "LAB_TEST_HELPER_ARGS"

// TestLabHelperProcess is not a test: run by the test binary as a child process with
// LAB_TEST_HELPER_ARGS set (arguments separated by the unit separator, U+001F), it runs lab with them and exits with its
// code, so that a test can SIGKILL a real lab process.
func TestLabHelperProcess(t *testing.T) {
	args := os.Getenv(labHelperEnv)
	if args == "" {
		t.Skip("run as a child process by TestSigkilledRunRepaired")
	}
	os.Exit(run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// A lab run killed with SIGKILL, as a real process: while it runs (its server holds request 12)
// lab repair leaves the part alone, since the running process holds its journal's lock; once it
// is killed, lab repair writes the part file from the journal, with every row the journal
// holds, and lab report reads it without a warning.
func TestSigkilledRunRepaired(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	hold := make(chan struct{})
	held := make(chan struct{}, 1)
	srv := httptest.NewServer(&faultServer{fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 12 {
			held <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			return true
		}
		return false
	}})
	defer srv.Close()
	defer close(hold)
	args := []string{"run", "--backend", "openai", "--base-url", srv.URL + "/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "k", "--quiet", "--retries", "0"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLabHelperProcess$")
	// The killed child cannot remove its session's sandbox: with a TMPDIR of the test's own it is
	// made there (tools.PrivateSandbox), and removed with it, not left in the machine's /dev/shm
	// (memory, until the next boot) or /tmp at every run of the tests.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, labHelperEnv+"="+strings.Join(args, "\x1f"))
	var childErr bytes.Buffer
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the child lab never sent request 12: %s", childErr.String())
	}
	dir := metrics.RunDir(results, "k")
	s := metrics.Shard{Index: 1, Count: 1}

	code, out, errOut := runLab(t, "report", "--format", "json", dir)
	if code != exitOK || !strings.Contains(errOut, "still writing") {
		t.Errorf("report of a running run: exit %d, stderr %q; want 0 and a warning that it is being written", code, errOut)
	}

	code, out, errOut = runLab(t, "repair", dir)
	if code != exitError || !strings.Contains(errOut, "still writing") {
		t.Errorf("repair of a running run: exit %d, stdout %q, stderr %q; want 1, the part left alone", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.PartFile(s))); !os.IsNotExist(err) {
		t.Errorf("repair of a running run wrote its part file: %v", err)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if left, _ := filepath.Glob(filepath.Join(tmp, "lab-sandbox-midnight-*")); len(left) != 1 {
		t.Errorf("the killed run's sandboxes under its TMPDIR %s: %q; want the one it was killed in", tmp, left)
	}
	journal, err := metrics.ReadJournal(filepath.Join(dir, metrics.JournalPath(metrics.PartFile(s))))
	if err != nil || len(journal) != 11 {
		t.Fatalf("the killed run's journal: %d rows, %v; want the 11 answered before request 12", len(journal), err)
	}
	// The report's header gives the rows read from the journal, not the manifest's count, which
	// is written as each session ends and so is behind after the kill.
	man, err := metrics.ReadRunManifest(dir)
	if err != nil || man.Samples == len(journal) {
		t.Fatalf("the killed run's manifest: %v, %d samples; want fewer than the journal's %d", err, man.Samples, len(journal))
	}
	code, out, _ = runLab(t, "report", "--format", "text", dir)
	if want := fmt.Sprintf("samples: 11 read (11 from the journal of a samples file the run left unclosed, which held 11 lines); the manifest, written as each session ends, counts %d", man.Samples); code != exitOK || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		t.Errorf("report of the killed run: exit %d, stdout %q; want 0 and the header %q", code, out, want)
	}
	code, out, errOut = runLab(t, "repair", dir)
	if code != exitOK || !strings.Contains(out, "wrote "+metrics.PartFile(s)) || errOut != "" {
		t.Fatalf("repair of the killed run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(journal, rows); diff != "" {
		t.Errorf("repaired rows differ from the journal's (-journal +repaired):\n%s", diff)
	}
	if code, _, errOut := runLab(t, "report", "--format", "text", dir); code != exitOK || errOut != "" {
		t.Errorf("report of the repaired run: exit %d, stderr %q", code, errOut)
	}
}

// A run folder whose manifest does not read is bad input for lab repair, as for lab report:
// exit 2, naming the manifest's file and line.
func TestRepairBadManifest(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run_id=bad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, metrics.PartManifestFile(metrics.Shard{Index: 1, Count: 1}))
	if err := os.WriteFile(man, []byte("{\n  \"run_id\": \"bad\",,\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"repair", "report"} {
		code, _, errOut := runLab(t, cmd, "--", dir)
		if code != exitBadInput || !strings.Contains(errOut, man+":2:") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming %s:2", cmd, code, errOut, man)
		}
	}
}

// The old layout is read only: lab repair names a killed run of it (manifest.json, a
// samples.parquet without footer and its journal), writes nothing into it and exits 2, and still
// repairs a killed run of the part layout given with it; the old run's rows stay readable from
// its journal.
func TestRepairRefusesTheOldLayout(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	var rows []metrics.Sample
	for i := range int32(5) {
		rows = append(rows, metrics.Sample{RunID: "old", Scenario: "midnight", Arm: metrics.SpecArm, Repetition: 1, RequestIndex: i, PromptTokens: 1000 + int64(i)})
	}
	old := filepath.Join(results, "20250309-235900")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	man := &metrics.Manifest{RunID: "old", Scenarios: []string{"midnight"}, Arms: []string{metrics.SpecArm}, Repetitions: 1, Backend: "sim", Samples: len(rows)}
	if err := metrics.WriteManifest(filepath.Join(old, metrics.ManifestFile), man); err != nil {
		t.Fatal(err)
	}
	if err := metricstest.WriteKilledOldSamples(old, rows); err != nil {
		t.Fatal(err)
	}
	snapshot := func(dir string) map[string]string {
		out := map[string]string{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			out[e.Name()] = string(b)
		}
		return out
	}
	before := snapshot(old)

	// A killed run of the part layout: its part left open, copied as the kill left it.
	one := metrics.Shard{Index: 1, Count: 1}
	live := metrics.RunDir(t.TempDir(), "new")
	if err := os.MkdirAll(live, 0o755); err != nil {
		t.Fatal(err)
	}
	pm := *man
	pm.RunID, pm.Shard = "new", &one
	if err := metrics.WriteManifest(filepath.Join(live, metrics.PartManifestFile(one)), &pm); err != nil {
		t.Fatal(err)
	}
	sink, err := metrics.CreatePart(live, one, metrics.FileMeta{RunID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		r := rows[i]
		r.RunID = "new"
		if err := sink.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	killed := metricstest.CopyRun(t, live, results)
	sink.Close()

	code, out, errOut := runLab(t, "repair", old, killed)
	if code != exitBadInput || !strings.Contains(errOut, old+": "+metrics.ErrOldLayout.Error()) || !strings.Contains(errOut, "writes nothing into it") {
		t.Errorf("lab repair of an old-layout run: exit %d, stderr %q; want 2 naming %s as read only", code, errOut, old)
	}
	if diff := cmp.Diff(before, snapshot(old)); diff != "" {
		t.Errorf("lab repair wrote into the old-layout folder (-before +after):\n%s", diff)
	}
	if got, err := metrics.ReadParquet(filepath.Join(killed, metrics.PartFile(one))); err != nil || len(got) != len(rows) || !strings.Contains(out, "wrote "+metrics.PartFile(one)) {
		t.Errorf("the part-layout run beside it: %d rows in its part file (%v), stdout %q; want %d, repaired", len(got), err, out, len(rows))
	}
	if _, got, err := metrics.ReadRun(old); err != nil || len(got) != len(rows) {
		t.Errorf("ReadRun of the old-layout run: %d rows, %v; want %d from its journal", len(got), err, len(rows))
	}
}
