// Package proxybench is the load of the proxy's speed benchmarks (capture's
// BenchmarkProxyStreaming, every party in one process, and cmd/lab's BenchmarkProxyProcesses,
// each party a process of its own as `lab proxy` runs): a fake model API on loopback that streams
// every answer at a fixed pace ([Paced]), streaming clients that time each answer ([Stream]), a
// bare reverse proxy that is the floor one more loopback hop costs ([Bare]), the same-run
// alternation of direct, proxied and bare requests ([Alternate]) and the figures reported from
// it ([Report]). The fake upstream and the bare proxy also run as child processes of a test
// binary ([ChildMain], [StartChild]). A test helper: no production code imports it.
package proxybench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The pace of [Paced] in the benchmarks: the first content chunk 20 ms after the request, then
// one every 5 ms, 20 in all (about 120 ms an answer).
const (
	First  = 20 * time.Millisecond
	Every  = 5 * time.Millisecond
	Chunks = 20
)

// Clients is how many clients stream at once.
const Clients = 50

// IdleConns is how many idle connections to the upstream the bare proxy's transport keeps: as
// many as the lab proxy's default transport keeps (capture's idleUpstreamConns), so the two
// differ in what they do with a request, not in how they reach the upstream.
const IdleConns = 256

// A Case is one sub-benchmark's requests: the API ("openai": OpenAI Chat Completions
// server-sent events, "anthropic": Anthropic Messages events), its path, and the size of each
// request body in bytes ([Body]; 0 for one short message).
type Case struct {
	Name, API, Path string
	Size            int
}

// Cases are the benchmarks' sub-benchmarks: each API with a short request, and Chat Completions
// with a 256 KiB conversation (some 64k tokens, an agent's long session), whose body the proxy
// reads whole before forwarding it.
var Cases = []Case{
	{"openai", "openai", "/v1/chat/completions", 0},
	{"anthropic", "anthropic", "/v1/messages", 0},
	{"openai-256KiB", "openai", "/v1/chat/completions", 256 << 10},
}

// Paced is a fake model API that answers every POST with a streamed answer at a fixed pace: the
// first chunk after first, then one chunk every every, chunks in all, each flushed at once; then
// the usage chunk (or message_delta) and the end marker. The answer is OpenAI Chat Completions
// server-sent events for /v1/chat/completions, Anthropic Messages events for /v1/messages (whose
// message_start and content_block_start are flushed at once, before the first pause). Any other
// method is answered 404 (`lab proxy` asks a loopback upstream GET /api/version at start).
func Paced(first, every time.Duration, chunks int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		anthropic := r.URL.Path == "/v1/messages"
		if anthropic {
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n")
			io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			f.Flush()
		}
		for i := range chunks {
			if i == 0 {
				time.Sleep(first)
			} else {
				time.Sleep(every)
			}
			if anthropic {
				fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tok%d \"}}\n\n", i)
			} else {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
			}
			f.Flush()
		}
		if anthropic {
			io.WriteString(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
			fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":%d}}\n\n", chunks)
			io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		} else {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":%d}}\n\n", chunks)
			io.WriteString(w, "data: [DONE]\n\n")
		}
		f.Flush()
	})
}

// Body is client k's streamed request in the API's format (api "openai" or "anthropic"): one
// user message, or with size > 0 a conversation of user and assistant messages of about 1 KiB
// each until the body holds about size bytes (an agent's long conversation: some 4 bytes a
// token), then the question.
func Body(api string, k, size int) []byte {
	var b bytes.Buffer
	if api == "anthropic" {
		b.WriteString(`{"model":"m","max_tokens":64,"stream":true,"messages":[`)
	} else {
		b.WriteString(`{"model":"m","stream":true,"messages":[`)
	}
	for i := 0; b.Len() < size; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"role":%q,"content":"client %d message %d: %s"},`, role, k, i, strings.Repeat(`the lock is taken in \"serve\" before the map is read; `, 18))
	}
	fmt.Fprintf(&b, `{"role":"user","content":"client %d: where is the lock taken?"}]}`, k)
	return b.Bytes()
}

