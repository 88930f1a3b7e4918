package tools

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePatch(t *testing.T) {
	patch := strings.Join([]string{
		"*** Begin Patch",
		"*** Add File: hello.txt",
		"+Hello world",
		"+",
		"*** Update File: src/app.py",
		"*** Move to: src/main.py",
		"@@ def greet():",
		"-print(\"Hi\")",
		"+print(\"Hello, world!\")",
		"*** Delete File: obsolete.txt",
		"*** Update File: b.txt",
		" a",
		"-b",
		"",
		"@@",
		"+tail",
		"*** End of File",
		"*** End Patch",
	}, "\n")
	got, err := ParsePatch("\n  " + patch + "\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []PatchOp{
		{Kind: PatchAdd, Path: "hello.txt", Lines: []string{"Hello world", ""}, Line: 2},
		{Kind: PatchUpdate, Path: "src/app.py", MoveTo: "src/main.py", Line: 5, Hunks: []PatchHunk{
			{Header: "def greet():", Old: []string{`print("Hi")`}, New: []string{`print("Hello, world!")`}, Line: 7},
		}},
		{Kind: PatchDelete, Path: "obsolete.txt", Line: 10},
		{Kind: PatchUpdate, Path: "b.txt", Line: 11, Hunks: []PatchHunk{
			{Old: []string{"a", "b", ""}, New: []string{"a", ""}, Line: 12},
			{New: []string{"tail"}, EOF: true, Line: 15},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePatch =\n%#v\nwant\n%#v", got, want)
	}
}

func TestParsePatchCRLFAndEmptyAdd(t *testing.T) {
	got, err := ParsePatch("*** Begin Patch\r\n*** Add File: e.txt\r\n*** End Patch\r\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []PatchOp{{Kind: PatchAdd, Path: "e.txt", Lines: []string{}, Line: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParsePatch = %#v, want %#v", got, want)
	}
}

func TestParsePatchErrors(t *testing.T) {
	for _, tc := range []struct{ patch, want string }{
		{"", `patch line 1: the first line must be "*** Begin Patch"`},
		{"*** Begin Patch", `patch line 1: the last line must be "*** End Patch"`},
		{"*** Begin Patch\n*** Add File: a\n+x", `patch line 3: the last line must be "*** End Patch"`},
		{"*** Begin Patch\n*** End Patch", "patch line 2: no file operations"},
		{"*** Begin Patch\n*** Frobnicate File: a\n*** End Patch", `patch line 2: want *** Add File:, *** Delete File:, *** Update File: or *** End Patch, got "*** Frobnicate File: a"`},
		{"*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch", "patch line 4: Add File a: every line of a new file starts with +"},
		{"*** Begin Patch\n*** Update File: a\n*** End Patch", "patch line 2: Update File a: no hunks"},
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", "patch line 3: Update File a: empty hunk"},
		{"*** Begin Patch\n*** Update File: a\n@@\n x\nbad\n*** End Patch", `patch line 5: Update File a: a hunk line starts with a space, - or +, got "bad"`},
		{"*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch", "patch line 3: Update File a: *** End of File before any hunk line"},
		{"*** Begin Patch\n*** Update File: a\n*** Move to: \n*** End Patch", "patch line 3: Move to: no path"},
		{"*** Begin Patch\n*** Delete File: \n*** End Patch", "patch line 2: Delete File: no path"},
		{"*** Begin Patch\n*** Add File:\n*** End Patch", "patch line 2: Add File: no path"},
	} {
		_, err := ParsePatch(tc.patch)
		var pe *PatchError
		if !errors.As(err, &pe) || err.Error() != tc.want {
			t.Errorf("ParsePatch(%q) error = %v, want %s", tc.patch, err, tc.want)
		}
	}
}

func TestApplyHunks(t *testing.T) {
	file := []string{"package a", "", "func f() {", "\treturn 1  ", "}", "", "func g() {", "\treturn 1", "}"}
	for _, tc := range []struct {
		name  string
		hunks []PatchHunk
		want  []string
		err   string
	}{
		{name: "header picks the second match",
			hunks: []PatchHunk{{Header: "func g() {", Old: []string{"\treturn 1"}, New: []string{"\treturn 2"}}},
			want:  []string{"package a", "", "func f() {", "\treturn 1  ", "}", "", "func g() {", "\treturn 2", "}"}},
		{name: "trailing space ignored on the second pass",
			hunks: []PatchHunk{{Old: []string{"func f() {", "\treturn 1"}, New: []string{"func f() {", "\treturn 3"}}},
			want:  []string{"package a", "", "func f() {", "\treturn 3", "}", "", "func g() {", "\treturn 1", "}"}},
		{name: "eof hunk matches at the end first",
			hunks: []PatchHunk{{Old: []string{"}"}, New: []string{"}", "// end"}, EOF: true}},
			want:  []string{"package a", "", "func f() {", "\treturn 1  ", "}", "", "func g() {", "\treturn 1", "}", "// end"}},
		{name: "two hunks in order",
			hunks: []PatchHunk{{Old: []string{"package a"}, New: []string{"package b"}}, {Old: []string{"}"}, New: []string{"} // f"}}},
			want:  []string{"package b", "", "func f() {", "\treturn 1  ", "} // f", "", "func g() {", "\treturn 1", "}"}},
		{name: "pure addition goes to the end",
			hunks: []PatchHunk{{New: []string{"// x"}}},
			want:  append(append([]string{}, file...), "// x")},
		{name: "pure addition after its header",
			hunks: []PatchHunk{{Header: "package a", New: []string{"// x"}}},
			want:  []string{"package a", "// x", "", "func f() {", "\treturn 1  ", "}", "", "func g() {", "\treturn 1", "}"}},
		{name: "trailing empty context stands for the final newline",
			hunks: []PatchHunk{{Old: []string{"\treturn 1", "}", ""}, New: []string{"\treturn 9", "}", ""}, Header: "func g() {"}},
			want:  []string{"package a", "", "func f() {", "\treturn 1  ", "}", "", "func g() {", "\treturn 9", "}"}},
		{name: "not found",
			hunks: []PatchHunk{{Old: []string{"nope"}, New: []string{"x"}}},
			err:   `hunk 1: lines not found (from "nope")`},
		{name: "header not found",
			hunks: []PatchHunk{{Header: "func h() {", Old: []string{"}"}, New: nil}},
			err:   `hunk 1: context line "func h() {" not found`},
		{name: "second hunk before the first is not searched backwards",
			hunks: []PatchHunk{{Old: []string{"func g() {"}, New: []string{"func g() {"}}, {Old: []string{"package a"}, New: []string{"package c"}}},
			err:   `hunk 2: lines not found (from "package a")`},
	} {
		got, err := applyHunks(file, tc.hunks)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error = %v, want %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: applyHunks = %q, %v\nwant %q", tc.name, got, err, tc.want)
		}
	}
}

