package llamacpp

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/backend/openai"
	"lab/chat"
	"lab/internal/wire"
)

// The run (readStream, fill) and `lab proxy` (openai.ChatCapture, which reads a llama-server
// Chat Completions answer another client received) read the same figures from the same bytes:
// the prompt, cached and completion tokens, the prefill time and the usage with the wire field
// of each count (llama-server's timings first), and say the same of whether the stream was
// whole. Prefill progress chunks are skipped by both.
func TestFiguresAsTheProxyReadsThem(t *testing.T) {
	progress := `data: {"choices":[],"object":"chat.completion.chunk","prompt_progress":{"total":512,"cache":0,"processed":256,"time_ms":10}}` + "\n\n"
	streams := map[string][]byte{
		"timings and usage disagree": []byte(`data: {"choices":[{"index":0,"delta":{"content":"o"}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n" +
			`data: {"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":250}},"timings":{"cache_n":299,"prompt_n":1,"prompt_ms":2.5,"predicted_n":1}}` + "\n\n" +
			"data: [DONE]\n\n"),
		"prefill progress, then no answer": []byte(progress + "data: [DONE]\n\n"),
		"prefill progress first": []byte(progress + `data: {"choices":[{"index":0,"delta":{"content":"o"}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":512,"completion_tokens":1},"timings":{"cache_n":0,"prompt_n":512,"prompt_ms":20}}` + "\n\n" +
			"data: [DONE]\n\n"),
	}
	files, _ := filepath.Glob("testdata/*.sse")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		streams[f] = b
	}
	for name, b := range streams {
		comp, err := readStream(bytes.NewReader(b), func() {})
		var cc openai.ChatCapture
		_, rerr := wire.ReadEvents(bufio.NewReader(bytes.NewReader(b)), 1<<20, func(ev string, data []byte) error {
			if ev == "error" { // as capture's chat parser takes llama-server's older error line
				return &chat.APIError{Body: string(data)}
			}
			_, err := cc.Chunk(data)
			return err
		})
		if rerr == nil {
			rerr = cc.End()
		}
		if (rerr == nil) != (err == nil) {
			t.Errorf("%s: the run's error %v, the proxy's %v; want both or neither", name, err, rerr)
		}
		if err != nil {
			continue // an error in the stream, or a cut one: no figures
		}
		run := &chat.Result{}
		fill(run, comp)
		proxy := cc.Result()
		figures := func(r *chat.Result) any {
			return []any{r.PromptTokens, r.CachedTokens, r.CachedSource, r.CompletionTokens, r.Prefill, r.Usage}
		}
		if diff := cmp.Diff(figures(proxy), figures(run)); diff != "" {
			t.Errorf("%s: figures (-proxy +run):\n%s", name, diff)
		}
	}
}
