package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"lab/chat"
	"lab/internal/replytest"
)

// sseChunk is one Chat Completions stream event carrying text of n bytes.
func sseChunk(n int) string {
	return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", strings.Repeat("x", n))
}

const chatEnd = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n"

// floods are answers far past a reply limit of 1 KiB, in each form the client reads: many small
// stream deltas (Chat Completions text, Responses function-call arguments), one huge stream line,
// one huge JSON answer to a streamed request, and an unstreamed answer.
var floods = []struct {
	name, ctype, head, chunk string
	count                    int
	tail                     string
	api                      string
	noStream                 bool
}{
	{"chat deltas", "text/event-stream", "", sseChunk(100), 200_000, chatEnd, "", false},
	{"responses argument deltas", "text/event-stream",
		"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"write\",\"call_id\":\"c\"}}\n\n",
		"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"" + strings.Repeat("a", 100) + "\"}\n\n", 200_000,
		"data: {\"type\":\"response.completed\",\"response\":{\"output\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}}\n\n", "responses", false},
	{"one huge stream line", "text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"}}]}\n\n" + chatEnd, "", false},
	{"one huge JSON answer to a stream", "application/json", "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"}}],\"usage\":{\"prompt_tokens\":1}}", "", false},
	{"one huge unstreamed answer", "application/json", "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"", strings.Repeat("x", 1000), 20_000, "\"}}],\"usage\":{\"prompt_tokens\":1}}", "", true},
}

// A reply past the request's limit fails with chat.ReplyTooLongError naming the limit, and the
// client stops reading: the server sees the connection go before it has written its 20 MB.
func TestReplyPastTheLimit(t *testing.T) {
	for _, tc := range floods {
		t.Run(tc.name, func(t *testing.T) {
			f := replytest.NewFlood(t, tc.ctype, tc.head, tc.chunk, tc.count, tc.tail)
			c := newClient(t, Options{Profile: "generic", BaseURL: f.Srv.URL, Model: "m", API: tc.api, NoStream: tc.noStream})
			req := session()
			req.MaxReplyBytes, req.Generate = 1024, 100
			_, err := c.Send(context.Background(), req, nil)
			f.CheckCutShort(t, err, 1024)
		})
	}
}

// benchSizes are the reply sizes of the reply benchmarks.
var benchSizes = []int{1_000_000, 10_000_000, 100_000_000}

// BenchmarkChatReplyBytes reads a Chat Completions stream of 100-byte deltas carrying 1, 10 and
// 100 MB of text (limit above it), reporting bytes allocated per reply byte and the peak heap.
func BenchmarkChatReplyBytes(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dMB", size/1_000_000), func(b *testing.B) {
			f := replytest.NewFlood(b, "text/event-stream", "", sseChunk(100), size/100, chatEnd)
			c := newClient(b, Options{Profile: "generic", BaseURL: f.Srv.URL, Model: "m"})
			benchSend(b, c, int64(size))
		})
	}
}

// BenchmarkResponsesReplyBytes reads a Responses stream of 100-byte output_text deltas.
func BenchmarkResponsesReplyBytes(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dMB", size/1_000_000), func(b *testing.B) {
			f := replytest.NewFlood(b, "text/event-stream",
				"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\"}}\n\n",
				"data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\""+strings.Repeat("x", 100)+"\"}\n\n", size/100,
				"data: {\"type\":\"response.completed\",\"response\":{\"output\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}}\n\n")
			c := newClient(b, Options{Profile: "generic", BaseURL: f.Srv.URL, Model: "m", API: "responses"})
			benchSend(b, c, int64(size))
		})
	}
}

func benchSend(b *testing.B, c *Client, size int64) {
	req := session()
	req.MaxReplyBytes, req.Generate = 2*size, 100
	replytest.BenchSend(b, size, func() (*chat.Result, error) { return c.Send(context.Background(), req, nil) })
}

