package capture

import (
	"bytes"
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
// byte that arrive together are kept in a few buffers (coalesceBytes each), not a slice and a
// time per piece, some 50 times their size; and they are within a limit of 100,000 bytes, which
// counts bytes only.
func TestAnswerInTinyPiecesIsBounded(t *testing.T) {
	ex := &exchange{maxReply: 100000}
	at := time.Now()
	for range 10000 {
		ex.add([]byte("x"), at)
	}
	if ex.truncated {
		t.Errorf("10,000 pieces of 1 byte within a limit of %d: past the limit", ex.maxReply)
	}
	if max := 10000/coalesceBytes + 1; len(ex.chunks) > max {
		t.Errorf("10,000 pieces of 1 byte that arrived together kept in %d chunks; want at most %d", len(ex.chunks), max)
	}
	if n := len(joinChunks(ex.chunks)); n != 10000 {
		t.Errorf("%d bytes kept; want 10000", n)
	}
}

// Whether an answer is within the reply limit does not depend on how the upstream split its
// writes: the same bytes in one piece or in 10-byte pieces are kept, or refused, alike; and
// pieces further apart than coalesceWindow keep their own arrival times (the time to first
// token is read from them).
func TestReplyLimitIgnoresHowTheAnswerWasSplit(t *testing.T) {
	answer := []byte(strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"some words \"}}]}\n\n", 20))
	for _, limit := range []int64{int64(len(answer)) - 1, int64(len(answer)), 4096} {
		whole := &exchange{maxReply: limit}
		whole.add(answer, time.Now())
		split := &exchange{maxReply: limit}
		at := time.Now()
		for i := 0; i < len(answer); i += 10 {
			split.add(answer[i:min(i+10, len(answer))], at.Add(time.Duration(i)*time.Millisecond))
		}
		if whole.truncated != split.truncated || !bytes.Equal(joinChunks(whole.chunks), joinChunks(split.chunks)) {
			t.Errorf("a %d-byte answer, limit %d: in one piece truncated %v (%d bytes kept), in 10-byte pieces truncated %v (%d kept); want the same", len(answer), limit, whole.truncated, len(joinChunks(whole.chunks)), split.truncated, len(joinChunks(split.chunks)))
		}
		if want := int64(len(answer)) > limit; whole.truncated != want {
			t.Errorf("a %d-byte answer, limit %d: truncated %v; want %v", len(answer), limit, whole.truncated, want)
		}
		if want := min(int64(len(answer)), limit); int64(len(joinChunks(split.chunks))) != want {
			t.Errorf("limit %d: %d bytes kept; want %d", limit, len(joinChunks(split.chunks)), want)
		}
		if !split.truncated && len(split.chunks) != (len(answer)+9)/10 {
			t.Errorf("%d pieces 10 ms apart kept in %d chunks; want one each (their own arrival times)", (len(answer)+9)/10, len(split.chunks))
		}
	}
}
