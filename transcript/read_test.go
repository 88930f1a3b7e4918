package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// read reads a committed example with Read (which sniffs its format).
func read(t *testing.T, file string) *Session {
	t.Helper()
	s, err := Read(file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call is a call's mapped form, for comparing.
type call struct {
	name, tool, args string
	isError          bool
	resultLine       int
}

func calls(s *Session) []call {
	var out []call
	for _, e := range s.Events {
		if e.Assistant == nil {
			continue
		}
		for _, c := range e.Assistant.Calls {
			if !c.HasResult {
				out = append(out, call{name: c.Name, tool: "NO RESULT"})
				continue
			}
			out = append(out, call{c.Name, c.Tool, string(c.ToolArgs), c.IsError, c.ResultLine})
		}
	}
	return out
}

func users(s *Session) []string {
	var out []string
	for _, e := range s.Events {
		if e.User != nil {
			out = append(out, *e.User)
		}
	}
	return out
}

// checkEveryLine checks that no line of the file is kept twice: as an event, as a result or in
// Skipped (a reply's further lines and usage records are kept in its step and not listed).
func checkEveryLine(t *testing.T, s *Session, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(b), "\n")
	seen := map[int]string{}
	mark := func(line int, what string) {
		if prev, dup := seen[line]; dup {
			t.Errorf("line %d is both %s and %s", line, prev, what)
		}
		seen[line] = what
	}
	for _, e := range s.Events {
		if e.Assistant != nil && len(e.Assistant.Calls) > 0 || e.User != nil || e.Compact != nil {
			mark(e.Line, "an event")
		}
		if e.Assistant != nil {
			for _, c := range e.Assistant.Calls {
				if c.HasResult && c.ResultLine != e.Line {
					mark(c.ResultLine, "a result")
				}
			}
		}
	}
	for _, k := range s.Skipped {
		mark(k.Line, "skipped ("+k.Kind+")")
	}
	if len(seen) > n {
		t.Errorf("%d lines accounted for, the file has %d", len(seen), n)
	}
}

func TestReadClaudeCodeExample(t *testing.T) {
	const file = "testdata/claude-code-example.jsonl"
	s := read(t, file)
	if s.Format != FormatClaudeCode || s.Agent != "claude-code 2.1.332" || s.Model != "claude-sonnet-4-5" || s.Project != "greet" || s.StartDir != "" {
		t.Errorf("format %q agent %q model %q project %q start dir %q", s.Format, s.Agent, s.Model, s.Project, s.StartDir)
	}
	if want := time.Date(2026, 11, 5, 21, 59, 0, 125e6, time.UTC); !s.Start.Equal(want) {
		t.Errorf("start %v, want %v", s.Start, want)
	}
	wantUsers := []string{
		"What does this project do? Where is the greeting built?",
		"Make it say Hi instead of Hello, check the tests, and look up the Go release notes for strings.Cut. My key is [redacted] if the docs need one.",
	}
	if got := users(s); !reflect.DeepEqual(got, wantUsers) {
		t.Errorf("users %q\nwant %q", got, wantUsers)
	}
	want := []call{
		{"Read", "read", `{"path":"main.go"}`, false, 7},
		{"Grep", "grep", `{"pattern":"func Greet"}`, false, 9},
		{"Edit", "edit", `{"path":"greet.go","old_string":"\"Hello, \"","new_string":"\"Hi, \""}`, false, 15},
		{"Bash", "bash", `{"command":"cd . && OPENAI_API_KEY=[redacted] go test ./... && curl -s -H 'Authorization: Bearer [redacted]' https://api.github.com/rate_limit"}`, true, 17},
		{"mcp__docs__search", "", ``, false, 19},
		{"Edit", "edit", `{"path":"greet_test.go","old_string":"Hello, Ada!","new_string":"Hi, Ada!"}`, false, 21},
		{"Bash", "bash", `{"command":"go test ./..."}`, false, 24},
	}
	if got := calls(s); !reflect.DeepEqual(got, want) {
		t.Errorf("calls\n%+v\nwant\n%+v", got, want)
	}
	// Nine replies: the lines of one message (thinking, then a tool use) are one step.
	var steps []*Step
	var times []string
	for _, e := range s.Events {
		if e.Assistant != nil {
			steps = append(steps, e.Assistant)
			times = append(times, e.Time.Format("15:04:05.000"))
		}
	}
	if len(steps) != 9 || len(s.Events) != 11 {
		t.Fatalf("%d steps in %d events, want 9 in 11", len(steps), len(s.Events))
	}
	wantTimes := []string{"21:59:02.410", "21:59:04.003", "21:59:05.700", "22:04:33.870", "22:04:36.440", "22:04:41.300", "22:04:44.950", "22:04:47.330", "22:04:49.100"}
	if !reflect.DeepEqual(times, wantTimes) {
		t.Errorf("step times %v, want %v", times, wantTimes)
	}
	first := steps[0]
	if first.Reasoning != "The project is small; I will read main.go first." || first.ReasoningHidden || len(first.Calls) != 1 {
		t.Errorf("first step: reasoning %q hidden %v, %d calls", first.Reasoning, first.ReasoningHidden, len(first.Calls))
	}
	if r := steps[3].Reasoning; r != "Edit greet.go, then run the tests from ." {
		t.Errorf("reasoning with the project path: %q", r)
	}
	if got := steps[2].Text; got != `It is a tiny Go command: main.go prints Greet("world"), and Greet is in greet.go.` {
		t.Errorf("text %q", got)
	}
	// The usage is the reply's last line's; the prompt counts the cache read and write too.
	u := first.Usage
	if u == nil || *u.InputTokens != 3+11820 || *u.CachedTokens != 0 || *u.CacheWriteTokens != 11820 || *u.OutputTokens != 61 || u.ReasoningTokens != nil {
		t.Errorf("first usage %+v", u)
	}
	if u := steps[1].Usage; *u.InputTokens != 3+11820+190 || *u.CachedTokens != 11820 {
		t.Errorf("second usage: input %d cached %d", *u.InputTokens, *u.CachedTokens)
	}
	r := steps[0].Calls[0]
	if r.ID != "toolu_01ExRead" || string(r.Args) != `{"file_path":"main.go"}` || r.Result != "     1\tpackage main\n     2\t\n     3\tfunc main() { println(Greet(\"world\")) }\n" {
		t.Errorf("read call %+v", r)
	}
	if res := steps[5].Calls[0].Result; res != "Go 1.18 added strings.Cut (searched with key [redacted] from ~/.config/docs)." {
		t.Errorf("unmapped call's result %q", res)
	}
	kinds := map[string]int{}
	for _, k := range s.Skipped {
		kinds[k.Kind]++
	}
	if want := map[string]int{"summary": 1, "queue-operation": 1, "attachment": 1, "user": 1, "file-history-snapshot": 1}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("skipped %v, want %v", kinds, want)
	}
	checkEveryLine(t, s, file)
}

