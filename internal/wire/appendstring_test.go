package wire

import (
	"strings"
	"testing"
)

// AppendString writes every string as Marshal does, byte for byte: escapes, control bytes,
// invalid UTF-8, the line and paragraph separators, HTML characters left as they are.
func TestAppendStringIsMarshal(t *testing.T) {
	cases := []string{"", "plain text", `quote " and \ backslash`, "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "<b>&amp;</b>", "héllo wörld — ✓ 🙂", "bad \xff\xfe utf-8 \xc3",
		"sep\u2028para\u2029end", strings.Repeat("long run of text ", 1000) + "\"end\""}
	for b := range 256 {
		cases = append(cases, string([]byte{byte(b)}), "a"+string([]byte{byte(b)})+"z")
	}
	for _, s := range cases {
		want, err := Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %q; Marshal writes %q", s, got[1:], want)
		}
	}
}

// FuzzAppendString: on any string, AppendString writes what Marshal writes.
func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %q; Marshal writes %q", s, got, want)
		}
	})
}
