package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"lab/capture"
	"lab/metrics"
	"lab/metrics/metricstest"
)

// A capture killed with SIGKILL (its folder copied as it is on disk, nothing closed, the manifest
// as the proxy wrote it at its start): lab repair writes the part file from the journal, and
// lab report counts every conversation answered, each read from its rows.
func TestKilledCaptureRepairAndReport(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}}`)
	}))
	defer up.Close()
	dir := metrics.RunDir(t.TempDir(), "cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	const n = 12
	for i := range n {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"task %d"}]}`, i)
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for p.Samples() < n {
		time.Sleep(time.Millisecond)
	}
	snap := metricstest.CopyRun(t, dir, t.TempDir())
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// analysed returns the conversations lab report's analysis holds and those it left out.
	analysed := func(out string) (in, left int) {
		var doc struct {
			Analysis struct {
				Scenarios []json.RawMessage `json:"scenarios"`
				LeftOut   []json.RawMessage `json:"left_out"`
			} `json:"analysis"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("report: %v", err)
		}
		return len(doc.Analysis.Scenarios), len(doc.Analysis.LeftOut)
	}
	code, out, errOut := runLab(t, "report", "--format", "json", snap)
	if in, left := analysed(out); code != exitOK || in != n || left != 0 {
		t.Errorf("report of the killed capture: exit %d, stderr %q, %d conversations analysed, %d left out; want 0, %d, none", code, errOut, in, left, n)
	}
	if code, out, errOut := runLab(t, "repair", snap); code != exitOK || errOut != "" {
		t.Errorf("repair: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	man, rows, err := metrics.ReadRun(snap)
	if err != nil || len(rows) != n || man.Samples != n || len(man.Sessions) != n || len(man.Repairs) != 1 {
		t.Fatalf("after repair: %d rows, samples %d, %d sessions, repairs %+v, %v", len(rows), man.Samples, len(man.Sessions), man.Repairs, err)
	}
	code, out, errOut = runLab(t, "report", "--format", "json", snap)
	if in, left := analysed(out); code != exitOK || in != n || left != 0 {
		t.Errorf("report after repair: exit %d, stderr %q, %d conversations analysed, %d left out; want 0, %d, none", code, errOut, in, left, n)
	}
}
