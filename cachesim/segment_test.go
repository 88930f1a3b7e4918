package cachesim

import (
	"strings"
	"testing"
)

// seg is the Segment a name written in the results' divergence_segment column stands for.
func seg(name string) Segment {
	s, err := ParseSegment(name)
	if err != nil {
		panic(err)
	}
	return s
}

// Every kind writes the text the results schema has always written, and reads back to itself.
func TestSegmentStringRoundTrip(t *testing.T) {
	want := map[SegmentKind]string{
		SystemPrompt: "system", ToolList: "tools", SystemMessage: "system 3", DeveloperMessage: "developer 3",
		Message: "message 3", Reasoning: "reasoning 3", ToolResult: "tool result 3", Note: "note",
		GenerationPrompt: "generation prompt", Item: "item 3",
	}
	kinds := SegmentKinds()
	if len(kinds) != len(want) {
		t.Fatalf("SegmentKinds() = %v; want the %d kinds of the test", kinds, len(want))
	}
	for _, k := range kinds {
		s := Segment{Kind: k}
		if k.Indexed() {
			s.Index = 3
		}
		if got := s.String(); got != want[k] {
			t.Errorf("Segment{%d, %d}.String() = %q; want %q", k, s.Index, got, want[k])
		}
		back, err := ParseSegment(s.String())
		if err != nil || back != s {
			t.Errorf("ParseSegment(%q) = %+v, %v; want %+v", s.String(), back, err, s)
		}
		if k.Indexed() != strings.ContainsAny(want[k], "0123456789") {
			t.Errorf("%v.Indexed() = %v", k, k.Indexed())
		}
	}
	for _, name := range []string{"message 0", "tool result 12", "system 0", "developer 1"} {
		if s, err := ParseSegment(name); err != nil || s.String() != name {
			t.Errorf("ParseSegment(%q) = %+v, %v", name, s, err)
		}
	}
	if s, err := ParseSegment(""); err != nil || s != (Segment{}) || s.String() != "" {
		t.Errorf(`ParseSegment("") = %+v, %v; want no segment`, s, err)
	}
}

func TestParseSegmentRefuses(t *testing.T) {
	for _, name := range []string{"message", "message ", "message -1", "message 01", "message x", "tool 3", "notes", "chat 2", "tools 1", "Message 1", "message 1 "} {
		if s, err := ParseSegment(name); err == nil || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("ParseSegment(%q) = %+v, %v; want an error quoting it", name, s, err)
		}
	}
}

// The re-read split counts each kind where its field's doc says.
func TestRereadKinds(t *testing.T) {
	for _, tc := range []struct {
		seg  string
		want Reread
	}{
		{"system", Reread{System: 1}}, {"system 2", Reread{System: 1}}, {"developer 2", Reread{System: 1}},
		{"tools", Reread{Tools: 1}}, {"message 2", Reread{Message: 1}}, {"tool result 2", Reread{ToolResult: 1}},
		{"reasoning 2", Reread{Reasoning: 1}}, {"note", Reread{Note: 1}}, {"generation prompt", Reread{Other: 1}},
	} {
		var r Reread
		r.add(seg(tc.seg), 1)
		if r != tc.want {
			t.Errorf("add(%q) = %+v; want %+v", tc.seg, r, tc.want)
		}
	}
}
