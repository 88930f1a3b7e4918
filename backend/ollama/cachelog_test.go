package ollama

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestCacheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	line := func(prompt, used int) string {
		return fmt.Sprintf("time=x level=DEBUG source=cache.go:140 msg=\"loading cache slot\" id=0 cache=%d prompt=%d used=%d remaining=%d\n", used, prompt, used, prompt-used)
	}
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	write(line(5, 4)) // before the log was opened: never read
	l := OpenCacheLog(path)
	if got, err := l.Next(0); got != nil || err != nil {
		t.Fatalf("Next on a log with no new line = %+v, %v; want nil", got, err)
	}

	// Match takes lines in order: the first of the prompt length asked for, dropping the
	// lines before it; a length not there leaves every line.
	write(line(100, 0) + "padding\n" + line(150, 99) + line(150, 140) + line(200, 149))
	if got, _ := l.Match(999, 0); got != nil {
		t.Fatalf("Match(999) = %+v; want nil", got)
	}
	for _, want := range []CacheLine{{150, 99, 51, nil}, {150, 140, 10, nil}} {
		got, err := l.Match(150, 0)
		if err != nil || got == nil || *got != want {
			t.Fatalf("Match(150) = %+v, %v; want %+v", got, err, want)
		}
	}
	if got, _ := l.Match(-1, 0); got == nil || got.Prompt != 200 {
		t.Fatalf("Match(-1) = %+v; want the line of prompt 200 (the one before it was consumed or dropped)", got)
	}

	// Next takes the last line and drops the others; a line still being written is not read.
	write(line(10, 1) + line(20, 2) + `time=x msg="loading cache slot" id=0 cache=3 prompt=30 used=3 rem`)
	if got, _ := l.Next(0); got == nil || got.Prompt != 20 {
		t.Fatalf("Next = %+v; want the line of prompt 20", got)
	}
	write("aining=27\n")
	if got, _ := l.Next(0); got == nil || *got != (CacheLine{30, 3, 27, nil}) {
		t.Fatalf("Next after the line was finished = %+v; want {30 3 27}", got)
	}

	// A rotated log is read from its start; Skip drops what is there.
	if err := os.WriteFile(path, []byte(line(7, 6)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Match(7, 0); got == nil || got.Used != 6 {
		t.Fatalf("Match(7) after rotation = %+v; want used 6", got)
	}
	write(line(8, 7))
	if err := l.Skip(); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Match(-1, 0); got != nil || !l.Seen() {
		t.Fatalf("after Skip: %+v, seen %v; want nil, true", got, l.Seen())
	}
}

// TestCacheLogPromptCut checks that the truncation lines Ollama v0.17.4 writes before a
// request's cache line (the server's dropped messages, the runner's cut prompt) reach that
// request's line, and only it.
func TestCacheLogPromptCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := OpenCacheLog(path)
	log := `time=2026-12-02T02:00:00.000Z level=DEBUG source=prompt.go:73 msg="truncating input messages which exceed context length" truncated=3
time=2026-12-02T02:00:00.100Z level=WARN source=runner.go:187 msg="truncating input prompt" limit=4096 prompt=5210 keep=4 new=4096
time=2026-12-02T02:00:00.200Z level=DEBUG source=cache.go:140 msg="loading cache slot" id=0 cache=0 prompt=4096 used=0 remaining=4096
time=2026-12-02T02:00:01.000Z level=DEBUG source=cache.go:140 msg="loading cache slot" id=0 cache=4100 prompt=4200 used=4000 remaining=200
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := l.Match(4096, 0)
	if err != nil || got == nil {
		t.Fatalf("Match(4096) = %+v, %v", got, err)
	}
	want := PromptCut{KeptMessages: 3, Limit: 4096, Prompt: 5210, New: 4096}
	if got.Cut == nil || *got.Cut != want {
		t.Fatalf("Cut = %+v; want %+v", got.Cut, want)
	}
	if got, _ := l.Match(4200, 0); got == nil || got.Cut != nil {
		t.Fatalf("the next request's line = %+v; want one with no cut", got)
	}
}
