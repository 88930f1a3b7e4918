//go:build stress

package stress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"
)

// A figure is one measured value of a scenario, as the table and the JSON file give it.
type figure struct {
	// Scenario names the stress scenario ("proxy-sigkill", "run-memory-100MB", …).
	Scenario string `json:"scenario"`
	// Name is what was measured ("rows lost", "peak RSS", …) and Unit its unit ("rows", "MiB",
	// "ms", "s", or "finds": a secret value found in one file).
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Value is the measured value; nil when the scenario could not measure it.
	Value *float64 `json:"value"`
	// Bound is the guarantee checked against Value ("0", "≤ 600 MiB"); "" when only shown.
	Bound string `json:"bound,omitempty"`
	// OK is false when Value broke Bound.
	OK bool `json:"ok"`
	// Note says what else the reader needs (the counts behind a figure, an error row's text).
	Note string `json:"note,omitempty"`
}

var (
	figMu   sync.Mutex
	figures []figure
	labBin  string
	seed    uint64
)

// record adds a figure to the table; bound "" shows it only.
func record(scenario, name, unit string, value *float64, bound string, ok bool, note string) {
	figMu.Lock()
	defer figMu.Unlock()
	figures = append(figures, figure{scenario, name, unit, value, bound, ok, note})
}

func val(v float64) *float64 { return &v }