// A Responses answer of many small deltas is put together in memory linear in its size: 1 MB
// of text and 1 MB of function-call arguments, each in 10,000 deltas of 100 bytes. Adding each
// delta to the part's string copied the part whole every time (about 5 GB allocated per part
// for this answer); the bound is 50 times the deltas' bytes.
func TestResponsesDeltasAllocateLinearly(t *testing.T) {
	const n = 10000
	chunk := strings.Repeat("x", 100)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var o output
	o.add(&responseEvent{Type: "response.output_item.added", OutputIndex: 0, Item: &responseItem{Type: "message"}})
	o.add(&responseEvent{Type: "response.output_item.added", OutputIndex: 1, Item: &responseItem{Type: "function_call", Name: "write"}})
	for range n {
		o.add(&responseEvent{Type: "response.output_text.delta", OutputIndex: 0, Delta: chunk})
		o.add(&responseEvent{Type: "response.function_call_arguments.delta", OutputIndex: 1, Delta: chunk})
	}
	r := o.reply(&chat.Result{})
	runtime.ReadMemStats(&after)
	if len(r.Content) != n*100 || len(r.ToolCalls) != 1 || len(r.ToolCalls[0].Arguments) != n*100 {
		t.Fatalf("reply of %d bytes of text and %d tool calls; want %d bytes and one call of %d", len(r.Content), len(r.ToolCalls), n*100, n*100)
	}
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(50*2*n*100); alloc > limit {
		t.Errorf("putting together %d bytes of deltas allocated %d bytes; want at most %d (linear)", 2*n*100, alloc, limit)
	}
}

// A Responses stream whose reply comes in whole items (response.output_item.done at ever new
// output indexes, no deltas) is stopped as soon as the items pass the reply limit, not read
// whole and refused only at its end.
func TestResponsesWholeItemsStopAtTheLimit(t *testing.T) {
	item := func(i int) string {
		return fmt.Sprintf("data: {\"type\":\"response.output_item.done\",\"output_index\":%d,\"item\":{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":%q}]}}\n\n", i, strings.Repeat("x", 900))
	}
	var b strings.Builder
	for i := range 20000 { // 18 MB of reply against a 1 KiB limit
		b.WriteString(item(i))
	}
	f := replytest.NewFlood(t, "text/event-stream", "", b.String(), 1,
		"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}}\n\n")
	c := newClient(t, Options{Profile: "generic", BaseURL: f.Srv.URL, Model: "m", API: "responses"})
	req := session()
	req.MaxReplyBytes, req.Generate = 1024, 100
	_, err := c.Send(context.Background(), req, nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) {
		t.Fatalf("err %v; want reply too long", err)
	}
	written, gone := f.Wait()
	if !gone || written >= f.Total() {
		t.Errorf("the server wrote %d of %d bytes (connection gone: %v); want the client to stop reading once the items pass the 1 KiB limit", written, f.Total(), gone)
	}
}