func TestReadCodexExample(t *testing.T) {
	const file = "testdata/codex-example.jsonl"
	s := read(t, file)
	if s.Format != FormatCodex || s.Agent != "codex 0.171.0" || s.Model != "gpt-5.1-codex" || s.Project != "greet" {
		t.Errorf("format %q agent %q model %q project %q", s.Format, s.Agent, s.Model, s.Project)
	}
	if want := time.Date(2026, 11, 5, 21, 59, 0, 125e6, time.UTC); !s.Start.Equal(want) {
		t.Errorf("start %v, want %v", s.Start, want)
	}
	wantUsers := []string{
		"What does this project do? Where is the greeting built?",
		"Make it say Hi instead of Hello, check the tests, and look up the Go release notes for strings.Cut. My key is [redacted] if the docs need one.",
	}
	if got := users(s); !reflect.DeepEqual(got, wantUsers) {
		t.Errorf("users %q\nwant %q", got, wantUsers)
	}
	patch1 := "*** Begin Patch\n*** Update File: greet.go\n@@ func Greet(name string) string {\n-\treturn \"Hello, \" + name + \"!\"\n+\treturn \"Hi, \" + name + \"!\"\n*** End Patch\n"
	p1, _ := json.Marshal(map[string]string{"patch": patch1})
	want := []call{
		{"exec_command", "bash", `{"command":"sed -n 1,40p main.go"}`, false, 11},
		{"shell", "bash", `{"command":"rg -n 'func Greet' ."}`, false, 15},
		{"apply_patch", "apply_patch", string(p1), false, 26},
		{"exec_command", "bash", `{"command":"OPENAI_API_KEY=[redacted] go test ./... && curl -s -H 'Authorization: token [redacted]' https://api.github.com/rate_limit"}`, true, 29},
		{"docs__search", "", ``, false, 32},
		{"apply_patch", "apply_patch", `{"patch":"*** Begin Patch\n*** Update File: greet_test.go\n@@\n-\tif got, want := Greet(\"Ada\"), \"Hello, Ada!\"; got != want {\n+\tif got, want := Greet(\"Ada\"), \"Hi, Ada!\"; got != want {\n*** End Patch\n"}`, false, 35},
		{"exec_command", "bash", `{"command":"go test ./..."}`, false, 38},
	}
	if got := calls(s); !reflect.DeepEqual(got, want) {
		t.Errorf("calls\n%+v\nwant\n%+v", got, want)
	}
	var steps []*Step
	var times []string
	for _, e := range s.Events {
		if e.Assistant != nil {
			steps = append(steps, e.Assistant)
			times = append(times, e.Time.Format("15:04:05.000"))
		}
	}
	if len(steps) != 9 || len(s.Events) != 11 {
		t.Fatalf("%d steps in %d events, want 9 in 11", len(steps), len(s.Events))
	}
	wantTimes := []string{"21:59:02.400", "21:59:04.000", "21:59:05.700", "22:04:33.800", "22:04:36.440", "22:04:41.300", "22:04:44.950", "22:04:47.330", "22:04:49.100"}
	if !reflect.DeepEqual(times, wantTimes) {
		t.Errorf("step times %v, want %v", times, wantTimes)
	}
	// Encrypted reasoning with a summary: the summary is kept, and the rest is hidden.
	if st := steps[0]; st.Reasoning != "Reading main.go first." || !st.ReasoningHidden {
		t.Errorf("first reasoning %q hidden %v", st.Reasoning, st.ReasoningHidden)
	}
	if st := steps[3]; st.Reasoning != "Patch greet.go, then run the tests in ." || st.ReasoningHidden {
		t.Errorf("reasoning text %q hidden %v", st.Reasoning, st.ReasoningHidden)
	}
	// The usage record's, not token_count's again.
	if u := steps[1].Usage; u == nil || *u.InputTokens != 12013 || *u.CachedTokens != 11776 || *u.OutputTokens != 52 || *u.ReasoningTokens != 0 || *u.CacheWriteTokens != 0 {
		t.Errorf("second usage %+v", u)
	}
	if u := steps[0].Usage; *u.ReasoningTokens != 20 {
		t.Errorf("first reasoning tokens %d", *u.ReasoningTokens)
	}
	if got := steps[2].Text; got != `It is a tiny Go command: main.go prints Greet("world"), and Greet is in greet.go.` {
		t.Errorf("text %q", got)
	}
	if res := steps[5].Calls[0].Result; res != "Go 1.18 added strings.Cut (searched with key [redacted] from ~/.config/docs)." {
		t.Errorf("unmapped call's result %q", res)
	}
	if a := string(steps[5].Calls[0].Args); a != `{"query":"strings.Cut release notes","api_key":"[redacted]"}` {
		t.Errorf("unmapped call's args %s", a)
	}
	kinds := map[string]int{}
	for _, k := range s.Skipped {
		kinds[k.Kind]++
	}
	wantKinds := map[string]int{"session_meta": 1, "turn_context": 2, "response_item/message": 2, "event_msg/task_started": 2,
		"event_msg/task_complete": 2, "event_msg/user_message": 1, "event_msg/token_count": 2}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("skipped %v\nwant %v", kinds, wantKinds)
	}
	checkEveryLine(t, s, file)
}