// TestMain finds the binary (LAB_STRESS_BIN, default bin/lab, which make stress builds; a
// relative path is taken from the repository's root),
// runs the scenarios, then prints the table of figures and writes it to LAB_STRESS_OUT (default
// ../results/stress/figures-<UTC time>.json).
func TestMain(m *testing.M) {
	labBin = os.Getenv("LAB_STRESS_BIN")
	if labBin == "" {
		labBin = filepath.Join("bin", "lab")
	}
	if !filepath.IsAbs(labBin) {
		labBin = filepath.Join("..", labBin) // relative to the repository, not this package
	}
	if abs, err := filepath.Abs(labBin); err == nil {
		labBin = abs
	}
	if _, err := os.Stat(labBin); err != nil {
		fmt.Fprintf(os.Stderr, "stress: no lab binary at %s (make stress builds it; LAB_STRESS_BIN names another)\n", labBin)
		os.Exit(1)
	}
	seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("LAB_STRESS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	fmt.Printf("stress: binary %s, seed %d (LAB_STRESS_SEED=%d repeats the kill moments)\n", labBin, seed, seed)
	code := m.Run()
	printFigures()
	os.Exit(code)
}

func printFigures() {
	figMu.Lock()
	defer figMu.Unlock()
	if len(figures) == 0 {
		return
	}
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tfigure\tvalue\tbound\tok\tnote")
	for _, f := range figures {
		v := "unknown"
		if f.Value != nil {
			v = strconv.FormatFloat(*f.Value, 'f', -1, 64) + " " + f.Unit
			if f.Unit == "MiB" || f.Unit == "ms" || f.Unit == "s" {
				v = strconv.FormatFloat(*f.Value, 'f', 1, 64) + " " + f.Unit
			}
		}
		ok := "ok"
		if !f.OK {
			ok = "FAIL"
		}
		if f.Bound == "" {
			ok = ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Scenario, f.Name, v, f.Bound, ok, f.Note)
	}
	tw.Flush()
	out := os.Getenv("LAB_STRESS_OUT")
	if out == "" {
		out = filepath.Join("..", "results", "stress", "figures-"+time.Now().UTC().Format("20060102-150405")+".json")
	}
	doc := struct {
		Binary  string    `json:"binary"`
		Seed    uint64    `json:"seed"`
		At      time.Time `json:"at"`
		Figures []figure  `json:"figures"`
	}{labBin, seed, time.Now().UTC(), figures}
	b, _ := json.MarshalIndent(doc, "", "  ")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil {
		err = os.WriteFile(out, append(b, '\n'), 0o644)
		if err == nil {
			abs, _ := filepath.Abs(out)
			fmt.Printf("\nstress: figures written to %s\n", abs)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "stress: cannot write %s\n", out)
}

// rng returns a random source for one scenario, from the run's seed and the scenario's name, so
// LAB_STRESS_SEED repeats every scenario's choices whichever ran before.
func rng(name string) *rand.Rand {
	var h uint64 = 1469598103934665603
	for _, c := range []byte(name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}

// A child is a running lab process: its stdout and stderr go to files (so the secrets scan
// reads them), and each stderr line is offered to lines.
type child struct {
	cmd        *exec.Cmd
	outPath    string
	errPath    string
	lines      chan string
	waited     chan struct{}
	waitErr    error
	startedAt  time.Time
	listenAddr string
}

// lineWriter writes to f and sends each complete line to ch (dropping it when ch is full).
type lineWriter struct {
	f   *os.File
	buf []byte
	ch  chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.f.Write(p)
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		select {
		case w.ch <- string(w.buf[:i]):
		default:
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// startLab starts bin/lab with args in a fresh temporary folder (its working directory), with
// env added to the environment (TMPDIR set to a folder of the test's, so sandboxes stay there).
func startLab(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	dir := t.TempDir()
	c := &child{outPath: filepath.Join(dir, "stdout"), errPath: filepath.Join(dir, "stderr"), lines: make(chan string, 1024), waited: make(chan struct{})}
	of, err := os.Create(c.outPath)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := os.Create(c.errPath)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	c.cmd = exec.Command(labBin, args...)
	c.cmd.Dir = dir
	c.cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp, "NO_COLOR=1"), env...)
	c.cmd.Stdout = of
	c.cmd.Stderr = &lineWriter{f: ef, ch: c.lines}
	c.startedAt = time.Now()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		of.Close()
		ef.Close()
		close(c.waited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.waited:
		default:
			c.cmd.Process.Kill()
			<-c.waited
		}
	})
	return c
}

// tmpDir is the TMPDIR the child runs with.
func (c *child) tmpDir() string { return filepath.Join(c.cmd.Dir, "tmp") }

// wait waits at most bound for the child to end; past it the child is killed (SIGKILL) and
// timedOut is true. code is the exit code (-1 when killed by a signal).
func (c *child) wait(bound time.Duration) (code int, timedOut bool) {
	select {
	case <-c.waited:
	case <-time.After(bound):
		c.cmd.Process.Kill()
		<-c.waited
		timedOut = true
	}
	return c.cmd.ProcessState.ExitCode(), timedOut
}

// maxRSS is the child's peak resident set size in MiB (getrusage ru_maxrss, KiB on Linux),
// once it has ended.
func (c *child) maxRSS() float64 {
	ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

func (c *child) stdout() string { b, _ := os.ReadFile(c.outPath); return string(b) }
func (c *child) stderr() string { b, _ := os.ReadFile(c.errPath); return string(b) }

// runLab runs bin/lab to its end within bound and returns the child.
func runLab(t *testing.T, bound time.Duration, env []string, args ...string) (*child, int, bool) {
	t.Helper()
	c := startLab(t, env, args...)
	code, timedOut := c.wait(bound)
	return c, code, timedOut
}

// startProxy starts lab proxy on a free loopback port (--listen 127.0.0.1:0) and returns the
// child and its address, read from its "listening on http://ADDR" line.
func startProxy(t *testing.T, upstream, out string, extra ...string) (*child, string) {
	t.Helper()
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--out", out, "--run-id", filepath.Base(out)}, extra...)
	c := startLab(t, nil, args...)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l := <-c.lines:
			if _, rest, ok := strings.Cut(l, "listening on http://"); ok {
				addr, _, _ := strings.Cut(rest, ",")
				return c, addr
			}
		case <-c.waited:
			t.Fatalf("lab proxy ended before listening: exit %d\n%s", c.cmd.ProcessState.ExitCode(), c.stderr())
		case <-deadline:
			t.Fatalf("lab proxy did not listen within 30 s:\n%s", c.stderr())
		}
	}
}

// journalWatch polls a journal file every millisecond and records when each line reached it.
type journalWatch struct {
	path  string
	mu    sync.Mutex
	times []time.Time // times[k]: when the journal first held k+1 lines
	stop  chan struct{}
	done  chan struct{}
}

