package capture

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// streamedExchange is a recorded Chat Completions exchange of client k's request n: a request
// of n user messages and an answer of 20 content chunks, the usage chunk and [DONE], as
// pacedUpstream streams it, each chunk as it arrived.
func streamedExchange(k, n int) *exchange {
	var msgs []string
	for t := range n {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"client %d turn %d: where is the lock taken?"}`, k, t))
	}
	body := []byte(`{"model":"m","stream":true,"messages":[` + strings.Join(msgs, ",") + `]}`)
	ex := &exchange{api: APIOpenAIChat, body: body, maxReply: 16 << 20, status: http.StatusOK, ctype: "text/event-stream", eof: true}
	ex.start = time.Unix(1_800_000_000, 0)
	at := ex.start.Add(20 * time.Millisecond)
	for i := range 20 {
		ex.chunks = append(ex.chunks, chunk{data: fmt.Appendf(nil, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i), at: at})
		at = at.Add(5 * time.Millisecond)
	}
	ex.chunks = append(ex.chunks, chunk{data: []byte("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":20}}\n\ndata: [DONE]\n\n"), at: at})
	ex.end = at
	return ex
}

// BenchmarkRecorderProcess measures the recorder's work for one streamed Chat Completions
// answer of 20 chunks (ns/op, B/op, allocs/op): the request decoded, the answer parsed, the
// request grouped into its conversation (50 conversations of 1 to 40 user messages, the
// load of BenchmarkProxyMemory) and the row written to the capture's journal. It is the CPU the
// recorder takes from the streams per request.
func BenchmarkRecorderProcess(b *testing.B) {
	u, _ := url.Parse("http://127.0.0.1:1")
	opts := Options{Upstream: u.String(), Dir: filepath.Join(b.TempDir(), "run_id=cap"), RunID: "cap", Label: DefaultLabel,
		MaxRequestBytes: DefaultMaxRequestBytes, MaxReplyBytes: 16 << 20, Now: time.Now}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		b.Fatal(err)
	}
	r, err := newRecorder(opts, u, http.DefaultTransport)
	if err != nil {
		b.Fatal(err)
	}
	defer r.close(true)
	const clients = 50
	exs := make([]*exchange, 0, clients*40)
	for n := 1; n <= 40; n++ {
		for k := range clients {
			exs = append(exs, streamedExchange(k, n))
		}
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		r.process(exs[i%len(exs)]) // an exchange is read, not changed: the same request again
		i++
	}
}