// planted are the secrets and home paths the examples hold.
var planted = []string{
	"sk-ant-api03-EXAMPLEexample0123456789abcdefEXAMPLE", "sk-proj-EXAMPLEexample0123456789abcdefEXAMPLE",
	"sk-proj-EXAMPLE0123456789abcdef", "ghp_EXAMPLEexampleEXAMPLE0123", "docs-live-4f9a8c7e6d5b",
	"/home/ada", "home/ada", "/src/greet",
}

// strings returns every string in v, at any depth, JSON values (Args, ToolArgs) decoded.
func allStrings(v reflect.Value, out *[]string) {
	switch v.Kind() {
	case reflect.String:
		*out = append(*out, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			allStrings(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			allStrings(v.Field(i), out)
		}
	case reflect.Slice:
		if raw, ok := v.Interface().(json.RawMessage); ok {
			*out = append(*out, string(raw))
			var d any
			if json.Unmarshal(raw, &d) == nil {
				allStrings(reflect.ValueOf(d), out)
			}
			return
		}
		for i := range v.Len() {
			allStrings(v.Index(i), out)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			allStrings(k, out)
			allStrings(v.MapIndex(k), out)
		}
	}
}

func TestNoSecretOrHomeSurvives(t *testing.T) {
	for _, file := range []string{"testdata/claude-code-example.jsonl", "testdata/codex-example.jsonl"} {
		raw, _ := os.ReadFile(file)
		held := 0
		for _, p := range planted {
			if strings.Contains(string(raw), p) {
				held++
			}
		}
		if held < 7 {
			t.Errorf("%s holds %d of the planted strings, want 7 or more: the test plants nothing", file, held)
		}
		s := read(t, file)
		s.File = "" // as given by the caller
		var all []string
		allStrings(reflect.ValueOf(s), &all)
		if len(all) < 100 {
			t.Fatalf("%s: %d strings walked", file, len(all))
		}
		for _, str := range all {
			for _, p := range planted {
				if strings.Contains(str, p) {
					t.Errorf("%s: %q survives in %q", file, p, str)
				}
			}
		}
	}
}

func TestSniffAndTheOtherFormat(t *testing.T) {
	cc := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s","version":"2.1.332"}`
	cx := `{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/w/p","cli_version":"0.171.0"}}`
	for line, want := range map[string]string{cc: FormatClaudeCode, cx: FormatCodex, `{"type":"summary","summary":"x"}`: FormatClaudeCode, `{"a":1}`: "", `not json`: ""} {
		if got := Sniff([]byte(line)); got != want {
			t.Errorf("Sniff(%s) = %q, want %q", line, got, want)
		}
	}
	// A first line cut where the read stopped (a MB of Codex's base instructions).
	for line, want := range map[string]string{cx[:80]: FormatCodex, cc[:90]: FormatClaudeCode, `{"a": [1, 2`: "", `{"timestamp":1} x`: ""} {
		if got := Sniff([]byte(line)); got != want {
			t.Errorf("Sniff(%s) = %q, want %q", line, got, want)
		}
	}
	_, err := ReadClaudeCode(strings.NewReader(cx+"\n"), "s.jsonl")
	if err == nil || err.Error() != "s.jsonl:1: a Codex rollout record, not a Claude Code session line (import it with --from codex)" {
		t.Errorf("Claude Code reader on a rollout: %v", err)
	}
	_, err = ReadCodex(strings.NewReader(cx+"\n"+cc+"\n"), "r.jsonl")
	if err == nil || err.Error() != "r.jsonl:2: a Claude Code session line, not a Codex rollout record (import it with --from claude-code)" {
		t.Errorf("Codex reader on a Claude Code line: %v", err)
	}
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 {
		t.Errorf("not a SyntaxError at line 2: %#v", err)
	}
}

func TestBadInput(t *testing.T) {
	meta := `{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/w/p","cli_version":"0.171.0"}}`
	user := `{"timestamp":"2026-11-05T21:59:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}`
	callA := `{"timestamp":"2026-11-05T21:59:02Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\",\"workdir\":\"/w/p/sub\"}","call_id":"A"}}`
	outB := `{"timestamp":"2026-11-05T21:59:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"B","output":"x"}}`
	unknown := `{"timestamp":"2026-11-05T21:59:04Z","type":"hologram","payload":{}}`

	// A truncated line in the middle is an error naming it.
	_, err := ReadCodex(strings.NewReader(meta+"\n"+user[:40]+"\n"+callA+"\n"), "r.jsonl")
	if err == nil || !strings.HasPrefix(err.Error(), "r.jsonl:2: not a JSON object") {
		t.Errorf("truncated middle line: %v", err)
	}
	// A JSON value that is not an object, a field of the wrong type: errors naming the line.
	for in, want := range map[string]string{
		meta + "\n[1,2]\n": "r.jsonl:2: not a JSON object: a JSON array",
		meta + "\n" + `{"type":7,"payload":{}}` + "\n": "r.jsonl:2: field type: a JSON number, want string",
	} {
		if _, err := ReadCodex(strings.NewReader(in), "r.jsonl"); err == nil || err.Error() != want {
			t.Errorf("error %v, want %s", err, want)
		}
	}
	// The last line cut short (no newline) is skipped; a call without its result has none;
	// a result without its call and an unknown record are skipped with why.
	s, err := ReadCodex(strings.NewReader(meta+"\n"+user+"\n"+callA+"\n"+outB+"\n"+unknown+"\n"+callA[:50]), "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 2 || s.Events[1].Assistant == nil {
		t.Fatalf("events %+v", s.Events)
	}
	c := s.Events[1].Assistant.Calls[0]
	if c.HasResult || c.ResultLine != 0 || c.Tool != "bash" || string(c.ToolArgs) != `{"command":"ls","cwd":"sub"}` {
		t.Errorf("call without result %+v (tool args %s)", c, c.ToolArgs)
	}
	whys := map[int]string{}
	for _, k := range s.Skipped {
		whys[k.Line] = k.Why
	}
	for line, want := range map[int]string{4: "a tool result whose call the file does not hold", 5: "a record type this reader does not know", 6: "a record cut short"} {
		if !strings.HasPrefix(whys[line], want) {
			t.Errorf("line %d skipped as %q, want %q…", line, whys[line], want)
		}
	}

	// Claude Code: a truncated middle line, a result without its call, a call without result.
	ccUser := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"go"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s","version":"2.1.332"}`
	ccCall := `{"parentUuid":"u1","type":"assistant","message":{"id":"m1","role":"assistant","model":"claude","content":[{"type":"tool_use","id":"t1","name":"LS","input":{"path":"/w/p/sub"}}]},"uuid":"u2","timestamp":"2026-11-05T21:59:01Z","cwd":"/w/p","sessionId":"s"}`
	ccOrphan := `{"parentUuid":"u2","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"?"}]},"uuid":"u3","timestamp":"2026-11-05T21:59:02Z","cwd":"/w/p","sessionId":"s"}`
	_, err = ReadClaudeCode(strings.NewReader(ccUser+"\n{\"type\":\n"+ccCall+"\n"), "c.jsonl")
	if err == nil || !strings.HasPrefix(err.Error(), "c.jsonl:2: not a JSON object") {
		t.Errorf("truncated middle line: %v", err)
	}
	s, err = ReadClaudeCode(strings.NewReader(ccUser+"\n"+ccCall+"\n"+ccOrphan+"\n"+`{"type":"hologram","uuid":"u9"}`+"\n"), "c.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 2 {
		t.Fatalf("events %+v", s.Events)
	}
	c = s.Events[1].Assistant.Calls[0]
	if c.HasResult || c.Tool != "list" || string(c.ToolArgs) != `{"path":"sub"}` {
		t.Errorf("call %+v (tool args %s)", c, c.ToolArgs)
	}
	if len(s.Skipped) != 2 || !strings.HasPrefix(s.Skipped[0].Why, "a tool result whose call") || s.Skipped[1].Why != "a record type this reader does not know" {
		t.Errorf("skipped %+v", s.Skipped)
	}
}

// Claude Code: a subagent's lines, a compaction, a rewound branch, a copied history.
func TestClaudeCodeSidechainsCompactionBranches(t *testing.T) {
	l := func(s string) string { return s + "\n" }
	in := l(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"first"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":"u1","type":"assistant","message":{"id":"m1","role":"assistant","model":"c","content":[{"type":"text","text":"abandoned"}]},"uuid":"u2","timestamp":"2026-11-05T21:59:01Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":"u1","type":"assistant","message":{"id":"m2","role":"assistant","model":"c","content":[{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"kept"}]},"uuid":"u3","timestamp":"2026-11-05T21:59:02Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":"u3","isSidechain":true,"type":"user","message":{"role":"user","content":"subagent task"},"uuid":"u4","timestamp":"2026-11-05T21:59:03Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":null,"logicalParentUuid":"u3","type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"u5","timestamp":"2026-11-05T21:59:04Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":"u5","type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued. Summary: /w/p/main.go changed."},"uuid":"u6","timestamp":"2026-11-05T21:59:05Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":"u6","type":"user","message":{"role":"user","content":"second"},"uuid":"u7","timestamp":"2026-11-05T21:59:06Z","cwd":"/w/p","sessionId":"s"}`) +
		l(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"first"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s"}`)
	s, err := ReadClaudeCode(strings.NewReader(in), "b.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Events {
		switch {
		case e.User != nil:
			got = append(got, "user "+*e.User)
		case e.Compact != nil:
			got = append(got, "compact "+e.Compact.Summary)
		case e.Assistant != nil:
			got = append(got, "step "+e.Assistant.Text+" hidden="+map[bool]string{true: "yes", false: "no"}[e.Assistant.ReasoningHidden])
		}
	}
	want := []string{"user first", "step kept hidden=yes", "compact This session is being continued. Summary: main.go changed.", "user second"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %q\nwant %q", got, want)
	}
	skipped := map[int]string{}
	for _, k := range s.Skipped {
		skipped[k.Line] = k.Why
	}
	for line, want := range map[int]string{2: "on a branch the session left", 4: "a subagent's line", 8: "a line seen before"} {
		if !strings.HasPrefix(skipped[line], want) {
			t.Errorf("line %d skipped as %q, want %q…", line, skipped[line], want)
		}
	}
}

