package openai

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
)

// chatChunks are the chunks of a whole Chat Completions stream: content, the finish_reason,
// then the usage.
const (
	chatContent = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"o\"}}]}\n\n"
	chatFinish  = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
	chatUsage   = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n"
	chatDone    = "data: [DONE]\n\n"
)

// sendOnce sends one request to a server answering with s and returns the result and error.
func sendOnce(t *testing.T, o Options, s step, req *chat.Request) (*chat.Result, error) {
	t.Helper()
	r := newReplay(t, s)
	o.BaseURL = r.srv.URL + "/v1"
	if o.Model == "" {
		o.Model = "m"
	}
	return newClient(t, o).Send(context.Background(), req, nil)
}

// wantAPIError checks that err is a *chat.APIError with status 200 whose body starts with
// prefix.
func wantAPIError(t *testing.T, err error, prefix string) {
	t.Helper()
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 200 || !strings.HasPrefix(ae.Body, prefix) || ae.URL == "" {
		t.Fatalf("error %v (%T); want an APIError with HTTP 200 and a body starting %q", err, err, prefix)
	}
}

// A Chat Completions stream is whole with `data: [DONE]`, or with a finish_reason and its usage
// (servers that omit [DONE]); without both it is a cut stream, a chat.CutError the harness
// retries, also when the body ends inside an event.
func TestChatStreamEnds(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		cut        string // "" for a whole answer
	}{
		{"whole", chatContent + chatFinish + chatUsage + chatDone, ""},
		{"no [DONE], finish_reason and usage", chatContent + chatFinish + chatUsage, ""},
		{"no [DONE], no finish_reason", chatContent + chatContent, "stream cut: no data: [DONE] and no finish_reason"},
		{"no [DONE], finish_reason without usage", chatContent + chatFinish, "stream cut: no data: [DONE] and no usage after the finish_reason"},
		{"cut inside an event", chatContent + `data: {"choices":[{"index":0,"delta":{"cont`, "stream cut: no data: [DONE] and no finish_reason"},
		{"zero events", ": ping\n\n: ping\n\n", "stream cut: no events"},
		{"[DONE] alone", chatDone, "stream cut: no chunk before data: [DONE]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sendOnce(t, Options{}, step{sse: true, text: tc.body}, session())
			if tc.cut != "" {
				wantAPIError(t, err, tc.cut)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.PromptTokens != 40 || !eqPtr(res.CachedTokens, ptr(32)) {
				t.Errorf("prompt %d cached %s; want 40, 32", res.PromptTokens, show(res.CachedTokens))
			}
		})
	}
}

// A Responses stream is whole only with response.completed or response.incomplete.
func TestResponsesStreamEnds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "responses_stream.sse"))
	if err != nil {
		t.Fatal(err)
	}
	whole := string(b)
	last := strings.LastIndex(whole, "event: response.incomplete")
	for _, tc := range []struct {
		name, body string
		cut        string
	}{
		{"whole", whole, ""},
		{"no final event", whole[:last], "stream cut: no response.completed, response.incomplete or response.failed"},
		{"cut inside the final event", whole[:len(whole)-40], "stream cut: no response.completed, response.incomplete or response.failed"},
		{"zero events", ": keep-alive\n\n", "stream cut: no events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sendOnce(t, Options{API: APIResponses}, step{sse: true, text: tc.body}, session())
			if tc.cut != "" {
				wantAPIError(t, err, tc.cut)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.PromptTokens != 5000 {
				t.Errorf("prompt %d; want 5000", res.PromptTokens)
			}
		})
	}
}

