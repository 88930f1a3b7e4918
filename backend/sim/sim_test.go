package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"lab/arms"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/model/renderers"

	lab "lab"
	"lab/backend/ollama"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/heaptest"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

func newSimTB(t testing.TB) *sim.Backend { return newSim(t, "llamacpp", 0) }

func newSim(t testing.TB, model string, perToken time.Duration) *sim.Backend {
	t.Helper()
	m, err := cachesim.NewModel(model, cachesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, PrefillPerToken: perToken})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func render(t *testing.T, req *chat.Request) string {
	t.Helper()
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	creq, err := conv.ChatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	s, err := renderers.RenderWithRenderer("qwen3.5", creq.Messages, creq.Tools, creq.Think)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lcp(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestSendTwoRequests(t *testing.T) {
	ctx := context.Background()
	tool := chat.Tool{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a coding agent."},
		{Role: chat.RoleUser, Content: "Read main.go."},
	}
	reply := &chat.Reply{Reasoning: "I should read it.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"main.go"}`)}}}
	req1 := &chat.Request{Messages: msgs, Tools: []chat.Tool{tool}, Think: true}
	req2 := &chat.Request{Tools: []chat.Tool{tool}, Think: true, Messages: append(append([]chat.Message{}, msgs...),
		chat.Message{Role: chat.RoleAssistant, Reasoning: reply.Reasoning, ToolCalls: reply.ToolCalls},
		chat.Message{Role: chat.RoleTool, ToolName: "read", ToolCallID: "c1", Content: "package main\n"})}

	for _, model := range []string{"ideal", "llamacpp", "vllm"} {
		b := newSim(t, model, time.Millisecond)
		r1, err := b.Send(ctx, req1, reply)
		if err != nil {
			t.Fatal(err)
		}
		rendered1 := render(t, req1)
		if r1.Rendered != rendered1 || r1.CacheText != rendered1+ollama.Qwen3Output(reply) {
			t.Fatalf("%s: rendered or cache text differ from the qwen3.5 renderer's", model)
		}
		if r1.PromptTokens != int64(len(rendered1)) || r1.CachedTokens == nil || *r1.CachedTokens != 0 || r1.CachedSource != chat.SourceSimulation {
			t.Fatalf("%s: request 1: prompt %d cached %v source %q", model, r1.PromptTokens, r1.CachedTokens, r1.CachedSource)
		}
		if r1.Prefill != time.Duration(len(rendered1))*time.Millisecond || r1.CompletionTokens != int64(len(ollama.Qwen3Output(reply))) || r1.RequestBytes == 0 {
			t.Errorf("%s: request 1: prefill %s completion %d bytes %d", model, r1.Prefill, r1.CompletionTokens, r1.RequestBytes)
		}

		r2, err := b.Send(ctx, req2, nil)
		if err != nil {
			t.Fatal(err)
		}
		common := lcp(r2.Rendered, r1.CacheText)
		want := map[string]int{"ideal": common, "llamacpp": min(common, len(r2.Rendered)-1), "vllm": min(common, len(r2.Rendered)-1) / 16 * 16}[model]
		if common < len(rendered1)-len("<think>\n") {
			t.Fatalf("request 2 shares only %d bytes of request 1's %d", common, len(rendered1))
		}
		if *r2.CachedTokens != int64(want) {
			t.Errorf("%s: request 2 cached %d, want %d (common prefix %d)", model, *r2.CachedTokens, want, common)
		}
		if r2.Prefill != time.Duration(r2.PromptTokens-int64(want))*time.Millisecond || r2.CacheText != r2.Rendered {
			t.Errorf("%s: request 2 prefill %s, cache text %d bytes", model, r2.Prefill, len(r2.CacheText))
		}

		// Reset: the same request finds nothing.
		if err := b.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		r3, err := b.Send(ctx, req2, nil)
		if err != nil || *r3.CachedTokens != 0 {
			t.Errorf("%s: after Reset: cached %v, err %v", model, r3.CachedTokens, err)
		}
	}
}

func TestDefaultsAndErrors(t *testing.T) {
	if _, err := sim.New(sim.Options{Tokenizer: tinytokenizer.Bytes{}}); err == nil {
		t.Error("no model: no error")
	}
	m, _ := cachesim.NewModel("ideal", cachesim.Options{})
	if _, err := sim.New(sim.Options{Model: m}); err == nil {
		t.Error("no tokenizer: no error")
	}
	if _, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, PrefillPerToken: -1}); err == nil {
		t.Error("negative cost: no error")
	}
	b := newSim(t, "ideal", 0)
	r, err := b.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Prefill != time.Duration(r.PromptTokens)*sim.DefaultPrefillPerToken {
		t.Errorf("prefill %s for %d tokens; want the default cost", r.Prefill, r.PromptTokens)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Send(ctx, &chat.Request{}, nil); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestHarnessExpectationMatchesLlamaCpp runs the harness's tiny scenario through the sim with the
// llama.cpp model: the slot holds exactly what the harness counts as the server's cache, so the
// simulated cached tokens equal the expected ones on every request.
func TestHarnessExpectationMatchesLlamaCpp(t *testing.T) {
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadScenario("../../harness/testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, armName := range []string{"spec", "date-in-system-prompt"} {
		arms, err := arms.Select(arms.Builtin(), armName)
		if err != nil {
			t.Fatal(err)
		}
		sink := &metrics.MemorySink{}
		err = harness.RunSession(context.Background(), harness.SessionConfig{
			Scenario: sc, Arm: arms[0], Repetition: 1, RunID: "t", Loop: loop, Backend: newSim(t, "llamacpp", 0),
			Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		samples := sink.Samples()
		if len(samples) == 0 {
			t.Fatal("no samples")
		}
		for i, s := range samples {
			if s.CachedTokens == nil || s.ExpectedCachedTokens == nil || *s.CachedTokens != *s.ExpectedCachedTokens || s.CachedSource != "simulation" {
				t.Errorf("%s request %d: cached %v (%s), expected %v", armName, i, s.CachedTokens, s.CachedSource, s.ExpectedCachedTokens)
			}
		}
		if !strings.HasPrefix(armName, "date") && *samples[len(samples)-1].ExpectedCachedTokens == 0 {
			t.Errorf("%s: last request expected nothing cached", armName)
		}
	}
}

// The body is the request the Ollama backend would send (the tool list's JSON is reused between
// requests, not changed): same fields, same values, same size, also when the tool list changes.
// TestBodyIsTheOllamaRequest checks each body against encoding/json's of the Ollama request, and
// a twin backend with NoBody, sent the same requests, builds none but counts the same bytes.
func TestBodyIsTheOllamaRequest(t *testing.T) {
	b := newSim(t, cachesim.ModelIdeal, time.Millisecond)
	m, err := cachesim.NewModel(cachesim.ModelIdeal, cachesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	noBody, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, PrefillPerToken: time.Millisecond, NoBody: true})
	if err != nil {
		t.Fatal(err)
	}
	conv, _ := ollama.New("http://127.0.0.1:1", "sim") // the sim converts as a client of model "sim"
	tool := func(name string) chat.Tool {
		return chat.Tool{Name: name, Description: "d " + name, Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"p"}},"required":["path"]}`)}
	}
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "s"}, {Role: chat.RoleUser, Content: "u"}}
	call := chat.Message{Role: chat.RoleAssistant, Reasoning: "think", ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go","limit":3}`)}}}
	result := chat.Message{Role: chat.RoleTool, Content: "[#0001 a.go] x", ToolCallID: "call_1", ToolName: "read"}
	for i, tools := range [][]chat.Tool{{tool("read"), tool("grep")}, {tool("read"), tool("grep")}, {tool("read")}, nil, {tool("read")}, {tool("read")}} {
		// The history grows, and one message changes (its reasoning is dropped) as a new turn does.
		switch i {
		case 1:
			msgs = append(msgs, call, result)
		case 2:
			msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: "next"})
		case 3:
			msgs[2].Reasoning = ""
		case 5:
			msgs = nil // no messages at all: "messages":null, as encoding/json writes it
		}
		req := &chat.Request{Messages: msgs, Tools: tools, Think: true}
		res, err := b.Send(context.Background(), req, &chat.Reply{Content: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		creq, err := conv.ChatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(creq)
		if !bytes.Equal(res.Body, want) || res.RequestBytes != int64(len(want)) {
			t.Errorf("request %d: body %s\nwant %s (%d bytes, got %d)", i, res.Body, want, len(want), res.RequestBytes)
		}
		nb, err := noBody.Send(context.Background(), req, &chat.Reply{Content: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		if nb.Body != nil || nb.RequestBytes != int64(len(want)) || *nb.CachedTokens != *res.CachedTokens {
			t.Errorf("request %d with NoBody: body of %d bytes, %d counted, cached %d; want none, %d, %d", i, len(nb.Body), nb.RequestBytes, *nb.CachedTokens, len(want), *res.CachedTokens)
		}
	}
}

// BenchmarkSendHugeToolArgument sends the requests of a turn whose tool call carries an 8 MiB
// argument (the call, then the request after its result) and reports the bytes allocated per
// byte of the argument (the request body, its rendering and its tokens each cost a few bytes a
// byte; a copy more of the argument shows as about one B/arg-byte more) and the peak heap in use
// (heap-MiB, sampled every millisecond: what was live and the garbage not yet collected).
func BenchmarkSendHugeToolArgument(b *testing.B) {
	arg, _ := json.Marshal(map[string]string{"path": "data.txt", "content": strings.Repeat("line: the quick brown fox jumps over the lazy dog\n", 8<<20/50)})
	call := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "write", Arguments: arg}}}
	msgs := []chat.Message{{Role: chat.RoleSystem, Content: "s"}, {Role: chat.RoleUser, Content: "Write the data file."}}
	reqs := []*chat.Request{
		{Messages: msgs},
		{Messages: append(slices.Clone(msgs), call, chat.Message{Role: chat.RoleTool, Content: "wrote data.txt", ToolCallID: "call_1", ToolName: "write"})},
	}
	s := newSimTB(b)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := heaptest.SamplePeak()
	for b.Loop() {
		s.Reset(context.Background())
		for i, req := range reqs {
			reply := &chat.Reply{Content: "Done."}
			if i == 0 {
				reply = &chat.Reply{ToolCalls: call.ToolCalls}
			}
			if _, err := s.Send(context.Background(), req, reply); err != nil {
				b.Fatal(err)
			}
		}
	}
	top := stop()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(arg)), "B/arg-byte")
	b.ReportMetric(float64(top-min(top, before.HeapInuse))/(1<<20), "heap-MiB")
}