// Codex: a compaction, the older shell output, shell's apply_patch, a local shell call.
func TestCodexCompactionAndOlderShapes(t *testing.T) {
	l := func(s string) string { return s + "\n" }
	in := l(`{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/w/p","cli_version":"0.40.0"}}`) +
		l(`{"timestamp":"2026-11-05T21:59:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_instructions>be brief</user_instructions>"}]}}`) +
		l(`{"timestamp":"2026-11-05T21:59:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}`) +
		l(`{"timestamp":"2026-11-05T21:59:03Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"apply_patch\",\"*** Begin Patch\\n*** Add File: /w/p/a.txt\\n+hi\\n*** End Patch\"],\"workdir\":\"/w/p\"}","call_id":"c1"}}`) +
		l(`{"timestamp":"2026-11-05T21:59:04Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"boom\",\"metadata\":{\"exit_code\":2}}"}}`) +
		l(`{"timestamp":"2026-11-05T21:59:05Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7}}}}`) +
		l(`{"timestamp":"2026-11-05T21:59:06Z","type":"response_item","payload":{"type":"local_shell_call","call_id":"c2","status":"completed","action":{"type":"exec","command":["ls","-la","/etc"],"working_directory":"/tmp"}}}`) +
		l(`{"timestamp":"2026-11-05T21:59:07Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":{"content":"denied","success":false}}}`) +
		l(`{"timestamp":"2026-11-05T21:59:08Z","type":"compacted","payload":{"message":"We fixed a.txt in /w/p.","replacement_history":[]}}`)
	s, err := ReadCodex(strings.NewReader(in), "o.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 4 || s.Events[0].User == nil || *s.Events[0].User != "fix it" || s.Events[3].Compact == nil || s.Events[3].Compact.Summary != "We fixed a.txt in ." {
		t.Fatalf("events %+v", s.Events)
	}
	a := s.Events[1].Assistant.Calls[0]
	if a.Tool != "apply_patch" || string(a.ToolArgs) != `{"patch":"*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"}` || !a.IsError || a.Result != `{"output":"boom","metadata":{"exit_code":2}}` {
		t.Errorf("apply_patch call %+v (%s)", a, a.ToolArgs)
	}
	if u := s.Events[1].Assistant.Usage; u == nil || *u.InputTokens != 100 || *u.CachedTokens != 40 || u.CacheWriteTokens != nil {
		t.Errorf("token_count usage %+v", u)
	}
	// A workdir outside the project: not mapped; the object output's success false is an error.
	b := s.Events[2].Assistant.Calls[0]
	if b.Tool != "" || b.Name != "local_shell" || !b.IsError || b.Result != "denied" {
		t.Errorf("local shell call %+v", b)
	}
}

