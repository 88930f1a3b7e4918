package openai

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
)

// liveRequest is session() as the live driver sends it: a generation of at most n tokens.
func liveRequest(n int) *chat.Request {
	req := session()
	req.Generate = n
	return req
}

func temp(t float64) *float64 { return &t }

// wantLiveCalls are the tool calls testdata/gen_chat_live.sse streams.
var wantLiveCalls = []chat.ToolCall{
	{ID: "call_R1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)},
	{ID: "call_R2", Name: "grep", Arguments: json.RawMessage(`{"pattern": "func <", "path": "b.go"}`)},
}

// A live Chat Completions request sends the bound, the temperature and the seed, and the
// stream's reasoning, text and tool calls (arguments in pieces, joined by index) come back in
// Result.Reply; a scripted request from the same client is as it always was.
func TestLiveChat(t *testing.T) {
	r := newReplay(t, step{file: "gen_chat_live.sse", sse: true}, step{file: "chat_stream.sse", sse: true})
	c := newClient(t, Options{BaseURL: r.srv.URL + "/v1", Model: "qwen3-8b", Temperature: temp(0.3)})
	c.SetSeed(7)
	res, err := c.Send(context.Background(), liveRequest(300), &chat.Reply{Content: "scripted, ignored"})
	if err != nil {
		t.Fatal(err)
	}
	f := bodyFields(t, r.request(0).body)
	for k, v := range map[string]string{"max_tokens": "300", "temperature": "0.3", "seed": "7", "stream": "true", "stream_options": `{"include_usage":true}`} {
		if string(f[k]) != v {
			t.Errorf("live body %s = %s; want %s", k, f[k], v)
		}
	}
	want := &chat.Reply{Reasoning: "Read both files <first>.", Content: "Reading them.", ToolCalls: wantLiveCalls}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 57 || res.PromptTokens != 2100 || !eqPtr(res.CachedTokens, ptr(2048)) {
		t.Errorf("Result = completion %d, prompt %d, cached %s; want 57, 2100, 2048", res.CompletionTokens, res.PromptTokens, show(res.CachedTokens))
	}
	checkUsage(t, res.Usage, ptr(2100), ptr(2048), ptr(52), ptr(57), ptr(9))
	if res.TTFT <= 0 || res.CacheText != "" || res.Rendered != "" {
		t.Errorf("TTFT %v, CacheText %q, Rendered %q; want TTFT > 0 and no texts", res.TTFT, res.CacheText, res.Rendered)
	}

	// Scripted: the smallest generation, no temperature, no seed, no Reply.
	res, err = c.Send(context.Background(), session(), &chat.Reply{Content: "done"})
	if err != nil {
		t.Fatal(err)
	}
	f = bodyFields(t, r.request(1).body)
	if string(f["max_tokens"]) != "1" {
		t.Errorf("scripted max_tokens = %s; want 1", f["max_tokens"])
	}
	for _, k := range []string{"temperature", "seed"} {
		if _, ok := f[k]; ok {
			t.Errorf("scripted body has %s: %s", k, r.request(1).body)
		}
	}
	if res.Reply != nil {
		t.Errorf("scripted Reply = %+v; want nil", res.Reply)
	}
}

// The openai profile bounds a live generation with max_completion_tokens; the temperature and
// the seed default to 0.7 and 42.
func TestLiveChatOpenAIDefaults(t *testing.T) {
	r := newReplay(t, step{file: "gen_chat_live.sse", sse: true})
	c := newClient(t, Options{Profile: "openai", BaseURL: r.srv.URL, Model: "gpt-x", Getenv: env("OPENAI_API_KEY", "k")})
	if _, err := c.Send(context.Background(), liveRequest(2048), nil); err != nil {
		t.Fatal(err)
	}
	f := bodyFields(t, r.request(0).body)
	for k, v := range map[string]string{"max_completion_tokens": "2048", "temperature": "0.7", "seed": "42"} {
		if string(f[k]) != v {
			t.Errorf("body %s = %s; want %s", k, f[k], v)
		}
	}
	if _, ok := f["max_tokens"]; ok {
		t.Errorf("body has max_tokens beside max_completion_tokens: %s", r.request(0).body)
	}
}

// A generation cut at the bound returns what came before the cut, less the tool call whose
// arguments the cut left unfinished; the completion tokens come from usage.
func TestLiveChatCut(t *testing.T) {
	r := newReplay(t, step{file: "gen_chat_cut.sse", sse: true})
	c := newClient(t, Options{BaseURL: r.srv.URL, Model: "gpt-x"})
	res, err := c.Send(context.Background(), liveRequest(12), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&chat.Reply{Content: "Let me look"}, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 12 {
		t.Errorf("CompletionTokens = %d; want 12 (usage.completion_tokens)", res.CompletionTokens)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "cut at the token limit inside tool call 0 (read)") {
		t.Errorf("Warnings = %q; want one naming the dropped call", res.Warnings)
	}
}

// Unstreamed, the message's reasoning, text and whole tool calls are the Reply.
func TestLiveChatUnstreamed(t *testing.T) {
	r := newReplay(t, step{text: `{"id":"chatcmpl-U","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok","reasoning_content":"think",` +
		`"tool_calls":[{"id":"call_U1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.go\"}"}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`})
	c := newClient(t, Options{BaseURL: r.srv.URL, Model: "m", NoStream: true})
	res, err := c.Send(context.Background(), liveRequest(64), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &chat.Reply{Reasoning: "think", Content: "ok", ToolCalls: []chat.ToolCall{{ID: "call_U1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
}

// A live Responses API request sends max_output_tokens and the temperature (the API has no
// seed); the output items come back as the Reply, the encrypted reasoning item as a Thinking
// block that EncodeInput sends back as the very item.
func TestLiveResponses(t *testing.T) {
	r := newReplay(t, step{file: "gen_responses_live.sse", sse: true}, step{file: "responses_stream.sse", sse: true})
	c := newClient(t, Options{Profile: "openai", API: APIResponses, BaseURL: r.srv.URL + "/v1", Model: "o-x", Temperature: temp(1),
		Getenv: env("OPENAI_API_KEY", "k")})
	c.SetSeed(7)
	req := liveRequest(4096)
	req.Think = true
	res, err := c.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := bodyFields(t, r.request(0).body)
	for k, v := range map[string]string{"max_output_tokens": "4096", "temperature": "1", "include": `["reasoning.encrypted_content"]`, "store": "false"} {
		if string(f[k]) != v {
			t.Errorf("body %s = %s; want %s", k, f[k], v)
		}
	}
	if _, ok := f["seed"]; ok {
		t.Errorf("Responses body has a seed: %s", r.request(0).body)
	}
	want := &chat.Reply{Reasoning: "Read both files.", Content: "Reading them.",
		ToolCalls: []chat.ToolCall{
			{ID: "call_F1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)},
			{ID: "call_F2", Name: "grep", Arguments: json.RawMessage(`{"pattern": "func <", "path": "b.go"}`)},
		},
		Thinking: []chat.ThinkingBlock{{Redacted: true, Data: "gAAAAB-live-enc==", Signature: "rs_G1", Text: "Read both files."}}}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 120 || !eqPtr(res.Usage.ReasoningGenerated, ptr(64)) {
		t.Errorf("CompletionTokens %d, reasoning %s; want 120, 64", res.CompletionTokens, show(res.Usage.ReasoningGenerated))
	}
	// The next request sends the reasoning item back as it came.
	msg := chat.Message{Role: chat.RoleAssistant, Reasoning: res.Reply.Reasoning, Content: res.Reply.Content, ToolCalls: res.Reply.ToolCalls, Thinking: res.Reply.Thinking}
	input, dropped, err := EncodeInput([]chat.Message{{Role: chat.RoleUser, Content: "go"}, msg})
	if err != nil || dropped != 0 {
		t.Fatalf("EncodeInput: %v, dropped %d", err, dropped)
	}
	if item := `{"type":"reasoning","id":"rs_G1","summary":[{"type":"summary_text","text":"Read both files."}],"encrypted_content":"gAAAAB-live-enc=="}`; !strings.Contains(string(input), item) {
		t.Errorf("input = %s; want it to carry %s", input, item)
	}

	// Scripted: max_output_tokens 16, no temperature.
	if res, err = c.Send(context.Background(), session(), nil); err != nil {
		t.Fatal(err)
	}
	f = bodyFields(t, r.request(1).body)
	if _, ok := f["temperature"]; ok || string(f["max_output_tokens"]) != "16" || res.Reply != nil {
		t.Errorf("scripted: body %s, Reply %+v; want max_output_tokens 16, no temperature, no Reply", r.request(1).body, res.Reply)
	}
}

// A Responses generation cut at max_output_tokens keeps the reasoning item and drops the
// function call whose arguments were cut.
func TestLiveResponsesCut(t *testing.T) {
	r := newReplay(t, step{file: "gen_responses_cut.sse", sse: true})
	c := newClient(t, Options{API: APIResponses, BaseURL: r.srv.URL, Model: "o-x"})
	res, err := c.Send(context.Background(), liveRequest(40), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &chat.Reply{Reasoning: "Plan", Thinking: []chat.ThinkingBlock{ReasoningBlock("rs_G2", "gAAAAB-cut", "Plan")}}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 40 {
		t.Errorf("CompletionTokens = %d; want 40", res.CompletionTokens)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "inside function call 1 (read)") {
		t.Errorf("Warnings = %q; want one naming the dropped call", res.Warnings)
	}
}

func TestTemperatureChecked(t *testing.T) {
	for _, v := range []float64{-0.1, 2.5} {
		if _, err := New(Options{BaseURL: "http://127.0.0.1:1", Model: "m", Temperature: temp(v), Getenv: env()}); err == nil || !strings.Contains(err.Error(), "temperature") {
			t.Errorf("New(Temperature %g) = %v; want an error naming the temperature", v, err)
		}
	}
}

// Deltas of items the stream never announced still make their item; an index out of reason
// does not allocate without bound.
func TestOutputWithoutAddedItems(t *testing.T) {
	var o output
	for _, ev := range []responseEvent{
		{Type: "response.output_text.delta", OutputIndex: 1, Delta: "Hi"},
		{Type: "response.function_call_arguments.delta", OutputIndex: 2, Delta: `{"a":1}`},
		{Type: "response.reasoning_summary_text.delta", OutputIndex: 0, SummaryIndex: 1 << 40, Delta: "x"},
	} {
		o.add(&ev)
	}
	res := &chat.Result{}
	got := o.reply(res)
	want := &chat.Reply{Reasoning: "x", Content: "Hi", ToolCalls: []chat.ToolCall{{Arguments: json.RawMessage(`{"a":1}`)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	if n := len(o.items[0].Summary); n > 1025 {
		t.Errorf("%d summary parts for one delta", n)
	}
}

// generate joins the tool calls of a Chat Completions stream given as its chunks' JSON.
func generate(t *testing.T, chunks ...string) (*chat.Reply, *chat.Result) {
	t.Helper()
	var g generation
	for i, c := range chunks {
		var ck chunk
		if err := json.Unmarshal([]byte(c), &ck); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		g.add(&ck)
	}
	res := &chat.Result{}
	return g.reply(res), res
}

// Odd but valid streams of tool calls: fragments of two calls interleaved by index, empty
// arguments, a call with no id, a name repeated in every fragment, and calls without `index`
// (Gemini's OpenAI-compatible endpoint sends each call whole, with its own id, and no index).
func TestGenerationToolCallFragments(t *testing.T) {
	call := func(id, name, args string) chat.ToolCall {
		return chat.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	for name, c := range map[string]struct {
		chunks []string
		want   []chat.ToolCall
		warn   string
	}{
		// A call that never got its name cannot be sent back (the next request would fail):
		// it is left out with a warning.
		"no name": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"arguments":"{}"}}]}}]}`,
		}, want: []chat.ToolCall{call("c1", "read", `{}`)}, warn: "tool call 1 has no name"},
		"interleaved": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"grep","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{\"pa"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"pattern\":\"x\"}"}},{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}}]}`,
		}, want: []chat.ToolCall{call("c1", "read", `{"path":"a"}`), call("c2", "grep", `{"pattern":"x"}`)}},
		"empty arguments and no id": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"list","arguments":""}}]}}]}`,
		}, want: []chat.ToolCall{call("", "list", `{}`)}},
		"name repeated": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{\"path\""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":":\"a\"}"}}]}}]}`,
		}, want: []chat.ToolCall{call("c1", "read", `{"path":"a"}`)}},
		"no index, each call whole": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"function-call-1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"function-call-2","type":"function","function":{"name":"glob","arguments":"{\"pattern\":\"*\"}"}}]}}]}`,
		}, want: []chat.ToolCall{call("function-call-1", "read", `{"path":"a"}`), call("function-call-2", "glob", `{"pattern":"*"}`)}},
		"no index, two calls in one delta": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"read","arguments":"{}"}},{"function":{"name":"list","arguments":"{}"}}]}}]}`,
		}, want: []chat.ToolCall{call("", "read", `{}`), call("", "list", `{}`)}},
		"no index, arguments in pieces": {chunks: []string{
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"f1","function":{"name":"read","arguments":"{\"path\""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":\"a\"}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"f2","function":{"name":"list","arguments":""}}]}}]}`,
		}, want: []chat.ToolCall{call("f1", "read", `{"path":"a"}`), call("f2", "list", `{}`)}},
	} {
		got, res := generate(t, c.chunks...)
		if diff := cmp.Diff(c.want, got.ToolCalls); diff != "" {
			t.Errorf("%s: tool calls (-want +got):\n%s", name, diff)
		}
		if w := strings.Join(res.Warnings, "\n"); (c.warn == "") != (w == "") || !strings.Contains(w, c.warn) {
			t.Errorf("%s: warnings %q; want %q", name, res.Warnings, c.warn)
		}
	}
}
