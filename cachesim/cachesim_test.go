package cachesim

import (
	"slices"
	"testing"
)

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

// The block comparison finds the first difference wherever it lies: in the first bytes, inside
// or at the edge of a large block, in the last bytes, or nowhere (one text a prefix of the
// other); token ids whose bytes differ only in their last byte, or in their first, too.
func TestCommonPrefixEveryPosition(t *testing.T) {
	const n = 40000
	base := make([]byte, n)
	ids := make([]int32, n/4)
	for i := range base {
		base[i] = byte('a' + i%23)
	}
	for i := range ids {
		ids[i] = int32(i * 7919)
	}
	for _, at := range []int{0, 1, 7, 8, 63, 64, 65, 127, 128, 191, 192, 1000, 4095, 4096, 16383, 16384, 16447, 30000, n - 9, n - 1, n} {
		other := []byte(string(base))
		if at < n {
			other[at] ^= 1
		}
		for _, cut := range []int{n, n - 1} {
			want := min(at, cut)
			if got := CommonPrefixBytes(string(base), string(other[:cut])); got != want {
				t.Errorf("CommonPrefixBytes: difference at %d, lengths %d and %d: %d; want %d", at, n, cut, got, want)
			}
		}
		if k := at / 4; k < len(ids) {
			for _, flip := range []int32{1, 1 << 24} {
				o := slices.Clone(ids)
				o[k] ^= flip
				if got := CommonPrefix(ids, o); got != k {
					t.Errorf("CommonPrefix: difference at token %d (xor %#x): %d", k, flip, got)
				}
			}
		}
	}
	if got := CommonPrefix(ids, ids[:100]); got != 100 {
		t.Errorf("CommonPrefix of a prefix: %d; want 100", got)
	}
	if got := CommonPrefix([]int32(nil), ids); got != 0 {
		t.Errorf("CommonPrefix of nothing: %d; want 0", got)
	}
}