// FuzzReadTranscript: either reader on any input returns a session or an error naming the
// file and line, never a panic; every event has exactly one of its kinds set.
func FuzzReadTranscript(f *testing.F) {
	for _, file := range []string{"testdata/claude-code-example.jsonl", "testdata/codex-example.jsonl"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		// A few lines each, whole and cut inside a line: small seeds keep the fuzzer fast.
		lines := strings.SplitAfter(string(b), "\n")
		f.Add([]byte(strings.Join(lines[2:8], "")))
		f.Add([]byte(strings.Join(lines[8:14], "") + lines[14][:30]))
	}
	f.Add([]byte("{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":\"a\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, read := range map[string]func(string) (*Session, error){
			"claude": func(s string) (*Session, error) { return ReadClaudeCode(strings.NewReader(s), "f.jsonl") },
			"codex":  func(s string) (*Session, error) { return ReadCodex(strings.NewReader(s), "f.jsonl") },
		} {
			s, err := read(string(data))
			if err != nil {
				if !strings.HasPrefix(err.Error(), "f.jsonl:") {
					t.Errorf("%s: error %q does not name the file", name, err)
				}
				continue
			}
			for _, e := range s.Events {
				n := 0
				if e.User != nil {
					n++
				}
				if e.Assistant != nil {
					n++
				}
				if e.Compact != nil {
					n++
				}
				if n != 1 {
					t.Errorf("%s: event at line %d has %d kinds", name, e.Line, n)
				}
			}
		}
	})
}

