package hygiene

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// numbered returns n lines "line 1" … "line n" joined by newlines.
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %d", i+1)
	}
	return out
}

// TestCapWorkedExample is §3's worked example: 1534 short lines keep 200 head lines and 100 tail
// lines with "[1234 lines elided, full output #0020]" between; the full text is stored.
func TestCapWorkedExample(t *testing.T) {
	s := newSession(t, Spec())
	for range 0x1f {
		s.Result("x")
	}
	lines := numbered(1534)
	text := strings.Join(lines, "\n")
	got := s.Result(text)
	want := "[#0020]\n" + strings.Join(lines[:200], "\n") + "\n[1234 lines elided, full output #0020]\n" + strings.Join(lines[1434:], "\n")
	if got != want {
		t.Fatalf("capped result differs:\n got %q…%q\nwant %q…%q", got[:40], got[len(got)-40:], want[:40], want[len(want)-40:])
	}
	if st, _ := s.Stored("#0020"); st != "[#0020]\n"+text {
		t.Fatalf("stored text is not the full result (%d bytes)", len(st))
	}
}

func TestCapBoundaries(t *testing.T) {
	c := testConfig(t)
	// Exactly 400 lines is within the cap; so is a final newline after them.
	l400 := strings.Join(numbered(400), "\n")
	if got := c.CapText(l400, "#0001"); got != l400 {
		t.Fatal("400 lines were capped")
	}
	if got := c.CapText(l400+"\n", "#0001"); got != l400+"\n" {
		t.Fatal("400 lines and a final newline were capped")
	}
	// 401 lines: 200 + elided 101 + 100.
	l401 := numbered(401)
	want := strings.Join(l401[:200], "\n") + "\n[101 lines elided, full output #0001]\n" + strings.Join(l401[301:], "\n")
	if got := c.CapText(strings.Join(l401, "\n"), "#0001"); got != want {
		t.Fatalf("401 lines: got %d bytes, want %d", len(got), len(want))
	}

	// Exactly 40,000 characters: three lines of 9,999 'é' (two bytes, one character), one of
	// 10,000, and 3 newlines. Within the cap.
	line := strings.Repeat("é", 9999)
	last := strings.Repeat("é", 10000)
	c40k := strings.Join([]string{line, line, line, last}, "\n")
	if n := utf8.RuneCountInString(c40k); n != 40000 {
		t.Fatalf("setup: %d characters", n)
	}
	if got := c.CapText(c40k, "#0001"); got != c40k {
		t.Fatal("40,000 characters were capped")
	}
	// 40,001 (the third line one longer): the head keeps 2 lines (19,999 characters), the tail
	// the last (10,000, exactly tail_chars); the third line is elided.
	c40k1 := strings.Join([]string{line, line, line + "x", last}, "\n")
	want = line + "\n" + line + "\n[1 lines elided, full output #0001]\n" + last
	if got := c.CapText(c40k1, "#0001"); got != want {
		t.Fatalf("40,001 characters: got %q…", got[len(got)-60:])
	}
}

func TestCapFirstAndLastLineCut(t *testing.T) {
	c := testConfig(t)
	first := strings.Repeat("a", 20001)
	lines := append([]string{first}, numbered(450)...)
	got := c.CapText(strings.Join(lines, "\n"), "#0007")
	// The first line cut to head_chars and marked; the elided line counts the 350 lines left
	// out (451 - 1 head - 100 tail); then the last 100 lines.
	want := strings.Repeat("a", 20000) + " […cut]\n[350 lines elided, full output #0007]\n" + strings.Join(lines[351:], "\n")
	if got != want {
		t.Fatalf("cut first line: got %q", got[20000:20100])
	}

	// A single huge line: cut, then the elided line whatever it counts (0).
	huge := strings.Repeat("z", 50000)
	if got := c.CapText(huge, "#0008"); got != strings.Repeat("z", 20000)+" […cut]\n[0 lines elided, full output #0008]" {
		t.Fatalf("single huge line: got …%q", got[19990:])
	}

	// A last line longer than tail_chars is kept, cut to tail_chars and marked (documented
	// choice: the spec's whole-line rule alone would drop it).
	last := strings.Repeat("b", 45000)
	got = c.CapText("first\nsecond\n"+last, "#0009")
	if want := "first\nsecond\n[0 lines elided, full output #0009]\n" + strings.Repeat("b", 10000) + " […cut]"; got != want {
		t.Fatalf("cut last line: got %q…", got[:60])
	}
}

func TestCapsOffAndReadsNotCapped(t *testing.T) {
	m := Spec()
	m.Caps = false
	s := newSession(t, m)
	text := strings.Join(numbered(1000), "\n")
	if got := s.Result(text); got != "[#0001]\n"+text {
		t.Fatal("caps off: the result was changed")
	}
	// A read has its own window, never the cap: 1000 lines are shown in full with caps on.
	s = newSession(t, Spec())
	got := s.Read(ReadRequest{Path: "big", AbsPath: "/p/big", Content: []byte(text + "\n")})
	if strings.Contains(got, "elided") || !strings.HasSuffix(got, "\n1000: line 1000") {
		t.Fatalf("read of 1000 lines was capped: …%q", got[len(got)-50:])
	}
}