// A streamed request answered with one JSON document (a server that does not stream) is read as
// the API's unstreamed answer: usage, text, reasoning and tool calls.
func TestJSONAnswerToAStreamedRequest(t *testing.T) {
	chatJSON := `{"id":"chatcmpl-J","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok","reasoning_content":"think",` +
		`"tool_calls":[{"id":"call_J1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":300,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":256}}}`
	res, err := sendOnce(t, Options{}, step{text: chatJSON}, liveRequest(64))
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 300 || !eqPtr(res.CachedTokens, ptr(256)) || res.CompletionTokens != 7 {
		t.Errorf("chat: prompt %d cached %s completion %d; want 300, 256, 7", res.PromptTokens, show(res.CachedTokens), res.CompletionTokens)
	}
	want := &chat.Reply{Reasoning: "think", Content: "ok", ToolCalls: []chat.ToolCall{{ID: "call_J1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("chat reply (-want +got):\n%s", diff)
	}
	if w := strings.Join(res.Warnings, "; "); strings.Contains(w, "no usage") || !strings.Contains(w, "one JSON answer") {
		t.Errorf("chat warnings %q; want one naming the JSON answer and none about usage", w)
	}

	respJSON := `{"id":"resp_J","object":"response","status":"completed","output":[` +
		`{"id":"rs_J","type":"reasoning","summary":[{"type":"summary_text","text":"Plan"}],"encrypted_content":"gAAAA-J"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]},` +
		`{"type":"function_call","call_id":"call_R","name":"read","arguments":"{}"}],` +
		`"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":768},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":12}}}`
	res, err = sendOnce(t, Options{API: APIResponses}, step{text: respJSON}, liveRequest(64))
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 900 || !eqPtr(res.CachedTokens, ptr(768)) || res.CompletionTokens != 20 || !eqPtr(res.Usage.ReasoningGenerated, ptr(12)) {
		t.Errorf("responses: prompt %d cached %s completion %d; want 900, 768, 20", res.PromptTokens, show(res.CachedTokens), res.CompletionTokens)
	}
	wantR := &chat.Reply{Reasoning: "Plan", Content: "Hi", Thinking: []chat.ThinkingBlock{ReasoningBlock("rs_J", "gAAAA-J", "Plan")},
		ToolCalls: []chat.ToolCall{{ID: "call_R", Name: "read", Arguments: json.RawMessage(`{}`)}}}
	if diff := cmp.Diff(wantR, res.Reply); diff != "" {
		t.Errorf("responses reply (-want +got):\n%s", diff)
	}
	_, err = sendOnce(t, Options{API: APIResponses}, step{text: `{"id":"resp_F","status":"failed","error":{"code":"server_error","message":"boom"}}`}, session())
	if ae := (*chat.APIError)(nil); !errors.As(err, &ae) || ae.Body != "server_error: boom" {
		t.Errorf("a failed response object: %v; want its error", err)
	}
}

// An HTTP 200 whose body is not the API's answer (an HTML page, an empty body, JSON without the
// answer's choices or output array) is an error, for
// both APIs and unstreamed too; an empty one is a cut answer (retried), a page is not.
func TestNotTheAPIsAnswer(t *testing.T) {
	for name, o := range map[string]Options{"chat": {}, "responses": {API: APIResponses}, "unstreamed": {NoStream: true}} {
		for _, tc := range []struct {
			name string
			s    step
			want string
		}{
			{"html", step{ctype: "text/html; charset=utf-8", text: "<!DOCTYPE html><html><body>Sign in</body></html>"}, `HTTP 200 with a text/html body, not the API's answer: "<!DOCTYPE html>`},
			{"empty", step{sse: true}, "stream cut: HTTP 200 with an empty body"},
			{"empty json", step{text: "\n"}, "stream cut: HTTP 200 with an empty body"},
			{"plain text", step{ctype: "text/plain", text: "upstream connect error"}, `HTTP 200 with a text/plain body, not the API's answer: "upstream connect error"`},
			{"json of another shape", step{text: `{"detail":"Not Found"}`}, `HTTP 200 with a JSON body that is not a `},
			{"json null", step{text: `null`}, `HTTP 200 with a JSON body that is not a `},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				_, err := sendOnce(t, o, tc.s, session())
				wantAPIError(t, err, tc.want)
			})
		}
	}
}
