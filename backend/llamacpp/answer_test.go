package llamacpp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"lab/chat"
)

// A chat stream is whole with `data: [DONE]`, or with a finish_reason and its usage; without
// them, with no events (or none but [DONE]), or empty, it is a cut stream (a chat.CutError,
// which the harness retries), also when the body ends inside a chunk. An HTML 200, or JSON
// without choices, is an error that is not.
func TestStreamEnds(t *testing.T) {
	t.Parallel()
	const (
		content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
		finish  = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"timings\":{\"cache_n\":200,\"prompt_n\":37,\"prompt_ms\":412.5}}\n\n"
		usage   = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":237,\"completion_tokens\":1}}\n\n"
	)
	for _, tc := range []struct {
		name, ctype, body, want string
	}{
		{"whole", "text/event-stream", content + finish + usage + "data: [DONE]\n\n", ""},
		{"no [DONE], finish_reason and usage", "text/event-stream", content + finish + usage, ""},
		{"no [DONE], no finish_reason", "text/event-stream", content, "stream cut: no data: [DONE] and no finish_reason"},
		{"no [DONE], no usage", "text/event-stream", content + finish, "stream cut: no data: [DONE] and no usage after the finish_reason"},
		{"cut inside a chunk", "text/event-stream", content + `data: {"choices":[{"ind`, "stream cut: no data: [DONE] and no finish_reason"},
		{"zero events", "text/event-stream", ": ping\n\n", "stream cut: no events"},
		{"empty 200", "text/event-stream", "", "stream cut: HTTP 200 with an empty body"},
		{"HTML 200", "text/html", "<html>502</html>", `HTTP 200 with a text/html body, not the API's answer: "<html>502</html>"`},
		{"[DONE] alone", "text/event-stream", "data: [DONE]\n\n", "stream cut: no chunk before data: [DONE]"},
		{"JSON of another shape", "application/json", `{"detail":"Not Found"}`, "HTTP 200 with a JSON body that is not a chat.completion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := start(t, &fake{chatType: tc.ctype, chatBody: tc.body}, Options{Output: qwenOutput})
			res, err := c.Send(context.Background(), request(), &chat.Reply{Content: "Done."})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if res.PromptTokens != 237 || res.CachedTokens == nil || *res.CachedTokens != 200 {
					t.Errorf("prompt %d cached %v; want 237, 200", res.PromptTokens, res.CachedTokens)
				}
				return
			}
			var ae *chat.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 200 || !strings.HasPrefix(ae.Body, tc.want) || !strings.HasSuffix(ae.URL, "/v1/chat/completions") {
				t.Fatalf("error %v; want an APIError with HTTP 200 and a body starting %q", err, tc.want)
			}
		})
	}
}

// An unstreamed answer (one chat.completion JSON) has no time to first token: its first byte
// comes after the whole generation. TTFT stays 0 (null in the row), with a warning.
func TestUnstreamedAnswerHasNoTTFT(t *testing.T) {
	body := `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":237,"completion_tokens":1},"timings":{"cache_n":200,"prompt_n":37,"prompt_ms":412.5}}`
	c := start(t, &fake{chatType: "application/json", chatBody: body}, Options{Output: qwenOutput})
	res, err := c.Send(context.Background(), request(), &chat.Reply{Content: "Done."})
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 237 || res.TTFT != 0 || res.Total <= 0 {
		t.Errorf("prompt %d TTFT %v Total %v; want 237, no time to first token, a total time", res.PromptTokens, res.TTFT, res.Total)
	}
	if w := strings.Join(res.Warnings, "; "); !strings.Contains(w, "time to first token unknown") {
		t.Errorf("warnings %q; want one saying the time to first token is unknown", w)
	}
}