// FuzzParsePatch: ParsePatch never panics, and what it accepts is well formed: at least one
// operation, every path non-empty, an Add has no hunks, an Update has hunks or a move and no
// empty hunk. applyHunks never panics on what it accepts either.
func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@ ctx\n x\n-y\n+z\n*** End of File\n*** Delete File: c\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a\n x\n\n@@\n+y\n*** End Patch",
		"*** Begin Patch\r\n*** Update File: a\r\n-x\r\n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
		"*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
		"*** Begin Patch",
		"*** End Patch",
		"",
		"\n",
		"*** Begin Patch\n*** Update File: \n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n@@ \xff\n-\xfe\n*** End Patch",
	} {
		f.Add(s)
	}
	file := []string{"x", "y", "", "z", "ctx", "x"}
	f.Fuzz(func(t *testing.T, patch string) {
		ops, err := ParsePatch(patch)
		if err != nil {
			var pe *PatchError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PatchError", err)
			}
			return
		}
		if len(ops) == 0 {
			t.Fatal("no operations and no error")
		}
		for _, op := range ops {
			if op.Path == "" || op.Line < 2 {
				t.Fatalf("op %+v: no path or line", op)
			}
			switch op.Kind {
			case PatchAdd, PatchDelete:
				if len(op.Hunks) > 0 || op.MoveTo != "" {
					t.Fatalf("op %+v: hunks or move on %v", op, op.Kind)
				}
			case PatchUpdate:
				if len(op.Hunks) == 0 && op.MoveTo == "" {
					t.Fatalf("op %+v: update with no hunks and no move", op)
				}
				for _, h := range op.Hunks {
					if len(h.Old) == 0 && len(h.New) == 0 {
						t.Fatalf("op %+v: empty hunk", op)
					}
				}
				_, _ = applyHunks(file, op.Hunks)
			default:
				t.Fatalf("op %+v: kind %v", op, op.Kind)
			}
		}
	})
}
