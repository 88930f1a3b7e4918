package hygiene

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// app340 is a 340-line file: src/app.ts of the spec's examples.
func app340() string {
	var b strings.Builder
	for i := 1; i <= 340; i++ {
		fmt.Fprintf(&b, "const a%d = %d;\n", i, i)
	}
	return b.String()
}

// skipTo inserts results until the next id is want's number.
func skipTo(s *Session, next int) {
	for s.next < next-1 {
		s.Result("x")
	}
}

// TestStubWorkedExample is §2's example to the character.
func TestStubWorkedExample(t *testing.T) {
	s := newSession(t, Spec())
	app := app340()
	skipTo(s, 0x12)
	full := s.Read(ReadRequest{Path: "src/app.ts", AbsPath: "/p/src/app.ts", Content: []byte(app), Limit: 200})
	if want := "[#0012 src/app.ts lines 1-200 of 340 sha " + sha8(app) + "]\n1: const a1 = 1;"; !strings.HasPrefix(full, want) {
		t.Fatalf("read = %q", full[:80])
	}
	skipTo(s, 0x19)
	got := s.Read(ReadRequest{Path: "src/app.ts", AbsPath: "/p/src/app.ts", Content: []byte(app), Offset: 50, Limit: 31})
	if want := "[#0019 src/app.ts lines 50-80 of 340 sha " + sha8(app) + "] Unchanged since #0012, which already shows lines 1-200."; got != want {
		t.Fatalf("stub = %q\nwant %q", got, want)
	}
}

// TestRecallWorkedExamples is §4: both forms, '#' optional, stored, not capped.
func TestRecallWorkedExamples(t *testing.T) {
	s := newSession(t, Spec())
	skipTo(s, 0x20)
	lines := numbered(3400)
	text := strings.Join(lines, "\n")
	if capped := s.Result(text); !strings.Contains(capped, "[3100 lines elided, full output #0020]") {
		t.Fatal("setup: #0020 not capped")
	}
	got := s.Recall("#0020", 0, 0)
	want := "[#0021 recall #0020 lines 1-2000 of 3400]\n" + strings.Join(lines[:2000], "\n")
	if got != want {
		t.Fatalf("recall = %q…", got[:60])
	}
	if st, _ := s.Stored("#0021"); st != want {
		t.Fatal("the recall was not stored")
	}
	if got := s.Recall("ffff", 0, 0); got != "[#0022] No stored result #ffff in this session." {
		t.Fatalf("unknown = %q", got)
	}
	// Without '#', upper case, extra zeros; offset and limit.
	if got := s.Recall("000020", 3399, 5); got != "[#0023 recall #0020 lines 3399-3400 of 3400]\nline 3399\nline 3400" {
		t.Fatalf("recall 0020 at 3399 = %q", got)
	}
	if got := s.Recall("#FFFFF", 0, 0); got != "[#0024] No stored result #fffff in this session." {
		t.Fatalf("unknown 5 digits = %q", got)
	}
	if got := s.Recall("#0020", 3401, 0); got != "[#0025]\nError: #0020 has 3400 lines; offset 3401 is past its end." {
		t.Fatalf("past end = %q", got)
	}
	// A recall of a recall; a limit over the window is the window.
	if got := s.Recall("#21", 1999, 9999); got != "[#0026 recall #0021 lines 1999-2000 of 2000]\nline 1999\nline 2000" {
		t.Fatalf("recall of a recall = %q", got)
	}
	// A stub's recall shows the lines it stands for; a one-line result is its bracket.
	r := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("a\nb\nc\n")})
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("a\nb\nc\n"), Offset: 2})
	if got := s.Recall("0028", 0, 0); got != "[#0029 recall #0028 lines 1-2 of 2]\n2: b\n3: c" {
		t.Fatalf("recall of a stub = %q (read %q)", got, r)
	}
	s.Deleted("old.md")
	if got := s.Recall("002a", 0, 0); got != "[#002b recall #002a lines 1-1 of 1]\n[#002a old.md deleted]" {
		t.Fatalf("recall of a deleted = %q", got)
	}
}

