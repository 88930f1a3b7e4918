package transcript

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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

// Redacting inside a JSON document keeps it JSON: a secret or a home next to (or holding) an
// escape, \" \\ \u00XX \n, in tool arguments or a captured request, and a count-like value a
// pattern's tail would take across the document's structure.
func TestRedactTextKeepsJSON(t *testing.T) {
	for _, in := range []string{
		`{"command":"PASSWORD=hunter2hunter2\"; echo \"done"}`,
		`{"command":"export TOKEN=abcdefgh12345678\\","cwd":"/home/ada/src"}`,
		`{"path":"C:\\Users\\ada\\src\\x.go","note":"\u0022/home/ada/x\u0022 and sk-proj-ABCDEFGHIJKLMNOPQRSTUV\u005c"}`,
		`["token:",123456789012,{"secret=":"x"}]`,
		`{"text":"line one\n/home/ada/.claude/projects/-home-ada-src-app/s.jsonl\n"}`,
		`{"scenario":"c","api":"openai-chat","body":{"api_key":"PLANTEDKEY123","messages":[{"role":"user","content":"Authorization: Bearer abcdefghijklmnop1234\\\"x"}]}}`,
		`"a string: /Users/ada/\"q\" password=\"secretsecret\""`,
	} {
		out := RedactText(in)
		if !json.Valid([]byte(out)) {
			t.Errorf("RedactText(%s) = %s: not JSON", in, out)
			continue
		}
		var all []string
		var v any
		_ = json.Unmarshal([]byte(out), &v)
		allStrings(reflect.ValueOf(v), &all)
		for _, s := range all {
			for _, bad := range []string{"hunter2", "abcdefgh1234", "/home/ada", "Users\\ada", "/Users/ada", "sk-proj", "PLANTEDKEY", "abcdefghijklmnop", "secretsecret", "-home-ada"} {
				if strings.Contains(s, bad) {
					t.Errorf("RedactText(%s): %q survives in %q", in, bad, s)
				}
			}
		}
	}
	// Nothing to redact: the document's bytes are kept, white space and all.
	if in := "{ \"a\" : [1.50, \"x\\u0041\"] }"; RedactText(in) != in {
		t.Errorf("RedactText(%s) = %s", in, RedactText(in))
	}
}

// A home in Claude Code's dashed project-folder form or as ~NAME/, and the user's name where it
// stands in a path, are redacted; the name elsewhere in prose, and a word that only contains it,
// are kept.
func TestRedactTextDashedHomesAndNames(t *testing.T) {
	for in, want := range map[string]string{
		"~/.claude/projects/-home-ada-src-app/s.jsonl":             "~/.claude/projects/~-src-app/s.jsonl",
		"cwd -Users-ada-work and C--Users-ada-app":                 "cwd ~-work and ~-app",
		"see ~bob/notes and ~/x":                                   "see ~/notes and ~/x",
		"/home/ada/src, then /tmp/ada/build and /Volumes/ada":      "~/src, then /tmp/[redacted]/build and /Volumes/[redacted]",
		"/home/ada.lovelace/x and /srv/ada.lovelace/y, ada.txt":    "~/x and /srv/[redacted]/y, ada.txt",
		"Ada said /home/ada is hers; a stay-at-home-dad, /adamant": "Ada said ~ is hers; a stay-at-home-dad, /adamant",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n= %q\nwant %q", in, got, want)
		}
	}
	// A name with a '-' known from elsewhere in the text, dashed.
	if got := RedactText("/home/ada-l/x; -home-ada-l-src-app"); got != "~/x; ~-src-app" {
		t.Errorf("dashed name with a dash: %q", got)
	}
}
