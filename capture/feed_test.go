package capture

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"lab/chat"
)

// countingParser takes events and keeps only their number and total size.
type countingParser struct{ events, bytes int }

func (c *countingParser) event(_ string, data []byte) (bool, error) {
	c.events++
	c.bytes += len(data)
	return true, nil
}
func (c *countingParser) whole([]byte) error   { return nil }
func (c *countingParser) end() error           { return nil }
func (c *countingParser) reply() *chat.Reply   { return &chat.Reply{} }
func (c *countingParser) result() *chat.Result { return &chat.Result{} }

// inChunks cuts s into chunks of size bytes, as the tee keeps an answer.
func inChunks(s string, size int) []chunk {
	var out []chunk
	at := time.Now()
	for len(s) > 0 {
		n := min(size, len(s))
		out = append(out, chunk{data: []byte(s[:n]), at: at})
		s = s[n:]
	}
	return out
}

// feedAlloc feeds a server-sent event stream, kept in chunks of size bytes, to a parser that
// keeps nothing, and returns the bytes feed allocated and the events it dispatched.
func feedAlloc(t *testing.T, stream string, size int) (alloc uint64, events int) {
	t.Helper()
	chunks := inChunks(stream, size)
	var p countingParser
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := feed(&p, framingSSE, chunks); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, p.events
}

// Splitting an answer into events costs memory linear in the answer: at most one and a half
// times the answer's size allocated for 20,000 events of 100-byte deltas (kept in 1 KiB chunks)
// and for one event of an 8 MiB delta (kept in 4 KiB chunks). Every line was copied into a line
// buffer grown by doubling, every data line copied again and joined into a third copy: 2 and 7
// times the answer.
func TestFeedAllocatesLinearly(t *testing.T) {
	var many strings.Builder
	delta := strings.Repeat("x", 100)
	for range 20000 {
		fmt.Fprintf(&many, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", delta)
	}
	huge := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("y", 8<<20) + "\"}}\n\n"
	for _, tc := range []struct {
		name   string
		stream string
		chunk  int
		events int
	}{{"many small deltas", many.String(), 1 << 10, 20000}, {"one huge delta", huge, 4 << 10, 1}} {
		alloc, events := feedAlloc(t, tc.stream, tc.chunk)
		if events != tc.events {
			t.Fatalf("%s: %d events; want %d", tc.name, events, tc.events)
		}
		if limit := uint64(len(tc.stream)) * 3 / 2; alloc > limit {
			t.Errorf("%s: splitting a %d-byte stream allocated %d bytes; want at most %d", tc.name, len(tc.stream), alloc, limit)
		}
		t.Logf("%s: %d bytes, %d allocated (%.2f per byte)", tc.name, len(tc.stream), alloc, float64(alloc)/float64(len(tc.stream)))
	}
}

// What the proxy keeps of an answer sent in tiny pieces is bounded too: 10,000 pieces of one
// byte are past a limit of 100,000 bytes (each piece costs its slice and time besides its byte),
// and what is kept stays within it. Counting only the bytes kept them all, some 50 times their
// size.
func TestAnswerInTinyPiecesIsBounded(t *testing.T) {
	ex := &exchange{maxReply: 100000}
	at := time.Now()
	for range 10000 {
		ex.add([]byte("x"), at)
	}
	if !ex.truncated {
		t.Errorf("10,000 pieces of 1 byte within a limit of %d: want it past the limit", ex.maxReply)
	}
	if got := len(ex.chunks) * (1 + pieceCost); int64(got) > ex.maxReply {
		t.Errorf("%d pieces kept, costing %d bytes; want at most %d", len(ex.chunks), got, ex.maxReply)
	}
}
