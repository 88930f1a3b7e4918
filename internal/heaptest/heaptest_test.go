package heaptest

import (
	"runtime"
	"testing"
	"time"
)

var keep []byte

// The peak includes a block held only while the sampler runs, freed before it stops.
func TestSamplePeakSeesABlockFreedBeforeTheEnd(t *testing.T) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := SamplePeak()
	keep = make([]byte, 64<<20)
	for i := range keep {
		keep[i] = 1
	}
	time.Sleep(20 * time.Millisecond)
	keep = nil
	runtime.GC()
	peak := stop()
	if peak < before.HeapInuse+60<<20 {
		t.Errorf("peak %d bytes; want at least the %d in use before plus the 64 MiB block", peak, before.HeapInuse)
	}
}