// TestEditForms is §5: the single-file, created, deleted and multi-file forms; the diff capped,
// its first line kept; an edit makes the next read full.
func TestEditForms(t *testing.T) {
	s := newSession(t, Spec())
	skipTo(s, 0x22)
	app := []byte("x\n")
	if got := s.Edited("src/app.ts", app, "@@ -12,3 +12,3 @@\n-a\n+b"); got != "[#0022 src/app.ts sha "+sha8("x\n")+"]\n@@ -12,3 +12,3 @@\n-a\n+b" {
		t.Fatalf("edited = %q", got)
	}
	doc := strings.Repeat("line\n", 14)
	if got := s.Created("docs/new.md", []byte(doc)); got != "[#0023 docs/new.md sha "+sha8(doc)+"] Created, 14 lines." {
		t.Fatalf("created = %q", got)
	}
	if got := s.Deleted("old.md"); got != "[#0024 old.md deleted]" {
		t.Fatalf("deleted = %q", got)
	}
	got := s.Patched([]FileChange{
		{Path: "src/a.ts", Kind: Updated, Content: []byte("a\n"), Diff: "@@ -1,2 +1,2 @@\n-x\n+a"},
		{Path: "docs/new.md", Kind: Created, Content: []byte(doc)},
		{Path: "old.md", Kind: Deleted},
	})
	want := "[#0025]\n[src/a.ts sha " + sha8("a\n") + "]\n@@ -1,2 +1,2 @@\n-x\n+a\n[docs/new.md sha " + sha8(doc) + "] Created, 14 lines.\n[old.md deleted]"
	if got != want {
		t.Fatalf("patched = %q\nwant %q", got, want)
	}
	if got := s.Patched([]FileChange{{Path: "old.md", Kind: Deleted}}); got != "[#0026 old.md deleted]" {
		t.Fatalf("one-file patch = %q", got)
	}
	// A large diff is capped, its first line kept, and stored whole.
	diff := "@@ -1,600 +1,600 @@\n" + strings.Join(numbered(600), "\n")
	got = s.Edited("big.txt", []byte("n"), diff)
	if !strings.HasPrefix(got, "[#0027 big.txt sha "+sha8("n")+"]\n@@ -1,600 +1,600 @@\nline 1\n") || !strings.Contains(got, "\n[301 lines elided, full output #0027]\nline 501\n") {
		t.Fatalf("capped diff = %q…", got[:80])
	}
	if st, _ := s.Stored("#0027"); !strings.HasSuffix(st, "\n"+diff) {
		t.Fatal("diff not stored whole")
	}

	// An edit changes the hash: the next read is full, not a stub.
	old, updated := []byte("a\nb\n"), []byte("a\nB\n")
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: old})
	s.Edited("f", updated, "@@ -1,2 +1,2 @@\n a\n-b\n+B")
	if got := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: updated}); got != "[#002a f lines 1-2 of 2 sha "+sha8("a\nB\n")+"]\n1: a\n2: B" {
		t.Fatalf("read after edit = %q", got)
	}
}

// TestSearchDedupe is §6.
func TestSearchDedupe(t *testing.T) {
	s := newSession(t, Spec())
	skipTo(s, 0x26)
	a1 := json.RawMessage(`{"pattern":"foo","path":"src"}`)
	a2 := json.RawMessage(` {"path": "src", "pattern": "foo"} `)
	if got := s.Search("grep", a1, "src/a.ts:3: foo"); got != "[#0026]\nsrc/a.ts:3: foo" {
		t.Fatalf("first = %q", got)
	}
	if got := s.Search("grep", a2, "src/a.ts:3: foo"); got != "[#0027] Same result as #0026." {
		t.Fatalf("same = %q", got)
	}
	if st, _ := s.Stored("#0027"); st != "[#0027]\nsrc/a.ts:3: foo" {
		t.Fatalf("stub stored %q", st)
	}
	// A changed result is full and an entry; the same again names it; the first text again names
	// #0026, still in the request.
	if got := s.Search("grep", a1, "src/a.ts:4: foo"); got != "[#0028]\nsrc/a.ts:4: foo" {
		t.Fatalf("changed = %q", got)
	}
	if got := s.Search("grep", a1, "src/a.ts:4: foo"); got != "[#0029] Same result as #0028." {
		t.Fatalf("same as changed = %q", got)
	}
	if got := s.Search("grep", a1, "src/a.ts:3: foo"); got != "[#002a] Same result as #0026." {
		t.Fatalf("first again = %q", got)
	}
	// Other arguments, other tools: full.
	if got := s.Search("grep", json.RawMessage(`{"pattern":"foo","path":"src/"}`), "src/a.ts:3: foo"); got != "[#002b]\nsrc/a.ts:3: foo" {
		t.Fatalf("other args = %q", got)
	}
	if got := s.Search("bash", json.RawMessage(`{"command":"ls"}`), "a"); got != "[#002c]\na" {
		t.Fatalf("bash 1 = %q", got)
	}
	if got := s.Search("bash", json.RawMessage(`{"command":"ls"}`), "a"); got != "[#002d]\na" {
		t.Fatalf("bash twice = %q; want a second full result", got)
	}
	// Nested keys are sorted too.
	s.Search("list", json.RawMessage(`{"o":{"b":1,"a":[{"y":2,"x":1}]}}`), "L")
	if got := s.Search("list", json.RawMessage(`{"o":{"a":[{"x":1,"y":2}],"b":1}}`), "L"); got != "[#002f] Same result as #002e." {
		t.Fatalf("nested = %q", got)
	}
	// After a compaction the table is empty: full again.
	s.Compact()
	if got := s.Search("grep", a1, "src/a.ts:3: foo"); got != "[#0030]\nsrc/a.ts:3: foo" {
		t.Fatalf("after compaction = %q", got)
	}
	off := Spec()
	off.SearchDedupe = false
	s = newSession(t, off)
	s.Search("grep", a1, "x")
	if got := s.Search("grep", a1, "x"); got != "[#0002]\nx" {
		t.Fatalf("dedupe off = %q", got)
	}
}