// Each Claude Code tool maps onto the lab's as docs/import.md says, or stays unmapped.
func TestClaudeCodeToolMapping(t *testing.T) {
	cases := []struct{ name, input, tool, args string }{
		{"Read", `{"file_path":"/w/p/a/b.go","offset":10,"limit":5,"pages":"1"}`, "read", `{"path":"a/b.go","offset":10,"limit":5}`},
		{"Read", `{"file_path":"/etc/hosts"}`, "", ""},
		{"Read", `{"file_path":"c.go"}`, "read", `{"path":"sub/c.go"}`}, // relative to the line's cwd
		{"Edit", `{"file_path":"/w/p/a.go","old_string":"x","new_string":"y"}`, "edit", `{"path":"a.go","old_string":"x","new_string":"y"}`},
		{"Edit", `{"file_path":"/w/p/a.go","old_string":"x","new_string":"y","replace_all":true}`, "", ""},
		{"MultiEdit", `{"file_path":"/w/p/a.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`, "multiedit", `{"path":"a.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d"}]}`},
		{"MultiEdit", `{"file_path":"/w/p/a.go","edits":[{"old_string":"a","new_string":"b","replace_all":true}]}`, "", ""},
		{"Write", `{"file_path":"/w/p/n.md","content":"hi"}`, "write", `{"path":"n.md","content":"hi"}`},
		{"Glob", `{"pattern":"**/*.go","path":"/w/p"}`, "glob", `{"pattern":"**/*.go"}`},
		{"Glob", `{"pattern":"*.go"}`, "glob", `{"pattern":"*.go","path":"sub"}`},
		{"Grep", `{"pattern":"func","path":"/w/p/x","-i":true,"output_mode":"content","-C":2}`, "grep", `{"pattern":"(?i)func","path":"x"}`},
		{"Grep", `{"pattern":"func","glob":"*.go"}`, "", ""},
		{"Grep", `{"pattern":"func","type":"go"}`, "", ""},
		{"LS", `{"path":"/w/p/x"}`, "list", `{"path":"x"}`},
		{"LS", `{"path":"/w/p","ignore":["*.tmp"]}`, "", ""},
		{"Bash", `{"command":"go test ./...","timeout":1000}`, "bash", `{"command":"go test ./...","cwd":"sub"}`},
		{"Bash", `{"command":"sleep 100","run_in_background":true}`, "", ""},
		{"TodoWrite", `{"todos":[]}`, "", ""},
		{"WebFetch", `{"url":"https://example.com","prompt":"x"}`, "", ""},
	}
	var in strings.Builder
	in.WriteString(`{"parentUuid":null,"type":"user","message":{"role":"user","content":"go"},"uuid":"u0","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s"}` + "\n")
	for i, c := range cases {
		fmt.Fprintf(&in, `{"parentUuid":"u%d","type":"assistant","message":{"id":"m%d","role":"assistant","model":"c","content":[{"type":"tool_use","id":"t%d","name":%q,"input":%s}]},"uuid":"u%d","timestamp":"2026-11-05T21:59:01Z","cwd":"/w/p/sub","sessionId":"s"}`+"\n", i, i, i, c.name, c.input, i+1)
	}
	s, err := ReadClaudeCode(strings.NewReader(in.String()), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != len(cases)+1 {
		t.Fatalf("%d events, want %d", len(s.Events), len(cases)+1)
	}
	for i, c := range cases {
		call := s.Events[i+1].Assistant.Calls[0]
		if call.Tool != c.tool || string(call.ToolArgs) != c.args {
			t.Errorf("%s %s: tool %q %s, want %q %s", c.name, c.input, call.Tool, call.ToolArgs, c.tool, c.args)
		}
	}
}

// Each Codex tool maps onto the lab's as docs/import.md says, or stays unmapped.
func TestCodexToolMapping(t *testing.T) {
	q := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cases := []struct{ item, tool, args string }{
		{`{"type":"function_call","name":"exec_command","arguments":` + q(`{"cmd":"ls","workdir":"/w/p/a"}`) + `}`, "bash", `{"command":"ls","cwd":"a"}`},
		{`{"type":"function_call","name":"exec_command","arguments":` + q(`{"cmd":"ls","workdir":"/srv"}`) + `}`, "", ""},
		{`{"type":"function_call","name":"shell","arguments":` + q(`{"command":["git","log","--format=%h %s"]}`) + `}`, "bash", `{"command":"git log '--format=%h %s'"}`},
		{`{"type":"function_call","name":"shell_command","arguments":` + q(`{"command":"go vet ./...","workdir":"/w/p"}`) + `}`, "bash", `{"command":"go vet ./..."}`},
		{`{"type":"function_call","name":"exec_command","arguments":` + q(`{"cmd":"apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: /w/p/old.txt\n*** End Patch\nEOF"}`) + `}`, "apply_patch", `{"patch":"*** Begin Patch\n*** Delete File: old.txt\n*** End Patch"}`},
		{`{"type":"function_call","name":"apply_patch","arguments":` + q(`{"input":"*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch"}`) + `}`, "apply_patch", `{"patch":"*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch"}`},
		{`{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Update File: /etc/passwd\n*** End Patch"}`, "", ""},
		{`{"type":"function_call","name":"update_plan","arguments":` + q(`{"plan":[]}`) + `}`, "", ""},
		{`{"type":"function_call","name":"write_stdin","arguments":` + q(`{"session_id":1,"chars":"y\n"}`) + `}`, "", ""},
	}
	var in strings.Builder
	in.WriteString(`{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/w/p","cli_version":"0.171.0"}}` + "\n")
	in.WriteString(`{"timestamp":"2026-11-05T21:59:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}` + "\n")
	for i, c := range cases {
		item := strings.TrimSuffix(c.item, "}") + fmt.Sprintf(`,"call_id":"c%d"}`, i)
		fmt.Fprintf(&in, `{"timestamp":"2026-11-05T21:59:02Z","type":"response_item","payload":%s}`+"\n", item)
		fmt.Fprintf(&in, `{"timestamp":"2026-11-05T21:59:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":"ok"}}`+"\n", i)
	}
	s, err := ReadCodex(strings.NewReader(in.String()), "m.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != len(cases)+1 {
		t.Fatalf("%d events, want %d", len(s.Events), len(cases)+1)
	}
	for i, c := range cases {
		call := s.Events[i+1].Assistant.Calls[0]
		if call.Tool != c.tool || string(call.ToolArgs) != c.args || !call.HasResult {
			t.Errorf("%s: tool %q %s (result %v), want %q %s", c.item, call.Tool, call.ToolArgs, call.HasResult, c.tool, c.args)
		}
	}
}

// A session started in the home folder is the project "~", never the user's name.
func TestProjectInHome(t *testing.T) {
	in := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/home/ada","sessionId":"s"}` + "\n"
	s, err := ReadClaudeCode(strings.NewReader(in), "h.jsonl")
	if err != nil || s.Project != "~" {
		t.Errorf("project %q (%v), want ~", s.Project, err)
	}
}

// The readers redact a home in Claude Code's dashed form, a ~NAME/ path and the user's name in
// any path (learned from the file's own place, or from a /home/NAME anywhere in the file), in
// the events and in what they record of the lines they skip.
func TestReadersRedactDashedHomesAndNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", "zed", ".claude", "projects", "-home-zed-src-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cc := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"logs are in ~/.claude/projects/-home-zed-src-app and /tmp/zed/cache, see ~zed/notes"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/home/zed/src/app","sessionId":"s"}` + "\n" +
		`{"type":"-home-zed-src-app-record","uuid":"u2"}` + "\n" +
		`{"parentUuid":"u1","type":"system","subtype":"zed/x","uuid":"u3","timestamp":"2026-11-05T21:59:01Z","cwd":"/home/zed/src/app","sessionId":"s"}` + "\n"
	file := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(file, []byte(cc), 0o644); err != nil {
		t.Fatal(err)
	}
	cx := `{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/Users/yan/w","cli_version":"0.171.0"}}` + "\n" +
		`{"timestamp":"2026-11-05T21:59:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"build in /private/var/yan/tmp and C--Users-yan-w"}]}}` + "\n" +
		`{"timestamp":"2026-11-05T21:59:02Z","type":"/opt/yan/thing","payload":{}}` + "\n"
	for _, c := range []struct {
		read func() (*Session, error)
		name string
	}{
		{func() (*Session, error) { return Read(file) }, "zed"},
		{func() (*Session, error) { return ReadCodex(strings.NewReader(cx), "r.jsonl") }, "yan"},
	} {
		s, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		s.File = ""
		var all []string
		allStrings(reflect.ValueOf(s), &all)
		for _, str := range all {
			if strings.Contains(str, c.name) {
				t.Errorf("%q survives in %q", c.name, str)
			}
		}
		if len(s.Skipped) < 2 || len(users(s)) != 1 {
			t.Errorf("%d skipped, users %q: the test reads nothing", len(s.Skipped), users(s))
		}
	}
}

