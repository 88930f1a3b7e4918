package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
			f.CheckCutShort(t, err, 1024)
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
			replytest.BenchSend(b, int64(size), func() (*chat.Result, error) { return c.Send(context.Background(), req, nil) })
		})
	}
}

// A reply of exactly the limit is taken, one byte more refused: text, and a tool call whose
// input comes in input_json_delta events (its content_block_start carries "input": {}, as the
// API sends it).
func TestReplyAtTheLimit(t *testing.T) {
	const limit = 1000
	msgStart := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
	forms := map[string]func(n int) string{
		"text": func(n int) string { return streamHead + textDelta(n) + streamTail },
		"tool input": func(n int) string {
			args := `{"p":"` + strings.Repeat("a", n-len("write")-len(`{"p":""}`)) + `"}`
			return msgStart +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"write\",\"input\":{}}}\n\n" +
				fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%q}}\n\n", args) + streamTail
		},
	}
	for name, body := range forms {
		for _, n := range []int{limit, limit + 1} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				b := body(n)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, b)
				}))
				defer srv.Close()
				c := newClient(t, srv.URL, Options{})
				req := testRequest()
				req.MaxReplyBytes, req.Generate = limit, 100
				res, err := c.Send(context.Background(), req, nil)
				var ae *chat.APIError
				tooLong := errors.As(err, &ae) && strings.HasPrefix(ae.Body, chat.ReplyTooLong)
				size := int64(-1)
				if err == nil && res.Reply != nil {
					size = chat.ReplySize(res.Reply)
				}
				if n <= limit && err != nil {
					t.Errorf("a reply of %d bytes, limit %d: %v; want it taken", n, limit, err)
				}
				if n > limit && !tooLong {
					t.Errorf("a reply of %d bytes, limit %d: err %v (size %d); want reply too long", n, limit, err, size)
				}
				if err == nil && size != int64(n) {
					t.Errorf("reply size %d; want %d", size, n)
				}
			})
		}
	}
}

// content_block_start events, each a new block with nothing in it, reach the limit at
// chat.PieceCost a block: the client stops reading instead of holding a block per event.
func TestEmptyBlocksReachTheLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", i)
	}
	f := replytest.NewFlood(t, "text/event-stream", "", b.String(), 1, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	c := newClient(t, f.Srv.URL, Options{})
	req := testRequest()
	req.MaxReplyBytes, req.Generate = 1024, 100
	var err error
	alloc, peak := replytest.Measure(func() any {
		var res *chat.Result
		res, err = c.Send(context.Background(), req, nil)
		return res
	})
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) {
		t.Errorf("err %v; want reply too long", err)
	}
	written, gone := f.Wait()
	t.Logf("answer %d bytes, written %d (gone %v); allocated %d MB, peak heap %d MB", f.Total(), written, gone, alloc>>20, peak>>20)
	if !gone || written >= f.Total() {
		t.Errorf("with a 1 KiB limit the client read all %d bytes; want it stopped", f.Total())
	}
}
