package hygiene

import (
	"reflect"
	"strings"
	"testing"

	lab "lab"
	"lab/chat"
)

// reasonings lists each message's Reasoning, comma-joined.
func reasonings(ms []chat.Message) string {
	var rs []string
	for _, m := range ms {
		rs = append(rs, m.Reasoning)
	}
	return strings.Join(rs, ",")
}

func TestCurrentTurnReasoning(t *testing.T) {
	h := []chat.Message{
		{Role: chat.RoleSystem, Content: "s"},
		{Role: chat.RoleUser, Content: "u1"},
		{Role: chat.RoleAssistant, Reasoning: "r1"},
		{Role: chat.RoleTool, Content: "t"},
		{Role: chat.RoleAssistant, Reasoning: "r2"},
		{Role: chat.RoleUser, Content: "u2"},
		{Role: chat.RoleAssistant, Reasoning: "r3"},
		{Role: chat.RoleTool, Content: "t"},
	}
	got := CurrentTurnReasoning(h, Spec())
	if rs := reasonings(got); rs != ",,,,,,r3," {
		t.Fatalf("reasoning sent = %q; want only the current turn's r3", rs)
	}
	if h[2].Reasoning != "r1" {
		t.Fatal("CurrentTurnReasoning changed the stored history")
	}
	off := Spec()
	off.ReasoningThisTurn = false
	for _, m := range CurrentTurnReasoning(h, off) {
		if m.Reasoning != "" {
			t.Fatalf("with §8 off a message carries reasoning %q", m.Reasoning)
		}
	}
}

func TestTurnStart(t *testing.T) {
	u := func(c string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: c} }
	a := chat.Message{Role: chat.RoleAssistant}
	tool := chat.Message{Role: chat.RoleTool}
	for _, tc := range []struct {
		name string
		h    []chat.Message
		want int
	}{
		{"empty", nil, -1},
		{"no user message", []chat.Message{{Role: chat.RoleSystem}, a, tool, a}, -1},
		{"tool result never starts a turn", []chat.Message{u("x"), a, tool, a, tool}, 0},
		{"interjection does not", []chat.Message{u("x"), a, tool, {Role: chat.RoleUser, Interjection: true}, a}, 0},
		{"new user message does", []chat.Message{u("x"), a, u("y"), a}, 2},
		{"summary resets", []chat.Message{u("x"), a, {Role: chat.RoleAssistant, Summary: true}, a}, 2},
		{"user after summary", []chat.Message{{Role: chat.RoleUser, Summary: true}, a, u("y"), a}, 2},
	} {
		if got := TurnStart(tc.h); got != tc.want {
			t.Errorf("%s: TurnStart = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestCurrentTurnReasoningRules(t *testing.T) {
	sig := []chat.ThinkingBlock{{Text: "t3", Signature: "S3"}, {Redacted: true, Data: "D3"}}
	h := []chat.Message{
		{Role: chat.RoleUser, Content: "u1"},
		{Role: chat.RoleAssistant, Reasoning: "r1", Thinking: []chat.ThinkingBlock{{Text: "t1", Signature: "S1"}}},
		{Role: chat.RoleUser, Content: "u2"},
		{Role: chat.RoleAssistant, Reasoning: "r2", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: []byte(`{}`)}}},
		{Role: chat.RoleTool, Content: "res", ToolCallID: "c1"},
		{Role: chat.RoleUser, Content: "also this", Interjection: true},
		{Role: chat.RoleAssistant, Reasoning: "r3", Thinking: sig},
		{Role: chat.RoleAssistant, Content: "no reasoning"},
	}
	got := CurrentTurnReasoning(h, Spec())
	if rs := reasonings(got); rs != ",,,r2,,,r3," {
		t.Fatalf("reasoning sent = %q", rs)
	}
	if got[1].Thinking != nil {
		t.Fatalf("earlier turn's thinking blocks sent: %+v", got[1].Thinking)
	}
	if !reflect.DeepEqual(got[6].Thinking, sig) {
		t.Fatalf("current turn's thinking blocks = %+v, want %+v unchanged", got[6].Thinking, sig)
	}
	if got[7].Reasoning != "" || got[7].Thinking != nil {
		t.Fatal("a message that came with no reasoning carries some")
	}
	off := Spec()
	off.ReasoningThisTurn = false
	if got := CurrentTurnReasoning(h, off); got[6].Thinking != nil || got[6].Reasoning != "" {
		t.Fatalf("§8 off: current turn's message carries %+v", got[6])
	}
	// A summary starts the history afresh, even mid-turn; the summary itself carries none.
	h2 := []chat.Message{
		{Role: chat.RoleUser, Content: "u1"},
		{Role: chat.RoleAssistant, Reasoning: "r1"},
		{Role: chat.RoleTool, Content: "res"},
		{Role: chat.RoleAssistant, Reasoning: "rs", Content: "summary", Summary: true},
		{Role: chat.RoleAssistant, Reasoning: "r2"},
	}
	if rs := reasonings(CurrentTurnReasoning(h2, Spec())); rs != ",,,,r2" {
		t.Fatalf("after a summary, reasoning sent = %q; want ,,,,r2", rs)
	}
	if h2[1].Reasoning != "r1" || h[1].Thinking == nil {
		t.Fatal("the stored history changed")
	}
}

