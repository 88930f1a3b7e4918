package transcript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The capture example reads as its session: two turns, six replies with their reasoning, text
// and calls (mapped to the lab's tools by name), each call with its result, and the project
// its system prompt names.
func TestReadCaptureExample(t *testing.T) {
	c, err := ReadCaptureFile(filepath.Join("testdata", "capture-example", "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Session
	var users, steps, calls, results int
	var tools []string
	for _, ev := range s.Events {
		switch {
		case ev.User != nil:
			users++
		case ev.Assistant != nil:
			steps++
			for _, call := range ev.Assistant.Calls {
				calls++
				tools = append(tools, call.Tool)
				if call.HasResult {
					results++
				}
			}
		}
	}
	if users != 2 || steps != 6 || calls != 7 || results != 7 {
		t.Errorf("%d users, %d steps, %d calls, %d results; want 2, 6, 7, 7", users, steps, calls, results)
	}
	if got := strings.Join(tools, ","); got != "read,grep,edit,read,edit,bash,read" {
		t.Errorf("tools %s", got)
	}
	if s.Project != "greeter" || s.Model != "sim" || len(c.Lines) != 6 {
		t.Errorf("project %q, model %q, %d lines; want greeter, sim, 6", s.Project, s.Model, len(c.Lines))
	}
	if first := s.Events[1].Assistant; first.Reasoning == "" || !strings.Contains(first.Calls[0].Result, "func Greet") {
		t.Errorf("first step %+v: want its reasoning and the read's result", first)
	}
}

// A requests file that is not one is an error naming the file and line.
func TestReadCaptureBadLines(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"{\"scenario\":\"a\",\"api\":\"ollama-chat\",\"body\":{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}\nnot json\n", "bad.jsonl:2: want a requests line"},
		{"{\"scenario\":\"a\",\"body\":{}}\n", "bad.jsonl:1: a requests line without api"},
		{"\n\n", "bad.jsonl: no request"},
		{"{\"scenario\":\"a\",\"api\":\"ollama-chat\",\"body\":{\"messages\":7}}\n", "bad.jsonl:1: ollama-chat request"},
	} {
		f := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(f, []byte(c.text), 0o644)
		if _, err := ReadCapture(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
	if _, err := Readers["codex"]("x.jsonl"); err == nil || !strings.Contains(err.Error(), "x.jsonl") {
		t.Errorf("codex reader before it is built: %v", err)
	}
}

// RedactText removes the shapes of credentials and home folders, and keeps counts.
func TestRedactText(t *testing.T) {
	in := `key sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV, token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345, Authorization: Bearer abcdefghijklmnop1234, PASSWORD=hunter2hunter2, /home/ada/src and /Users/bob/x, max_tokens=40960`
	out := RedactText(in)
	for _, bad := range []string{"sk-ant", "ghp_", "abcdefghijklmnop1234", "hunter2", "/home/ada", "/Users/bob"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q survives: %s", bad, out)
		}
	}
	if !strings.Contains(out, "max_tokens=40960") || !strings.Contains(out, "~/src") {
		t.Errorf("RedactText took too much: %s", out)
	}
}
