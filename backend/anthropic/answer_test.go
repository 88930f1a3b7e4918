package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/chat"
)

// serve answers every request with body under the Content-Type ctype.
func serve(t *testing.T, ctype, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A stream without message_stop is a cut stream, also when the body ends inside an event: a
// chat.CutError the harness retries, not a row with message_start's usage; so is a stream with
// no events or none but message_stop, and an empty 200. An HTML 200, or JSON that is not a
// message, is an error that is not retried.
func TestStreamNotWhole(t *testing.T) {
	whole := testdata(t, "stream_text.sse")
	stop := strings.Index(whole, "event: message_stop")
	for _, tc := range []struct {
		name, ctype, body, want string
	}{
		{"no message_stop", "text/event-stream", whole[:stop], "stream cut: no message_stop"},
		{"cut inside an event", "text/event-stream", whole[:stop-30], "stream cut: no message_stop"},
		{"zero events", "text/event-stream", ": ping\n\n", "stream cut: no events"},
		{"empty 200", "text/event-stream", "", "stream cut: HTTP 200 with an empty body"},
		{"HTML 200", "text/html", "<html><body>Bad gateway</body></html>", `HTTP 200 with a text/html body, not the API's answer: "<html>`},
		{"message_stop alone", "text/event-stream", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "stream cut: no message_start"},
		{"JSON of another shape", "application/json", `{"detail":"Not Found"}`, `HTTP 200 with a JSON body that is not a message`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, serve(t, tc.ctype, tc.body), Options{})
			_, err := c.Send(context.Background(), testRequest(), nil)
			var ae *chat.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 200 || !strings.HasPrefix(ae.Body, tc.want) || !strings.HasSuffix(ae.URL, "/v1/messages") {
				t.Fatalf("error %v; want an APIError with HTTP 200 and a body starting %q", err, tc.want)
			}
		})
	}
	c := newClient(t, serve(t, "text/event-stream", whole), Options{})
	if _, err := c.Send(context.Background(), testRequest(), nil); err != nil {
		t.Errorf("the whole stream: %v", err)
	}
}

// A cut live generation still returns what came before the cut, with the error.
func TestCutGenerationKeepsWhatCame(t *testing.T) {
	whole := testdata(t, "gen_live.sse")
	cut := whole[:strings.Index(whole, "event: message_delta")]
	c := newClient(t, serve(t, "text/event-stream", cut), Options{})
	req := testRequest()
	req.Generate = 64
	res, err := c.Send(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), "stream cut: no message_stop") {
		t.Fatalf("error %v; want a cut stream", err)
	}
	if res == nil || res.Reply == nil || res.Reply.Content == "" && len(res.Reply.ToolCalls) == 0 && res.Reply.Reasoning == "" {
		t.Errorf("reply %+v; want what came before the cut", res)
	}
}