func TestCurrentTurnReasoningInline(t *testing.T) {
	tags := []TagPair{{Start: "<think>", End: "</think>"}}
	h := []chat.Message{
		{Role: chat.RoleUser, Content: "u1"},
		{Role: chat.RoleAssistant, Content: "<think>\nold\n</think>\n\nold answer"},
		{Role: chat.RoleUser, Content: "u2 <think>not mine</think>"},
		{Role: chat.RoleAssistant, Content: "<think>\nnew\n</think>\n\ncalling"},
		{Role: chat.RoleTool, Content: "<think>in a result</think>"},
		{Role: chat.RoleAssistant, Reasoning: "field", Content: "<think>inline</think>done"},
		{Role: chat.RoleAssistant, Content: "<think>\n\n</think>\n\nempty"},
	}
	got := CurrentTurnReasoningWith(h, Spec(), tags)
	var cs []string
	for _, m := range got {
		cs = append(cs, m.Content)
	}
	wantC := "u1|old answer|u2 <think>not mine</think>|calling|<think>in a result</think>|done|empty"
	if c := strings.Join(cs, "|"); c != wantC {
		t.Fatalf("contents = %q\nwant       %q", c, wantC)
	}
	if rs := reasonings(got); rs != ",,,new,,field\ninline," {
		t.Fatalf("reasoning = %q", rs)
	}
	off := Spec()
	off.ReasoningThisTurn = false
	got = CurrentTurnReasoningWith(h, off, tags)
	if got[3].Content != h[3].Content || got[3].Reasoning != "" {
		t.Fatalf("§8 off: message = %+v; want content as stored, no reasoning", got[3])
	}
	if h[3].Content != "<think>\nnew\n</think>\n\ncalling" {
		t.Fatal("the stored history changed")
	}
}

func TestSplitInlineReasoning(t *testing.T) {
	think := TagPair{Start: "<think>", End: "</think>"}
	pre := TagPair{Start: "<think>", End: "</think>", Prefilled: true}
	seed := TagPair{Start: "<seed:think>", End: "</seed:think>"}
	for _, tc := range []struct {
		content              string
		tags                 []TagPair
		wantReason, wantRest string
	}{
		{"<think>\nr\n</think>\n\nanswer", []TagPair{think}, "r", "answer"},
		{"  \n<think>r</think>a", []TagPair{think}, "r", "a"},
		{"answer <think>r</think>", []TagPair{think}, "", "answer <think>r</think>"},
		{"<think>cut off", []TagPair{think}, "cut off", ""},
		{"r\n</think>\n\na", []TagPair{think}, "", "r\n</think>\n\na"},
		{"r\n</think>\n\na", []TagPair{pre}, "r", "a"},
		{"see <think>x</think> here", []TagPair{pre}, "", "see <think>x</think> here"},
		{"<seed:think>s</seed:think>x", []TagPair{think, seed}, "s", "x"},
		{"plain", []TagPair{think}, "", "plain"},
		{"<think>r</think>a", nil, "", "<think>r</think>a"},
		{"<think>a</think>b</think>c", []TagPair{think}, "a", "b</think>c"},
	} {
		r, rest := SplitInlineReasoning(tc.content, tc.tags)
		if r != tc.wantReason || rest != tc.wantRest {
			t.Errorf("SplitInlineReasoning(%q) = %q, %q; want %q, %q", tc.content, r, rest, tc.wantReason, tc.wantRest)
		}
	}
}

