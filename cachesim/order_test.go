package cachesim_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/cachesim"
	"lab/chat"
	"lab/internal/tinytokenizer"
)

// Anthropic's prefix is tools, system, messages; every other model's is the system prompt first.
func TestOrderOf(t *testing.T) {
	t.Parallel()
	for _, name := range cachesim.ModelNames {
		want := cachesim.SystemThenTools
		if name == cachesim.ModelAnthropic {
			want = cachesim.ToolsThenSystem
		}
		if got := cachesim.OrderOf(name); got != want {
			t.Errorf("OrderOf(%q) = %v, want %v", name, got, want)
		}
	}
	if s := cachesim.ToolsThenSystem.String(); s != "tools, system, messages" {
		t.Errorf("ToolsThenSystem.String() = %q", s)
	}
}

// In the tools-first order the tool list is the first part, before the system prompt; a practice
// mark in the system prompt cuts the system part, and the tool list is named once.
func TestPartsInOrderToolsFirst(t *testing.T) {
	t.Parallel()
	req := &chat.Request{
		Messages: []chat.Message{{Role: chat.RoleSystem, Content: "sys"}, {Role: chat.RoleUser, Content: "do it"}},
		Tools:    tools,
	}
	want := []cachesim.Part{
		{Name: seg("tools"), Text: "Search files for a pattern."},
		{Name: seg("system"), Text: "sys"},
		{Name: seg("message 1"), Text: "do it"},
	}
	if diff := cmp.Diff(want, cachesim.PartsInOrder(req, "", cachesim.ToolsThenSystem)); diff != "" {
		t.Errorf("PartsInOrder tools first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]cachesim.Part{want[1], want[0], want[2]}, cachesim.PartsInOrder(req, "", cachesim.SystemThenTools)); diff != "" {
		t.Errorf("PartsInOrder system first (-want +got):\n%s", diff)
	}
	marked := *req
	marked.Messages = []chat.Message{{Role: chat.RoleSystem, Content: "Today is Monday. sys", Marks: []chat.Mark{{Practice: "clock", Text: "Today is Monday."}}}, req.Messages[1]}
	want = []cachesim.Part{
		{Name: seg("tools"), Text: "Search files for a pattern."},
		{Name: seg("clock in system"), Text: "Today is Monday."},
		{Name: seg("system"), Text: " sys"},
		{Name: seg("message 1"), Text: "do it"},
	}
	if diff := cmp.Diff(want, cachesim.PartsInOrder(&marked, "", cachesim.ToolsThenSystem)); diff != "" {
		t.Errorf("PartsInOrder tools first, a mark in the system prompt (-want +got):\n%s", diff)
	}
}

// A cache that keeps the prefixes its breakpoints wrote (ObserveWrites) reuses only a whole
// written prefix: never the reply, never the part of a prompt past the last entry it matches, and
// an entry of any earlier request counts.
func TestAttributorObserveWrites(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}}
	turn := func(role, text string) string { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n" }
	sys := turn("system", "You are terse.")
	user := turn("user", "Hi")
	gen := "<|im_start|>assistant\n"
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are terse."}, {Role: chat.RoleUser, Content: "Hi"}}}
	// Request 1 writes entries at the end of the system turn and of the user message.
	p1 := sys + user + gen
	at, err := a.ObserveWrites(req, p1, []int{len(sys), len(sys + user)}, -1)
	if err != nil || at.ExpectedCachedTokens != 0 {
		t.Fatalf("first request: expected %d, err %v", at.ExpectedCachedTokens, err)
	}
	// Request 2 extends it with the reply and a new message: the user message's entry, not the
	// reply (Observe with the reply as cache text would count it).
	reply := turn("assistant", "Hello.")
	p2 := sys + user + reply + turn("user", "Bye") + gen
	req2 := &chat.Request{Messages: append(append([]chat.Message{}, req.Messages...), chat.Message{Role: chat.RoleAssistant, Content: "Hello."}, chat.Message{Role: chat.RoleUser, Content: "Bye"})}
	at, err = a.ObserveWrites(req2, p2, []int{}, -1)
	if err != nil || at.ExpectedCachedTokens != int64(len(sys+user)) || at.DivergenceToken != nil {
		t.Fatalf("second request: expected %d (want %d), divergence %v, err %v", at.ExpectedCachedTokens, len(sys+user), at.DivergenceToken, err)
	}
	// Request 3 changes the user message: only the system turn's entry, written two requests
	// back, matches; the divergence lies in message 1, counted against the last entry written.
	p3 := sys + turn("user", "Ho") + gen
	req3 := &chat.Request{Messages: []chat.Message{req.Messages[0], {Role: chat.RoleUser, Content: "Ho"}}}
	at, err = a.ObserveWrites(req3, p3, nil, -1)
	if err != nil || at.ExpectedCachedTokens != int64(len(sys)) || at.DivergenceToken == nil || *at.DivergenceToken != int64(len(sys)+len("<|im_start|>user\nH")) || at.DivergenceSegment != seg("message 1") {
		t.Fatalf("third request: expected %d (want %d), divergence %v at %q, err %v", at.ExpectedCachedTokens, len(sys), at.DivergenceToken, at.DivergenceSegment, err)
	}
}

// On a cache that keeps written prefixes, a practice's text still names the divergence: the
// entry at the end of the system turn holds the system text with its clock line, which the next
// prompt no longer has ("clock in system", where a token position would name what stands there
// now, message 1).
func TestObserveWritesNamesPractices(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}}
	turn := func(role, text string) string { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n" }
	req := func(clock string) (*chat.Request, string, int) {
		sys := "You are terse."
		var marks []chat.Mark
		if clock != "" {
			sys += "\n\n" + clock
			marks = []chat.Mark{{Practice: "clock", Text: clock, End: true}}
		}
		r := &chat.Request{Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: sys, Marks: marks},
			{Role: chat.RoleUser, Content: "Hi"},
		}}
		return r, turn("system", sys) + turn("user", "Hi") + "<|im_start|>assistant\n", len(turn("system", sys))
	}
	r1, p1, sysEnd := req("Time: 23:59")
	if _, err := a.ObserveWrites(r1, p1, []int{sysEnd}, -1); err != nil {
		t.Fatal(err)
	}
	r2, p2, _ := req("")
	at, err := a.ObserveWrites(r2, p2, nil, -1)
	if err != nil || at.DivergenceSegment.String() != "clock in system" || at.ExpectedCachedTokens != 0 {
		t.Errorf("second request: diverged at %q, expected %d, err %v; want clock in system, 0 (the one entry holds the clock line)", at.DivergenceSegment, at.ExpectedCachedTokens, err)
	}
}
