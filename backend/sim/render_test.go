package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	lab "lab"
	"lab/arms"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/scenario"
	"lab/scenarios"
)

// Every request of every scenario under every built-in arm renders, message by message, the
// text Ollama's qwen3.5 renderer writes for the whole conversation (the sim fails a request
// whose renderings differ), on every cache model's order.
func TestIncrementalRenderingIsOllamasOnTheMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole matrix, rendered twice: some 30 s")
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	all, err := arms.Select(arms.Builtin(), "all")
	if err != nil {
		t.Fatal(err)
	}
	var scs []*scenario.Scenario
	for _, n := range scenarios.Names() {
		sc, err := scenario.LoadScenarioFS(scenarios.FS, n+"/scenario.yaml", "scenarios/"+n+"/scenario.yaml")
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	for _, model := range []string{cachesim.ModelLlamaCpp, cachesim.ModelAnthropic} {
		m, err := cachesim.NewModel(model, cachesim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		be, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}})
		if err != nil {
			t.Fatal(err)
		}
		sim.CheckRendering(be)
		cfg := harness.RunConfig{Scenarios: scs, Arms: all, ResultsDir: t.TempDir(), RunID: "render-" + model,
			Loop: loop, Backend: be, BackendName: "sim", Tokenizer: be.Tokenizer(), SandboxDir: t.TempDir(),
			RenderOrder: cachesim.OrderOf(model)}
		n := cfg.Requests()
		if _, _, err := harness.Run(context.Background(), cfg); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if n < 5000 {
			t.Fatalf("%s: %d requests; want the matrix's some 5,000", model, n)
		}
	}
}

// Conversations that grow, are cut, change a message in the middle, switch thinking, end on
// an assistant message (a prefill), run several tool results in a row or hold user messages
// that are tool responses render as Ollama's renderer renders them, each after the one before
// it in the same renderer.
func TestIncrementalRenderingFollowsEveryChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	args := func(s string) api.ToolCallFunctionArguments {
		a := api.NewToolCallFunctionArguments()
		if err := json.Unmarshal([]byte(`{"path":"`+s+`","n":1}`), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	shared := args("a.go")
	var params api.ToolFunctionParameters
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"path":{"type":"string"}}}`), &params); err != nil {
		t.Fatal(err)
	}
	toolsA := []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "read", Description: "Read a file.", Parameters: params}}}
	toolsB := append(toolsA[:1:1], api.Tool{Type: "function", Function: api.ToolFunction{Name: "ls", Description: "List.", Parameters: params}})
	texts := []string{"", "hi", "\nlead\n", "<tool_response>\nx\n</tool_response>", "<tool_response>half", "done\n"}
	message := func() api.Message {
		switch rng.IntN(6) {
		case 0, 1:
			return api.Message{Role: "user", Content: texts[rng.IntN(len(texts))]}
		case 2:
			m := api.Message{Role: "assistant", Content: texts[rng.IntN(len(texts))], Thinking: texts[rng.IntN(len(texts))]}
			for range rng.IntN(3) {
				a := shared
				if rng.IntN(2) == 0 {
					a = args(fmt.Sprint(rng.IntN(3)))
				}
				m.ToolCalls = append(m.ToolCalls, api.ToolCall{Function: api.ToolCallFunction{Name: "read", Arguments: a}})
			}
			return m
		case 3, 4:
			return api.Message{Role: "tool", Content: texts[rng.IntN(len(texts))]}
		default:
			return api.Message{Role: []string{"system", "developer"}[rng.IntN(2)], Content: texts[rng.IntN(len(texts))]}
		}
	}
	var r sim.Render
	var msgs []api.Message
	tools := toolsA
	for step := range 3000 {
		switch k := rng.IntN(10); {
		case k < 5:
			msgs = append(msgs, message())
		case k == 5 && len(msgs) > 0:
			msgs = msgs[:rng.IntN(len(msgs))]
		case k == 6 && len(msgs) > 0:
			msgs = append([]api.Message(nil), msgs...)
			msgs[rng.IntN(len(msgs))] = message()
		case k == 7:
			tools = [][]api.Tool{nil, toolsA, toolsB}[rng.IntN(3)]
		case k == 8 && len(msgs) > 0:
			msgs = append([]api.Message(nil), msgs...)
			msgs[0] = api.Message{Role: "system", Content: texts[rng.IntN(len(texts))]}
		}
		if len(msgs) > 30 {
			msgs = msgs[len(msgs)-10:]
		}
		var think *api.ThinkValue
		if v := rng.IntN(3); v > 0 {
			think = &api.ThinkValue{Value: v == 1}
		}
		var toolsJSON []byte
		if len(tools) > 0 {
			var err error
			if toolsJSON, err = json.Marshal(tools); err != nil {
				t.Fatal(err)
			}
		}
		want, err := renderers.RenderWithRenderer(sim.Renderer, msgs, tools, think)
		if err != nil {
			t.Fatal(err)
		}
		after := []string{"", "reply<|im_end|>"}[step%2]
		got, err := r.Render(msgs, tools, toolsJSON, think, after)
		if err != nil || got != want+after {
			t.Fatalf("step %d (%d messages): the incremental rendering differs (err %v)\ngot  %q\nwant %q", step, len(msgs), err, got, want)
		}
	}
}
