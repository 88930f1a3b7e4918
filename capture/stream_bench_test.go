package capture

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pacedUpstream is a fake model API on loopback that answers every POST with a streamed answer
// at a fixed pace: the first chunk after first, then one chunk every every, chunks in all, each
// flushed at once; then the usage chunk (or message_delta) and the end marker. The answer is
// OpenAI Chat Completions server-sent events for /v1/chat/completions, Anthropic Messages events
// for /v1/messages.
func pacedUpstream(first, every time.Duration, chunks int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	}))
}

// streamBody is a streamed request of client k in the API's format.
func streamBody(api string, k int) []byte {
	if api == "anthropic" {
		return fmt.Appendf(nil, `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"client %d: where is the lock taken?"}]}`, k)
	}
	return fmt.Appendf(nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"client %d: where is the lock taken?"}]}`, k)
}

// timing is one streamed answer as its client saw it: from sending the request to the first
// chunk that carried generated text (ttft) and to the end of the answer (total).
type timing struct{ ttft, total time.Duration }

// stream sends one streamed request and reads its answer line by line.
func stream(hc *http.Client, url string, body []byte) (timing, error) {
	start := time.Now()
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return timing{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return timing{}, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var t timing
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if t.ttft == 0 && (bytes.Contains(line, []byte(`"content":"tok`)) || bytes.Contains(line, []byte(`"text":"tok`))) {
			t.ttft = time.Since(start)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, err
		}
	}
	t.total = time.Since(start)
	if t.ttft == 0 {
		return t, fmt.Errorf("no content chunk")
	}
	return t, nil
}

// percentile is the p-th percentile (0 < p ≤ 100, nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

func meanOf(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds))
}

// BenchmarkProxyStreaming measures what lab proxy adds to a streamed answer: a fake upstream on
// loopback streams each answer at a fixed pace (the first chunk after 20 ms, then one every
// 5 ms, 20 chunks: pacedUpstream), and 50 clients at once each send, per iteration, one request
// straight to it, one through a recording proxy in front of it and one through a bare
// httputil.ReverseProxy (reading the request body whole and flushing every chunk, as the proxy
// does, with the proxy's default transport), in an order that rotates from
// client to client and round to round, so all three are measured under the same load. It
// reports the time to first token (to the first chunk with text) at the 50th and 99th
// percentile (ttft-p50-direct-ms, ttft-p99-proxied-ms, …), what the proxy adds to them
// (ttft-added-p50-ms, ttft-added-p99-ms; the target: at most 1 ms at p99) and to the mean total
// time (total-added-%; the target: under 1 %), and the same for the bare reverse proxy
// (ttft-bare-added-p99-ms, total-bare-added-%): the cost of one more hop on loopback, which the
// proxy cannot go below, on the machine as loaded as it is. Sub-benchmarks: OpenAI Chat
// Completions server-sent events, and Anthropic Messages. Run it with a fixed count
// (-benchtime 20x: 1,000 requests each way), on a machine as quiet as can be had.
func BenchmarkProxyStreaming(b *testing.B) {
	for _, api := range []struct{ name, path string }{{"openai", "/v1/chat/completions"}, {"anthropic", "/v1/messages"}} {
		b.Run(api.name, func(b *testing.B) {
			const clients = 50
			up := pacedUpstream(20*time.Millisecond, 5*time.Millisecond, 20)
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
			rp := httputil.NewSingleHostReverseProxy(u)
			rp.FlushInterval = -1
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = idleUpstreamConns // the proxy's own default transport
			rp.Transport = tr
			bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The request body read whole first, as the proxy reads it.
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				rp.ServeHTTP(w, r)
			}))
			defer bare.Close()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 3 * clients}}
			const direct, proxied, viaBare = 0, 1, 2
			urls := [3]string{up.URL + api.path, srv.URL + api.path, bare.URL + api.path}
			var mu sync.Mutex
			var got [3][]timing
			var failed error
			round := 0
			for b.Loop() {
				var wg sync.WaitGroup
				for k := range clients {
					wg.Go(func() {
						for j := range 3 {
							mode := (k + round + j) % 3
							t, err := stream(hc, urls[mode], streamBody(api.name, k))
							mu.Lock()
							if err != nil {
								failed = fmt.Errorf("%s (mode %d, round %d): %w", urls[mode], mode, round, err)
							} else {
								got[mode] = append(got[mode], t)
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				round++
			}
			b.StopTimer()
			srv.Close()
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			if failed != nil {
				b.Fatal(failed)
			}
			ttft := func(ts []timing) []time.Duration {
				out := make([]time.Duration, len(ts))
				for i, t := range ts {
					out[i] = t.ttft
				}
				return out
			}
			total := func(ts []timing) []time.Duration {
				out := make([]time.Duration, len(ts))
				for i, t := range ts {
					out[i] = t.total
				}
				return out
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			d50, d99 := percentile(ttft(got[direct]), 50), percentile(ttft(got[direct]), 99)
			p50, p99 := percentile(ttft(got[proxied]), 50), percentile(ttft(got[proxied]), 99)
			r99 := percentile(ttft(got[viaBare]), 99)
			added := 100 * (meanOf(total(got[proxied]))/meanOf(total(got[direct])) - 1)
			bareAdded := 100 * (meanOf(total(got[viaBare]))/meanOf(total(got[direct])) - 1)
			b.ReportMetric(ms(d50), "ttft-p50-direct-ms")
			b.ReportMetric(ms(p50), "ttft-p50-proxied-ms")
			b.ReportMetric(ms(d99), "ttft-p99-direct-ms")
			b.ReportMetric(ms(p99), "ttft-p99-proxied-ms")
			b.ReportMetric(ms(p50-d50), "ttft-added-p50-ms")
			b.ReportMetric(ms(p99-d99), "ttft-added-p99-ms")
			b.ReportMetric(meanOf(total(got[direct]))/float64(time.Millisecond), "total-direct-ms")
			b.ReportMetric(added, "total-added-%")
			b.ReportMetric(ms(r99-d99), "ttft-bare-added-p99-ms")
			b.ReportMetric(bareAdded, "total-bare-added-%")
			verdict := func(ok bool) string {
				if ok {
					return "met"
				}
				return "NOT met"
			}
			b.Logf("%d requests each way: time to first token added at p99 %.3f ms (target at most 1 ms: %s; a bare reverse proxy adds %.3f ms), total time added %.3f %% (target under 1 %%: %s; a bare reverse proxy adds %.3f %%)",
				len(got[direct]), ms(p99-d99), verdict(p99-d99 <= time.Millisecond), ms(r99-d99), added, verdict(added < 1), bareAdded)
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

// BenchmarkProxyMemory sends 20,000 streamed requests (Chat Completions, 50 clients at once, each
// its own conversation of growing requests: a new user message each time, back to one message
// every 40 requests, which the grouper takes for a new conversation) through a recording proxy
// in front of a fake upstream that streams its 20 chunks without pause, and reports the live
// heap once the first 1,000 are recorded, once 10,000 are and once all 20,000 are (heap-1k-MiB,
// heap-10k-MiB, heap-20k-MiB, heapObjects) and the ratios that say whether it stays
// flat (heap-ratio-10k/1k, heap-ratio-20k/10k; the target: at most 1.05 each), the heap added
// per request from 10,000 to 20,000 (heap-B/request-10k-20k), and how long Close took
// (close-ms: it writes the Parquet file from the journal). Between 1,000 and 10,000 the
// clients' conversations grow from 20 messages to 39 (their length is the request number
// modulo 40), whose keys and parts the proxy holds while they go on; at 10,000 and 20,000 they
// are at the same length. Run it with -benchtime 1x.
func BenchmarkProxyMemory(b *testing.B) {
	const clients, early, mid, total = 50, 1_000, 10_000, 20_000
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
		send(0, early)
		at1k := heapObjects()
		send(early, mid)
		at10k := heapObjects()
		send(mid, total)
		at20k := heapObjects()
		srv.Close()
		up.Close()
		start := time.Now()
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
		closeTime := time.Since(start)
		mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
		r10, r20 := float64(at10k)/float64(at1k), float64(at20k)/float64(at10k)
		b.ReportMetric(mib(at1k), "heap-1k-MiB")
		b.ReportMetric(mib(at10k), "heap-10k-MiB")
		b.ReportMetric(mib(at20k), "heap-20k-MiB")
		b.ReportMetric(r10, "heap-ratio-10k/1k")
		b.ReportMetric(r20, "heap-ratio-20k/10k")
		b.ReportMetric((float64(at20k)-float64(at10k))/(total-mid), "heap-B/request-10k-20k")
		b.ReportMetric(float64(closeTime)/float64(time.Millisecond), "close-ms")
		verdict := map[bool]string{true: "met", false: "NOT met"}
		b.Logf("live heap after %d proxied requests %.2f MiB, after %d %.2f MiB, after %d %.2f MiB: ratios %.3f and %.3f (target flat, at most 1.05 each: %s); Close took %s",
			early, mib(at1k), mid, mib(at10k), total, mib(at20k), r10, r20, verdict[r10 <= 1.05 && r20 <= 1.05], closeTime.Round(time.Millisecond))
	}
}
