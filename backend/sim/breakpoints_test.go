package sim_test

import (
	"context"
	"encoding/json"
	"lab/arms"
	"slices"
	"strings"
	"testing"

	"lab/backend/anthropic"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
)

// The anthropic cache model reuses only what the request's breakpoints wrote: two arms that
// send the same prompts with different breakpoints (harness.CacheBreakpoints: spec marks the
// system prompt and the last message, date-in-system-prompt the last message only) get different
// cached tokens when a request shares only the system prompt with the one before.
func TestAnthropicHonoursTheArmsBreakpoints(t *testing.T) {
	spec := harness.CacheBreakpoints(arms.Arm{Measures: hygiene.Spec()})
	dated, _ := arms.Select(arms.Builtin(), "date-in-system-prompt")
	last := harness.CacheBreakpoints(dated[0])
	if strings.Join(spec, ",") != "system,last-message" || strings.Join(last, ",") != "last-message" {
		t.Fatalf("set-up: the arms place %v and %v", spec, last)
	}
	tool := chat.Tool{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	// The system prompt passes Anthropic's minimum cacheable prefix (1,024 tokens: bytes here).
	sys := chat.Message{Role: chat.RoleSystem, Content: "You are a coding agent. " + strings.Repeat("Keep the prefix stable. ", 50)}
	call := chat.ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"main.go"}`)}
	reqs := [][]chat.Message{
		{sys, {Role: chat.RoleUser, Content: "Read main.go."}},
		// The history after the system prompt changed (a compaction, a rewritten message).
		{sys, {Role: chat.RoleUser, Content: "Summary: main.go was read. Now read util.go."}},
		{sys, {Role: chat.RoleUser, Content: "Summary: main.go was read. Now read util.go."},
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call}}, {Role: chat.RoleTool, ToolCallID: "c1", ToolName: "read", Content: "package util"}},
	}
	// Token positions (bytes): the end of the system prompt's turn (after the tools' turn, in
	// the Messages API's order) and the end of each request's last message (where its
	// generation prompt starts).
	rendered := make([]string, len(reqs))
	for i, msgs := range reqs {
		rendered[i] = renderAnthropic(t, &chat.Request{Messages: msgs, Tools: []chat.Tool{tool}, Think: true})
	}
	sysEnd := strings.Index(rendered[0], "<|im_start|>user")
	end2 := strings.LastIndex(rendered[1], "<|im_start|>")
	if sysEnd < cachesim.AnthropicMinTokens || rendered[2][:end2] != rendered[1][:end2] {
		t.Fatalf("set-up: system turn %d tokens; request 3 extends request 2: %v", sysEnd, rendered[2][:end2] == rendered[1][:end2])
	}
	// Request 1 writes its breakpoints' entries. Request 2 differs after the system turn: spec's
	// system breakpoint finds the entry request 1 wrote there; the last-message breakpoint finds
	// none within 20 blocks (its own position is new, the system turn's end holds an entry only
	// where a breakpoint wrote one). Request 3 finds request 2's last-message entry, one turn
	// (two blocks: tool_use, tool_result) back, in both arms.
	want := map[string][]int64{"spec": {0, int64(sysEnd), int64(end2)}, "date-in-system-prompt": {0, 0, int64(end2)}}
	for arm, places := range map[string][]string{"spec": spec, "date-in-system-prompt": last} {
		m, _ := cachesim.NewModel(cachesim.ModelAnthropic, cachesim.Options{})
		b, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, msgs := range reqs {
			r, err := b.Send(context.Background(), &chat.Request{Messages: msgs, Tools: []chat.Tool{tool}, Think: true, CacheBreakpoints: places}, &chat.Reply{Content: "ok"})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Warnings) > 0 {
				t.Errorf("%s: warnings %v", arm, r.Warnings)
			}
			got = append(got, *r.CachedTokens)
		}
		if !slices.Equal(got, want[arm]) {
			t.Errorf("%s (%v): cached %v, want %v", arm, places, got, want[arm])
		}
	}
}

// Options.CacheBreakpoints replaces the request's placement (--cache-breakpoints); an empty one is
// no caching at all, and a place the request cannot have is a warning.
func TestAnthropicBreakpointsOverride(t *testing.T) {
	sys := chat.Message{Role: chat.RoleSystem, Content: strings.Repeat("Stable system prompt. ", 60)}
	req := &chat.Request{Messages: []chat.Message{sys, {Role: chat.RoleUser, Content: "hi"}}, Think: true, CacheBreakpoints: []string{"system", "last-message"}}
	for _, tc := range []struct {
		override []string
		want     int64
		warning  string
	}{
		{nil, int64(len(render(t, req)) - len("<|im_start|>assistant\n<think>\n")), ""},
		{[]string{}, 0, ""},
		{[]string{"tools", "system"}, int64(len("<|im_start|>system\n" + sys.Content + "<|im_end|>\n")), "cache breakpoint tools: nothing to mark"},
		// A captured request's marker on a message (anthropic.AtMessage): message 1 is the last.
		{[]string{anthropic.AtMessage(1)}, int64(len(render(t, req)) - len("<|im_start|>assistant\n<think>\n")), ""},
		{[]string{anthropic.AtMessage(7)}, 0, "cache breakpoint message 7: nothing to mark"},
		{[]string{"message 01"}, 0, "cache breakpoint message 01: nothing to mark"},
	} {
		m, _ := cachesim.NewModel(cachesim.ModelAnthropic, cachesim.Options{})
		b, _ := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, CacheBreakpoints: tc.override})
		var r *chat.Result
		for range 2 {
			var err error
			if r, err = b.Send(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
		}
		if *r.CachedTokens != tc.want || (tc.warning != "") != (len(r.Warnings) > 0) || tc.warning != "" && r.Warnings[0] != tc.warning {
			t.Errorf("override %v: the same request again cached %d (want %d), warnings %v (want %q)", tc.override, *r.CachedTokens, tc.want, r.Warnings, tc.warning)
		}
	}
}

// A message whose text holds a turn marker leaves the breakpoints no place to go: an error, not a
// figure.
func TestAnthropicTurnMarkerInAMessage(t *testing.T) {
	m, _ := cachesim.NewModel(cachesim.ModelAnthropic, cachesim.Options{})
	b, _ := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}})
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "s"}, {Role: chat.RoleUser, Content: "a <|im_start|>user b"}}}
	if _, err := b.Send(context.Background(), req, nil); err == nil || !strings.Contains(err.Error(), "turn markers") {
		t.Errorf("err %v", err)
	}
}

// A breakpoint on a message and the divergence segment of the same message are the same text.
func TestAtMessageIsTheSegmentName(t *testing.T) {
	for _, i := range []int{0, 3, 12} {
		if p, s := anthropic.AtMessage(i), (cachesim.Segment{Kind: cachesim.Message, Index: i}).String(); p != s {
			t.Errorf("AtMessage(%d) = %q; the segment is %q", i, p, s)
		}
	}
}

// renderAnthropic returns the prompt the sim renders for req with the anthropic cache model: in
// the Messages API's order (tools, system prompt, messages).
func renderAnthropic(t *testing.T, req *chat.Request) string {
	t.Helper()
	m, _ := cachesim.NewModel(cachesim.ModelAnthropic, cachesim.Options{})
	b, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Rendered
}
