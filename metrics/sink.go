package metrics

import (
	"errors"
	"sync"
)

// ErrClosed is returned by Write on a sink that was closed.
var ErrClosed = errors.New("metrics: sink closed")

// errNilSample is returned by Write when given a nil sample.
var errNilSample = errors.New("metrics: nil sample")

// Sink receives samples as they are measured.
//
// Write stores one sample; the sink copies it, so the caller may reuse the value. Close flushes
// what is buffered and must be called once the run ends, on every path (errors and interrupts
// included); its error must be checked, because a Parquet file gets its footer on Close.
type Sink interface {
	Write(*Sample) error
	Close() error
}

// MemorySink is a [Sink] that keeps samples in memory, for tests and for building the report at
// the end of a run. Its zero value is ready to use. It is safe for concurrent use.
type MemorySink struct {
	mu      sync.Mutex
	samples []Sample
	closed  bool
}

// Write appends a copy of s (pointer fields included). It returns [ErrClosed] after Close and
// an error for a nil s.
func (m *MemorySink) Write(s *Sample) error {
	if s == nil {
		return errNilSample
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.samples = append(m.samples, cloneSample(s))
	return nil
}

// Close marks the sink closed; later Writes fail with [ErrClosed]. The samples stay readable.
// Close always returns nil.
func (m *MemorySink) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// Samples returns a copy of the samples written so far, in the order they were written.
func (m *MemorySink) Samples() []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Sample, len(m.samples))
	for i := range m.samples {
		out[i] = cloneSample(&m.samples[i])
	}
	return out
}

// Len returns the number of samples written so far.
func (m *MemorySink) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.samples)
}

// cloneSample returns a copy of s that shares no memory with it.
func cloneSample(s *Sample) Sample {
	c := *s
	c.CachedTokens = clonePtr(s.CachedTokens)
	c.CacheWriteTokens = clonePtr(s.CacheWriteTokens)
	c.DivergenceToken = clonePtr(s.DivergenceToken)
	c.CostUSD = clonePtr(s.CostUSD)
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
