package capture

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bigChatBody is a Chat Completions request of about size bytes: one user message of that many
// letters.
func bigChatBody(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"m","stream":false,"messages":[{"role":"user","content":"`)
	b.WriteString(strings.Repeat("x", size))
	b.WriteString(`"}]}`)
	return b.Bytes()
}

// heapPeak samples the heap in use every millisecond until stop is called, which returns the
// highest figure seen, in bytes.
func heapPeak() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// sendConcurrently posts body n times at once through a new proxy in front of a loopback upstream
// that reads each request whole and answers a small chat.completion, and returns once every row
// is written. chunked sends the body without a Content-Length.
func sendConcurrently(tb testing.TB, body []byte, n int, chunked, save bool) {
	tb.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	p, err := New(Options{Upstream: up.URL, Dir: filepath.Join(tb.TempDir(), "run_id=cap"), RunID: "cap", SaveRequests: save})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rd io.Reader = bytes.NewReader(body)
			if chunked {
				rd = io.MultiReader(rd) // no length the client can see
			}
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", rd)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	for p.Samples() < n {
		time.Sleep(time.Millisecond)
	}
	if err := p.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkProxyConcurrentBodies sends 50 requests of 10 MB each at once through the proxy and
// reports the peak heap in use above the heap before them, per byte of the bodies in flight
// (peak-heap/body-byte: 1 is every body held once), and the process's peak resident set
// (maxrss-MiB, the test process's whole: meaningful for the first run, -benchtime=1x). The
// client's body is one shared 10 MB buffer. Sub-benchmarks: bodies with a Content-Length,
// chunked ones (no length declared), and with the requests saved (Options.SaveRequests).
func BenchmarkProxyConcurrentBodies(b *testing.B) {
	for _, tc := range []struct {
		name          string
		chunked, save bool
	}{{"content-length", false, false}, {"chunked", true, false}, {"save-requests", false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			const n, size = 50, 10 << 20
			body := bigChatBody(size)
			for b.Loop() {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				base := m.HeapInuse
				stop := heapPeak()
				sendConcurrently(b, body, n, tc.chunked, tc.save)
				peak := stop()
				b.ReportMetric(float64(peak-base)/float64(n*len(body)), "peak-heap/body-byte")
				b.ReportMetric(float64(peak-base)/(1<<20), "peak-heap-MiB")
			}
			var ru syscall.Rusage
			if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
				b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
			}
		})
	}
}