// TestCompactionTable is §7's example to the character, and its rules.
func TestCompactionTable(t *testing.T) {
	s := newSession(t, Spec())
	if got := s.Compact(); got != "" {
		t.Fatalf("no reads: %q", got)
	}
	app := []byte(app340())
	s.BeginTurn()
	skipTo(s, 0x12)
	s.Read(ReadRequest{Path: "src/app.ts", AbsPath: "/p/src/app.ts", Content: app, Limit: 200})
	s.Read(ReadRequest{Path: "src/app.ts", AbsPath: "/p/src/app.ts", Content: app, Offset: 3, Limit: 3}) // a stub: not a read
	want := "## Files read before this summary\n\nRead a file again for its content; recall shows a result by its id.\n\n| Path | Lines | sha | Result |\n|---|---|---|---|\n| src/app.ts | 1-200 of 340 | " + sha8(string(app)) + " | #0012 |"
	if got := s.Compact(); got != want {
		t.Fatalf("table = %q\nwant %q", got, want)
	}
	// Ids go on; a read after compaction is full; earlier ids can be recalled.
	got := s.Read(ReadRequest{Path: "src/app.ts", AbsPath: "/p/src/app.ts", Content: app, Offset: 3, Limit: 3})
	if !strings.HasPrefix(got, "[#0014 src/app.ts lines 3-5 of 340 sha ") || !strings.HasSuffix(got, "]\n3: const a3 = 3;\n4: const a4 = 4;\n5: const a5 = 5;") {
		t.Fatalf("read after compaction = %q", got)
	}
	if got := s.Recall("12", 1, 1); got != "[#0015 recall #0012 lines 1-1 of 200]\n1: const a1 = 1;" {
		t.Fatalf("recall after compaction = %q", got)
	}

	// Newest read of each file by absolute path, newest last, the call's path; a rewound turn
	// takes its reads with it; an empty file reads "empty".
	s.Compact()
	s.BeginTurn()                                                                        // turn 2
	s.Read(ReadRequest{Path: "a", AbsPath: "/p/a", Content: []byte("1\n")})              // #0016
	s.Read(ReadRequest{Path: "b", AbsPath: "/p/b", Content: []byte("1\n2\n")})           // #0017
	s.Read(ReadRequest{Path: "./a", AbsPath: "/p/a", Content: []byte("1\n2\n3\n")})      // #0018
	s.Read(ReadRequest{Path: "notes.txt", AbsPath: "/p/notes.txt"})                      // #0019
	s.BeginTurn()                                                                        // turn 3
	s.Read(ReadRequest{Path: "b", AbsPath: "/p/b", Content: []byte("1\n2\n"), Limit: 1}) // #001a stub
	s.Read(ReadRequest{Path: "c|d", AbsPath: "/p/c", Content: []byte("c\n")})            // #001b
	s.Rewind(2)
	s.BeginTurn()                                                           // turn 3 again
	s.Read(ReadRequest{Path: "b", AbsPath: "/p/b", Content: []byte("x\n")}) // #001c
	want = "## Files read before this summary\n\nRead a file again for its content; recall shows a result by its id.\n\n| Path | Lines | sha | Result |\n|---|---|---|---|\n" +
		"| ./a | 1-3 of 3 | " + sha8("1\n2\n3\n") + " | #0018 |\n" +
		"| notes.txt | empty | e3b0c442 | #0019 |\n" +
		"| b | 1-1 of 1 | " + sha8("x\n") + " | #001c |"
	if got := s.Compact(); got != want {
		t.Fatalf("table = %q\nwant %q", got, want)
	}

	// At most compaction.rows rows, the newest kept; a "|" in a path is escaped.
	for i := range 60 {
		s.Read(ReadRequest{Path: fmt.Sprintf("f%d|", i), AbsPath: fmt.Sprintf("/p/f%d", i), Content: []byte("x\n")})
	}
	got = s.Compact()
	rows := strings.Split(got, "\n")[6:]
	if len(rows) != 50 || !strings.HasPrefix(rows[0], `| f10\| | 1-1 of 1 |`) || !strings.HasPrefix(rows[49], `| f59\| |`) {
		t.Fatalf("rows: %d, first %q, last %q", len(rows), rows[0], rows[len(rows)-1])
	}
	off := Spec()
	off.CompactionNextTurn = false
	s = newSession(t, off)
	s.Read(ReadRequest{Path: "a", AbsPath: "/p/a", Content: []byte("1\n")})
	if got := s.Compact(); got != "" {
		t.Fatalf("§7 off: %q", got)
	}
	if got := s.Read(ReadRequest{Path: "a", AbsPath: "/p/a", Content: []byte("1\n")}); !strings.HasSuffix(got, "\n1: 1") {
		t.Fatalf("§7 off: a read after compaction is still full: %q", got)
	}
}

