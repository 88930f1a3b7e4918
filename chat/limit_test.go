package chat

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// ReadLine returns lines as ReadBytes does while they fit, refuses a longer one after reading
// no more than the bound (and a buffer), and passes a transport error on.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	src := &countingReader{r: strings.NewReader("a\n" + long + "\n" + strings.Repeat("y", 10<<20) + "\nz")}
	br := bufio.NewReaderSize(src, 4096)
	for _, want := range []string{"a\n", long + "\n"} {
		got, err := ReadLine(br, 200_000)
		if err != nil || string(got) != want {
			t.Fatalf("ReadLine = %d bytes, %v; want %d bytes", len(got), err, len(want))
		}
	}
	if _, err := ReadLine(br, 200_000); !errors.Is(err, ErrWireTooLong) {
		t.Fatalf("a 10 MB line with a 200 kB bound: %v; want ErrWireTooLong", err)
	}
	if src.n > 400_000 {
		t.Errorf("read %d bytes of the body to refuse a line past 200 kB; want it to stop near the bound", src.n)
	}
	got, err := ReadLine(bufio.NewReader(strings.NewReader("tail")), 10)
	if string(got) != "tail" || !errors.Is(err, io.EOF) {
		t.Errorf("a last line without a newline: %q, %v; want it with io.EOF", got, err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadAllMaxAndSizes(t *testing.T) {
	if b, err := ReadAllMax(strings.NewReader("12345"), 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadAllMax of 5 bytes with a bound of 5: %q, %v", b, err)
	}
	src := &countingReader{r: strings.NewReader(strings.Repeat("x", 1<<20))}
	if _, err := ReadAllMax(src, 1000); !errors.Is(err, ErrWireTooLong) || src.n > 1001+512 {
		t.Errorf("ReadAllMax of 1 MB with a bound of 1000: %v after %d bytes; want ErrWireTooLong near the bound", err, src.n)
	}
	if got, want := WireLimit(1024), int64(2*1024+WireFraming); got != want {
		t.Errorf("WireLimit(1024) = %d; want %d", got, want)
	}
	if got := (&Request{}).ReplyLimit(); got != DefaultMaxReplyBytes {
		t.Errorf("the zero request's limit = %d; want DefaultMaxReplyBytes", got)
	}
	r := &Reply{Content: "ab", Reasoning: "c", ToolCalls: []ToolCall{{Name: "de", Arguments: []byte(`{}`)}}, Thinking: []ThinkingBlock{{Signature: "s"}}}
	if got := ReplySize(r); got != 8 {
		t.Errorf("ReplySize = %d; want 8", got)
	}
	c := ReplyCounter{Limit: 3}
	if !c.Add(3) || c.Add(1) || !c.Over() {
		t.Errorf("a counter of limit 3 after 3 then 1 byte: N %d, Over %v", c.N, c.Over())
	}
}
