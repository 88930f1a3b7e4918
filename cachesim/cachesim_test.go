package cachesim

import "testing"

func TestCommonPrefix(t *testing.T) {
	for _, tc := range []struct {
		a, b []int32
		want int
	}{
		{nil, []int32{1}, 0},
		{[]int32{1, 2, 3}, []int32{1, 2, 3}, 3},
		{[]int32{1, 2, 3}, []int32{1, 2, 4, 5}, 2},
		{[]int32{1, 2}, []int32{1, 2, 3}, 2},
		{[]int32{9}, []int32{1}, 0},
	} {
		if got := CommonPrefix(tc.a, tc.b); got != tc.want {
			t.Errorf("CommonPrefix(%v, %v) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSegmentsAttributeFramingToTheMessage(t *testing.T) {
	rendered := "<|im_start|>system\nYou are X.\n# Tools\n{\"name\": \"read\"}<|im_end|>\n" +
		"<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nHi<|im_end|>\n<|im_start|>assistant\n"
	segs := Segments(rendered, []Part{
		{Name: seg("system"), Text: "You are X."},
		{Name: seg("tools"), Text: `"name": "read"`},
		{Name: seg("message 1"), Text: "Hello there"},
		{Name: seg("reasoning 2"), Text: "hmm"},
		{Name: seg("message 2"), Text: "Hi"},
		{Name: seg("message 9"), Text: "not rendered"},
	})
	at := func(s string) string {
		for i := 0; i+len(s) <= len(rendered); i++ {
			if rendered[i:i+len(s)] == s {
				return SegmentAt(segs, i).String()
			}
		}
		t.Fatalf("%q not in rendered", s)
		return ""
	}
	for _, tc := range []struct{ at, want string }{
		{"<|im_start|>system", "system"},
		{"# Tools", "tools"},
		{"<|im_start|>user", "message 1"},
		{"<|im_start|>assistant\n<think>", "reasoning 2"},
		{"</think>", "message 2"},
		{"<|im_start|>assistant\n", "reasoning 2"},
	} {
		if got := at(tc.at); got != tc.want {
			t.Errorf("segment at %q = %q; want %q", tc.at, got, tc.want)
		}
	}
	if got := SegmentAt(segs, len(rendered)-1); got != (Segment{Kind: GenerationPrompt}) {
		t.Errorf("segment at the end = %q; want generation prompt", got.String())
	}
}
