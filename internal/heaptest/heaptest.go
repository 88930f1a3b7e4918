// Package heaptest samples the heap for the memory benchmarks: the peak of the bytes in use
// while a benchmark's loop runs, the figure a single reading before or after it misses.
package heaptest

import (
	"runtime"
	"time"
)

// SamplePeak starts sampling the heap in use (runtime.MemStats.HeapInuse, bytes: the live
// objects and the garbage not yet collected, in spans in use) every millisecond, and returns
// the func that stops it and gives the highest value it read (0 when it stopped before its first
// reading).
func SamplePeak() (stop func() (peak uint64)) {
	done, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var m runtime.MemStats
		var top uint64
		for {
			select {
			case <-done:
				peak <- top
				return
			case <-time.After(time.Millisecond):
				runtime.ReadMemStats(&m)
				top = max(top, m.HeapInuse)
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-peak
	}
}