// A file of another format given to a reader is an error naming the file, the line and what
// the reader wanted, whichever the pair: a capture's requests line to either agent's reader, an
// agent's session to the capture's, JSON lines of no known format.
func TestReadersRefuseOtherFormats(t *testing.T) {
	cc := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s"}`
	cx := `{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/w/p","cli_version":"0.171.0"}}`
	capLine := `{"scenario":"c","arm":"capture","repetition":1,"request_index":0,"api":"ollama-chat","body":{"messages":[{"role":"user","content":"hi"}]}}`
	dir := t.TempDir()
	file := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		from, file, want string
	}{
		{"claude-code", file("cap1.jsonl", capLine+"\n"), "cap1.jsonl:1: a lab capture's requests line, not a Claude Code session line (import it with --from capture)"},
		{"codex", file("cap2.jsonl", "\n"+capLine+"\n"), "cap2.jsonl:2: a lab capture's requests line, not a Codex rollout record (import it with --from capture)"},
		{"capture", file("cx.jsonl", cx+"\n"), "cx.jsonl:1: a Codex rollout record, not a lab capture's requests line (import it with --from codex)"},
		{"capture", file("cc.jsonl", capLine+"\n"+cc+"\n"), "cc.jsonl:2: a Claude Code session line, not a lab capture's requests line (import it with --from claude-code)"},
		{"codex", file("other1.jsonl", `{"a":1}`+"\n"+`{"b":2}`+"\n"), `other1.jsonl:1: no Codex rollout record in the file (a JSON object {"timestamp", "type", "payload"} a line)`},
		{"claude-code", file("other2.jsonl", `{"a":1}`+"\n"), `other2.jsonl:1: no Claude Code session line in the file (a JSON object with "type" and "uuid" or "message" a line)`},
	} {
		_, err := Readers[c.from](c.file)
		if err == nil || strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)) != c.want {
			t.Errorf("--from %s: %v\nwant %s", c.from, err, c.want)
		}
	}
}

