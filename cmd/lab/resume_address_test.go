package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"lab/metrics"
)

// lab run --resume --base-url carries a run on against a server at a new address (the first one
// went away): the resumed sessions go there, the manifest names the new address and lists both
// (server_urls), the recorded flags hold the new one for the next resume, and the run ends
// complete. --server on a run of another backend is still refused.
func TestResumeAtANewAddress(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	first := httptest.NewServer(&faultServer{fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n >= 10 {
			http.Error(w, `{"error":{"message":"gone"}}`, http.StatusInternalServerError)
			return true
		}
		return false
	}})
	code, _, errOut := runLab(t, "run", "--backend", "openai", "--base-url", first.URL+"/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "moved", "--quiet", "--retries", "0")
	first.Close()
	dir := metrics.RunDir(results, "moved")
	if man, err := metrics.ReadRunManifest(dir); code != exitError || err != nil || man.Complete {
		t.Fatalf("the first attempt: exit %d (%s), %v; want 1 and an incomplete run", code, errOut, err)
	}

	if code, _, errOut := runLab(t, "run", "--resume", dir, "--server", "http://127.0.0.1:9", "--quiet"); code != exitBadInput || !strings.Contains(errOut, "--server") {
		t.Errorf("resume of an openai run with --server: exit %d, stderr %q; want 2 naming --server", code, errOut)
	}

	var n atomic.Int32
	second := httptest.NewServer(&faultServer{fault: func(int, http.ResponseWriter, *http.Request) bool { n.Add(1); return false }})
	defer second.Close()
	code, stdout, errOut := runLab(t, "run", "--resume", dir, "--base-url", second.URL+"/v1", "--quiet")
	if code != exitOK || n.Load() == 0 {
		t.Fatalf("resume at the new address: exit %d, %d requests there\n%s\n%s", code, n.Load(), stdout, errOut)
	}
	man, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := first.URL + "/v1, " + second.URL + "/v1"; !man.Complete || man.ServerURL != second.URL+"/v1" || man.Settings[metrics.SettingServerURLs] != want {
		t.Errorf("manifest: complete %v, server_url %q, %s %q; want complete, %q, %q", man.Complete, man.ServerURL, metrics.SettingServerURLs, man.Settings[metrics.SettingServerURLs], second.URL+"/v1", want)
	}
	var flags map[string]string
	if err := json.Unmarshal([]byte(man.Settings[settingRunFlags]), &flags); err != nil || flags["base-url"] != second.URL+"/v1" || flags["model"] != "m" {
		t.Errorf("recorded flags %v (%v); want base-url %s and the run's others", flags, err, second.URL+"/v1")
	}
	if len(rows) != 48 {
		t.Errorf("%d rows; want the 48 of a whole midnight session", len(rows))
	}
}
