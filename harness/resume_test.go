package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"lab/arms"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

// rowKeys lists each row as scenario/arm/repetition/request_index, sorted.
func rowKeys(samples []metrics.Sample) []string {
	var out []string
	for _, s := range samples {
		out = append(out, fmt.Sprintf("%s/%s/%d/%d", s.Scenario, s.Arm, s.Repetition, s.RequestIndex))
	}
	slices.Sort(out)
	return out
}

// sameRows fails t unless the resumed run folder dir holds the rows (scenario, arm, repetition,
// request) of the uninterrupted run folder whole.
func sameRows(t *testing.T, dir, whole string) {
	t.Helper()
	_, want, err := metrics.ReadRun(whole)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rowKeys(got), rowKeys(want)) {
		t.Errorf("resumed rows\n%v\nwant\n%v", rowKeys(got), rowKeys(want))
	}
}

// An interrupted run keeps every row in a readable file and says it is incomplete; resumed, it
// keeps the completed sessions, runs the cut one again whole and ends with the same rows as a run
// that was never interrupted.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	cfg := func(results string, be harness.Backend) harness.RunConfig {
		return tinyRunConfig(t, results, 2, metrics.Shard{}, be)
	}
	// The uninterrupted run.
	whole := t.TempDir()
	_, man, err := harness.Run(context.Background(), cfg(whole, newFault(nil)))
	if err != nil || !man.Complete {
		t.Fatalf("whole run: %v", err)
	}
	_, want, err := metrics.ReadRun(metrics.RunDir(whole, "r"))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 28 {
		t.Fatalf("whole run: %d rows; want 2 arms × 2 repetitions × 7", len(want))
	}

	for _, stopAfter := range []int{3, 7, 10, 27} {
		t.Run(fmt.Sprint(stopAfter), func(t *testing.T) {
			results := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := cfg(results, newFault(nil))
			c.Progress = func(done, total int, s *metrics.Sample) {
				if done == stopAfter {
					cancel() // Ctrl-C: main's signal.NotifyContext cancels the context
				}
			}
			dir, man, err := harness.Run(ctx, c)
			if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "interrupted") {
				t.Fatalf("interrupted run: %v", err)
			}
			m2, cut, rerr := metrics.ReadRun(dir)
			if rerr != nil {
				t.Fatalf("the interrupted run's files: %v", rerr)
			}
			if m2.Complete || m2.Error == "" || m2.EndedAt.IsZero() || len(cut) != stopAfter || m2.Samples != stopAfter || man.Samples != stopAfter {
				t.Fatalf("interrupted: complete %v, error %q, ended %v, %d rows (manifest %d); want %d rows", m2.Complete, m2.Error, m2.EndedAt, len(cut), m2.Samples, stopAfter)
			}

			// A resume that is interrupted again loses nothing either.
			ctx2, cancel2 := context.WithCancel(context.Background())
			defer cancel2()
			c = cfg(results, newFault(nil))
			c.Resume = true
			c.Progress = func(done, total int, s *metrics.Sample) {
				if s.RequestIndex == 1 {
					cancel2()
				}
			}
			if _, _, err := harness.Run(ctx2, c); stopAfter < 27 && !errors.Is(err, context.Canceled) {
				t.Fatalf("second interrupt: %v", err)
			}
			if _, again, err := metrics.ReadRun(dir); err != nil || len(again) < stopAfter/7*7 {
				t.Fatalf("after the second interrupt: %d rows, %v", len(again), err)
			}

			be := newFault(nil)
			c = cfg(results, be)
			c.Resume = true
			var sent []int
			c.Progress = func(done, total int, s *metrics.Sample) { sent = append(sent, done) }
			_, man, err = harness.Run(context.Background(), c)
			if err != nil || !man.Complete || man.Error != "" {
				t.Fatalf("resumed: %v, complete %v, error %q", err, man.Complete, man.Error)
			}
			m3, got, err := metrics.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rowKeys(got), rowKeys(want)) {
				t.Errorf("resumed rows\n%v\nwant\n%v", rowKeys(got), rowKeys(want))
			}
			if !m3.Complete || m3.Samples != 28 || m3.StartedAt != man.StartedAt || !strings.Contains(m3.Settings[metrics.SettingResumedAt], ", ") {
				t.Errorf("manifest: complete %v, samples %d, settings %v", m3.Complete, m3.Samples, m3.Settings)
			}
			// Only whole sessions were sent again: the rows of completed sessions were kept.
			if be.calls%7 != 0 || be.calls == 0 || len(sent) != be.calls || sent[len(sent)-1] != 28 {
				t.Errorf("resume sent %d requests (progress %v); want whole sessions only", be.calls, sent)
			}
			// The measured figures of a rerun session are those of the uninterrupted run.
			for i := range got {
				g, w := got[i], want[slices.IndexFunc(want, func(w metrics.Sample) bool {
					return w.Arm == got[i].Arm && w.Repetition == got[i].Repetition && w.RequestIndex == got[i].RequestIndex
				})]
				if g.PromptTokens != w.PromptTokens || *g.CachedTokens != *w.CachedTokens || val(g.ExpectedCachedTokens) != val(w.ExpectedCachedTokens) {
					t.Errorf("%s/%d/%d: prompt %d cached %d expected %d; want %d %d %d", g.Arm, g.Repetition, g.RequestIndex,
						g.PromptTokens, *g.CachedTokens, val(g.ExpectedCachedTokens), w.PromptTokens, *w.CachedTokens, val(w.ExpectedCachedTokens))
				}
			}
			if _, err := os.Stat(filepath.Join(dir, metrics.PartFile(metrics.Shard{})+".resume")); !os.IsNotExist(err) {
				t.Errorf("the resume's temporary file is left: %v", err)
			}
		})
	}
}

