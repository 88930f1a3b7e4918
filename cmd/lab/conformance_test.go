package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/conformance"
)

// lab conformance runs every area's cases, prints the closing count, and exits 0 when all pass;
// the count is the number of cases the files hold.
func TestConformanceCommand(t *testing.T) {
	total := 0
	for _, a := range conformance.Areas() {
		cases, err := conformance.Load(a)
		if err != nil {
			t.Fatal(err)
		}
		total += len(cases)
	}
	code, out, errOut := runLab(t, "conformance")
	if code != exitOK {
		t.Fatalf("exit %d, want 0 (every case passes)\n%s%s", code, out, errOut)
	}
	if want := fmt.Sprintf("%d passed, 0 failed\n", total); out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

func TestConformanceJSON(t *testing.T) {
	code, out, _ := runLab(t, "conformance", "--area", "context", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var rep conformance.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Areas) != 1 || rep.Areas[0] != "context" || rep.Failed != 0 || rep.Passed != len(rep.Cases) || rep.Cases[0].ID != "ctx-001" {
		t.Errorf("report: areas %v, %d passed, %d failed, %d cases", rep.Areas, rep.Passed, rep.Failed, len(rep.Cases))
	}
}

func TestConformanceUnknownAreaExits2(t *testing.T) {
	code, out, errOut := runLab(t, "conformance", "--area", "nope")
	if code != exitBadInput || out != "" || !strings.Contains(errOut, `unknown conformance area "nope"`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and the area named", code, out, errOut)
	}
}

// A command that ran and found failing cases exits 3.
func TestFailedExits3(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &failedError{failed: 2, total: 9, what: "conformance cases failed"})
	if got := exitCode(err); got != exitFailed {
		t.Errorf("exitCode = %d, want %d", got, exitFailed)
	}
	if err.Error() != "wrapped: 2 of 9 conformance cases failed" {
		t.Errorf("message %q", err.Error())
	}
}

// lab conformance is its options and one call: runConformance with explicit options (no command
// line) runs the one area named and writes its report in the format named.
func TestRunConformanceOptions(t *testing.T) {
	var out bytes.Buffer
	s := &streams{out: &out, err: io.Discard, getenv: func(string) string { return "" }}
	if err := runConformance(s, &conformanceOptions{Area: "paths", Format: "json"}); err != nil {
		t.Fatal(err)
	}
	var rep conformance.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Areas) != 1 || rep.Areas[0] != "paths" || rep.Passed == 0 || rep.Passed != len(rep.Cases) {
		t.Errorf("report: areas %v, %d passed of %d cases", rep.Areas, rep.Passed, len(rep.Cases))
	}
	if err := runConformance(s, &conformanceOptions{Format: "yaml"}); exitCode(err) != exitBadInput {
		t.Errorf("format yaml: %v (exit %d); want bad input", err, exitCode(err))
	}
}

// lab calibrate is its options and one call: runCalibrate checks them before any server is
// reached or file written.
func TestRunCalibrateChecksOptionsFirst(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cal.json")
	s := &streams{out: io.Discard, err: io.Discard, getenv: func(string) string { return "" }}
	for _, o := range []*calibrateOptions{{Sizes: []int{1000, 2000}}, {Sizes: []int{1000}, Out: out}} {
		if err := runCalibrate(context.Background(), s, o); exitCode(err) != exitBadInput {
			t.Errorf("runCalibrate(%+v) = %v; want bad input", o, err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written: %v", out, err)
	}
}
