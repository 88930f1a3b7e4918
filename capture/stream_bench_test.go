package capture

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/internal/proxybench"
)

// pacedUpstream is a fake model API on loopback that streams every answer at a fixed pace
// (proxybench.Paced: the first chunk after first, then one every every, chunks in all).
func pacedUpstream(first, every time.Duration, chunks int) *httptest.Server {
	return httptest.NewServer(proxybench.Paced(first, every, chunks))
}

// stream sends one streamed request and reads its answer (proxybench.Stream).
func stream(hc *http.Client, url string, body []byte) (proxybench.Timing, error) {
	return proxybench.Stream(hc, url, body)
}

// BenchmarkProxyStreaming measures what lab proxy adds to a streamed answer with every party in
// this one process (the fake upstream, the clients, the recording proxy and a bare
// httputil.ReverseProxy share its goroutines, its garbage collection and the machine's cores):
// the load, the alternation and the figures of cmd/lab's BenchmarkProxyProcesses, which runs
// each party as a process of its own as `lab proxy` runs and whose figures are the ones the
// targets are judged by. A fake upstream on loopback streams each answer at a fixed pace
// (proxybench.Paced: the first chunk after 20 ms, then one every 5 ms, 20 chunks), and 50
// clients at once each send, per round, one request straight to it, one through a recording
// proxy in front of it and one through a bare reverse proxy (proxybench.Bare: reading the
// request body whole and flushing every chunk, as the proxy does, with as many idle
// connections as the proxy's default transport), in an order that rotates from client to client
// and round to round (one round first, not counted, opens the connections). It reports the time
// to first token at the 50th and 99th percentile of each way, what the proxy adds to them
// (ttft-added-p99-ms; the target: at most 1 ms) and to the mean total time (total-added-%; the
// target: under 1 %), and the same for the bare reverse proxy (ttft-bare-added-p99-ms,
// total-bare-added-%: proxybench.Report). Sub-benchmarks: proxybench.Cases. Run it with a fixed
// count (-benchtime 20x: 1,000 requests each way), on a machine as quiet as can be had.
func BenchmarkProxyStreaming(b *testing.B) {
	if proxybench.IdleConns != idleUpstreamConns {
		b.Fatalf("proxybench.IdleConns %d: want the proxy's idleUpstreamConns, %d", proxybench.IdleConns, idleUpstreamConns)
	}
	for _, c := range proxybench.Cases {
		b.Run(c.Name, func(b *testing.B) {
			up := pacedUpstream(proxybench.First, proxybench.Every, proxybench.Chunks)
			defer up.Close()
			p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(b.TempDir(), "run_id=cap"), RunID: "cap"})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(p)
			u, err := url.Parse(up.URL)
			if err != nil {
				b.Fatal(err)
			}
			bare := httptest.NewServer(proxybench.Bare(u))
			defer bare.Close()
			hc := proxybench.Client()
			urls := []string{up.URL + c.Path, srv.URL + c.Path, bare.URL + c.Path}
			if _, err := proxybench.Round(hc, urls, c.API, c.Size, 0); err != nil {
				b.Fatal(err)
			}
			got, failed := proxybench.Alternate(b, hc, urls, c.API, c.Size)
			b.StopTimer()
			hc.CloseIdleConnections()
			srv.Close()
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			if failed != nil {
				b.Fatal(failed)
			}
			proxybench.Report(b, got)
			if want := len(got[proxybench.Proxied]) + proxybench.Clients; p.Samples() != want {
				b.Fatalf("the proxy recorded %d requests; it carried %d", p.Samples(), want)
			}
		})
	}
}