// A session that failed is run again on resume, also when only its last request failed; a resume of a complete run, or with another
// matrix, is refused.
func TestResumeRerunsFailedSessionsAndChecksTheRun(t *testing.T) {
	t.Parallel()
	results := t.TempDir()
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	cfg := func(be harness.Backend, names ...string) harness.RunConfig {
		var as []arms.Arm
		for _, a := range names {
			as = append(as, arm(t, a))
		}
		return harness.RunConfig{Scenarios: []*scenario.Scenario{sc}, Arms: as, ResultsDir: results, RunID: "r",
			Loop: loop, Backend: be, Tokenizer: tinytokenizer.Bytes{}, SandboxDir: t.TempDir(), Retry: harness.RetryPolicy{Attempts: 1}}
	}
	down := newFault(func(call int, _ *chat.Request) error {
		// The first session's last request fails (all its rows are there, the last with the
		// error), and the second session's third.
		if call == 7 || call > 9 {
			return &chat.APIError{Backend: "fake", Body: "connection refused"}
		}
		return nil
	})
	if _, _, err := harness.Run(context.Background(), cfg(down, "spec", "plain")); err == nil {
		t.Fatal("a run whose server went down succeeded")
	}
	c := cfg(newFault(nil), "spec", "no-stubs")
	c.Resume = true
	if _, _, err := harness.Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "arms are [spec plain], this one's [spec no-stubs]") {
		t.Errorf("resume with other arms: %v", err)
	}
	up := newFault(nil)
	c = cfg(up, "spec", "plain")
	c.Resume = true
	if _, man, err := harness.Run(context.Background(), c); err != nil || !man.Complete {
		t.Fatalf("resume: %v", err)
	}
	if up.calls != 14 {
		t.Errorf("resume sent %d requests; want both failed sessions' 14", up.calls)
	}
	_, samples, err := metrics.ReadRun(metrics.RunDir(results, "r"))
	if err != nil || len(samples) != 14 {
		t.Fatalf("%d rows, %v", len(samples), err)
	}
	for _, s := range samples {
		if s.Error != "" {
			t.Errorf("%s/%d kept its error row: %s", s.Arm, s.RequestIndex, s.Error)
		}
	}
	if _, _, err := harness.Run(context.Background(), c); !errors.Is(err, metrics.ErrNothingToResume) {
		t.Errorf("resume of a complete run: %v", err)
	}
}