func watchJournal(path string) *journalWatch {
	w := &journalWatch{path: path, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var f *os.File
		buf := make([]byte, 1<<16)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if f == nil {
				f, _ = os.Open(w.path)
			}
			if f != nil {
				for {
					n, _ := f.Read(buf)
					if n == 0 {
						break
					}
					now := time.Now()
					w.mu.Lock()
					for _, b := range buf[:n] {
						if b == '\n' {
							w.times = append(w.times, now)
						}
					}
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				if f != nil {
					f.Close()
				}
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// lines stops the watch and returns when each line reached the journal.
func (w *journalWatch) lines() []time.Time {
	close(w.stop)
	<-w.done
	return w.times
}

// durability compares the answers' end times (ends) with when the journal's lines appeared
// (lines) up to the kill: the k-th answer to end is matched with the journal's k-th line (rows
// of concurrent answers need not keep their order, but the k-th line cannot appear before k
// answers ended), so lag is the most time between an answer's end and the journal holding as
// many rows as answers had ended by then; an answer whose row never came counts until kill.
// lost counts the answers that ended more than bound before the kill beyond the rows on disk.
func durability(ends, lines []time.Time, kill time.Time, rows int, bound time.Duration) (lag time.Duration, ended, lost int) {
	sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
	for k, e := range ends {
		if e.After(kill) {
			break
		}
		at := kill
		if k < len(lines) && lines[k].Before(kill) {
			at = lines[k]
		}
		if d := at.Sub(e); d > lag {
			lag = d
		}
		if e.Before(kill.Add(-bound)) {
			ended++
		}
	}
	return lag, ended, max(0, ended-rows)
}

// durableBound is the time within which an answered request's row must be in the journal: 100
// ms, or LAB_STRESS_DURABLE_MS.
func durableBound() time.Duration {
	if s := os.Getenv("LAB_STRESS_DURABLE_MS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return time.Duration(n) * time.Millisecond
		}
	}
	return 100 * time.Millisecond
}

// chatAnswer writes an OpenAI Chat Completions answer: a stream of content deltas of delta
// bytes each adding up to size bytes, then the finish, the usage and [DONE]; or, when stream
// is false, one JSON document.
func chatAnswer(w http.ResponseWriter, stream bool, content string, size, delta int) {
	usage := `{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0}}`
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		c, _ := json.Marshal(content)
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":%s}`, c, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":null}]}\n\n", content)
	if size > 0 {
		chunk := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + strings.Repeat("a", delta) + "\"},\"finish_reason\":null}]}\n\n")
		for sent := 0; sent < size; sent += delta {
			if _, err := bw.Write(chunk); err != nil {
				return
			}
		}
	}
	fmt.Fprintf(bw, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(bw, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":%s}\n\n", usage)
	fmt.Fprintf(bw, "data: [DONE]\n\n")
	bw.Flush()
}

// notOllama answers lab's /api/version probe (is a loopback server Ollama?) with 404 and
// returns true for any path but the chat one (Chat Completions, or path when given).
func notOllama(w http.ResponseWriter, r *http.Request, path ...string) bool {
	want := "/v1/chat/completions"
	if len(path) > 0 {
		want = path[0]
	}
	if r.URL.Path != want {
		io.Copy(io.Discard, r.Body)
		http.NotFound(w, r)
		return true
	}
	return false
}

// scenarioDir writes a one-turn scenario (one user message, one scripted reply) with the given
// workspace files into a temporary folder and returns its scenario.yaml.
func scenarioDir(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var ws strings.Builder
	ws.WriteString("A workspace for the stress scenarios.\n")
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&ws, "-- %s --\n%s", k, files[k])
	}
	yaml := fmt.Sprintf(`name: %s
description: A one-turn session for the stress scenarios.
project: stressproj
workspace: workspace.txtar
clock: "2026-11-05T22:05:00+01:00"
steps:
  - user: |
      Look at the project and say what it does.
  - assistant:
      text: It prints a greeting.
`, name)
	if err := os.WriteFile(filepath.Join(dir, "workspace.txtar"), []byte(ws.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// messagesAnswer streams an Anthropic Messages answer: one text block of text deltas of delta
// bytes each adding up to size bytes, then message_delta with the usage and message_stop.
func messagesAnswer(w http.ResponseWriter, size, delta int) {
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriterSize(w, 1<<16)
	event := func(name, data string) { fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", name, data) }
	event("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}`)
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	chunk := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("a", delta) + "\"}}\n\n")
	for sent := 0; sent < size; sent += delta {
		if _, err := bw.Write(chunk); err != nil {
			return
		}
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`)
	event("message_stop", `{"type":"message_stop"}`)
	bw.Flush()
}
