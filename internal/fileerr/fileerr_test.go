package fileerr

import "testing"

func TestSyntaxErrorPrintsFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		e    SyntaxError
		want string
	}{
		{SyntaxError{File: "a.yaml", Line: 3, Msg: "unknown field"}, "a.yaml:3: unknown field"},
		{SyntaxError{File: "a.yaml", Msg: "empty file"}, "a.yaml: empty file"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q; want %q", tc.e, got, tc.want)
		}
	}
}

func TestSplitYAMLLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		line int
		rest string
	}{
		{"yaml: line 12: did not find expected key", 12, "did not find expected key"},
		{"line 4: field x not found in type T", 4, "field x not found in type T"},
		{"yaml: control characters are not allowed", 0, "yaml: control characters are not allowed"},
		{"line x: not a number", 0, "line x: not a number"},
	} {
		line, rest := SplitYAMLLine(tc.in)
		if line != tc.line || rest != tc.rest {
			t.Errorf("SplitYAMLLine(%q) = %d, %q; want %d, %q", tc.in, line, rest, tc.line, tc.rest)
		}
	}
}