// TestRewindLeavesDedupeTable: a stub never points at a result a rewind took back.
func TestRewindLeavesDedupeTable(t *testing.T) {
	s := newSession(t, Spec())
	s.BeginTurn()
	s.Search("glob", json.RawMessage(`{"pattern":"*"}`), "a") // #0001, turn 1
	s.BeginTurn()
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("x\n")}) // #0002, turn 2
	s.Search("glob", json.RawMessage(`{"pattern":"*"}`), "b")               // #0003, turn 2
	s.Rewind(1)
	if got := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("x\n")}); !strings.HasPrefix(got, "[#0004 f lines 1-1 of 1") || !strings.HasSuffix(got, "\n1: x") {
		t.Fatalf("read after rewind = %q; want full", got)
	}
	if got := s.Search("glob", json.RawMessage(`{"pattern":"*"}`), "b"); got != "[#0005]\nb" {
		t.Fatalf("search after rewind = %q; want full", got)
	}
	if got := s.Search("glob", json.RawMessage(`{"pattern":"*"}`), "a"); got != "[#0006] Same result as #0001." {
		t.Fatalf("search of turn 1 = %q", got)
	}
	if got, ok := s.Stored("#0003"); !ok || got != "[#0003]\nb" {
		t.Fatal("a rewound result is no longer stored")
	}
}

// TestPlainHarness: with every measure off, no ids or brackets, full re-reads, uncapped output,
// plain confirmations, no dedupe.
func TestPlainHarness(t *testing.T) {
	s := newSession(t, Measures{})
	big := strings.Join(numbered(1000), "\n")
	if got := s.Result(big); got != big {
		t.Fatal("plain result changed")
	}
	for range 2 {
		if got := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("a\nb\n")}); got != "1: a\n2: b" {
			t.Fatalf("plain read = %q", got)
		}
	}
	if got := s.Edited("f", []byte("x"), "@@"); got != "Edited f." {
		t.Fatalf("plain edit = %q", got)
	}
	if got := s.Created("g", []byte("x")); got != "Created g." {
		t.Fatalf("plain create = %q", got)
	}
	if got := s.Deleted("h"); got != "Deleted h." {
		t.Fatalf("plain delete = %q", got)
	}
	if got := s.Patched([]FileChange{{Path: "a"}, {Path: "b", Kind: Created}}); got != "Edited a.\nCreated b." {
		t.Fatalf("plain patch = %q", got)
	}
	for range 2 {
		if got := s.Search("grep", json.RawMessage(`{}`), "r"); got != "r" {
			t.Fatalf("plain search = %q", got)
		}
	}
	if got := s.Compact(); got != "" {
		t.Fatalf("plain compact = %q", got)
	}
	// Diffs off alone: an id and the plain confirmation.
	m := Spec()
	m.Diffs = false
	s = newSession(t, m)
	if got := s.Edited("f", []byte("x"), "@@"); got != "[#0001]\nEdited f." {
		t.Fatalf("diffs off = %q", got)
	}
}

