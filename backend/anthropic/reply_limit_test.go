package anthropic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"lab/chat"
	"lab/internal/replytest"
)

const (
	streamHead = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	streamTail = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// textDelta is one content_block_delta event of n bytes of text.
func textDelta(n int) string {
	return fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", strings.Repeat("x", n))
}

// A reply past the request's limit fails with chat.ReplyTooLongError naming the limit, and the
// client stops reading (the server sees the connection go before its 20 MB are written): many
// small deltas, tool input JSON deltas, one huge event line, and one huge JSON message.
func TestReplyPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, head, chunk string
		count                    int
		tail                     string
	}{
		{"text deltas", "text/event-stream", streamHead, textDelta(100), 150_000, streamTail},
		{"tool input deltas", "text/event-stream",
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"write\",\"input\":{}}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" + strings.Repeat("a", 100) + "\"}}\n\n", 150_000, streamTail},
		{"one huge event line", "text/event-stream", streamHead + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"", strings.Repeat("x", 1000), 20_000, "\"}}\n\n" + streamTail},
		{"one huge JSON message", "application/json", "{\"type\":\"message\",\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"", strings.Repeat("x", 1000), 20_000, "\"}],\"usage\":{\"input_tokens\":1}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := replytest.NewFlood(t, tc.ctype, tc.head, tc.chunk, tc.count, tc.tail)
			c := newClient(t, f.Srv.URL, Options{})
			req := testRequest()
			req.MaxReplyBytes, req.Generate = 1024, 100
			_, err := c.Send(context.Background(), req, nil)
			var ae *chat.APIError
			if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) || !strings.Contains(ae.Body, "1024 bytes") {
				t.Fatalf("Send of a %d-byte answer with a 1 KiB limit: %v; want the reply-too-long error naming 1024 bytes", f.Total(), err)
			}
			written, gone := f.Wait()
			if !gone || written >= f.Total() {
				t.Errorf("the server wrote %d of %d bytes (connection gone: %v); want the client to close the body early", written, f.Total(), gone)
			}
		})
	}
}

// BenchmarkReplyBytes reads a Messages stream of 100-byte text deltas carrying 1, 10 and 100 MB
// of text (limit above it), reporting bytes allocated per reply byte and the peak heap.
func BenchmarkReplyBytes(b *testing.B) {
	for _, size := range []int{1_000_000, 10_000_000, 100_000_000} {
		b.Run(fmt.Sprintf("%dMB", size/1_000_000), func(b *testing.B) {
			f := replytest.NewFlood(b, "text/event-stream", streamHead, textDelta(100), size/100, streamTail)
			c := newClient(b, f.Srv.URL, Options{})
			req := testRequest()
			req.MaxReplyBytes, req.Generate = 2*int64(size), 100
			for b.Loop() {
				var res *chat.Result
				alloc, peak := replytest.Measure(func() any {
					var err error
					if res, err = c.Send(context.Background(), req, nil); err != nil {
						b.Fatal(err)
					}
					return res
				})
				if got := len(res.Reply.Content); got != size {
					b.Fatalf("reply of %d bytes; want %d", got, size)
				}
				replytest.Report(b, int64(size), alloc, peak)
			}
		})
	}
}