// A streamed request answered with one JSON message is read whole, usage included.
func TestJSONAnswerToAStreamedRequest(t *testing.T) {
	c := newClient(t, serve(t, "application/json", testdata(t, "message.json")), Options{})
	resp, res, err := c.Create(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 2054 || res.CachedTokens == nil || *res.CachedTokens != 0 || res.CompletionTokens != 40 || resp.Message.Content != "Done." {
		t.Errorf("prompt %d cached %v completion %d content %q; want 2054, 0, 40, Done.", res.PromptTokens, res.CachedTokens, res.CompletionTokens, resp.Message.Content)
	}
	if w := strings.Join(res.Warnings, "; "); !strings.Contains(w, "one JSON message") {
		t.Errorf("warnings %q; want one naming the JSON answer", w)
	}
	c = newClient(t, serve(t, "application/json", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), Options{})
	if _, err := c.Send(context.Background(), testRequest(), nil); err == nil || !strings.Contains(err.Error(), "overloaded_error: Overloaded") {
		t.Errorf("an error body with HTTP 200: %v; want its message", err)
	}
}

// The proxy's reader: a stream cut after message_start is not whole, and its output_tokens
// (message_start's) is not taken as the completion count.
func TestCaptureCut(t *testing.T) {
	whole := testdata(t, "stream_text.sse")
	var c Capture
	err := readEvents(strings.NewReader(whole[:strings.Index(whole, "event: message_delta")]), func(ev event) error {
		_, err := c.Event(ev.name, ev.data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.End(); err == nil || !strings.Contains(err.Error(), "stream cut: no message_stop") {
		t.Errorf("End = %v; want a cut stream", err)
	}
	res := c.Result()
	if res.Usage.Generated != nil || res.CompletionTokens != 0 || res.Usage.Prompt == nil {
		t.Errorf("generated %v completion %d prompt %v; want the prompt's counts and no completion count", res.Usage.Generated, res.CompletionTokens, res.Usage.Prompt)
	}
}

// An unstreamed answer has no time to first token, whether the request asked for a stream or
// not (NoStream): its first byte comes after the whole generation. TTFT stays 0 (null in the
// row), with a warning; the total time is measured.
func TestUnstreamedAnswerHasNoTTFT(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		c := newClient(t, serve(t, "application/json", testdata(t, "message.json")), Options{NoStream: noStream})
		res, err := c.Send(context.Background(), testRequest(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.TTFT != 0 || res.Total <= 0 {
			t.Errorf("NoStream %v: TTFT %v Total %v; want no time to first token and a total time", noStream, res.TTFT, res.Total)
		}
		if w := strings.Join(res.Warnings, "; "); !strings.Contains(w, "time to first token unknown") {
			t.Errorf("NoStream %v: warnings %q; want one saying the time to first token is unknown", noStream, w)
		}
	}
}

// The whole prompt is input + cache read + cache write. A server that sends no
// cache_creation_input_tokens has no cache write to count (Anthropic's API always sends it;
// Ollama's /v1/messages sends input_tokens = prompt_eval_count alone, llama-server input and
// cache read): its input_tokens holds every token it did not read from its cache, so the sum of
// the fields it sends is the whole prompt, and the cache write stays unknown. A usage with a
// cache write but no cache read lacks a part of the prompt: prompt_tokens is then unknown, not
// the sum of what is there.
func TestPromptOfAUsageWithoutCacheFields(t *testing.T) {
	for _, tc := range []struct {
		name, usage string
		prompt      int64
		field       string // the wire fields of Usage.Prompt; "" for none (unknown)
		warn        string
	}{
		{"Ollama: input alone", `{"input_tokens":120,"output_tokens":3}`, 120, "usage.input_tokens", ""},
		{"llama-server: input and cache read", `{"input_tokens":20,"cache_read_input_tokens":100,"output_tokens":3}`, 120, "usage.input_tokens + usage.cache_read_input_tokens", ""},
		{"Anthropic: all three", `{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":10,"output_tokens":3}`, 120, "usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens", ""},
		{"a cache write without the cache read", `{"input_tokens":10,"cache_creation_input_tokens":10,"output_tokens":3}`, 0, "", "prompt_tokens unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"id":"msg_1","type":"message","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":` + tc.usage + `}`
			c := newClient(t, serve(t, "application/json", body), Options{NoStream: true})
			res, err := c.Send(context.Background(), testRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var prompt int64 = -1
			if res.Usage.Prompt != nil {
				prompt = *res.Usage.Prompt
			}
			if res.PromptTokens != tc.prompt || res.Usage.Fields[chat.UsagePrompt] != tc.field || (tc.field != "" && prompt != tc.prompt) || (tc.field == "" && res.Usage.Prompt != nil) {
				t.Errorf("PromptTokens %d, Usage.Prompt %d from %q; want %d from %q", res.PromptTokens, prompt, res.Usage.Fields[chat.UsagePrompt], tc.prompt, tc.field)
			}
			w := strings.Join(res.Warnings, "; ")
			if tc.warn != "" && !strings.Contains(w, tc.warn) || tc.warn == "" && strings.Contains(w, "prompt") {
				t.Errorf("warnings %q; want %q", w, tc.warn)
			}
			if !strings.Contains(tc.usage, "cache_creation") && res.Usage.CacheWrite != nil {
				t.Errorf("CacheWrite %d; want unknown", *res.Usage.CacheWrite)
			}
		})
	}
}
