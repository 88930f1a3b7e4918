package sim_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/internal/tinytokenizer"
)

// orderStep is one request of a provider-order session and what it cost.
type orderStep struct {
	res *chat.Result
	at  cachesim.Attribution
}

// sendOrdered sends reqs through a fresh sim with the cache model called model and attributes
// each as the harness does (cachesim.Attributor in the model's order; ObserveWrites where the
// sim reports the entries it wrote).
func sendOrdered(t *testing.T, model string, reqs []*chat.Request) []orderStep {
	t.Helper()
	m, err := cachesim.NewModel(model, cachesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}})
	if err != nil {
		t.Fatal(err)
	}
	att := &cachesim.Attributor{Tok: b.Tokenizer(), Order: cachesim.OrderOf(model)}
	var out []orderStep
	for _, req := range reqs {
		res, err := b.Send(context.Background(), req, &chat.Reply{Content: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		var at cachesim.Attribution
		if res.CacheWrites != nil {
			at, err = att.ObserveWrites(req, res.Rendered, res.CacheWrites, res.PromptTokens)
		} else {
			at, err = att.Observe(req, res.Rendered, res.CacheText, res.PromptTokens)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, orderStep{res, at})
	}
	return out
}

// Each provider model renders in its provider's order (cachesim.OrderOf), so one change costs
// what it costs there. The session sends a request, then the same request with the tool list
// changed (the first tool's description) or the system prompt changed (its first word), with
// breakpoints at the tools, the system prompt and the last message (the anthropic model's;
// the others ignore them). With the byte tokenizer a token is a byte.
//
//   - System first (Qwen3's template: ideal, llamacpp, vllm; OpenAI's order): a tool-list change
//     keeps the system prompt cached and re-reads no system token; a system change re-reads the
//     system prompt and the tools.
//   - Tools first (anthropic): a system change keeps the tools cached (the entry the tools
//     breakpoint wrote) and re-reads no tool token; a tool-list change re-reads everything.
//
// Either way the divergence is named where the change is: "tools" or "system".
func TestProviderOrderCostsTheChangeWhereItIs(t *testing.T) {
	sys := "You are a coding agent. " + strings.Repeat("Keep the prefix stable. ", 60)
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	tools := []chat.Tool{
		{Name: "read", Description: "Read a file. " + strings.Repeat("It returns the file's lines, numbered. ", 30), Parameters: params},
		{Name: "list", Description: "List a folder. " + strings.Repeat("It returns the names, folders last. ", 30), Parameters: params},
	}
	request := func(sys string, tools []chat.Tool) *chat.Request {
		return &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: sys}, {Role: chat.RoleUser, Content: "Read main.go."}},
			Tools: tools, Think: true, CacheBreakpoints: []string{"tools", "system", "last-message"}}
	}
	changedTools := append([]chat.Tool{}, tools...)
	changedTools[0].Description = "Open a file. " + strings.TrimPrefix(tools[0].Description, "Read a file. ")
	changes := map[string]*chat.Request{
		"tools":  request(sys, changedTools),
		"system": request("You were a coding agent. "+strings.TrimPrefix(sys, "You are a coding agent. "), tools),
	}
	for _, model := range cachesim.ModelNames {
		for change, req := range changes {
			steps := sendOrdered(t, model, []*chat.Request{request(sys, tools), req})
			second := steps[1]
			rendered := second.res.Rendered
			cached, prompt := *second.res.CachedTokens, second.res.PromptTokens
			split := second.at.Split(cached, prompt)
			toolsAt := int64(strings.Index(rendered, "# Tools"))
			sysAt := int64(strings.Index(rendered, "You "))
			if name := second.at.DivergenceSegment.String(); name != change {
				t.Errorf("%s, %s changed: divergence %q, want %q", model, change, name, change)
			}
			switch order := cachesim.OrderOf(model); {
			case order == cachesim.ToolsThenSystem:
				if toolsAt > sysAt {
					t.Fatalf("%s: the tools (byte %d) render after the system prompt (%d)", model, toolsAt, sysAt)
				}
				// The tools' turn ends where the system prompt's starts.
				toolsEnd := int64(strings.Index(rendered[1:], "<|im_start|>") + 1)
				want := map[string]int64{"tools": 0, "system": toolsEnd}[change]
				if cached != want || split.Tools != 0 && change == "system" || split.Tools == 0 && change == "tools" {
					t.Errorf("%s, %s changed: cached %d (want %d), re-read %+v", model, change, cached, want, split)
				}
				// The expected figure counts what the breakpoints wrote, as the model does.
				if e := second.at.ExpectedCachedTokens; e != cached {
					t.Errorf("%s, %s changed: expected %d, cached %d", model, change, e, cached)
				}
			default:
				if sysAt > toolsAt {
					t.Fatalf("%s: the system prompt (byte %d) renders after the tools (%d)", model, sysAt, toolsAt)
				}
				switch change {
				case "tools":
					// The system prompt stays cached (OpenAI's at its 1,024 + 128·k granularity).
					if cached < int64(len(sys))-cachesim.OpenAIStep || split.System != 0 || split.Tools == 0 {
						t.Errorf("%s, tools changed: cached %d of a %d-byte system prompt, re-read %+v", model, cached, len(sys), split)
					}
				case "system":
					if cached > sysAt+int64(len("You ")) || split.System == 0 || split.Tools == 0 {
						t.Errorf("%s, system changed: cached %d, re-read %+v; want the system prompt and the tools re-read", model, cached, split)
					}
				}
			}
		}
	}
}
