package hygiene

import (
	"strings"
	"testing"
)

// A result a harness practice removed from the request leaves the dedupe table: the next
// re-read of the file and the next identical search are answered in full, never as a stub
// naming the removed result (§2: "A stub names only a result that is in the request being
// built"; §6 alike). A stub given before knows what it names and what it stands for.
func TestWithdrawnResultsAreNoStubTarget(t *testing.T) {
	s := newSession(t, Spec())
	content := []byte("a\nb\nc\n")
	read := func() string {
		return s.Read(ReadRequest{Path: "x.go", AbsPath: "/p/x.go", Content: content})
	}
	first := read() // #0001
	stub := read()  // #0002, a stub of #0001
	if !strings.Contains(stub, "Unchanged since #0001") {
		t.Fatalf("second read = %q; want a stub of #0001", stub)
	}
	if ref, ok := s.StubOf("#0002"); !ok || ref != "#0001" {
		t.Errorf("StubOf(#0002) = %q, %v; want #0001, true", ref, ok)
	}
	if _, ok := s.StubOf("#0001"); ok {
		t.Errorf("StubOf(#0001): a full read is no stub")
	}
	full, ok := s.Unstubbed("0002")
	if want := "[#0002" + strings.TrimPrefix(first, "[#0001"); !ok || full != want {
		t.Errorf("Unstubbed(#0002) = %q, %v; want the full read under the stub's bracket %q", full, ok, want)
	}
	if s.LastID() != "#0002" {
		t.Errorf("LastID = %q; want #0002", s.LastID())
	}

	s.Withdraw("#0001")
	again := read() // #0003: #0001 is gone from the request, so in full
	if strings.Contains(again, "Unchanged") || !strings.HasSuffix(again, "\n1: a\n2: b\n3: c") {
		t.Fatalf("re-read after #0001 was withdrawn = %q; want the full read", again)
	}
	// The new full read is in the request: the next re-read is a stub of it.
	if got := read(); !strings.Contains(got, "Unchanged since #0003") {
		t.Errorf("re-read = %q; want a stub of #0003", got)
	}

	// §6: the same for a search; its full answer is capped like any output (§3).
	big := strings.Repeat("m\n", 500)
	s.Search("grep", []byte(`{"pattern":"m"}`), big) // #0005
	same := s.Search("grep", []byte(`{"pattern":"m"}`), big)
	if same != "[#0006] Same result as #0005." {
		t.Fatalf("repeated search = %q", same)
	}
	full, ok = s.Unstubbed("#0006")
	if !ok || !strings.HasPrefix(full, "[#0006]\nm\n") || !strings.Contains(full, "lines elided, full output #0006]") {
		t.Errorf("Unstubbed(#0006) = %.100q; want the capped full answer", full)
	}
	s.Withdraw("#0005", "#ffff", "nonsense")
	if got := s.Search("grep", []byte(`{"pattern":"m"}`), big); strings.Contains(got, "Same result") {
		t.Errorf("search after #0005 was withdrawn = %.60q; want the full result", got)
	}
	// Recall still shows a withdrawn result: it stays stored (§4).
	if got := s.Recall("#0001", 0, 0); !strings.Contains(got, "recall #0001 lines 1-3 of 3") {
		t.Errorf("recall of a withdrawn result = %q", got)
	}
}
