//go:build stress

package stress

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lab/metrics"
)

// repairAndCount runs lab repair and lab report on a killed run's folder and returns the rows
// on disk afterwards (metrics.ReadRun, as every lab command reads them), with the two exit codes.
func repairAndCount(t *testing.T, dir string) (rows int, repairCode, reportCode int) {
	t.Helper()
	c, repairCode, timedOut := runLab(t, 2*time.Minute, nil, "repair", dir)
	if timedOut {
		t.Errorf("lab repair %s did not end within 2 minutes", dir)
	}
	if repairCode != 0 {
		t.Logf("lab repair: exit %d\n%s", repairCode, c.stderr())
	}
	c, reportCode, timedOut = runLab(t, 5*time.Minute, nil, "report", "--format", "json", dir)
	if timedOut {
		t.Errorf("lab report %s did not end within 5 minutes", dir)
	}
	if reportCode != 0 {
		t.Logf("lab report: exit %d\n%.2000s", reportCode, c.stderr())
	}
	_, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Errorf("the killed run's rows are unreadable after lab repair: %v", err)
	}
	return len(samples), repairCode, reportCode
}

// upstreamAnswerTime is how long the load scenario's upstream takes to answer: 100 ms, faster
// than any model server answers even a one-token reply, so that 50 clients make up to 500
// answers a second. The proxy records answers one at a time, in the order they end; against an
// upstream that answers at once (over a thousand answers a second on 2 shared cores) the
// recording falls behind and rows wait their turn (the README says so), which is a burst no
// model server makes.
const upstreamAnswerTime = 100 * time.Millisecond

// lab proxy under load (2,000 requests from 50 clients, each a conversation of its own, half
// streamed, from an upstream that answers each in upstreamAnswerTime) killed with SIGKILL at a
// random moment: every answer a client saw end more than the durability bound before the kill
// has its row after lab repair. The most time a row waited for the journal is shown, not
// asserted: one stall of a busy machine would fail it, while a lost row means a row waited past
// the bound and past the kill.
func TestProxyKilledUnderLoad(t *testing.T) {
	const requests, clients = 2000, 50
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notOllama(w, r) {
			return
		}
		io.Copy(io.Discard, r.Body)
		time.Sleep(upstreamAnswerTime)
		chatAnswer(w, strings.Contains(r.URL.RawQuery, "stream"), "ok", 0, 0)
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=load")
	proxy, addr := startProxy(t, up.URL, dir, "--quiet")
	watch := watchJournal(filepath.Join(dir, metrics.JournalPath(metrics.PartFile(metrics.Shard{}.Norm()))))

	r := rng(t.Name())
	killAt := 400 + r.IntN(1400) // kill once this many answers ended (or at the time bound)
	var (
		mu   sync.Mutex
		ends []time.Time
		next atomic.Int64
		wg   sync.WaitGroup
	)
	killed := make(chan struct{})
	var killOnce sync.Once
	var killTime time.Time
	kill := func() {
		killOnce.Do(func() {
			killTime = time.Now()
			proxy.cmd.Process.Signal(syscall.SIGKILL)
			close(killed)
		})
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= requests {
					return
				}
				select {
				case <-killed:
					return
				default:
				}
				q := ""
				stream := i%2 == 1
				if stream {
					q = "?stream"
				}
				body := fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"task %d: fix the bug"}]}`, stream, i)
				resp, err := client.Post("http://"+addr+"/v1/chat/completions"+q, "application/json", strings.NewReader(body))
				if err != nil {
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == 200 {
					mu.Lock()
					ends = append(ends, time.Now())
					n := len(ends)
					mu.Unlock()
					if n >= killAt {
						kill()
					}
				}
			}
		}()
	}
	go func() { // the scenario's time bound: kill at 3 minutes whatever was answered
		select {
		case <-killed:
		case <-time.After(3 * time.Minute):
			kill()
		}
	}()
	wg.Wait()
	kill()
	proxy.wait(30 * time.Second)
	recordKilled(t, "proxy-sigkill-load", "client", dir, watch, &mu, &ends, killTime, killAt)
}

// lab proxy stopped with SIGINT while its upstream stalls (65 requests, half inside a stream,
// half before the answer's headers): after its shutdown wait every forwarded request has a row.
func TestProxyInterruptedWhileUpstreamStalls(t *testing.T) {
	const n = 65
	var seen atomic.Int32
	arrived := make(chan struct{})
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notOllama(w, r) {
			return
		}
		io.Copy(io.Discard, r.Body)
		if r.URL.RawQuery == "stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
			w.(http.Flusher).Flush()
		}
		if seen.Add(1) == n {
			close(arrived)
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	dir := filepath.Join(t.TempDir(), "run_id=stall")
	proxy, addr := startProxy(t, up.URL, dir, "--quiet")
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 2 * time.Minute}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := ""
			if i%2 == 0 {
				q = "?stream"
			}
			body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"task %d"}]}`, i)
			resp, err := client.Post("http://"+addr+"/v1/chat/completions"+q, "application/json", strings.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	select {
	case <-arrived:
	case <-time.After(time.Minute):
		t.Fatalf("the upstream got %d of %d requests within a minute", seen.Load(), n)
	}
	proxy.cmd.Process.Signal(syscall.SIGINT)
	start := time.Now()
	code, timedOut := proxy.wait(90 * time.Second)
	took := time.Since(start)
	wg.Wait()
	_, samples, err := metrics.ReadRun(dir)
	if err != nil {
		t.Errorf("the capture is unreadable: %v", err)
	}
	forwarded := int(seen.Load())
	lost := max(0, forwarded-len(samples))
	sc := "proxy-sigint-stalled"
	note := fmt.Sprintf("%d forwarded, %d rows; exit %d after %.1f s", forwarded, len(samples), code, took.Seconds())
	record(sc, "rows lost", "rows", val(float64(lost)), "0", lost == 0 && !timedOut, note)
	if timedOut {
		t.Errorf("lab proxy did not end within 90 s of SIGINT")
	}
	if lost > 0 {
		t.Errorf("%d of %d forwarded requests have no row (%s)", lost, forwarded, note)
	}
}

