package llamacpp_test

import (
	"context"
	"encoding/json"
	"testing"

	"lab/backend/llamacpp"
	"lab/chat"
	"lab/localserver"
	"lab/localserver/localservertest"
)

// On the real llama-server the lab sets up (localservertest.LlamaServer), serving the synthetic
// model with its own chat template: after a scripted reply with reasoning and a tool call, the next request of the
// tool loop reads from the cache the whole text the emulation left, the reply included — the
// reply was written as the template renders it in history. Skipped by -short.
func TestReplyTextOnLlamaServer(t *testing.T) {
	bin, model := localservertest.LlamaServer(t)
	ctx := context.Background()
	srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{Binary: bin, Model: model, Dir: t.TempDir(), CtxSize: 8192})
	if err != nil {
		t.Skipf("llama-server could not be started: %v", err)
	}
	t.Cleanup(func() { srv.Stop() })
	c, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	tools := []chat.Tool{{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are a coding agent."}, {Role: chat.RoleUser, Content: "Where is the greeting built?"}}, Tools: tools, Think: true}
	reply := &chat.Reply{Reasoning: "I should read main.go first.", Content: "Reading it.",
		ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go","n":1}`)}}}
	res, err := c.Send(ctx, req, reply)
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Tokenizer().Encode(res.CacheText)
	if err != nil {
		t.Fatal(err)
	}
	next := &chat.Request{Messages: append(append([]chat.Message{}, req.Messages...),
		chat.Message{Role: chat.RoleAssistant, Reasoning: reply.Reasoning, Content: reply.Content, ToolCalls: reply.ToolCalls},
		chat.Message{Role: chat.RoleTool, ToolCallID: "call_1", ToolName: "read_file", Content: "package main"}), Tools: tools, Think: true}
	res2, err := c.Send(ctx, next, &chat.Reply{Content: "In main.go."})
	if err != nil {
		t.Fatal(err)
	}
	if res2.CachedTokens == nil {
		t.Fatal("the next request's answer has no cached count")
	}
	if got := *res2.CachedTokens; got != int64(len(held)) {
		t.Errorf("the next request read %d cached tokens; want all %d the emulation left (cache text %q, next prompt %q)", got, len(held), res.CacheText, res2.Rendered)
	}
}
