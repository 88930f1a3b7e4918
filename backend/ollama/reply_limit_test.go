package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"lab/chat"
	"lab/internal/replytest"
)

// line is one streamed /api/chat line carrying n bytes of content.
func line(n int) string {
	return fmt.Sprintf("{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":%q},\"done\":false}\n", strings.Repeat("x", n))
}

const doneLine = "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"prompt_eval_count\":100,\"eval_count\":1}\n"

// renderOnly answers Send's render request (`_debug_render_only`) and leaves the rest to the
// flood.
func renderOnly(w http.ResponseWriter, r *http.Request) bool {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var req api.ChatRequest
	if json.Unmarshal(b, &req) != nil || !req.DebugRenderOnly {
		return false
	}
	json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "done": true, "_debug_info": map[string]any{"rendered_template": "RENDERED"}})
	return true
}

// newClient is a Client of the server at baseURL for model "m", failing t when New fails.
func newClient(t testing.TB, baseURL string, opts ...Option) *Client {
	t.Helper()
	c, err := New(baseURL, "m", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func floodClient(t testing.TB, ctype, head, chunk string, count int, tail string) (*Client, *replytest.Flood) {
	f := replytest.NewFlood(t, ctype, head, chunk, count, tail)
	f.Route = renderOnly
	return newClient(t, f.Srv.URL), f
}

// A reply past the request's limit fails with chat.ReplyTooLongError naming the limit, and the
// client stops reading (the server sees the connection go before its 20 MB are written): many
// small lines, tool calls, one huge streamed line, one huge JSON answer.
func TestReplyPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, head, chunk string
		count                    int
		tail                     string
	}{
		{"content lines", "application/x-ndjson", "", line(100), 200_000, doneLine},
		{"tool-call lines", "application/x-ndjson", "",
			"{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"write\",\"arguments\":{\"text\":\"" + strings.Repeat("a", 100) + "\"}}}]},\"done\":false}\n", 150_000, doneLine},
		{"one huge line", "application/x-ndjson", "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"},\"done\":false}\n" + doneLine},
		{"one huge JSON answer", "application/json", "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"},\"done\":true,\"prompt_eval_count\":100}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f := floodClient(t, tc.ctype, tc.head, tc.chunk, tc.count, tc.tail)
			req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, MaxReplyBytes: 1024, Generate: 100}
			_, err := c.Send(context.Background(), req, nil)
			f.CheckCutShort(t, err, 1024)
		})
	}
}

// BenchmarkReplyBytes reads an /api/chat stream of 100-byte lines carrying 1, 10 and 100 MB of
// content (limit above it), reporting bytes allocated per reply byte and the peak heap.
func BenchmarkReplyBytes(b *testing.B) {
	for _, size := range []int{1_000_000, 10_000_000, 100_000_000} {
		b.Run(fmt.Sprintf("%dMB", size/1_000_000), func(b *testing.B) {
			c, _ := floodClient(b, "application/x-ndjson", "", line(100), size/100, doneLine)
			req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, MaxReplyBytes: 2 * int64(size), Generate: 100}
			replytest.BenchSend(b, int64(size), func() (*chat.Result, error) { return c.Send(context.Background(), req, nil) })
		})
	}
}

// Tool calls with no name and no arguments ("null", 4 bytes each) reach the reply limit at
// chat.PieceCost a call: with a 1 MiB limit the client stops within 4,096 calls, not after the
// 100,000 the answer holds (400 KB of bytes counted).
func TestEmptyToolCallsReachTheLimit(t *testing.T) {
	c, f := floodClient(t, "application/x-ndjson", "", "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"\"}}]},\"done\":false}\n", 100_000, doneLine)
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, MaxReplyBytes: 1 << 20, Generate: 100}
	res, err := c.Send(context.Background(), req, nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) {
		n := 0
		if res != nil && res.Reply != nil {
			n = len(res.Reply.ToolCalls)
		}
		t.Errorf("%d empty tool calls with a 1 MiB limit: err %.300v, %d calls in the reply; want reply too long", 100_000, err, n)
	}
	if written, gone := f.Wait(); !gone || written >= f.Total() {
		t.Errorf("the server wrote %d of %d bytes (connection gone: %v); want the client to stop reading", written, f.Total(), gone)
	}
}