// A reply of exactly the limit is taken, one byte more refused, in each of the client's forms.
func TestReplyAtTheLimit(t *testing.T) {
	const limit = 1000
	forms := []struct {
		name, ctype, api string
		noStream         bool
		body             func(n int) string
	}{
		{"chat stream", "text/event-stream", "", false, func(n int) string {
			return sseChunk(n/2) + sseChunk(n-n/2) + chatEnd
		}},
		{"chat unstreamed", "application/json", "", true, func(n int) string {
			return fmt.Sprintf("{\"choices\":[{\"index\":0,\"message\":{\"content\":%q},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}", strings.Repeat("x", n))
		}},
		{"chat stream, tool call arguments", "text/event-stream", "", false, func(n int) string {
			args := strings.Repeat("a", n-len("read"))
			return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":%q}}]}}]}\n\n", args) + chatEnd
		}},
		{"chat stream, reasoning", "text/event-stream", "", false, func(n int) string {
			return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":%q}}]}\n\n", strings.Repeat("r", n)) + chatEnd
		}},
		{"responses stream", "text/event-stream", "responses", false, func(n int) string {
			return "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\"}}\n\n" +
				fmt.Sprintf("data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":%q}\n\n", strings.Repeat("x", n)) +
				"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}}\n\n"
		}},
	}
	for _, fm := range forms {
		for _, n := range []int{limit, limit + 1} {
			t.Run(fmt.Sprintf("%s/%d", fm.name, n), func(t *testing.T) {
				body := fm.body(n)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", fm.ctype)
					fmt.Fprint(w, body)
				}))
				defer srv.Close()
				c := newClient(t, Options{Profile: "generic", BaseURL: srv.URL, Model: "m", API: fm.api, NoStream: fm.noStream})
				req := session()
				req.MaxReplyBytes, req.Generate = limit, 100
				res, err := c.Send(context.Background(), req, nil)
				var ae *chat.APIError
				tooLong := errors.As(err, &ae) && strings.HasPrefix(ae.Body, chat.ReplyTooLong)
				if n <= limit && err != nil {
					t.Errorf("a reply of %d bytes with a limit of %d: %v; want it taken", n, limit, err)
				}
				if n > limit && !tooLong {
					t.Errorf("a reply of %d bytes with a limit of %d: err %v; want reply too long", n, limit, err)
				}
				if err == nil && res.Reply != nil {
					if got := chat.ReplySize(res.Reply); got != int64(n) {
						t.Errorf("reply size %d, want %d", got, n)
					}
				}
			})
		}
	}
}

// Chat Completions: tool-call fragments that each open a new call with no name and no
// arguments reach the limit at chat.PieceCost a call; the client stops reading.
func TestEmptyToolCallsReachTheLimit(t *testing.T) {
	var b strings.Builder
	for i := range 300_000 {
		fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d}]}}]}\n\n", i)
	}
	f := replytest.NewFlood(t, "text/event-stream", "", b.String(), 1, chatEnd)
	c := newClient(t, Options{Profile: "generic", BaseURL: f.Srv.URL, Model: "m"})
	req := session()
	req.MaxReplyBytes, req.Generate = 1024, 100
	var n int
	alloc, peak := replytest.Measure(func() any {
		res, err := c.Send(context.Background(), req, nil)
		if res != nil && res.Reply != nil {
			n = len(res.Reply.ToolCalls)
		}
		t.Logf("err %v", err)
		return res
	})
	written, gone := f.Wait()
	t.Logf("answer %d bytes, written %d (gone %v); %d tool calls in the reply; allocated %d MB, peak heap %d MB", f.Total(), written, gone, n, alloc>>20, peak>>20)
	if max := 1024/chat.PieceCost + 1; n > max {
		t.Errorf("%d tool calls held; want at most %d (1 KiB at chat.PieceCost a call)", n, max)
	}
	if !gone || written >= f.Total() {
		t.Errorf("with a 1 KiB limit the client read all %d bytes and the reply holds %d tool calls; want it stopped", f.Total(), n)
	}
}

// A Responses reasoning item's encrypted_content is kept in the reply (a Thinking block that
// chat.ReplySize counts), so it counts against the limit: a reply twice the limit is refused.
func TestResponsesEncryptedReasoningCounted(t *testing.T) {
	const limit = 1000
	body := fmt.Sprintf("data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"encrypted_content\":%q,\"summary\":[]}}\n\n", strings.Repeat("e", 2*limit)) +
		"data: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\"}]}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":5}}}\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	c := newClient(t, Options{Profile: "generic", BaseURL: srv.URL, Model: "m", API: "responses"})
	req := session()
	req.MaxReplyBytes, req.Generate = limit, 100
	res, err := c.Send(context.Background(), req, nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.Body, chat.ReplyTooLong) {
		size := int64(-1)
		if res != nil && res.Reply != nil {
			size = chat.ReplySize(res.Reply)
		}
		t.Errorf("a reply of %d bytes (chat.ReplySize) with a limit of %d: err %v; want reply too long", size, limit, err)
	}
}
