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
// (proxybench.Round first, not counted, opens the connections; then proxybench.Alternate). So the clients'
// and the upstream's goroutines and garbage collection are not the proxy's, and the proxy's are
// its own. It reports the time to first token at the 50th and 99th percentile of each way,
// what the lab proxy adds at p99 (ttft-added-p99-ms; the target: at most 1 ms) and to the mean
// total time (total-added-%; the target: under 1 %), the same for the bare proxy (the floor one
// more loopback hop costs, on the machine as loaded as it is: proxybench.Report), and the CPU
// time each proxy process used per request it carried (proxy-cpu-µs/request,
// bare-cpu-µs/request: user and system of the counted rounds, from the kernel's accounting of
// the child, which a busy machine stretches far less than the latencies). It fails when the capture did not record
// every proxied request. Sub-benchmarks: OpenAI Chat Completions server-sent events and
// Anthropic Messages. Run it with a fixed count (-benchtime 20x: 1,000 requests each way), on a
// machine as quiet as can be had:
//
//	LAB_BIN=bin/lab go test -run '^$' -bench BenchmarkProxyProcesses -benchtime 20x ./cmd/lab/
func BenchmarkProxyProcesses(b *testing.B) {
	bin := labBinary(b)
	for _, api := range proxybench.APIs {
		b.Run(api.Name, func(b *testing.B) {
			up := proxybench.StartChild(b, proxybench.RoleUpstream, "")
			bare := proxybench.StartChild(b, proxybench.RoleBare, up.URL)
			dir := b.TempDir()
			cmd := exec.Command(bin, "proxy", "--listen", "127.0.0.1:0", "--upstream", up.URL, "--run", filepath.Join(dir, "run_id=cap"), "--run-id", "cap")
			// A cache folder of its own: no server lab server start left running is taken for
			// the upstream.
			cmd.Env = append(os.Environ(), "LAB_CACHE="+filepath.Join(dir, "cache"))
			cmd.Dir = dir
			lab := proxybench.Start(b, cmd)
			hc := proxybench.Client()
			urls := [3]string{up.URL + api.Path, lab.URL + api.Path, bare.URL + api.Path}
			if _, err := proxybench.Round(hc, urls, api.Name, 0); err != nil {
				b.Fatal(err)
			}
			labCPU0, ok1 := lab.CPU()
			bareCPU0, ok2 := bare.CPU()
			got, err := proxybench.Alternate(b, hc, urls, api.Name)
			b.StopTimer()
			labCPU1, ok3 := lab.CPU()
			bareCPU1, ok4 := bare.CPU()
			hc.CloseIdleConnections()
			_, lerr := lab.Stop()
			_, berr := bare.Stop()
			_, uerr := up.Stop()
			for _, e := range []error{err, lerr, berr, uerr} {
				if e != nil {
					b.Fatal(e)
				}
			}
			proxybench.Report(b, got)
			if ok1 && ok2 && ok3 && ok4 {
				// The counted rounds' CPU only: not the proxy's start, nor the round that opened
				// the connections.
				n := float64(len(got[proxybench.Proxied]))
				us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
				b.ReportMetric(us(labCPU1-labCPU0)/n, "proxy-cpu-µs/request")
				b.ReportMetric(us(bareCPU1-bareCPU0)/n, "bare-cpu-µs/request")
			}
			// Every request the lab proxy carried: the counted rounds' and the first.
			carried := len(got[proxybench.Proxied]) + proxybench.Clients
			m := recorded.FindStringSubmatch(lab.Output())
			if m == nil {
				b.Fatalf("lab proxy printed no capture line:\n%s", lab.Output())
			}
			if n, _ := strconv.Atoi(m[1]); n != carried {
				b.Fatalf("lab proxy recorded %d requests; it carried %d", n, carried)
			}
		})
	}
}