// Invalid UTF-8 in a line is an error naming the file, the line and the byte, in each reader;
// the last line cut short inside a character is skipped like any cut record.
func TestReadersRefuseInvalidUTF8(t *testing.T) {
	cc := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-11-05T21:59:00Z","cwd":"/w/p","sessionId":"s"}`
	bad := `{"parentUuid":"u1","type":"user","message":{"role":"user","content":"caf` + "\xe9" + `"},"uuid":"u2","sessionId":"s"}`
	if _, err := ReadClaudeCode(strings.NewReader(cc+"\n"+bad+"\n"), "u.jsonl"); err == nil || err.Error() != "u.jsonl:2: invalid UTF-8 at byte 73 of the line: the agents write UTF-8, so the file is damaged or not a session" {
		t.Errorf("Claude Code: %v", err)
	}
	cx := `{"timestamp":"2026-11-05T21:59:00Z","type":"session_meta","payload":{"id":"t","cwd":"/w/p","cli_version":"0.171.0"}}`
	if _, err := ReadCodex(strings.NewReader(cx+"\n"+"{\"type\":\"x\xff\",\"payload\":{}}\n"), "r.jsonl"); err == nil || !strings.HasPrefix(err.Error(), "r.jsonl:2: invalid UTF-8 at byte 11") {
		t.Errorf("Codex: %v", err)
	}
	s, err := ReadClaudeCode(strings.NewReader(cc+"\n"+`{"type":"user","message":{"content":"caf`+"\xc3"), "c.jsonl")
	if err != nil || len(s.Skipped) != 1 || !strings.HasPrefix(s.Skipped[0].Why, "a record cut short") {
		t.Errorf("cut last line: %v, skipped %+v", err, s)
	}
	f := filepath.Join(t.TempDir(), "requests.jsonl")
	os.WriteFile(f, []byte(`{"scenario":"c","api":"ollama-chat","body":{"messages":[{"role":"user","content":"`+"\xc3\x28"+`"}]}}`+"\n"), 0o644)
	if _, err := ReadCapture(f); err == nil || !strings.Contains(err.Error(), "requests.jsonl:1: invalid UTF-8 at byte 83") {
		t.Errorf("capture: %v", err)
	}
}
