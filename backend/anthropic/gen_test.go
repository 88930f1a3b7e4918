package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
)

// bodyOf decodes the request body the server received.
func bodyOf(t *testing.T, s *server) map[string]json.RawMessage {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s.body, &m); err != nil {
		t.Fatalf("request body: %v\n%s", err, s.body)
	}
	return m
}

func live(req *chat.Request, n int) *chat.Request {
	req.Generate = n
	return req
}

// A live request without thinking sends max_tokens = Generate and the temperature; the
// thinking blocks (signatures as received), text and both tool calls (input JSON in pieces)
// come back as the Reply, and the next request sends the blocks back unchanged.
func TestLiveGeneration(t *testing.T) {
	s := newServer(t, 200, "gen_live.sse")
	tp := 0.4
	c := newClient(t, s.URL, Options{Temperature: &tp})
	res, err := c.Send(context.Background(), live(testRequest(), 2048), &chat.Reply{Content: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	f := bodyOf(t, s)
	if string(f["max_tokens"]) != "2048" || string(f["temperature"]) != "0.4" {
		t.Errorf("body max_tokens %s, temperature %s; want 2048, 0.4", f["max_tokens"], f["temperature"])
	}
	if _, ok := f["seed"]; ok {
		t.Error("body has a seed: the Messages API has none")
	}
	want := &chat.Reply{
		Reasoning: "Both files matter: <a.go> and b.go.",
		Content:   "Reading both.",
		ToolCalls: []chat.ToolCall{
			{ID: "toolu_01L1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)},
			{ID: "toolu_01L2", Name: "grep", Arguments: json.RawMessage(`{"pattern": "func <", "path": "b.go"}`)},
		},
		Thinking: []chat.ThinkingBlock{
			{Text: "Both files matter: <a.go> and b.go.", Signature: "EqQBCgIYAhIMLiveSig0001=="},
			{Redacted: true, Data: "EmwKAhgBEgyLiveRedacted+/="},
		},
	}
	if diff := cmp.Diff(want, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 143 || res.PromptTokens != 5230 || res.CachedTokens == nil || *res.CachedTokens != 5000 {
		t.Errorf("Result = completion %d, prompt %d, cached %v; want 143, 5230, 5000", res.CompletionTokens, res.PromptTokens, res.CachedTokens)
	}
	// The blocks go back first and unchanged in the assistant message.
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, Content: res.Reply.Content, Thinking: res.Reply.Thinking, ToolCalls: res.Reply.ToolCalls}}
	b, err := EncodeMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	wantMsg := `{"role":"assistant","content":[{"type":"thinking","thinking":"Both files matter: <a.go> and b.go.","signature":"EqQBCgIYAhIMLiveSig0001=="},` +
		`{"type":"redacted_thinking","data":"EmwKAhgBEgyLiveRedacted+/="},{"type":"text","text":"Reading both."},`
	if !strings.Contains(string(b), wantMsg) {
		t.Errorf("messages = %s; want them to contain %s", b, wantMsg)
	}

	// Scripted, from the same client: max_tokens 1, no temperature, no Reply.
	s2 := newServer(t, 200, "stream_text.sse")
	c2 := newClient(t, s2.URL, Options{Temperature: &tp})
	res, err = c2.Send(context.Background(), testRequest(), &chat.Reply{Content: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	f = bodyOf(t, s2)
	if _, ok := f["temperature"]; ok || string(f["max_tokens"]) != "1" || res.Reply != nil {
		t.Errorf("scripted: max_tokens %s, temperature %s, Reply %+v; want 1, none, nil", f["max_tokens"], f["temperature"], res.Reply)
	}
}

// With extended thinking a live request sends the budget and no temperature (the API refuses
// one); a bound at or below the budget is refused before anything is sent, naming --max-tokens.
func TestLiveThinking(t *testing.T) {
	s := newServer(t, 200, "gen_live.sse")
	c := newClient(t, s.URL, Options{ThinkingBudget: 2000})
	req := live(testRequest(), 4096)
	req.Think = true
	if _, err := c.Send(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	f := bodyOf(t, s)
	if string(f["max_tokens"]) != "4096" || string(f["thinking"]) != `{"type":"enabled","budget_tokens":2000}` {
		t.Errorf("body max_tokens %s, thinking %s; want 4096 and budget 2000", f["max_tokens"], f["thinking"])
	}
	if _, ok := f["temperature"]; ok {
		t.Errorf("a thinking request carries a temperature: %s", f["temperature"])
	}

	s2 := newServer(t, 200, "gen_live.sse")
	c2 := newClient(t, s2.URL, Options{ThinkingBudget: 2000})
	req.Generate = 2000
	_, err := c2.Send(context.Background(), req, nil)
	if err == nil || !strings.Contains(err.Error(), "--max-tokens 2001") || !strings.Contains(err.Error(), "thinking budget of 2000") {
		t.Errorf("Send with Generate = budget: %v; want an error naming --max-tokens and the budget", err)
	}
	if s2.body != nil {
		t.Errorf("the refused request was sent: %s", s2.body)
	}

	// Adaptive thinking has no budget: any bound goes, still without a temperature.
	s3 := newServer(t, 200, "gen_live.sse")
	c3 := newClient(t, s3.URL, Options{Thinking: ThinkingAdaptive})
	req.Generate = 500
	if _, err := c3.Send(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	f = bodyOf(t, s3)
	if _, ok := f["temperature"]; ok || string(f["max_tokens"]) != "500" {
		t.Errorf("adaptive: body %s", s3.body)
	}
}

// A generation cut at max_tokens returns what came: the text, without the tool call whose input
// was cut, or the thinking text without the unsigned block.
func TestLiveCut(t *testing.T) {
	s := newServer(t, 200, "gen_cut.sse")
	c := newClient(t, s.URL, Options{})
	res, err := c.Send(context.Background(), live(testRequest(), 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&chat.Reply{Content: "Let me look."}, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if res.CompletionTokens != 20 || !strings.Contains(strings.Join(res.Warnings, "\n"), `tool_use toolu_01C1 (read) has unfinished input (stop_reason "max_tokens")`) {
		t.Errorf("CompletionTokens %d, warnings %q", res.CompletionTokens, res.Warnings)
	}

	s2 := newServer(t, 200, "gen_cut_thinking.sse")
	c2 := newClient(t, s2.URL, Options{})
	req := live(testRequest(), 1025)
	req.Think = true
	res, err = c2.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&chat.Reply{Reasoning: "First I need to"}, res.Reply); diff != "" {
		t.Errorf("Reply (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "has no signature") {
		t.Errorf("Warnings = %q; want one about the unsigned block", res.Warnings)
	}
}

// A stream that breaks off with an error event still returns what came before it.
func TestLiveStreamErrorKeepsWhatCame(t *testing.T) {
	s := newServer(t, 200, "gen_error.sse")
	c := newClient(t, s.URL, Options{})
	res, err := c.Send(context.Background(), live(testRequest(), 100), nil)
	if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("err = %v; want the error event's", err)
	}
	if res == nil || res.Reply == nil || res.Reply.Content != "Half an ans" {
		t.Fatalf("Result %+v; want the Reply parsed before the error", res)
	}
}

func TestTemperatureRange(t *testing.T) {
	t.Setenv(KeyEnv, testKey)
	for _, v := range []float64{-1, 1.5} {
		if _, err := New(Options{Model: "m", Temperature: &v}); err == nil || !strings.Contains(err.Error(), "temperature") {
			t.Errorf("New(Temperature %g) = %v; want an error naming the temperature", v, err)
		}
	}
}