// snapshot copies the files of the run folder dir to to: what a kill -9 at this moment leaves on
// disk (every write the run made has reached the OS; nothing was closed).
func snapshot(t *testing.T, dir, to string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(to, 0o755)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(to, e.Name()), data, 0o644)
	}
}

// bodyBackend is faultBackend with a request body in every result, for requests.jsonl.
type bodyBackend struct{ *faultBackend }

func (b bodyBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	res, err := b.faultBackend.Send(ctx, req, reply)
	if res != nil {
		res.Body = []byte(fmt.Sprintf(`{"messages":%d}`, len(req.Messages)))
	}
	return res, err
}

// requestLines returns requests.jsonl's lines as scenario/arm/repetition/request_index.
func requestLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Scenario, Arm string
			Repetition    int
			RequestIndex  int `json:"request_index"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, fmt.Sprintf("%s/%s/%d/%d", r.Scenario, r.Arm, r.Repetition, r.RequestIndex))
	}
	slices.Sort(out)
	return out
}

// A run killed with SIGKILL (the files as they were at request 10, nothing closed): its rows are
// read back from the journal, its manifest records the one session that ended, and a resume
// keeps that session, runs the others, and rewrites requests.jsonl without the lines of the
// session it ran again.
func TestKilledRunRecoversAndResumes(t *testing.T) {
	t.Parallel()
	cfg := func(results string, be harness.Backend) harness.RunConfig {
		c := tinyRunConfig(t, results, 2, metrics.Shard{}, be)
		c.SaveRequests = true
		return c
	}
	results, killed := t.TempDir(), t.TempDir()
	c := cfg(results, bodyBackend{newFault(nil)})
	c.Progress = func(done, total int, s *metrics.Sample) {
		if done == 10 {
			snapshot(t, metrics.RunDir(results, "r"), metrics.RunDir(killed, "r"))
		}
	}
	_, _, err := harness.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	dir := metrics.RunDir(killed, "r")
	man, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatalf("the killed run's rows: %v", err)
	}
	if len(rows) != 10 || man.Complete {
		t.Fatalf("killed run: %d rows, complete %v; want the 10 written before the kill", len(rows), man.Complete)
	}
	if want := []metrics.SessionRecord{{Scenario: "tiny", Arm: "spec", Repetition: 1, Requests: 7, Complete: true}}; !slices.Equal(man.Sessions, want) {
		t.Errorf("killed run's session records %+v; want %+v", man.Sessions, want)
	}
	if got := len(requestLines(t, filepath.Join(dir, metrics.PartRequestsFile(metrics.Shard{})))); got != 10 {
		t.Errorf("killed run: %d request lines; want 10", got)
	}

	be := newFault(nil)
	c = cfg(killed, bodyBackend{be})
	c.Resume = true
	if _, man, err = harness.Run(context.Background(), c); err != nil || !man.Complete {
		t.Fatalf("resume: %v", err)
	}
	if be.calls != 21 {
		t.Errorf("resume sent %d requests; want the 21 of the three sessions that did not end", be.calls)
	}
	sameRows(t, dir, metrics.RunDir(results, "r"))
	if got, want := requestLines(t, filepath.Join(dir, metrics.PartRequestsFile(metrics.Shard{}))), requestLines(t, filepath.Join(metrics.RunDir(results, "r"), metrics.PartRequestsFile(metrics.Shard{}))); !slices.Equal(got, want) {
		t.Errorf("requests.jsonl after the resume:\n%v\nwant one line per request of the uninterrupted run:\n%v", got, want)
	}
	if len(man.Sessions) != 4 || man.Sessions[0].Arm != "spec" || man.Sessions[0].Repetition != 1 {
		t.Errorf("session records after the resume: %+v", man.Sessions)
	}
	for _, r := range man.Sessions {
		if !r.Complete || r.Requests != 7 {
			t.Errorf("record %+v; want complete with 7 requests", r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.JournalPath(metrics.PartFile(metrics.Shard{})))); !os.IsNotExist(err) {
		t.Errorf("the journal is left after the resume closed the samples: %v", err)
	}
}