// heapObjects is the bytes of live heap objects after two collections (runtime/metrics
// /memory/classes/heap/objects:bytes): the second frees what the first left in sync.Pool's
// victim caches (the proxy's 32 KiB copy buffers, net/http's), which a collection keeps one
// cycle and whose number follows how many streams were in flight a moment before, not what the
// proxy holds.
func heapObjects() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkProxyMemory sends 25,000 streamed requests (Chat Completions, 50 clients at once, each
// its own conversation of growing requests: a new user message each time, back to one message
// every 40 requests, which the grouper takes for a new conversation) through a recording proxy
// in front of a fake upstream that streams its 20 chunks without pause, and reports the live
// heap (heapObjects) once 1,000, 5,000, 15,000 and 25,000 are recorded (heap-1k-MiB, heap-5k-MiB,
// heap-15k-MiB, heap-25k-MiB), the ratios that say whether it stays flat over 10,000 requests
// (heap-ratio-15k/5k, heap-ratio-25k/15k; the target: at most 1.05 each), the heap added per
// request from 5,000 to 25,000 (heap-B/request-5k-25k), and how long Close took (close-ms: it
// writes the Parquet file from the journal). The flat figures start at 5,000: until then the
// grouper fills what it holds by design, every conversation used in the last idleRequests
// (2,048) requests, so after 1,000 requests it holds each client's first conversation of 21
// messages and from some 4,000 on its current one and the one before (40 messages); at 5,000,
// 15,000 and 25,000 every client is at the same turn of its conversation (21 messages), so the
// three hold the same work and differ only by what the requests between them left behind (of
// each dropped conversation, its counts and fingerprint: grouper.records, grouper.dropped).
// heap-ratio-5k/1k is that filling, reported, not judged. Run it with -benchtime 1x.
func BenchmarkProxyMemory(b *testing.B) {
	const clients = 50
	// The requests recorded at each heap reading.
	checkpoints := []int{1_000, 5_000, 15_000, 25_000}
	for b.Loop() {
		up := pacedUpstream(0, 0, 20)
		p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(b.TempDir(), "run_id=cap"), RunID: "cap"})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(p)
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
		send := func(from, to int) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failed error
			for k := range clients {
				wg.Go(func() {
					for i := from + k; i < to; i += clients {
						// Client k's conversation: turn n is its first n user messages.
						n := i/clients + 1
						var msgs []string
						for t := range n % 40 {
							msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"client %d turn %d: where is the lock taken?"}`, k, t))
						}
						msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"client %d request %d"}`, k, i))
						body := `{"model":"m","stream":true,"messages":[` + strings.Join(msgs, ",") + `]}`
						if _, err := stream(hc, srv.URL+"/v1/chat/completions", []byte(body)); err != nil {
							mu.Lock()
							failed = err
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			if failed != nil {
				b.Fatal(failed)
			}
			for p.Samples() < to {
				time.Sleep(time.Millisecond)
			}
		}
		heap := make([]uint64, len(checkpoints))
		from := 0
		for i, to := range checkpoints {
			send(from, to)
			heap[i], from = heapObjects(), to
		}
		srv.Close()
		up.Close()
		start := time.Now()
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
		closeTime := time.Since(start)
		mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
		for i, at := range checkpoints {
			b.ReportMetric(mib(heap[i]), fmt.Sprintf("heap-%dk-MiB", at/1000))
		}
		ratio := func(i int) float64 { return float64(heap[i]) / float64(heap[i-1]) }
		b.ReportMetric(ratio(1), "heap-ratio-5k/1k")
		b.ReportMetric(ratio(2), "heap-ratio-15k/5k")
		b.ReportMetric(ratio(3), "heap-ratio-25k/15k")
		b.ReportMetric((float64(heap[3])-float64(heap[1]))/float64(checkpoints[3]-checkpoints[1]), "heap-B/request-5k-25k")
		b.ReportMetric(float64(closeTime)/float64(time.Millisecond), "close-ms")
		verdict := map[bool]string{true: "met", false: "NOT met"}
		b.Logf("live heap after 1,000 proxied requests %.2f MiB (the grouper still filling), after 5,000 %.2f MiB, after 15,000 %.2f MiB, after 25,000 %.2f MiB: ratios over 10,000 requests %.3f and %.3f (target flat, at most 1.05 each: %s); Close took %s",
			mib(heap[0]), mib(heap[1]), mib(heap[2]), mib(heap[3]), ratio(2), ratio(3), verdict[ratio(2) <= 1.05 && ratio(3) <= 1.05], closeTime.Round(time.Millisecond))
	}
}
