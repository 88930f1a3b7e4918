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

// llama-server's stream is read as the OpenAI backend reads a Chat Completions stream: the same
// message comes out of the same bytes, tool call fragments joined by the same rules (a name
// repeated in a later fragment is not doubled; a call cut inside its arguments is dropped).
func TestStreamDecodedAsOpenAI(t *testing.T) {
	streams := map[string][]byte{
		"repeated name": []byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read","arguments":""}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}` + "\n\n" +
			"data: [DONE]\n\n"),
		"cut in arguments": []byte(`data: {"choices":[{"index":0,"delta":{"content":"ok","tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{\"pa"}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}` + "\n\n" +
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
		if err != nil {
			continue // an error stream: nothing to compare
		}
		var res chat.Result
		got := liveReply(comp, &res)

		var cc openai.ChatCapture
		_, err = wire.ReadEvents(bufio.NewReader(bytes.NewReader(b)), 1<<20, func(ev string, data []byte) error {
			_, err := cc.Chunk(data)
			return err
		})
		if err != nil {
			t.Fatalf("%s: the OpenAI decoding: %v", name, err)
		}
		var wantRes chat.Result
		want := cc.ReplyTo(&wantRes)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: reply (-openai +llamacpp):\n%s", name, diff)
		}
		if len(res.Warnings) != len(wantRes.Warnings) {
			t.Errorf("%s: warnings %q; want %q", name, res.Warnings, wantRes.Warnings)
		}
	}
}
