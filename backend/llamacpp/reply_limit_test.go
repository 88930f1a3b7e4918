package llamacpp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"lab/chat"
	"lab/internal/replytest"
)

// sseChunk is one chat completion stream chunk carrying n bytes of content.
func sseChunk(n int) string {
	return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", strings.Repeat("x", n))
}

const streamEnd = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n"

// get asks f for its answer.
func get(t testing.TB, f *replytest.Flood) *http.Response {
	t.Helper()
	resp, err := http.Post(f.Srv.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A reply past the limit fails with chat.ReplyTooLongError naming the limit, and the reader
// stops reading: once Send closes the body, the server sees the connection go before its 20 MB
// are written. Many small deltas, tool-call argument deltas, one huge line and one huge JSON
// answer.
func TestReplyPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, head, chunk string
		count                    int
		tail                     string
	}{
		{"content deltas", "text/event-stream", "", sseChunk(100), 200_000, streamEnd},
		{"tool-call argument deltas", "text/event-stream",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]}}]}\n\n",
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"" + strings.Repeat("a", 100) + "\"}}]}}]}\n\n", 150_000, streamEnd},
		{"one huge line", "text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"}}]}\n\n" + streamEnd},
		{"one huge JSON answer", "application/json", "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"}}],\"usage\":{\"prompt_tokens\":1}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := replytest.NewFlood(t, tc.ctype, tc.head, tc.chunk, tc.count, tc.tail)
			resp := get(t, f)
			_, err := readCompletionMax(resp, 1024, func() {})
			resp.Body.Close() // as Send does
			var ae *chat.APIError
			if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) || !strings.Contains(ae.Body, "1024 bytes") {
				t.Fatalf("reading a %d-byte answer with a 1 KiB limit: %v; want the reply-too-long error naming 1024 bytes", f.Total(), err)
			}
			written, gone := f.Wait()
			if !gone || written >= f.Total() {
				t.Errorf("the server wrote %d of %d bytes (connection gone: %v); want the reader to stop early", written, f.Total(), gone)
			}
		})
	}
}

// BenchmarkReplyBytes reads a chat completion stream of 100-byte deltas carrying 1, 10 and 100
// MB of content (limit above it), reporting bytes allocated per reply byte and the peak heap.
func BenchmarkReplyBytes(b *testing.B) {
	for _, size := range []int{1_000_000, 10_000_000, 100_000_000} {
		b.Run(fmt.Sprintf("%dMB", size/1_000_000), func(b *testing.B) {
			f := replytest.NewFlood(b, "text/event-stream", "", sseChunk(100), size/100, streamEnd)
			for b.Loop() {
				var c *completion
				alloc, peak := replytest.Measure(func() any {
					resp := get(b, f)
					defer resp.Body.Close()
					var err error
					if c, err = readCompletionMax(resp, 2*int64(size), func() {}); err != nil {
						b.Fatal(err)
					}
					return c
				})
				if len(c.Content) != size {
					b.Fatalf("reply of %d bytes; want %d", len(c.Content), size)
				}
				replytest.Report(b, int64(size), alloc, peak)
			}
		})
	}
}

// A stream of tool-call fragments that each open a new call (a new index) with no name and no
// arguments reaches the reply limit at chat.PieceCost a call: the reader stops long before the
// answer's end instead of holding one call per fragment.
func TestEmptyToolCallsReachTheLimit(t *testing.T) {
	var b strings.Builder
	for i := range 300_000 {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d}]}}]}\n\n", i)
	}
	f := replytest.NewFlood(t, "text/event-stream", "", b.String(), 1, streamEnd)
	var n int
	var err error
	alloc, peak := replytest.Measure(func() any {
		resp := get(t, f)
		defer resp.Body.Close()
		var c *completion
		c, err = readCompletionMax(resp, 1024, func() {})
		if c != nil {
			n = len(c.ToolCalls)
		}
		return c
	})
	written, gone := f.Wait()
	t.Logf("answer %d bytes, written %d (gone %v); %d tool calls held; allocated %d MB, peak heap %d MB", f.Total(), written, gone, n, alloc>>20, peak>>20)
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) {
		t.Errorf("err %v; want reply too long", err)
	}
	if !gone || written >= f.Total() {
		t.Errorf("with a 1 KiB limit the reader read all %d bytes of the answer and holds %d tool calls; want it stopped", f.Total(), n)
	}
	if max := 1024/chat.PieceCost + 1; n > max {
		t.Errorf("%d tool calls held; want at most %d (1 KiB at chat.PieceCost a call)", n, max)
	}
}
