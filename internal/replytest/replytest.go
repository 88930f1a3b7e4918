// Package replytest serves answers of any size to the backends' tests and benchmarks: a
// loopback HTTP server that streams a head, one chunk repeated, then a tail, and counts what it
// managed to write, so a test can tell that a client stopped reading (closed the body) early.
package replytest

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Flood is a loopback server answering every request with Head, then Chunk written Count
// times, then Tail, as Content-Type ContentType, flushing as it goes. It allocates nothing per
// chunk, so a benchmark's allocation figures are the client's.
type Flood struct {
	Srv *httptest.Server
	// ContentType, Head, Chunk, Count and Tail are the answer.
	ContentType string
	Head, Chunk []byte
	Count       int
	Tail        []byte
	// Route, when set, sees each request first and answers it itself when it returns true
	// (an Ollama render-only request, say); the flood's counts leave it out.
	Route func(w http.ResponseWriter, r *http.Request) bool

	written atomic.Int64
	gone    atomic.Bool
	done    sync.WaitGroup
}

// NewFlood starts a Flood, closed when the test ends.
func NewFlood(tb testing.TB, contentType, head, chunk string, count int, tail string) *Flood {
	tb.Helper()
	f := &Flood{ContentType: contentType, Head: []byte(head), Chunk: []byte(chunk), Count: count, Tail: []byte(tail)}
	f.Srv = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Srv.Close)
	return f
}

func (f *Flood) serve(w http.ResponseWriter, r *http.Request) {
	if f.Route != nil && f.Route(w, r) {
		return
	}
	f.done.Add(1)
	defer f.done.Done()
	_, _ = r.Body.Read(make([]byte, 1))
	w.Header().Set("Content-Type", f.ContentType)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	write := func(b []byte) bool {
		n, err := w.Write(b)
		f.written.Add(int64(n))
		if err != nil {
			f.gone.Store(true)
			return false
		}
		return true
	}
	if !write(f.Head) {
		return
	}
	for i := range f.Count {
		if !write(f.Chunk) {
			return
		}
		if i%64 == 0 && fl != nil {
			fl.Flush()
		}
	}
	write(f.Tail)
}

// Total is the size of the whole answer, in bytes.
func (f *Flood) Total() int64 {
	return int64(len(f.Head)) + int64(len(f.Chunk))*int64(f.Count) + int64(len(f.Tail))
}

// Wait waits for the answers being written to end and returns the bytes written (all answers
// together) and whether a write failed because the client went away.
func (f *Flood) Wait() (written int64, gone bool) {
	f.done.Wait()
	return f.written.Load(), f.gone.Load()
}

// Reset zeroes the counts.
func (f *Flood) Reset() { f.written.Store(0); f.gone.Store(false) }

// Measure runs read once and returns the bytes the process allocated during it
// (runtime.MemStats TotalAlloc) and the peak of the heap's live and not yet swept objects
// while it ran, above the heap before it (runtime/metrics /memory/classes/heap/objects:bytes,
// sampled every millisecond: a close lower bound of the peak). read's result is kept alive to
// the end, as a caller would keep the reply.
func Measure(read func() any) (allocated, peak uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var top atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > top.Load() {
				top.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	v := read()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	p := top.Load()
	if p < base {
		p = base
	}
	return after.TotalAlloc - before.TotalAlloc, p - base
}

// Report reports a benchmark's figures for one answer of replyBytes bytes of reply:
// allocated-B/reply-B and peak-heap-MB from [Measure].
func Report(b *testing.B, replyBytes int64, allocated, peak uint64) {
	b.ReportMetric(float64(allocated)/float64(replyBytes), "alloc-B/reply-B")
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}
