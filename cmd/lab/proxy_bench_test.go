package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"lab/internal/proxybench"
)

// TestMain serves as the proxy benchmark's fake upstream or bare proxy when this test binary is
// started as one (proxybench.ChildMain); otherwise it runs the tests.
func TestMain(m *testing.M) {
	proxybench.ChildMain()
	os.Exit(m.Run())
}

// recorded is the line `lab proxy` prints on stdout once it stopped: its capture's folder and
// how many requests it recorded.
var recorded = regexp.MustCompile(`capture: .* \((\d+) requests recorded\)`)

// BenchmarkProxyProcesses measures what `lab proxy` adds to a streamed answer with each party a
// process of its own, as the proxy runs in front of an agent: the fake upstream
// (proxybench.Paced: the first chunk after 20 ms, then one every 5 ms, 20 chunks) and a bare
// httputil.ReverseProxy in front of it (proxybench.Bare: the request body read whole, every
// chunk flushed, the proxy's idle connections) are children of this test binary, the lab proxy
// is the real binary (LAB_BIN, or this package built into a temporary folder) started as
// `lab proxy --listen 127.0.0.1:0 --upstream URL --run DIR` with its progress lines on, and 50
// clients in this process each send, per round, one request straight to the upstream, one
// through the lab proxy and one through the bare proxy, in an order that rotates
// (proxybench.Round first, not counted, opens the connections; then proxybench.Alternate). So
// the clients' and the upstream's goroutines and garbage collection are not the proxy's, and
// the proxy's are its own. With LAB_BIN_BASE naming another lab binary (a build of an earlier
// revision), a second lab proxy of that binary is a fourth way in the same rotation, so two
// builds are compared under the same load. It reports the time to first token at the 50th and
// 99th percentile of each way, what the lab proxy adds at p99 (ttft-added-p99-ms; the target:
// at most 1 ms) and to the mean total time (total-added-%; the target: under 1 %), the same for
// the bare proxy (the floor one more loopback hop costs, on the machine as loaded as it is) and
// the base binary (proxybench.Report), and the CPU time each proxy process used per request of
// the counted rounds (proxy-cpu-µs/request, bare-cpu-µs/request, base-cpu-µs/request: user and
// system, from the kernel's accounting of the child, which a busy machine stretches far less
// than the latencies). It fails when a capture did not record every request its proxy carried.
// Sub-benchmarks (proxybench.Cases): OpenAI Chat Completions and Anthropic Messages with a
// short request, and Chat Completions with a 256 KiB conversation. Run it with a fixed count
// (-benchtime 20x: 1,000 requests each way), on a machine as quiet as can be had:
//
//	LAB_BIN=$PWD/bin/lab go test -run '^$' -bench BenchmarkProxyProcesses -benchtime 20x ./cmd/lab/
//
// The lab proxies inherit the environment: LAB_CPUPROFILE=FILE or LAB_TRACE=FILE profiles or
// traces the proxy (one sub-benchmark, such as -bench 'BenchmarkProxyProcesses/openai$', and
// no LAB_BIN_BASE, or the files are written over).
func BenchmarkProxyProcesses(b *testing.B) {
	bin := labBinary(b)
	base := os.Getenv("LAB_BIN_BASE")
	if base != "" {
		abs, err := filepath.Abs(base)
		if err != nil {
			b.Fatal(err)
		}
		base = abs
	}
	for _, c := range proxybench.Cases {
		b.Run(c.Name, func(b *testing.B) {
			up := proxybench.StartChild(b, proxybench.RoleUpstream, "")
			bare := proxybench.StartChild(b, proxybench.RoleBare, up.URL)
			labs := []*proxybench.Child{startLabProxy(b, bin, up.URL)}
			if base != "" {
				labs = append(labs, startLabProxy(b, base, up.URL))
			}
			urls := []string{up.URL + c.Path, labs[0].URL + c.Path, bare.URL + c.Path}
			procs := []*proxybench.Child{labs[0], bare}
			if base != "" {
				urls = append(urls, labs[1].URL+c.Path)
				procs = append(procs, labs[1])
			}
			hc := proxybench.Client()
			if _, err := proxybench.Round(hc, urls, c.API, c.Size, 0); err != nil {
				b.Fatal(err)
			}
			cpu0, ok0 := cpuOf(procs)
			got, err := proxybench.Alternate(b, hc, urls, c.API, c.Size)
			b.StopTimer()
			cpu1, ok1 := cpuOf(procs)
			hc.CloseIdleConnections()
			errs := []error{err}
			for _, p := range append(procs, up) {
				_, err := p.Stop()
				errs = append(errs, err)
			}
			for _, e := range errs {
				if e != nil {
					b.Fatal(e)
				}
			}
			proxybench.Report(b, got)
			if ok0 && ok1 {
				// The counted rounds' CPU only: not the proxies' start, nor the round that
				// opened the connections.
				n := float64(len(got[proxybench.Proxied]))
				us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
				for i, name := range []string{"proxy", "bare", "base"}[:len(procs)] {
					b.ReportMetric(us(cpu1[i]-cpu0[i])/n, name+"-cpu-µs/request")
				}
			}
			// Every request a lab proxy carried: the counted rounds' and the first.
			for _, lab := range labs {
				carried := len(got[proxybench.Proxied]) + proxybench.Clients
				m := recorded.FindStringSubmatch(lab.Output())
				if m == nil {
					b.Fatalf("lab proxy printed no capture line:\n%s", lab.Output())
				}
				if n, _ := strconv.Atoi(m[1]); n != carried {
					b.Fatalf("lab proxy recorded %d requests; it carried %d", n, carried)
				}
			}
		})
	}
}

// startLabProxy starts `bin proxy` in front of upstream, recording into a temporary folder,
// with a cache folder of its own (so no server lab server start left running is taken for the
// upstream) and its progress lines on, as a user runs it.
func startLabProxy(tb testing.TB, bin, upstream string) *proxybench.Child {
	tb.Helper()
	dir := tb.TempDir()
	cmd := exec.Command(bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream, "--run", filepath.Join(dir, "run_id=cap"), "--run-id", "cap")
	cmd.Env = append(os.Environ(), "LAB_CACHE="+filepath.Join(dir, "cache"))
	cmd.Dir = dir
	return proxybench.Start(tb, cmd)
}

// cpuOf reads the CPU time each process used so far; ok is false when one cannot be read.
func cpuOf(procs []*proxybench.Child) (cpu []time.Duration, ok bool) {
	for _, p := range procs {
		c, ok := p.CPU()
		if !ok {
			return nil, false
		}
		cpu = append(cpu, c)
	}
	return cpu, true
}
