package cachesim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/cachesim"
	"lab/chat"
	"lab/internal/tinytokenizer"
)

// The split of a measured re-read, [cached, prompt), adds up to prompt − cached for every cached
// count, below the expected one (a server that reused less than it could) included, and counts
// by token position: re-reading from 0 re-reads the system prompt, whatever the divergence.
func TestSplitAddsUpAtEveryCachedCount(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	req1 := conversation("You are a coding agent.")
	observe(t, a, req1, cacheText(req1, answer))
	req2 := conversation("You are a coding agent.", answer, result)
	got := observe(t, a, req2, "")
	prompt := got.PromptTokens
	if got.Spans[0].Start != 0 || got.Spans[len(got.Spans)-1].End != prompt {
		t.Fatalf("spans %+v do not cover [0, %d)", got.Spans, prompt)
	}
	for i := 1; i < len(got.Spans); i++ {
		if got.Spans[i].Start != got.Spans[i-1].End {
			t.Fatalf("spans %+v are not contiguous at %d", got.Spans, i)
		}
	}
	for cached := int64(0); cached <= prompt; cached++ {
		r := got.Split(cached, prompt)
		if r.Total() != prompt-cached || r.Unattributed != 0 {
			t.Fatalf("Split(%d, %d) = %+v, total %d; want %d, none unattributed", cached, prompt, r, r.Total(), prompt-cached)
		}
	}
	// A cold read (cached 0, below the expected count) re-reads every segment, the system
	// prompt and the earlier reasoning included; the old split, from the first differing
	// byte, named only the tool result and the generation prompt.
	r := got.Split(0, prompt)
	sys := int64(len("<|im_start|>system\nYou are a coding agent."))
	if r.System != sys || r.Reasoning == 0 {
		t.Errorf("Split(0) = %+v; want system %d and the reasoning sent back", r, sys)
	}
	if r.Tools == 0 || r.Message == 0 || r.Note == 0 || r.ToolResult == 0 || r.Other == 0 {
		t.Errorf("Split(0) = %+v; want every segment re-read", r)
	}
	// Ten cached tokens fewer than expected: those ten, the end of the cached reply's tool call,
	// lie in the segment that runs from the call's name to the end of the tool result (a
	// segment holds the framing before its part), and they are counted there.
	e := got.ExpectedCachedTokens
	d := got.Split(e-10, prompt)
	if diff := d.ToolResult - got.Split(e, prompt).ToolResult; diff != 10 || d.Total() != prompt-e+10 {
		t.Errorf("Split(expected−10) = %+v; want 10 more tool result tokens than Split(expected), total %d", d, prompt-e+10)
	}
}

// A server that counts more prompt tokens than the lab's tokenizer: the positions past the
// tokenizer's count lie in no segment and are counted as unattributed, so the split still adds
// up; an Unknown attribution attributes nothing.
func TestSplitUnattributed(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}}
	req := conversation("You are a coding agent.")
	got := observe(t, a, req, "")
	n := got.PromptTokens
	r := got.Split(n-5, n+3)
	if r.Unattributed != 3 || r.Total() != 8 || r.Other != 5 {
		t.Errorf("Split(n−5, n+3) = %+v; want 5 other, 3 unattributed", r)
	}
	if r := got.Split(n+10, n+3); r.Total() != 0 {
		t.Errorf("Split(cached > prompt) = %+v; want nothing", r)
	}
	var unknown cachesim.Attribution
	if r := unknown.Split(4, 10); r != (cachesim.Reread{Unattributed: 6}) {
		t.Errorf("Unknown.Split(4, 10) = %+v; want 6 unattributed", r)
	}
}

// What is not a note or a tool result is attributed to what it is: a second system message
// and a developer message to the system prompt, a pasted transcript (which quotes session notes)
// to the user message that carries it. The old Parts named the first two "tool result N" and
// took everything after the transcript's last quoted note for a note.
func TestPartsByKind(t *testing.T) {
	t.Parallel()
	transcript := "Summarise this.\n\nThe session:\n\nuser: fix it\n\n<session-note>\nToday is Monday.\n</session-note>\n\nassistant called read {\"path\":\"a.go\"}\n\n[read result]\npackage a"
	req := &chat.Request{Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "You write summaries."},
		{Role: chat.RoleSystem, Content: "A second system prompt."},
		{Role: "developer", Content: "Developer instructions."},
		{Role: chat.RoleUser, Content: transcript},
		{Role: chat.RoleUser, Content: "Go on.\n\n<session-note>\nIt is Tuesday.\n</session-note>\n"},
	}}
	want := []cachesim.Part{
		{Name: seg("system"), Text: "You write summaries."},
		{Name: seg("system 1"), Text: "A second system prompt."},
		{Name: seg("developer 2"), Text: "Developer instructions."},
		{Name: seg("message 3"), Text: transcript},
		{Name: seg("message 4"), Text: "Go on."},
		{Name: seg("note"), Text: "\n\n<session-note>\nIt is Tuesday.\n</session-note>\n"},
	}
	if diff := cmp.Diff(want, cachesim.Parts(req, "<session-note>")); diff != "" {
		t.Errorf("Parts (-want +got):\n%s", diff)
	}
	// And the split counts them so: the whole first request re-read, by kind.
	rendered := "<|im_start|>system\nYou write summaries.<|im_end|>\n<|im_start|>system\nA second system prompt.<|im_end|>\n" +
		"<|im_start|>developer\nDeveloper instructions.<|im_end|>\n<|im_start|>user\n" + transcript + "<|im_end|>\n" +
		"<|im_start|>user\n" + req.Messages[4].Content + "<|im_end|>\n<|im_start|>assistant\n"
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	at, err := a.Observe(req, rendered, "", -1)
	if err != nil {
		t.Fatal(err)
	}
	r := at.Split(0, at.PromptTokens)
	wantNote := int64(len("\n\n<session-note>\nIt is Tuesday.\n</session-note>"))
	wantSys := int64(len("<|im_start|>system\nYou write summaries.<|im_end|>\n<|im_start|>system\nA second system prompt.<|im_end|>\n<|im_start|>developer\nDeveloper instructions."))
	if r.Note != wantNote || r.ToolResult != 0 || r.System != wantSys || r.Total() != at.PromptTokens {
		t.Errorf("Split = %+v; want note %d (the last message's own note only), no tool result, system %d, total %d", r, wantNote, wantSys, at.PromptTokens)
	}
}

// seg is the Segment a name written in the results' divergence_segment column stands for.
func seg(name string) cachesim.Segment {
	s, err := cachesim.ParseSegment(name)
	if err != nil {
		panic(err)
	}
	return s
}