// Timing is one streamed answer as its client saw it: from sending the request to the first
// chunk that carried generated text (TTFT) and to the end of the answer (Total).
type Timing struct{ TTFT, Total time.Duration }

// Stream sends one streamed request and reads its answer line by line. Errors: the transport's,
// a status other than 200, an answer with no content chunk.
func Stream(hc *http.Client, url string, body []byte) (Timing, error) {
	start := time.Now()
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return Timing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Timing{}, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var t Timing
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if t.TTFT == 0 && (bytes.Contains(line, []byte(`"content":"tok`)) || bytes.Contains(line, []byte(`"text":"tok`))) {
			t.TTFT = time.Since(start)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, err
		}
	}
	t.Total = time.Since(start)
	if t.TTFT == 0 {
		return t, errors.New("no content chunk")
	}
	return t, nil
}

// Bare is a bare httputil.ReverseProxy to upstream that does what the lab proxy does on the
// path and nothing else: it reads the request body whole first, flushes every chunk of the
// answer at once (FlushInterval -1) and reaches the upstream through a clone of
// http.DefaultTransport keeping [IdleConns] idle connections.
func Bare(upstream *url.URL) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.FlushInterval = -1
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = IdleConns, IdleConns
	rp.Transport = tr
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		rp.ServeHTTP(w, r)
	})
}

// Client is the clients' HTTP client: enough idle connections per host that every client keeps
// its own to each of the addresses.
func Client() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * Clients, MaxIdleConnsPerHost: Clients}}
}

// The ways a request goes, the indexes of [Round]'s addresses and results: straight to the
// upstream, through the lab proxy, through the bare proxy, and (when given) through another
// lab proxy binary to compare with (ViaBase).
const (
	Direct = iota
	Proxied
	ViaBare
	ViaBase
)

