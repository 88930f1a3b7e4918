package ollama_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ollama/ollama/api"

	lab "lab"
	"lab/arms"
	"lab/backend/ollama"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
	"lab/scenarios"
)

// bodyChecker passes each request on to the sim and checks the client's bodies of it first:
// [ollama.Client.RequestBodies] must give json.Marshal of [ollama.Client.ChatRequest] (what the
// Ollama api client sent) and [ollama.RenderRequest] of it, byte for byte, and each must decode
// to the same api.ChatRequest.
type bodyChecker struct {
	t       *testing.T
	name    string
	c       *ollama.Client
	inner   harness.Backend
	checked int
}

func (b *bodyChecker) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.t.Helper()
	creq, err := b.c.ChatRequest(req)
	if err != nil {
		b.t.Fatalf("%s request %d: %v", b.name, b.checked+1, err)
	}
	want, err := json.Marshal(creq)
	if err != nil {
		b.t.Fatal(err)
	}
	wantRender, err := ollama.RenderRequest(creq)
	if err != nil {
		b.t.Fatal(err)
	}
	body, render, err := b.c.RequestBodies(req)
	if err != nil {
		b.t.Fatalf("%s request %d: RequestBodies: %v", b.name, b.checked+1, err)
	}
	for _, tc := range []struct {
		what      string
		got, want []byte
		n         int
	}{{"request", body.Bytes(), want, body.Len()}, {"rendering request", render.Bytes(), wantRender, render.Len()}} {
		if !bytes.Equal(tc.got, tc.want) || tc.n != len(tc.want) {
			i := 0
			for i < len(tc.got) && i < len(tc.want) && tc.got[i] == tc.want[i] {
				i++
			}
			b.t.Fatalf("%s request %d: the %s body (%d bytes, Len %d) differs from json.Marshal's (%d) at byte %d: %.80q against %.80q",
				b.name, b.checked+1, tc.what, len(tc.got), tc.n, len(tc.want), i, tc.got[i:], tc.want[i:])
		}
		var g, w api.ChatRequest
		if err := json.Unmarshal(tc.got, &g); err != nil {
			b.t.Fatalf("%s request %d: the %s body does not decode: %v", b.name, b.checked+1, tc.what, err)
		}
		if err := json.Unmarshal(tc.want, &w); err != nil {
			b.t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			b.t.Fatalf("%s request %d: the %s body decodes otherwise than json.Marshal's", b.name, b.checked+1, tc.what)
		}
	}
	b.checked++
	return b.inner.Send(ctx, req, reply)
}

// For every request of every built-in scenario with the spec, plain and practice arms (new
// turns, compactions, results a practice rewrites, a system prompt rebuilt each request, tool
// lists that change), the pieces the client sends are the bytes the api client sent: one client
// a session, so each request reuses the encodings the previous one left.
func TestRequestBodyIsTheAPIClientsBytes(t *testing.T) {
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	names := "spec,plain,date-in-system-prompt,prune-old-output,last-5-observations,compaction-separate-request,reasoning-never"
	if testing.Short() {
		names = "spec"
	}
	armList, err := arms.Select(arms.Builtin(), names)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range scenarios.Names() {
		sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", name)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range armList {
			c, err := ollama.New("http://127.0.0.1:1", "lab-synth")
			if err != nil {
				t.Fatal(err)
			}
			s, err := sim.New(sim.Options{Model: &cachesim.Ideal{}, Tokenizer: tinytokenizer.Bytes{}})
			if err != nil {
				t.Fatal(err)
			}
			be := &bodyChecker{t: t, name: name + "/" + a.Name, c: c, inner: s}
			err = harness.RunSession(context.Background(), harness.SessionConfig{
				Scenario: sc, Arm: a, Repetition: 1, RunID: "t", Loop: loop, Backend: be,
				Tokenizer: tinytokenizer.Bytes{}, Sink: &metrics.MemorySink{}, SandboxDir: t.TempDir(),
				Retry: harness.RetryPolicy{Attempts: 1},
			})
			if err != nil {
				t.Fatalf("%s/%s: %v", name, a.Name, err)
			}
			total += be.checked
		}
	}
	if total < 250 {
		t.Errorf("%d requests checked; want the scenarios' hundreds", total)
	}
	t.Logf("%d requests checked", total)
}

// A message changed in place at the same index (its text, a call's arguments in place, its
// tool name), a tool list changed, the seed and think changed: the next body is json.Marshal's
// of the changed request, not the kept encoding; a body handed out before keeps its bytes.
func TestRequestBodyFollowsChanges(t *testing.T) {
	c, err := ollama.New("http://127.0.0.1:1", "m")
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"path":"a.go"}`)
	req := &chat.Request{Think: true, Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "sys <b> & \u2028"},
		{Role: chat.RoleUser, Content: "go"},
		{Role: chat.RoleAssistant, Reasoning: "think", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: args}}},
		{Role: chat.RoleTool, Content: "body", ToolName: "read", ToolCallID: "c1"},
	}, Tools: []chat.Tool{{Name: "read", Description: "Read.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}}
	check := func(what string) []byte {
		t.Helper()
		creq, err := c.ChatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(creq)
		body, render, err := c.RequestBodies(req)
		if want, _ := ollama.RenderRequest(creq); !bytes.Equal(render.Bytes(), want) {
			t.Fatalf("%s: rendering body\n%s\nwant\n%s", what, render.Bytes(), want)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := body.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("%s: body\n%s\nwant\n%s", what, got, want)
		}
		return body.Bytes()
	}
	first := append([]byte(nil), check("first")...)
	held, _, _ := c.RequestBodies(req)
	req.Messages[1].Content = "go on"
	check("a message's text")
	args[2] = 'P' // the arguments' bytes changed in place: {"Path":"a.go"}
	check("a call's arguments in place")
	req.Messages[3].ToolName = "grep"
	check("a tool name")
	req.Messages[0].Content = "sys again"
	req.Messages[2].ToolCalls[0].Arguments = json.RawMessage(`{"path":`)
	if _, _, err := c.RequestBodies(req); err == nil {
		t.Fatal("arguments that are not JSON: no error")
	}
	req.Messages[2].ToolCalls[0].Arguments = args
	check("after an error")
	req.Messages = append(req.Messages, chat.Message{Role: chat.RoleUser, Content: "more"})
	check("a message more")
	req.Messages = req.Messages[:2]
	check("fewer messages")
	req.Tools[0].Description = "Read a file."
	check("the tool list")
	req.Think = false
	c.SetSeed(7)
	check("think and the seed")
	req.Generate = 16
	check("a live request")
	if !bytes.Equal(held.Bytes(), first) {
		t.Errorf("a body handed out changed with the later requests:\n%s\nwant\n%s", held.Bytes(), first)
	}
}