// checkCap asserts what every capped text must hold (§3): the limits, the first line kept (or
// cut to head_chars and marked), the last line kept (or cut and marked), head and tail made of
// the body's own lines, and the elided count.
func checkCap(t *testing.T, c *Config, body, got string) {
	t.Helper()
	n := len(Lines(body))
	if n <= c.Cap.MaxLines && utf8.RuneCountInString(body) <= c.Cap.MaxChars {
		if got != body {
			t.Fatalf("a text within the limits was changed")
		}
		return
	}
	lines := Lines(body)
	out := strings.Split(got, "\n")
	if len(out) > c.Cap.HeadLines+1+c.Cap.TailLines {
		t.Fatalf("capped text has %d lines", len(out))
	}
	elidedMax := utf8.RuneCountInString(fill(c.Cap.Elided, "lines", fmt.Sprint(n), "id", "#0001"))
	cut := utf8.RuneCountInString(c.Cap.Cut)
	if max := c.Cap.HeadChars + c.Cap.TailChars + 2 + elidedMax + 2*cut; utf8.RuneCountInString(got) > max {
		t.Fatalf("capped text has %d characters; at most %d", utf8.RuneCountInString(got), max)
	}
	// Find the elided line.
	e := -1
	for i, l := range out {
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, " lines elided, full output #0001]") {
			e = i
			break
		}
	}
	if e < 1 {
		t.Fatalf("no elided line after the head")
	}
	head, tail := out[:e], out[e+1:]
	if len(head) == 1 && strings.HasSuffix(head[0], c.Cap.Cut) && head[0] != lines[0] {
		if p := strings.TrimSuffix(head[0], c.Cap.Cut); !strings.HasPrefix(lines[0], p) || utf8.RuneCountInString(p) != c.Cap.HeadChars {
			t.Fatalf("cut first line is not the first head_chars characters of the first line")
		}
	} else {
		if utf8.RuneCountInString(strings.Join(head, "\n")) > c.Cap.HeadChars {
			t.Fatalf("head over head_chars")
		}
		for i := range head {
			if head[i] != lines[i] {
				t.Fatalf("head line %d differs from the body's", i+1)
			}
		}
	}
	if len(tail) > 0 {
		lastOut, last := tail[len(tail)-1], lines[n-1]
		if lastOut != last {
			p := strings.TrimSuffix(lastOut, c.Cap.Cut)
			if len(tail) != 1 || p == lastOut || !strings.HasPrefix(last, p) || utf8.RuneCountInString(p) != c.Cap.TailChars {
				t.Fatalf("last line not kept")
			}
		} else {
			if utf8.RuneCountInString(strings.Join(tail, "\n")) > c.Cap.TailChars {
				t.Fatalf("tail over tail_chars")
			}
			for i := range tail {
				if tail[i] != lines[n-len(tail)+i] {
					t.Fatalf("tail line differs from the body's")
				}
			}
		}
	} else if n > 1 {
		t.Fatalf("no tail but the body has %d lines", n)
	}
	if want := fmt.Sprintf("[%d lines elided, full output #0001]", n-len(head)-len(tail)); out[e] != want {
		t.Fatalf("elided line %q; want %q", out[e], want)
	}
}

func FuzzCapText(f *testing.F) {
	c, err := ParseConfig(labLoopJSON())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(strings.Join(numbered(400), "\n"), 0, 0)
	f.Add(strings.Join(numbered(401), "\n"), 0, 0)
	f.Add(strings.Repeat("x", 40000), 0, 0)
	f.Add(strings.Repeat("x", 40001), 0, 0)
	f.Add(strings.Repeat("é", 20001)+"\nb\nc", 0, 0)
	f.Add("", 0, 0)
	f.Add(strings.Repeat("\n", 500), 0, 0)
	f.Add("a\nb", 300, 30000)
	f.Add("a\n", 500, 100)
	f.Add("\xff\xfe", 10, 45000)
	// The body is the seed text, then `lines` copies of it as lines, then `pad` characters.
	f.Fuzz(func(t *testing.T, s string, lines, pad int) {
		lines, pad = abs(lines)%2000, abs(pad)%100000
		var b strings.Builder
		b.WriteString(s)
		for i := range lines {
			b.WriteString("\n" + s[:min(len(s), i%7)])
		}
		b.WriteString(strings.Repeat("y", pad))
		body := b.String()
		checkCap(t, c, body, c.CapText(body, "#0001"))
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n {
			return 0
		}
		return -n
	}
	return n
}
