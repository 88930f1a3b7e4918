package main

import (
	"encoding/json"
	"fmt"
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
	err := fmt.Errorf("wrapped: %w", &failedError{failed: 2, total: 9})
	if got := exitCode(err); got != exitFailed {
		t.Errorf("exitCode = %d, want %d", got, exitFailed)
	}
	if err.Error() != "wrapped: 2 of 9 conformance cases failed" {
		t.Errorf("message %q", err.Error())
	}
}
