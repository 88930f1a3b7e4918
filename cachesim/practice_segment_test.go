package cachesim

import (
	"strings"
	"testing"

	"lab/chat"
)

// A practice's text inside a message is a segment of its own, named after the practice and
// read back by ParseSegment.
func TestPracticeSegments(t *testing.T) {
	for _, name := range []string{"clock in message 1", "prune in tool result 5", "instructions in system", "cwd in tools"} {
		seg, err := ParseSegment(name)
		if err != nil || seg.String() != name || seg.Practice == "" {
			t.Errorf("ParseSegment(%q) = %+v, %v", name, seg, err)
		}
	}
	for _, bad := range []string{"clock in", "Clock in message 1", "clock in chat 2"} {
		if _, err := ParseSegment(bad); err == nil {
			t.Errorf("ParseSegment(%q): no error", bad)
		}
	}
	line := "Current time: 2026-03-01 23:59"
	req := &chat.Request{Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "You are an agent."},
		{Role: chat.RoleUser, Content: "Fix the bug.\n\n" + line, Marks: []chat.Mark{{Practice: "clock", Text: line}}},
	}}
	rendered := "<|im_start|>system\nYou are an agent.<|im_end|>\n<|im_start|>user\nFix the bug.\n\n" + line + "<|im_end|>\n<|im_start|>assistant\n"
	segs := Segments(rendered, Parts(req, ""))
	var names []string
	for _, s := range segs {
		names = append(names, s.Name.String())
	}
	want := []string{"system", "message 1", "clock in message 1", "generation prompt"}
	if len(names) != len(want) {
		t.Fatalf("segments %q; want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("segments %q; want %q", names, want)
		}
	}
	at := len(rendered) - len(line+"<|im_end|>\n<|im_start|>assistant\n") + 15 // inside the time
	if got := SegmentAt(segs, at).String(); got != "clock in message 1" {
		t.Errorf("segment at the clock line: %q", got)
	}
}

// A practice's mark in a tool's description is a segment of its own inside the tool list
// ("cwd in tools"); the rest of the list stays "tools", to the last description's end.
func TestPracticeSegmentInTools(t *testing.T) {
	line := "Working directory: /tmp/lab-session-2/demo"
	req := &chat.Request{
		Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are an agent."}, {Role: chat.RoleUser, Content: "Fix it."}},
		Tools: []chat.Tool{
			{Name: "read", Description: "Read a file.\n\n" + line, Marks: []chat.Mark{{Practice: "cwd", Text: line}}},
			{Name: "recall", Description: "Show a stored result."},
		},
	}
	rendered := "<|im_start|>system\nYou are an agent.\n\n<tools>\n" +
		`{"name":"read","description":"Read a file.\n\n` + line + `"}` + "\n" +
		`{"name":"recall","description":"Show a stored result."}` + "\n</tools><|im_end|>\n<|im_start|>user\nFix it.<|im_end|>\n<|im_start|>assistant\n"
	segs := Segments(rendered, Parts(req, ""))
	var names []string
	for _, s := range segs {
		names = append(names, s.Name.String())
	}
	want := []string{"system", "tools", "cwd in tools", "tools", "message 1", "generation prompt"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("segments %q; want %q", names, want)
	}
	if got := SegmentAt(segs, strings.Index(rendered, "session-2")).String(); got != "cwd in tools" {
		t.Errorf("segment at the folder: %q", got)
	}
}
