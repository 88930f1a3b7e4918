package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"lab/chat"
)

var update = flag.Bool("update", false, "rewrite testdata/request_bodies.golden")

// The exact request each configuration sends, path, the headers the lab sets and the body byte
// for byte, pinned in testdata/request_bodies.golden. The golden was written by the client as
// it was when go-openai built the request and the lab rewrote its body: building the body
// directly changed no byte. Run with -update to rewrite it after a deliberate change.
func TestRequestBodiesPinned(t *testing.T) {
	think := session()
	think.Think = true
	live := liveRequest(64)
	html := session()
	html.Messages[1].Content = `fix <b>&</b> "quoted" \ é`
	cases := []struct {
		name string
		opts Options
		req  *chat.Request
		resp step
	}{
		{"chat stream generic", Options{}, session(), step{file: "chat_stream.sse", sse: true}},
		{"chat stream html", Options{}, html, step{file: "chat_stream.sse", sse: true}},
		{"chat nostream", Options{NoStream: true}, session(), step{file: "chat_response.json"}},
		{"chat live seed", Options{Temperature: temp(0.25)}, live, step{file: "chat_stream.sse", sse: true}},
		{"chat openai cache key", Options{Profile: "openai", Getenv: env("OPENAI_API_KEY", "sk-test-0123456789"), PromptCacheKey: "sess-1"}, live, step{file: "chat_stream.sse", sse: true}},
		{"chat deepseek", Options{Profile: "deepseek", Getenv: env("DEEPSEEK_API_KEY", "k-1")}, session(), step{file: "deepseek_stream.sse", sse: true}},
		{"chat openrouter headers", Options{Profile: "openrouter", Getenv: env("OPENROUTER_API_KEY", "k"), Headers: map[string]string{"HTTP-Referer": "https://example.invalid/lab"}}, session(), step{file: "chat_stream.sse", sse: true}},
		{"chat extra", Options{Profile: "vllm", Extra: map[string]json.RawMessage{
			"chat_template_kwargs": json.RawMessage(`{"enable_thinking":true}`), "max_tokens": json.RawMessage(`9`), "stream": json.RawMessage(`true`), "zz": json.RawMessage(`[1]`)}},
			session(), step{file: "chat_stream.sse", sse: true}},
		{"responses", Options{API: APIResponses}, session(), step{file: "responses_stream.sse", sse: true}},
		{"responses think live", Options{API: APIResponses, Profile: "openai", Getenv: env("OPENAI_API_KEY", "sk-test-0123456789"), PromptCacheKey: "p"}, func() *chat.Request { r := liveRequest(40); r.Think = true; return r }(), step{file: "responses_stream.sse", sse: true}},
		{"responses think extra", Options{API: APIResponses, Extra: map[string]json.RawMessage{"model": json.RawMessage(`"other"`), "store": json.RawMessage(`true`)}}, think, step{file: "responses_stream.sse", sse: true}},
	}
	var out bytes.Buffer
	for _, tc := range cases {
		r := newReplay(t, tc.resp)
		o := tc.opts
		if o.BaseURL == "" {
			o.BaseURL = r.srv.URL + "/v1"
		}
		if o.Model == "" {
			o.Model = "qwen3-8b"
		}
		c := newClient(t, o)
		res, err := c.Send(context.Background(), tc.req, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := r.request(0)
		if !bytes.Equal(res.Body, got.body) || res.RequestBytes != int64(len(got.body)) {
			t.Errorf("%s: Result.Body is not the body sent", tc.name)
		}
		fmt.Fprintf(&out, "== %s\nPOST %s\n", tc.name, got.path)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range got.header {
				if !yield(k) {
					return
				}
			}
		}) {
			switch k {
			case "User-Agent", "Accept-Encoding", "Content-Length":
				continue // Go's transport's, not the lab's
			}
			fmt.Fprintf(&out, "%s: %s\n", k, got.header[k])
		}
		fmt.Fprintf(&out, "%s\n\n", got.body)
	}
	path := filepath.Join("testdata", "request_bodies.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("requests differ from %s:\n%s", path, out.Bytes())
	}
}