// lab run --backend openai against a fake server, killed with SIGKILL once a random number of
// answers were sent: after lab repair, every answer the server finished more than the bound
// before the kill has its row.
func TestRunKilledMidRun(t *testing.T) {
	var (
		mu   sync.Mutex
		ends []time.Time
	)
	r := rng(t.Name())
	killAt := 40 + r.IntN(160)
	reached := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notOllama(w, r) {
			return
		}
		io.Copy(io.Discard, r.Body)
		time.Sleep(10 * time.Millisecond) // a server's prefill: the answers spread over seconds
		chatAnswer(w, true, "ok", 0, 0)
		w.(http.Flusher).Flush()
		mu.Lock()
		ends = append(ends, time.Now())
		n := len(ends)
		mu.Unlock()
		if n >= killAt {
			once.Do(func() { close(reached) })
		}
	}))
	defer up.Close()
	results := t.TempDir()
	dir := metrics.RunDir(results, "killed")
	watch := watchJournal(filepath.Join(dir, metrics.JournalPath(metrics.PartFile(metrics.Shard{}.Norm()))))
	run := startLab(t, nil, "run", "--backend", "openai", "--base-url", up.URL+"/v1", "--model", "m",
		"--scenario", "all", "--arm", "spec,date-in-system-prompt", "--results", results, "--run-id", "killed", "--quiet")
	select {
	case <-reached:
	case <-run.waited:
		t.Fatalf("lab run ended before %d answers: exit %d\n%s", killAt, run.cmd.ProcessState.ExitCode(), run.stderr())
	case <-time.After(3 * time.Minute):
		t.Fatalf("lab run did not reach %d answers in 3 minutes", killAt)
	}
	killTime := time.Now()
	run.cmd.Process.Signal(syscall.SIGKILL)
	run.wait(30 * time.Second)
	recordKilled(t, "run-sigkill", "server", dir, watch, &mu, &ends, killTime, killAt)
}

// recordKilled reads what the run folder dir of a process killed at killTime (after killAt
// answers) holds: the journal lines watch saw, the rows lab repair finds. Against the answers'
// end times ends (read under mu, as seen at side: client or server) it records scenario sc's
// rows lost and durability lag, and fails t when an answer that ended more than the durable
// bound before the kill has no row.
func recordKilled(t *testing.T, sc, side, dir string, watch *journalWatch, mu *sync.Mutex, ends *[]time.Time, killTime time.Time, killAt int) {
	t.Helper()
	lines := watch.lines()
	rows, repairCode, reportCode := repairAndCount(t, dir)
	bound := durableBound()
	mu.Lock()
	lag, ended, lost := durability(*ends, lines, killTime, rows, bound)
	answered := len(*ends)
	mu.Unlock()
	note := fmt.Sprintf("%d answered (kill after %d), %d ended > %v before the kill, %d journal lines at the kill, %d rows after repair; repair exit %d, report exit %d",
		answered, killAt, ended, bound, len(lines), rows, repairCode, reportCode)
	record(sc, "rows lost", "rows", val(float64(lost)), "0", lost == 0, note)
	record(sc, "durability lag (most)", "ms", val(float64(lag.Microseconds())/1000), "", true,
		fmt.Sprintf("answer end (%s) to its row in the journal; shown: rows lost checks the %d ms bound", side, bound.Milliseconds()))
	if lost > 0 {
		t.Errorf("%d of %d answers that ended more than %v before the kill have no row (%s)", lost, ended, bound, note)
	}
}
