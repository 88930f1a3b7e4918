package openai

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
	"lab/internal/wire"
)

// responsesAnswer is a Responses stream with reasoning, text and a function call grown from
// deltas, whose final event (incomplete for a content filter) carries the usage but not the
// output.
const responsesAnswer = `event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAAB-enc"}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"Plan"}

event: response.output_text.delta
data: {"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"Hel"}

event: response.output_text.delta
data: {"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"lo"}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","call_id":"call_1","name":"read"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","output_index":2,"delta":"{\"path\":\"a.go\"}"}

event: response.incomplete
data: {"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":32},"output_tokens":9}}}

`

// The proxy reads a Responses answer with the accumulator Client.Send reads its own with: the
// same reply (reasoning, text, the function call grown from deltas), figures and warnings of
// the answer.
func TestResponsesCaptureReadsAsSend(t *testing.T) {
	req := session()
	req.Generate = 16
	res, err := sendOnce(t, Options{API: APIResponses}, step{sse: true, text: responsesAnswer}, req)
	if err != nil {
		t.Fatal(err)
	}
	var rc ResponsesCapture
	if _, err := wire.ReadEvents(bufio.NewReader(strings.NewReader(responsesAnswer)), 1<<20, func(_ string, data []byte) error {
		_, err := rc.Event(data)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := rc.End(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(res.Reply, rc.Reply()); d != "" {
		t.Errorf("the proxy's reply differs from Send's (-send +proxy):\n%s", d)
	}
	got := rc.Result()
	if got.PromptTokens != res.PromptTokens || !eqPtr(got.CachedTokens, res.CachedTokens) || got.CompletionTokens != res.CompletionTokens || got.PromptTokens != 50 {
		t.Errorf("proxy prompt %d cached %s completion %d; Send's %d, %s, %d (want 50 prompt)", got.PromptTokens, show(got.CachedTokens), got.CompletionTokens, res.PromptTokens, show(res.CachedTokens), res.CompletionTokens)
	}
	if !strings.Contains(strings.Join(got.Warnings, "|"), "response incomplete: content_filter") || !strings.Contains(strings.Join(res.Warnings, "|"), "response incomplete: content_filter") {
		t.Errorf("warnings: proxy %q, Send %q; want both to say the response was incomplete", got.Warnings, res.Warnings)
	}
}

// An unstreamed Chat Completions answer is read by the proxy's accumulator too: an error object
// in an HTTP 200 body is the server's message for lab run as for lab proxy.
func TestUnstreamedChatErrorReadsAsProxy(t *testing.T) {
	body := `{"error":{"message":"the model is overloaded","type":"server_error"}}`
	_, err := sendOnce(t, Options{NoStream: true}, step{text: body}, session())
	var ae *chat.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T); want an APIError", err, err)
	}
	var cc ChatCapture
	var pe *chat.APIError
	if !errors.As(cc.Whole([]byte(body)), &pe) || pe.Body != ae.Body {
		t.Errorf("lab run's error %q; the proxy's %v: want the same server message", ae.Body, pe)
	}
}