var bracketRE = regexp.MustCompile(`^\[#[0-9a-f]{4,} (.*) (lines (\d+)-(\d+) of (\d+) sha [0-9a-f]{8}|empty sha [0-9a-f]{8})\]`)

func FuzzReadBracket(f *testing.F) {
	c, err := ParseConfig(labLoopJSON())
	if err != nil {
		f.Fatal(err)
	}
	f.Add("src/app.ts", []byte(app340()), 50, 31)
	f.Add("notes.txt", []byte(""), 0, 0)
	f.Add("a b", []byte("\n"), 2, 0)
	f.Add("x", []byte("a\nb"), -3, -1)
	f.Add("x", []byte(strings.Repeat("l\n", 2500)), 2001, 5000)
	f.Fuzz(func(t *testing.T, path string, content []byte, offset, limit int) {
		s, _ := NewSession(c, Spec())
		total := len(Lines(string(content)))
		for range 2 {
			got := s.Read(ReadRequest{Path: path, AbsPath: "/p/" + path, Content: content, Offset: offset, Limit: limit})
			if total > 0 && max(offset, 1) > total {
				if !strings.Contains(got, "is past its end.") {
					t.Fatalf("past end = %q", got)
				}
				continue
			}
			if strings.Contains(path, "\n") {
				continue // a bracket is one line only when the path is
			}
			m := bracketRE.FindStringSubmatch(got)
			if m == nil || m[1] != path {
				t.Fatalf("bracket of %q = %q", path, got[:min(len(got), 120)])
			}
			if total == 0 {
				if m[2] != "empty sha e3b0c442" || got != m[0] {
					t.Fatalf("empty = %q", got)
				}
				continue
			}
			var from, to, tot int
			fmt.Sscan(m[3]+" "+m[4]+" "+m[5], &from, &to, &tot)
			if tot != total || from != max(offset, 1) || to < from || to > total || to-from+1 > c.Read.WindowLines {
				t.Fatalf("bracket %q for %d lines, offset %d", m[0], total, offset)
			}
		}
	})
}

// TestRewindToCheckpoint: taking back what came after a checkpoint inside a turn takes its reads
// and searches out of the dedupe table and the §7 table, and keeps what came before.
func TestRewindToCheckpoint(t *testing.T) {
	s := newSession(t, Spec())
	s.BeginTurn()
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("x\n")}) // #0001
	c := s.Checkpoint()
	s.Read(ReadRequest{Path: "g", AbsPath: "/p/g", Content: []byte("y\n")}) // #0002, taken back
	s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("x\n")}) // #0003, a stub of #0001
	s.Search("glob", json.RawMessage(`{"pattern":"*"}`), "a")               // #0004, taken back
	s.RewindTo(c)
	if s.Turn() != 1 {
		t.Fatalf("turn %d after RewindTo; want 1", s.Turn())
	}
	if got := s.Read(ReadRequest{Path: "g", AbsPath: "/p/g", Content: []byte("y\n")}); !strings.HasPrefix(got, "[#0005 g lines 1-1 of 1") || !strings.HasSuffix(got, "\n1: y") {
		t.Fatalf("read after RewindTo = %q; want full", got)
	}
	if got := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("x\n")}); !strings.Contains(got, "Unchanged since #0001") {
		t.Fatalf("read of the file read before the checkpoint = %q; want a stub of #0001", got)
	}
	if got := s.Search("glob", json.RawMessage(`{"pattern":"*"}`), "a"); got != "[#0007]\na" {
		t.Fatalf("search after RewindTo = %q; want full", got)
	}
	table := s.Compact()
	if !strings.Contains(table, "| #0005 |") || strings.Contains(table, "#0002") || !strings.Contains(table, "| #0001 |") {
		t.Fatalf("files-read table after RewindTo:\n%s", table)
	}
	s.RewindTo(c) // before the compaction: nothing left to take back
	if got := s.Read(ReadRequest{Path: "f", AbsPath: "/p/f", Content: []byte("x\n")}); !strings.HasPrefix(got, "[#0008 f lines") || !strings.HasSuffix(got, "\n1: x") {
		t.Fatalf("read after compaction = %q; want full", got)
	}
}