func TestCommittedQuirks(t *testing.T) {
	q, err := ParseQuirks(lab.QuirksJSON)
	if err != nil {
		t.Fatal(err)
	}
	d := q.ReasoningFields.Dialects
	if d["openai"].Request != "reasoning_content" || d["ollama"].Request != "thinking" || d["anthropic"].Request != "thinking" {
		t.Fatalf("dialect request fields = %+v", d)
	}
	for model, want := range map[string]TagPair{
		"qwen3:8b":                  {Start: "<think>", End: "</think>", Prefilled: true},
		"Qwen3-30B-A3B-Thinking":    {Start: "<think>", End: "</think>", Prefilled: true},
		"ByteDance-Seed/Seed-OSS":   {Start: "<seed:think>", End: "</seed:think>", Prefilled: true},
		"magistral-small-2509":      {Start: "[THINK]", End: "[/THINK]"},
		"some-unknown-model:latest": {Start: "<think>", End: "</think>"},
	} {
		if got := q.InlineTags(model); len(got) != 1 || got[0] != want {
			t.Errorf("InlineTags(%q) = %+v, want [%+v]", model, got, want)
		}
	}
}

func TestParseQuirksStrict(t *testing.T) {
	good := `{"reasoning-fields": {"dialects": {"openai": {"request": "reasoning_content", "response": ["reasoning_content"]},
 "ollama": {"request": "thinking", "response": ["thinking"]}, "anthropic": {"request": "thinking", "response": ["thinking"]}},
 "families": [FAM], "default": [{"start": "<think>", "end": "</think>"}]}}`
	fam := `{"name": "x", "match": ["x"], "tags": [{"start": "<t>", "end": "</t>"}]}`
	if _, err := ParseQuirks([]byte(strings.Replace(good, "FAM", fam, 1))); err != nil {
		t.Fatalf("good file: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown key":    strings.Replace(good, "FAM", `{"name": "x", "match": ["x"], "tags": [{"start": "<t>", "end": "</t>"}], "tagz": 1}`, 1),
		"empty end":      strings.Replace(good, "FAM", `{"name": "x", "match": ["x"], "tags": [{"start": "<t>", "end": ""}]}`, 1),
		"no match":       strings.Replace(good, "FAM", `{"name": "x", "match": [], "tags": [{"start": "<t>", "end": "</t>"}]}`, 1),
		"uppercase":      strings.Replace(good, "FAM", `{"name": "x", "match": ["X"], "tags": [{"start": "<t>", "end": "</t>"}]}`, 1),
		"no tags":        strings.Replace(good, "FAM", `{"name": "x", "match": ["x"], "tags": []}`, 1),
		"trailing data":  strings.Replace(good, "FAM", fam, 1) + "{}",
		"no ollama":      strings.Replace(strings.Replace(good, "FAM", fam, 1), `"ollama"`, `"olama"`, 1),
		"no default":     strings.Replace(strings.Replace(good, "FAM", fam, 1), `"default": [{"start": "<think>", "end": "</think>"}]`, `"default": []`, 1),
		"empty response": strings.Replace(strings.Replace(good, "FAM", fam, 1), `"response": ["thinking"]}}`, `"response": []}}`, 1),
	} {
		if _, err := ParseQuirks([]byte(bad)); err == nil {
			t.Errorf("%s: ParseQuirks accepted it", name)
		}
	}
}
