package llamacpp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
)

// output is a stand-in for the model's output format: enough to see CacheText built from the
// reply the model wrote.
func output(r *chat.Reply) string {
	var b strings.Builder
	b.WriteString(r.Reasoning + "</think>" + r.Content)
	for _, tc := range r.ToolCalls {
		b.WriteString("<call " + tc.Name + " " + string(tc.Arguments) + ">")
	}
	return b.String()
}

func bodyFields(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body: %v\n%s", err, b)
	}
	return m
}

// chatCalls returns the bodies of the /v1/chat/completions requests and counts the
// /completion ones (the generation emulation).
func chatCalls(f *fake) (bodies [][]byte, emulations int) {
	for _, c := range f.got() {
		switch c.Path {
		case "/v1/chat/completions":
			bodies = append(bodies, c.Body)
		case "/completion":
			emulations++
		}
	}
	return bodies, emulations
}

// A live request sends max_tokens, the temperature and the seed, is not followed by an
// emulation, and returns the reasoning, text and both tool calls (arguments in pieces) the
// model wrote; CacheText is Rendered and that reply in the model's format. A scripted request
// from the same client is as before.
func TestLiveGeneration(t *testing.T) {
	f := &fake{chat: "gen_live.sse"}
	tp := 0.25
	c := start(t, f, Options{Output: output, Temperature: &tp})
	c.SetSeed(1234)
	req := request()
	req.Generate = 512
	res, err := c.Send(context.Background(), req, &chat.Reply{Content: "scripted, ignored"})
	if err != nil {
		t.Fatal(err)
	}
	bodies, emulations := chatCalls(f)
	if len(bodies) != 1 || emulations != 0 {
		t.Fatalf("%d chat requests, %d emulations; want 1 and none", len(bodies), emulations)
	}
	b := bodyFields(t, bodies[0])
	for k, v := range map[string]string{"max_tokens": "512", "temperature": "0.25", "seed": "1234", "cache_prompt": "true", "id_slot": "0"} {
		if string(b[k]) != v {
			t.Errorf("body %s = %s; want %s", k, b[k], v)
		}
	}
	want := &chat.Reply{Reasoning: "Both files matter.", Content: "Reading both.", ToolCalls: []chat.ToolCall{
		{ID: "Xy7aB", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
		{ID: "Qw3eR", Name: "grep", Arguments: json.RawMessage(`{"pattern":"func <","path":"b.go"}`)},
	}}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if wantText := rendered + output(want); res.CacheText != wantText {
		t.Errorf("CacheText = %q; want %q", res.CacheText, wantText)
	}
	if res.CompletionTokens != 61 || res.CachedTokens == nil || *res.CachedTokens != 4096 || res.PromptTokens != 4120 {
		t.Errorf("Result = completion %d, cached %v, prompt %d; want 61, 4096, 4120", res.CompletionTokens, res.CachedTokens, res.PromptTokens)
	}

	// Scripted: max_tokens 1, temperature 0, no seed, the emulation follows, no Reply.
	f.chat = "stream_text.sse"
	res, err = c.Send(context.Background(), request(), &chat.Reply{Content: "done"})
	if err != nil {
		t.Fatal(err)
	}
	bodies, emulations = chatCalls(f)
	b = bodyFields(t, bodies[1])
	if string(b["max_tokens"]) != "1" || string(b["temperature"]) != "0" || emulations != 1 || res.Reply != nil {
		t.Errorf("scripted: max_tokens %s, temperature %s, %d emulations, Reply %+v; want 1, 0, 1, nil", b["max_tokens"], b["temperature"], emulations, res.Reply)
	}
	if _, ok := b["seed"]; ok {
		t.Errorf("scripted body has a seed: %s", bodies[1])
	}
}

// A generation cut at max_tokens keeps the reasoning and drops the tool call whose arguments
// were cut; where the server's rendering of it is not known (the fake renders every request
// alike) CacheText stays empty.
func TestLiveCut(t *testing.T) {
	f := &fake{chat: "gen_cut.sse"}
	c := start(t, f, Options{})
	req := request()
	req.Generate = 16
	res, err := c.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&chat.Reply{Reasoning: "Read it."}, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 16 || res.CacheText != "" {
		t.Errorf("CompletionTokens %d, CacheText %q; want 16 and empty", res.CompletionTokens, res.CacheText)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "inside tool call 0 (read_file)") {
		t.Errorf("Warnings = %q; want one naming the dropped call", res.Warnings)
	}
	b := bodyFields(t, f.got()[1].Body)
	if string(b["temperature"]) != "0.7" || string(b["seed"]) != "42" {
		t.Errorf("default temperature %s, seed %s; want 0.7 and 42", b["temperature"], b["seed"])
	}
}

// A stream that breaks off with an error keeps what came before it.
func TestLiveStreamErrorKeepsWhatCame(t *testing.T) {
	f := &fake{chat: "gen_error.sse"}
	c := start(t, f, Options{})
	req := request()
	req.Generate = 100
	res, err := c.Send(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), "Failed to decode the batch") {
		t.Fatalf("err = %v; want the stream's error", err)
	}
	if res == nil || res.Reply == nil || res.Reply.Content != "Half an ans" {
		t.Fatalf("Result %+v; want the Reply parsed before the error", res)
	}
}
