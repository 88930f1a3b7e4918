package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/metrics"
)

// faultServer is fakeOpenAI with faults injected: fault, given the 1-based number of the chat
// request, answers it itself and returns true, or returns false to let fakeOpenAI answer.
type faultServer struct {
	fake  fakeOpenAI
	mu    sync.Mutex
	n     int
	fault func(n int, w http.ResponseWriter, r *http.Request) bool
}

func (f *faultServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/version" {
		http.NotFound(w, r) // lab run asks whether a loopback server is Ollama: not a chat request
		return
	}
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	// Read the body first: the server notices a client that went away (r.Context() ends) only
	// once the body is read.
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if f.fault != nil && f.fault(n, w, r) {
		return
	}
	f.fake.ServeHTTP(w, r)
}

// cut writes the start of a stream, then closes the connection without ending the chunked body:
// the client reads an unexpected EOF.
func cut(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n")
	w.(http.Flusher).Flush()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// runFaulty runs midnight × spec (48 requests) against a fault server with the extra flags, and
// returns the exit code, stderr, the manifest and the rows.
func runFaulty(t *testing.T, url string, extra ...string) (int, string, *metrics.Manifest, []metrics.Sample) {
	t.Helper()
	results := t.TempDir()
	args := append([]string{"run", "--backend", "openai", "--base-url", url + "/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "f", "--quiet"}, extra...)
	code, _, stderr := runLab(t, args...)
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "f"))
	if err != nil {
		t.Fatalf("exit %d, stderr %s: the run's files are unreadable: %v", code, stderr, err)
	}
	return code, stderr, man, samples
}

// Server faults through the openai backend: each fault gives a row with the error or the
// retries recorded; retries are bounded; a run with a failed session exits 1 with the manifest
// incomplete, one without exits 0.
func TestServerFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		fault func(n int, w http.ResponseWriter, r *http.Request) bool
		// wantCode is the exit code; wantRows the rows; row is the request the fault hit, with
		// its retries and a text its error (failed) or warnings (retried) must hold.
		wantCode, wantRows int
		row                int
		retries            int32
		wantWait           time.Duration
		errText, warnText  string
		// prompt, when set, is the prompt tokens the row must hold.
		prompt int64
	}{
		{name: "429 with Retry-After", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 3 {
				w.Header().Set("Retry-After", "1")
				http.Error(w, `{"error":{"message":"rate limited","type":"rate_limit_error"}}`, 429)
				return true
			}
			return false
		}, wantCode: 0, wantRows: 48, row: 2, retries: 1, wantWait: time.Second, warnText: "HTTP 429"},
		{name: "500 then answered", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 5 || n == 6 {
				http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, 500)
				return true
			}
			return false
		}, flags: []string{"--retries", "2"}, wantCode: 0, wantRows: 48, row: 4, retries: 2, wantWait: 3 * time.Second, warnText: "HTTP 500"},
		{name: "500 for good", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n >= 5 {
				http.Error(w, `{"error":{"message":"boom","type":"server_error"}}`, 500)
				return true
			}
			return false
		}, flags: []string{"--retries", "1"}, wantCode: 1, wantRows: 5, row: 4, retries: 1, wantWait: time.Second, errText: "HTTP 500"},
		{name: "stream cut, then whole", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				cut(w)
				return true
			}
			return false
		}, wantCode: 0, wantRows: 48, row: 1, retries: 1, wantWait: time.Second, warnText: "unexpected EOF"},
		{name: "stream without [DONE] or finish_reason, for good", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n >= 2 {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n")
				return true
			}
			return false
		}, wantCode: 1, wantRows: 2, row: 1, retries: 2, wantWait: 3 * time.Second, errText: "HTTP 200: stream cut: no data: [DONE] and no finish_reason"},
		{name: "stream without [DONE] or finish_reason, then whole", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n")
				return true
			}
			return false
		}, wantCode: 0, wantRows: 48, row: 1, retries: 1, wantWait: time.Second, warnText: "stream cut: no data: [DONE]"},
		{name: "empty 200, then whole", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				w.Header().Set("Content-Type", "text/event-stream")
				return true
			}
			return false
		}, wantCode: 0, wantRows: 48, row: 1, retries: 1, wantWait: time.Second, warnText: "HTTP 200 with an empty body"},
		{name: "HTML 200 is not retried", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<!DOCTYPE html><html><body>Please sign in</body></html>")
				return true
			}
			return false
		}, wantCode: 1, wantRows: 2, row: 1, retries: 0, errText: "HTTP 200 with a text/html body, not the API's answer"},
		{name: "JSON answer to the streamed request", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"o"},"finish_reason":"length"}],"usage":{"prompt_tokens":1234,"completion_tokens":1}}`)
				return true
			}
			return false
		}, wantCode: 0, wantRows: 48, row: 1, retries: 0, warnText: "one JSON answer", prompt: 1234},
		{name: "malformed stream", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"choices\": [{\"delta\": {\"content\": \"o\"\n\ndata: [DONE]\n\n")
				return true
			}
			return false
		}, wantCode: 1, wantRows: 2, row: 1, retries: 0, errText: "not JSON"},
		{name: "stall", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n >= 2 {
				<-r.Context().Done() // the client gives up
				return true
			}
			return false
		}, flags: []string{"--retries", "1", "--request-timeout", "300ms"}, wantCode: 1, wantRows: 2, row: 1, retries: 1, wantWait: time.Second, errText: "request timed out"},
		{name: "no usage", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\ndata: [DONE]\n\n")
				return true
			}
			return false
		}, wantCode: 0, wantRows: 48, row: 1, retries: 0, warnText: "carried no usage"},
		{name: "400 is not retried", fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
			if n == 2 {
				http.Error(w, `{"error":{"message":"bad","type":"invalid_request_error"}}`, 400)
				return true
			}
			return false
		}, wantCode: 1, wantRows: 2, row: 1, retries: 0, errText: "HTTP 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(&faultServer{fault: tc.fault})
			defer srv.Close()
			code, stderr, man, samples := runFaulty(t, srv.URL, tc.flags...)
			if code != tc.wantCode {
				t.Errorf("exit %d; want %d (stderr %s)", code, tc.wantCode, stderr)
			}
			if len(samples) != tc.wantRows {
				t.Fatalf("%d rows; want %d", len(samples), tc.wantRows)
			}
			s := samples[tc.row]
			if s.Retries != tc.retries || time.Duration(s.RetryWaitNs) != tc.wantWait {
				t.Errorf("row %d: %d retries after %s; want %d after %s", tc.row, s.Retries, time.Duration(s.RetryWaitNs), tc.retries, tc.wantWait)
			}
			if tc.errText != "" && !strings.Contains(s.Error, tc.errText) {
				t.Errorf("row %d: error %q; want it to hold %q", tc.row, s.Error, tc.errText)
			}
			if tc.prompt != 0 && s.PromptTokens != tc.prompt {
				t.Errorf("row %d: %d prompt tokens; want %d", tc.row, s.PromptTokens, tc.prompt)
			}
			if tc.warnText != "" && (s.Error != "" || !strings.Contains(s.Warnings, tc.warnText)) {
				t.Errorf("row %d: error %q, warnings %q; want no error and warnings holding %q", tc.row, s.Error, s.Warnings, tc.warnText)
			}
			if man.Complete != (tc.wantCode == 0) {
				t.Errorf("manifest complete %v with exit %d", man.Complete, code)
			}
			if tc.wantCode != 0 && (!strings.Contains(man.Error, "1 of 1 sessions failed") || !strings.Contains(stderr, "1 of 1 sessions failed")) {
				t.Errorf("manifest error %q, stderr %q; want the count of failed sessions", man.Error, stderr)
			}
		})
	}
}

// A refused connection: every session fails after its retries, the run goes on through all of
// them, and exits 1 saying how many failed.
func TestConnectionRefusedGoesOn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	code, stderr, man, samples := runFaulty(t, url, "--retries", "1", "--repeat", "2")
	if code != 1 || !strings.Contains(stderr, "2 of 2 sessions failed") || man.Complete {
		t.Errorf("exit %d, complete %v, stderr %s", code, man.Complete, stderr)
	}
	if len(samples) != 2 || samples[0].Repetition != 1 || samples[1].Repetition != 2 {
		t.Fatalf("rows %+v; want one error row per session", samples)
	}
	for _, s := range samples {
		if !strings.Contains(s.Error, "connection refused") || s.Retries != 1 {
			t.Errorf("repetition %d: error %q, retries %d", s.Repetition, s.Error, s.Retries)
		}
	}
}

// A session that cannot go on does not stop the run: the next repetition runs whole.
func TestRunGoesOnWithTheNextSession(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&faultServer{fault: func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 3 {
			http.Error(w, `{"error":{"message":"bad","type":"invalid_request_error"}}`, 400)
			return true
		}
		return false
	}})
	defer srv.Close()
	code, stderr, man, samples := runFaulty(t, srv.URL, "--repeat", "2")
	if code != 1 || man.Complete || !strings.Contains(man.Error, "1 of 2 sessions failed; midnight/spec repetition 1: ") {
		t.Errorf("exit %d, manifest complete %v error %q (stderr %s)", code, man.Complete, man.Error, stderr)
	}
	var rep1, rep2 int
	for _, s := range samples {
		if s.Repetition == 1 {
			rep1++
		} else {
			rep2++
		}
	}
	if rep1 != 3 || rep2 != 48 {
		t.Errorf("repetition 1: %d rows, repetition 2: %d; want 3 (the last with the error) and 48", rep1, rep2)
	}
}

func TestReliabilityBadFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	os.MkdirAll(done, 0o755)
	metrics.WriteManifest(filepath.Join(done, metrics.PartManifestFile(metrics.Shard{})), &metrics.Manifest{RunID: "done", Complete: true})
	// A run of the old layout is read only: never resumed in place.
	old := filepath.Join(dir, "old")
	os.MkdirAll(old, 0o755)
	metrics.WriteManifest(filepath.Join(old, metrics.ManifestFile), &metrics.Manifest{RunID: "old"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--retries", "-1"}, "--retries -1"},
		{[]string{"run", "--request-timeout", "0s"}, "--request-timeout 0s"},
		{[]string{"run", "--resume", filepath.Join(dir, "none")}, "not a run folder"},
		{[]string{"run", "--resume", done}, "nothing to resume"},
		{[]string{"run", "--resume", old}, old + ": a run of the old layout (manifest.json, samples.parquet) is read only"},
		{[]string{"run", "--resume", done, "--arm", "spec", "--repeat", "2"}, "drop --arm, --repeat"},
	} {
		code, _, errOut := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// cancelAfter is a progress writer (plain lines, one per request: --progress requests) that cancels the run's
// context after n requests: Ctrl-C, which main turns into a canceled context.
type cancelAfter struct {
	n      int
	cancel context.CancelFunc
	mu     sync.Mutex
	lines  int
	buf    bytes.Buffer
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	c.lines += bytes.Count(p, []byte("\n["))
	if bytes.HasPrefix(p, []byte("[")) {
		c.lines++
	}
	if c.lines >= c.n {
		c.cancel()
	}
	return len(p), nil
}

// lab run interrupted after N requests keeps its rows in a readable file, says it is
// incomplete and exits 1; lab run --resume then carries on with the run's own settings and ends
// with the same rows as a run that was never interrupted, complete.
func TestInterruptThenResume(t *testing.T) {
	needTokenizer(t)
	results := t.TempDir()
	args := []string{"run", "--backend", "sim", "--scenario", "midnight,edit-loop", "--arm", "spec,date-in-system-prompt",
		"--repeat", "2", "--results", results}
	if code, _, errOut := runLab(t, append(args, "--run-id", "whole", "--quiet")...); code != 0 {
		t.Fatalf("whole run: exit %d: %s", code, errOut)
	}
	_, want, err := metrics.ReadRun(metrics.RunDir(results, "whole"))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &cancelAfter{n: 70, cancel: cancel}
	var out bytes.Buffer
	code := run(ctx, append(args, "--run-id", "cut", "--progress", "requests"), &out, progress)
	dir := metrics.RunDir(results, "cut")
	if code != exitError || !strings.Contains(out.String(), "--resume "+dir) {
		t.Fatalf("interrupted run: exit %d; stdout %s", code, out.String())
	}
	man, cut, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatalf("the interrupted run's samples are unreadable: %v", err)
	}
	if man.Complete || !strings.Contains(man.Error, "interrupted") || len(cut) != 70 || man.Samples != 70 {
		t.Fatalf("interrupted: complete %v, error %q, %d rows (manifest %d); want 70", man.Complete, man.Error, len(cut), man.Samples)
	}

	code, stdout, errOut := runLab(t, "run", "--resume", dir, "--quiet")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errOut)
	}
	man, got, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := func(ss []metrics.Sample) []string {
		var out []string
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%s/%s/%d/%d", s.Scenario, s.Arm, s.Repetition, s.RequestIndex))
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(key(got), key(want)) {
		t.Errorf("resumed rows differ from the uninterrupted run's: %d vs %d", len(got), len(want))
	}
	if !man.Complete || man.Error != "" || man.Samples != len(want) || man.Settings[metrics.SettingResumedAt] == "" {
		t.Errorf("manifest after resume: complete %v, error %q, samples %d, settings %v", man.Complete, man.Error, man.Samples, man.Settings)
	}
	for _, s := range got {
		if s.RunID != "cut" {
			t.Fatalf("a row of run %q", s.RunID)
		}
	}
}

// A run of arms from a user's file resumes with the arms its manifest recorded: the file moved
// away or edited since changes nothing, and the resumed rows of the user's arm are those of an
// uninterrupted run.
func TestResumeUsesTheRecordedArms(t *testing.T) {
	needTokenizer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.yaml")
	os.WriteFile(file, []byte("arms:\n  - name: mine\n    description: a minute clock\n    practices:\n      - clock: {granularity: minute}\n"), 0o644)
	results := filepath.Join(dir, "results")
	args := []string{"run", "--backend", "sim", "--scenario", "midnight", "--arms", file, "--arm", "spec,mine", "--repeat", "2", "--results", results}
	if code, _, errOut := runLab(t, append(args, "--run-id", "whole", "--quiet")...); code != 0 {
		t.Fatalf("whole run: exit %d: %s", code, errOut)
	}
	_, want, err := metrics.ReadRun(metrics.RunDir(results, "whole"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	if code := run(ctx, append(args, "--run-id", "cut", "--progress", "requests"), &out, &cancelAfter{n: 30, cancel: cancel}); code != exitError {
		t.Fatalf("interrupted run: exit %d; stdout %s", code, out.String())
	}
	// The file goes away; one of the same name says something else.
	os.Rename(file, file+".old")
	os.WriteFile(file, []byte("arms:\n  - name: mine\n    description: an hour clock\n    practices:\n      - clock: {granularity: hour}\n"), 0o644)
	run := metrics.RunDir(results, "cut")
	if code, stdout, errOut := runLab(t, "run", "--resume", run, "--quiet"); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errOut)
	}
	_, got, err := metrics.ReadRun(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("resumed run: %d rows; want %d", len(got), len(want))
	}
	cached := func(ss []metrics.Sample) map[string]int64 {
		m := map[string]int64{}
		for _, s := range ss {
			m[fmt.Sprintf("%s/%d/%d", s.Arm, s.Repetition, s.RequestIndex)] = *s.ExpectedCachedTokens
		}
		return m
	}
	if w, g := cached(want), cached(got); !maps.Equal(w, g) {
		t.Errorf("the resumed run's expected cached tokens differ from the uninterrupted run's: the edited file was read")
	}
}
