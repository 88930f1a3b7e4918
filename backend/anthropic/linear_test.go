package anthropic

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// manyDeltas is a Messages stream whose one text block and one thinking block come in n deltas
// of 100 bytes each.
func manyDeltas(n int) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	chunk := strings.Repeat("x", 100)
	for range n {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":%q}}\n\n", chunk)
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", chunk)
	}
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// A long answer of many small deltas is assembled in memory linear in its size: 2 MB of text and
// thinking in 10,000 deltas each of 100 bytes. Adding each delta to a string copied the block
// whole every time: about 10 GB allocated for this answer (n²·100/2 bytes per block); the bound
// below is 50 times the stream's size.
func TestManyDeltasAllocateLinearly(t *testing.T) {
	const n = 10000
	body := manyDeltas(n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var acc accumulator
	if err := readEvents(strings.NewReader(body), acc.add); err != nil {
		t.Fatal(err)
	}
	r := acc.response()
	runtime.ReadMemStats(&after)
	if got, want := len(r.Message.Content), n*100; got != want {
		t.Fatalf("text of %d bytes; want %d", got, want)
	}
	if len(r.Message.Thinking) != 1 || len(r.Message.Thinking[0].Text) != n*100 {
		t.Fatalf("thinking blocks %d; want one of %d bytes", len(r.Message.Thinking), n*100)
	}
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(50*len(body)); alloc > limit {
		t.Errorf("assembling a %d-byte stream allocated %d bytes; want at most %d (linear)", len(body), alloc, limit)
	}
}

// BenchmarkManyDeltas assembles a 1 MB answer of 100-byte deltas.
func BenchmarkManyDeltas(b *testing.B) {
	body := manyDeltas(5000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var acc accumulator
		if err := readEvents(strings.NewReader(body), acc.add); err != nil {
			b.Fatal(err)
		}
		_ = acc.response()
	}
}
