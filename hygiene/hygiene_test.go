package hygiene

import (
	"strings"
	"testing"

	lab "lab"
)

func testConfig(t *testing.T) *Config {
	t.Helper()
	c, err := ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSession(t *testing.T, m Measures) *Session {
	t.Helper()
	s, err := NewSession(testConfig(t), m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIDsCountInHex(t *testing.T) {
	s := newSession(t, Spec())
	var got []string
	for i := 1; i <= 0x10000; i++ {
		out := s.Result("x")
		switch i {
		case 1, 10, 0xffff, 0x10000:
			got = append(got, out[:strings.Index(out, "]")+1])
		}
	}
	want := []string{"[#0001]", "[#000a]", "[#ffff]", "[#10000]"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ids = %v; want %v", got, want)
	}
}

func TestReadBracketAndStub(t *testing.T) {
	s := newSession(t, Spec())
	content := []byte("a\nb\nc\nd\n")
	full := s.Read(ReadRequest{Path: "src/x.go", AbsPath: "/p/src/x.go", Content: content})
	// sha256("a\nb\nc\nd\n") starts with these digits.
	if want := "[#0001 src/x.go lines 1-4 of 4 sha "; !strings.HasPrefix(full, want) {
		t.Fatalf("Read = %q; want prefix %q", full, want)
	}
	if !strings.HasSuffix(full, "]\n1: a\n2: b\n3: c\n4: d") {
		t.Fatalf("Read body = %q", full)
	}
	sha := full[len("[#0001 src/x.go lines 1-4 of 4 sha ") : len("[#0001 src/x.go lines 1-4 of 4 sha ")+8]

	// A range wholly inside the full read, same content: a stub naming #0001 and its lines.
	stub := s.Read(ReadRequest{Path: "./src/x.go", AbsPath: "/p/src/x.go", Content: content, Offset: 2, Limit: 2})
	want := "[#0002 ./src/x.go lines 2-3 of 4 sha " + sha + "] Unchanged since #0001, which already shows lines 1-4."
	if stub != want {
		t.Fatalf("re-read = %q; want %q", stub, want)
	}
	// What the stub stands for is stored under its id.
	if got, _ := s.Stored("0002"); got != "[#0002 ./src/x.go lines 2-3 of 4 sha "+sha+"]\n2: b\n3: c" {
		t.Fatalf("Stored(#0002) = %q", got)
	}

	// Changed content: read in full, and a later re-read stubs to the new full read, not #0001.
	changed := []byte("a\nB\nc\nd\n")
	r3 := s.Read(ReadRequest{Path: "src/x.go", AbsPath: "/p/src/x.go", Content: changed})
	if !strings.Contains(r3, "\n2: B") || !strings.HasPrefix(r3, "[#0003 ") {
		t.Fatalf("read after change = %q; want a full read #0003", r3)
	}
	r4 := s.Read(ReadRequest{Path: "src/x.go", AbsPath: "/p/src/x.go", Content: changed})
	if !strings.HasSuffix(r4, "Unchanged since #0003, which already shows lines 1-4.") {
		t.Fatalf("re-read after change = %q; want a stub naming #0003", r4)
	}
}

func TestRangePastEarlierReadIsFull(t *testing.T) {
	s := newSession(t, Spec())
	content := []byte("1\n2\n3\n4\n5\n6\n")
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: content, Offset: 1, Limit: 3})
	got := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: content, Offset: 2, Limit: 3})
	if got != "[#0002 f lines 2-4 of 6 sha "+got[len("[#0002 f lines 2-4 of 6 sha "):len("[#0002 f lines 2-4 of 6 sha ")+8]+"]\n2: 2\n3: 3\n4: 4" {
		t.Fatalf("range past the earlier read = %q; want it in full", got)
	}
	// A stub never points at a stub: #0003 (inside #0002) is a stub to #0002, and a read inside it
	// again names #0002, not #0003.
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: content, Offset: 3, Limit: 1})
	got = s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: content, Offset: 3, Limit: 1})
	if !strings.Contains(got, "Unchanged since #0002,") {
		t.Fatalf("stub of a stub = %q; want it to name #0002", got)
	}
}

func TestEmptyFileAndNoStubsWhenOff(t *testing.T) {
	m := Spec()
	m.Stubs = false
	s := newSession(t, m)
	if got := s.Read(ReadRequest{Path: "notes.txt", AbsPath: "/p/notes.txt"}); got != "[#0001 notes.txt empty sha e3b0c442]" {
		t.Fatalf("empty read = %q", got)
	}
	content := []byte("x\n")
	s.Read(ReadRequest{Path: "a", AbsPath: "/p/a", Content: content})
	if got := s.Read(ReadRequest{Path: "a", AbsPath: "/p/a", Content: content}); !strings.HasSuffix(got, "\n1: x") {
		t.Fatalf("re-read with stubs off = %q; want the full read", got)
	}
}

func TestStubsNeedIDs(t *testing.T) {
	if _, err := NewSession(testConfig(t), Measures{Stubs: true}); err == nil {
		t.Fatal("NewSession(stubs without ids) succeeded; want an error")
	}
}

func TestNoteOrderAndEmpty(t *testing.T) {
	c := testConfig(t)
	c.Note.Blocks["mode"] = "The permission mode is now {{value}}."
	s, _ := NewSession(c, Spec())
	got, err := s.Note(map[string]string{"date": "Friday, 2026-11-06", "mode": ""})
	if err != nil {
		t.Fatal(err)
	}
	want := "<session-note>\nThe permission mode is now (none).\n\nToday's date is Friday, 2026-11-06.\n</session-note>"
	if got != want {
		t.Fatalf("Note = %q; want %q", got, want)
	}
	if _, err := s.Note(map[string]string{"weather": "rain"}); err == nil {
		t.Fatal("Note(unknown kind) succeeded; want an error")
	}
	if got := WithNote("Fix it.\n", "N"); got != "Fix it.\n\nN" {
		t.Fatalf("WithNote = %q", got)
	}
}

func TestEnvironmentLines(t *testing.T) {
	c := testConfig(t)
	if got := c.EnvironmentLines("app", "packages/web"); got != "Project: app (paths are relative to its root)\nStarted in: packages/web (relative to the project root)" {
		t.Fatalf("EnvironmentLines = %q", got)
	}
	if got := c.EnvironmentLines("app", "."); strings.Contains(got, "Started in") {
		t.Fatalf("EnvironmentLines at the root = %q; want no Started in line", got)
	}
}

func TestParseConfigRejectsUnknownField(t *testing.T) {
	_, err := ParseConfig([]byte(`{"context": {"ids": {"digits": 4, "digitz": 5}}}`))
	if err == nil || !strings.Contains(err.Error(), "digitz") {
		t.Fatalf("ParseConfig(unknown field) = %v; want an error naming digitz", err)
	}
}