// Round has [Clients] clients stream at once, each sending one request of api ("openai" or
// "anthropic") of about size bytes ([Body]) to each of urls (indexed by [Direct], [Proxied],
// [ViaBare] and, when there are four, [ViaBase]) in an order that rotates from client to client
// and from round r to the next, so every way is measured under the same load. It returns each
// way's timings; the error is the first request that failed.
func Round(hc *http.Client, urls []string, api string, size, r int) ([][]Timing, error) {
	var mu sync.Mutex
	got := make([][]Timing, len(urls))
	var failed error
	var wg sync.WaitGroup
	bodies := make([][]byte, Clients)
	for k := range bodies {
		bodies[k] = Body(api, k, size)
	}
	for k := range Clients {
		wg.Go(func() {
			for j := range urls {
				mode := (k + r + j) % len(urls)
				t, err := Stream(hc, urls[mode], bodies[k])
				mu.Lock()
				if err != nil && failed == nil {
					failed = fmt.Errorf("%s (round %d): %w", urls[mode], r, err)
				} else if err == nil {
					got[mode] = append(got[mode], t)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got, failed
}

// Alternate runs one [Round] per b.Loop iteration and returns each way's timings of them all;
// the error is the first request that failed. Run one Round first, not counted: it opens every
// connection (a harness keeps its connections to the proxy, and the proxy its own to the
// upstream: the figures are the steady state's).
func Alternate(b *testing.B, hc *http.Client, urls []string, api string, size int) ([][]Timing, error) {
	all := make([][]Timing, len(urls))
	r := 1
	for b.Loop() {
		got, err := Round(hc, urls, api, size, r)
		if err != nil {
			return all, err
		}
		for i := range all {
			all[i] = append(all[i], got[i]...)
		}
		r++
	}
	return all, nil
}

// Percentile is the p-th percentile (0 < p ≤ 100, nearest rank) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// Mean is the mean of ds in nanoseconds.
func Mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds))
}

// Figures are what [Report] computes from one run's timings, in milliseconds and percent.
type Figures struct {
	// AddedP99 and BareAddedP99 are what the lab proxy and the bare proxy add to the time to
	// first token at the 99th percentile (their p99 less the direct p99), ms.
	AddedP99, BareAddedP99 float64
	// TotalAdded and BareTotalAdded are what they add to the mean total time, percent.
	TotalAdded, BareTotalAdded float64
}

// Report reports the figures of got (indexed as [Round]'s) as benchmark metrics: the time to
// first token at the 50th and 99th percentile of each way (ttft-p50-direct-ms,
// ttft-p99-proxied-ms, ttft-p99-bare-ms, …), what the lab proxy adds to them (ttft-added-p50-ms,
// ttft-added-p99-ms; the target: at most 1 ms at p99) and to the mean total time
// (total-added-%; the target: under 1 %), the same for the bare proxy (ttft-bare-added-p50-ms,
// ttft-bare-added-p99-ms, total-bare-added-%: the floor one more hop costs on the machine as
// loaded as it is) and, with a fourth way, for the lab proxy binary compared with
// (ttft-base-added-p50-ms, ttft-base-added-p99-ms, total-base-added-%); and logs them with the
// verdicts. It returns the figures.
func Report(b *testing.B, got [][]Timing) Figures {
	ttft := func(ts []Timing) []time.Duration {
		out := make([]time.Duration, len(ts))
		for i, t := range ts {
			out[i] = t.TTFT
		}
		return out
	}
	total := func(ts []Timing) []time.Duration {
		out := make([]time.Duration, len(ts))
		for i, t := range ts {
			out[i] = t.Total
		}
		return out
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	d50, d99 := Percentile(ttft(got[Direct]), 50), Percentile(ttft(got[Direct]), 99)
	dTotal := Mean(total(got[Direct]))
	b.ReportMetric(ms(d50), "ttft-p50-direct-ms")
	b.ReportMetric(ms(d99), "ttft-p99-direct-ms")
	b.ReportMetric(dTotal/float64(time.Millisecond), "total-direct-ms")
	// way reports one way's figures against the direct requests': p99 added (ms) and total
	// added (percent).
	way := func(i int, name, added string) (float64, float64) {
		p50, p99 := Percentile(ttft(got[i]), 50), Percentile(ttft(got[i]), 99)
		tot := 100 * (Mean(total(got[i]))/dTotal - 1)
		b.ReportMetric(ms(p50), "ttft-p50-"+name+"-ms")
		b.ReportMetric(ms(p99), "ttft-p99-"+name+"-ms")
		b.ReportMetric(ms(p50-d50), "ttft-"+added+"added-p50-ms")
		b.ReportMetric(ms(p99-d99), "ttft-"+added+"added-p99-ms")
		b.ReportMetric(tot, "total-"+added+"added-%")
		return ms(p99 - d99), tot
	}
	var f Figures
	f.AddedP99, f.TotalAdded = way(Proxied, "proxied", "")
	f.BareAddedP99, f.BareTotalAdded = way(ViaBare, "bare", "bare-")
	base := ""
	if len(got) > ViaBase {
		p99, tot := way(ViaBase, "base", "base-")
		base = fmt.Sprintf("; the lab proxy compared with adds %.3f ms and %.3f %%", p99, tot)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	b.Logf("%d requests each way: time to first token added at p99 %.3f ms (target at most 1 ms: %s; a bare reverse proxy adds %.3f ms), total time added %.3f %% (target under 1 %%: %s; a bare reverse proxy adds %.3f %%)%s",
		len(got[Direct]), f.AddedP99, verdict(f.AddedP99 <= 1), f.BareAddedP99, f.TotalAdded, verdict(f.TotalAdded < 1), f.BareTotalAdded, base)
	return f
}

// The child processes of [ChildMain]: RoleEnv names the role, UpstreamEnv the bare proxy's
// upstream.
const (
	RoleEnv     = "LAB_PROXYBENCH_ROLE"
	UpstreamEnv = "LAB_PROXYBENCH_UPSTREAM"
	// RoleUpstream serves [Paced] at the benchmarks' pace; RoleBare serves [Bare].
	RoleUpstream = "upstream"
	RoleBare     = "bare"
)

// ChildMain returns at once unless the process is a child [StartChild] started ([RoleEnv] set);
// then it serves its role on a free loopback port, prints "listening on http://ADDR" on stdout,
// and exits 0 on SIGINT or SIGTERM (1 on an error). Call it first in a test binary's TestMain.
func ChildMain() {
	role := os.Getenv(RoleEnv)
	if role == "" {
		return
	}
	if err := serveChild(role); err != nil {
		fmt.Fprintln(os.Stderr, "proxybench:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveChild(role string) error {
	var h http.Handler
	switch role {
	case RoleUpstream:
		h = Paced(First, Every, Chunks)
	case RoleBare:
		u, err := url.Parse(os.Getenv(UpstreamEnv))
		if err != nil || u.Host == "" {
			return fmt.Errorf("%s %q: want the upstream's http://host:port", UpstreamEnv, os.Getenv(UpstreamEnv))
		}
		h = Bare(u)
	default:
		return fmt.Errorf("%s %q: want %s or %s", RoleEnv, role, RoleUpstream, RoleBare)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// listening finds a child's address in the line it prints once it listens.
var listening = regexp.MustCompile(`listening on (http://[0-9.:\[\]a-z]+)`)

// A Child is a process a test or benchmark started: its address, and its output after the line
// that named it.
type Child struct {
	cmd *exec.Cmd
	// URL is the address the child listens on, http://host:port.
	URL  string
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	// ended is set once cmd.Wait returned (by [Child.Stop], or by Start when the child did not
	// listen); until then the test's cleanup kills the child.
	ended bool
}

// Start starts cmd and waits (at most a minute) for the line on its stdout or stderr that says
// "listening on http://ADDR"; the rest of its output is kept ([Child.Output]). A child not
// stopped ([Child.Stop]) by the end of tb (a test or benchmark that failed on its way) is
// killed then. It ends tb (Fatal) when cmd does not start, ends before it listens, or does not
// listen within the minute.
func Start(tb testing.TB, cmd *exec.Cmd) *Child {
	tb.Helper()
	c := &Child{cmd: cmd, done: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if !c.ended {
			cmd.Process.Kill()
			cmd.Wait()
			c.ended = true
			<-c.done
		}
	})
	pw.Close()
	found := make(chan string, 1)
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
				continue
			}
			c.mu.Lock()
			c.out.WriteString(line + "\n")
			c.mu.Unlock()
		}
		io.Copy(io.Discard, pr)
		pr.Close()
	}()
	select {
	case c.URL = <-found:
	case <-c.done:
		cmd.Wait()
		c.ended = true
		tb.Fatalf("%s ended before it listened:\n%s", strings.Join(cmd.Args, " "), c.Output())
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		c.ended = true
		<-c.done
		tb.Fatalf("%s did not listen within a minute:\n%s", strings.Join(cmd.Args, " "), c.Output())
	}
	return c
}

// StartChild starts this test binary again as a child of role ([RoleUpstream], [RoleBare]
// with upstream), which [ChildMain] serves; as [Start], it is killed at the end of tb unless
// stopped before.
func StartChild(tb testing.TB, role, upstream string) *Child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), RoleEnv+"="+role, UpstreamEnv+"="+upstream)
	return Start(tb, cmd)
}

// Stop sends the child SIGINT and waits for it to end (at most two minutes, then it is killed);
// it returns the CPU time the child used (user and system) and an error when it did not end
// of itself with status 0.
func (c *Child) Stop() (cpu time.Duration, err error) {
	c.cmd.Process.Signal(os.Interrupt)
	waited := make(chan error, 1)
	go func() { waited <- c.cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(2 * time.Minute):
		c.cmd.Process.Kill()
		<-waited
		err = errors.New("did not end within 2 minutes of SIGINT: killed")
	}
	c.ended = true
	<-c.done
	if ps := c.cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	if err != nil {
		err = fmt.Errorf("%s: %w\n%s", strings.Join(c.cmd.Args, " "), err, c.Output())
	}
	return cpu, err
}

// CPU returns the CPU time the child used so far, user and system, all its threads (Linux's
// /proc/PID/stat utime and stime, in clock ticks of 10 ms); ok is false where there is none to
// read.
func (c *Child) CPU() (cpu time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command's name, which is in parentheses and may hold spaces: state
	// is the first of them, utime and stime the 12th and 13th (proc(5): fields 14 and 15).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * (time.Second / clockTicks), true
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

// Output is what the child wrote on stdout and stderr after the line that named its address.
func (c *Child) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}
