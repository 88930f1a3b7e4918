package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/scenario"
	"lab/transcript"
)

func ptr(s string) *string { return &s }

// session is a small session of the kind the agents' readers produce: a read after an edit, a
// partial read of a file never shown whole, a listing, a shell command, an unmapped tool, and
// planted secrets and home paths.
func session() *transcript.Session {
	t0 := time.Date(2026, 3, 2, 23, 58, 0, 0, time.FixedZone("CET", 3600))
	call := func(id, name, tool, args, result string) transcript.Call {
		return transcript.Call{ID: id, Name: name, Args: json.RawMessage(args), Tool: tool, ToolArgs: json.RawMessage(args), Result: result, HasResult: true}
	}
	web := call("c5", "WebFetch", "", `{"url":"https://example.invalid/?key=sk-ant-PLANTEDSECRET0123456789abcdef"}`, "fetched for /home/alice/notes: Bearer PLANTEDTOKEN0123456789")
	web.Tool, web.ToolArgs = "", nil
	return &transcript.Session{
		Format: "claude-code", File: "/home/alice/.claude/projects/x/session.jsonl", Agent: "claude-code 2.0.14", Model: "claude-x",
		Project: "linkstash", Start: t0,
		Events: []transcript.Event{
			{Line: 1, Time: t0, User: ptr("Rename greet to hello in /home/alice/src/linkstash/main.go. My key is sk-PLANTEDSECRETabcdef0123456789.")},
			{Line: 2, Time: t0.Add(10 * time.Second), Assistant: &transcript.Step{Reasoning: "Edit first, then look.", Calls: []transcript.Call{
				call("c1", "Edit", "edit", `{"path":"main.go","old_string":"func greet()","new_string":"func hello()"}`, "The file main.go has been updated."),
			}}},
			{Line: 4, Time: t0.Add(20 * time.Second), Assistant: &transcript.Step{Calls: []transcript.Call{
				call("c2", "Read", "read", `{"path":"main.go"}`, "     1→package main\n     2→\n     3→func hello() {}\n"),
				call("c3", "Read", "read", `{"path":"big.go","offset":10,"limit":2}`, "    10→x := 1\n    11→y := 2\n"),
				call("c4", "Glob", "glob", `{"pattern":"**/*.md"}`, "/home/alice/src/linkstash/README.md\n/home/alice/src/linkstash/docs/a.md"),
				call("c6", "Bash", "bash", `{"command":"go test ./..."}`, "ok  \tlinkstash\t0.01s\nAWS_SECRET_ACCESS_KEY=PLANTEDaws0123456789"),
				web,
			}}},
			{Line: 9, Time: t0.Add(3 * time.Minute), Assistant: &transcript.Step{Text: "Renamed; /root/.cache untouched."}},
		},
		Skipped: []transcript.Skip{{Line: 3, Kind: "file-history-snapshot", Why: "not part of the conversation"}},
	}
}

// The workspace holds main.go as it was before the edit (the read after it, taken back through
// it), the listed files empty, and no big.go (only a part of it was shown); the calls that the
// workspace cannot answer replay their recorded answers, the unmapped tool is the scenario's
// own; the clock moves as the session's times did; every arm loads it.
func TestImportWorkspaceAndRecordedAnswers(t *testing.T) {
	dir := t.TempDir()
	sum, err := Import(session(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadScenario(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range sc.Files {
		files[f.Name] = string(f.Data)
	}
	if got, want := files["main.go"], "package main\n\nfunc greet() {}\n"; got != want {
		t.Errorf("main.go = %q, want the content before the edit %q", got, want)
	}
	if _, ok := files["big.go"]; ok {
		t.Errorf("big.go is in the workspace, though only lines 10-11 were shown")
	}
	if c, ok := files["docs/a.md"]; !ok || c != "" {
		t.Errorf("docs/a.md = %q (in: %v), want an empty listed file", c, ok)
	}
	recorded := map[string]bool{}
	for _, st := range sc.Steps {
		if st.Assistant == nil {
			continue
		}
		for _, c := range st.Assistant.Calls {
			recorded[c.Tool] = c.Answer != nil
		}
	}
	want := map[string]bool{"edit": false, "glob": false, "bash": true, "WebFetch": true}
	for tool, rec := range want {
		if recorded[tool] != rec {
			t.Errorf("%s: recorded answer %v, want %v (calls: %v)", tool, recorded[tool], rec, recorded)
		}
	}
	if len(sc.Tools) != 1 || sc.Tools[0].Name != "WebFetch" {
		t.Errorf("the scenario's own tools = %+v, want WebFetch", sc.Tools)
	}
	if sum.Recorded != 3 || sum.Run != 3 || sum.RecordedWhy[WhyPartial] != 1 || sum.Added != 0 {
		t.Errorf("summary %+v: want 3 recorded (a partial read, bash, WebFetch), 3 run", sum)
	}
	clocks := 0
	for _, st := range sc.Steps {
		if st.Clock != nil {
			clocks++
		}
	}
	if clocks != 3 || sc.Clock != "2026-03-02T23:58:00+01:00" {
		t.Errorf("clock %s with %d clock steps, want the session's start and 3", sc.Clock, clocks)
	}
	if got := sc.RecordedSteps(); len(got) != 1 || got[0].Turn != 1 || got[0].Step != 2 || got[0].Calls != 3 {
		t.Errorf("RecordedSteps = %+v, want turn 1 step 2 with 3 calls", got)
	}
	if sc.Imported == nil || len(sc.Imported.Skipped) != 1 || sc.Imported.Skipped[0].Line != 3 {
		t.Errorf("source: %+v, want the reader's skipped line 3", sc.Imported)
	}
}

// No planted secret and no home path survives anywhere in what the import writes.
func TestImportRedactsSecretsAndHomePaths(t *testing.T) {
	dir := t.TempDir()
	s := session()
	// A file whose name holds a secret, shown whole; a listed one whose name holds a home; a
	// skipped record quoting a home, a dashed home and a secret.
	st := s.Events[2].Assistant
	st.Calls = append(st.Calls,
		transcript.Call{ID: "c7", Name: "Read", Tool: "read", ToolArgs: json.RawMessage(`{"path":"keys/ghp_PLANTEDghp0123456789abcdefXYZ.txt"}`), Args: json.RawMessage(`{"file_path":"/home/alice/src/linkstash/keys/ghp_PLANTEDghp0123456789abcdefXYZ.txt"}`), Result: "     1→see /home/alice/x\n", HasResult: true},
		transcript.Call{ID: "c8", Name: "Glob", Tool: "glob", ToolArgs: json.RawMessage(`{"pattern":"**"}`), Args: json.RawMessage(`{"pattern":"**"}`), Result: "/home/alice/src/linkstash/cache/Users/bob/x.md\n/home/alice/src/linkstash/sk-ant-PLANTEDSECRETfile0123456789ab.md", HasResult: true})
	s.Skipped = append(s.Skipped, transcript.Skip{Line: 5, Kind: "/home/alice/kind", Why: "quoting ~/.claude/projects/-home-alice-src-linkstash and sk-PLANTEDSECRETskipped0123456789"})
	if _, err := Import(s, dir, Options{Capture: [][]byte{[]byte(`{"scenario":"c","arm":"capture","repetition":1,"request_index":0,"api":"openai-chat","body":{"api_key":"PLANTEDBODYKEY123","messages":[{"role":"user","content":"see /home/alice/x and /Users/bob/y"}]}}`)}}); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	planted := []string{"PLANTEDSECRET", "PLANTEDTOKEN", "PLANTEDaws", "PLANTEDBODYKEY", "PLANTEDghp", "/home/alice", "-home-alice", "/Users/bob", "/root/"}
	if home != "" && home != "/" {
		planted = append(planted, home+"/")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("%d files written, want scenario.yaml, workspace.txtar, requests.jsonl", len(entries))
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range planted {
			if strings.Contains(string(data), p) {
				t.Errorf("%s holds %q", e.Name(), p)
			}
		}
	}
}

// Bad input is a clear error, never a crash: no events, and a session whose flow breaks the
// scenario's rules (a reply before any message, calls never answered) still gives a scenario
// that loads, with what it added saying so.
func TestImportBadSessions(t *testing.T) {
	if _, err := Import(&transcript.Session{File: "empty.jsonl"}, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "empty.jsonl") {
		t.Errorf("empty session: %v, want an error naming the file", err)
	}
	s := &transcript.Session{Format: "codex", File: "r.jsonl", Events: []transcript.Event{
		{Line: 1, Assistant: &transcript.Step{Text: "hello?"}},
		{Line: 2, User: ptr("first")},
		{Line: 3, User: ptr("second")},
		{Line: 4, Assistant: &transcript.Step{Calls: []transcript.Call{{ID: "a", Name: "shell", Args: json.RawMessage(`{"cmd":["ls"]}`)}}}},
	}}
	dir := t.TempDir()
	sum, err := Import(s, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Added != 1 || sum.Users != 1 || sum.Joined != 1 || len(sum.Skipped) != 2 || sum.RecordedWhy[WhyNoResult] != 1 {
		t.Errorf("summary %+v: want one added reply, the two messages as one turn, the first reply skipped, a call without result", sum)
	}
	// The two messages are one turn holding both, and the scenario says so.
	sc, err := scenario.LoadScenario(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if u := sc.Steps[0].User; u == nil || *u != "first\n\nsecond" {
		t.Errorf("first step %+v, want the user turn \"first\\n\\nsecond\"", sc.Steps[0])
	}
	if sk := sc.Imported.Skipped; len(sk) != 2 || sk[1].Line != 3 || !strings.Contains(sk[1].Why, "joined to the turn before it (line 2)") {
		t.Errorf("skipped %+v, want line 3 joined to line 2's turn", sk)
	}

	// A session without a message of the person: an error naming the file.
	noUser := &transcript.Session{Format: "codex", File: "only-replies.jsonl", Events: []transcript.Event{
		{Line: 4, Assistant: &transcript.Step{Text: "hello?"}},
	}}
	if _, err := Import(noUser, t.TempDir(), Options{}); err == nil || !strings.HasPrefix(err.Error(), "only-replies.jsonl: no message of the person") {
		t.Errorf("session without a user message: %v, want an error naming the file", err)
	}
}

// A file a later read shows otherwise than the workspace holds it (changed outside the
// session's calls) is the session's no longer: that read, the edits of it and the reads after
// replay their recorded answers; a stub of an earlier read ("unchanged since") of a file the
// workspace holds runs for real.
func TestImportFileChangedOutside(t *testing.T) {
	call := func(id, tool, args, result string) transcript.Call {
		return transcript.Call{ID: id, Name: tool, Args: json.RawMessage(args), Tool: tool, ToolArgs: json.RawMessage(args), Result: result, HasResult: true}
	}
	s := &transcript.Session{Format: "capture", File: "r.jsonl", Project: "p", Events: []transcript.Event{
		{Line: 1, User: ptr("go")},
		{Line: 2, Assistant: &transcript.Step{Calls: []transcript.Call{
			call("1", "read", `{"path":"a.go"}`, "1: package a\n2: var x = 1"),
			call("2", "read", `{"path":"a.go"}`, "[#0002]\nUnchanged since #0001, which already shows lines 1-2."),
			call("3", "read", `{"path":"a.go"}`, "1: package a\n2: var x = 2"),
			call("4", "edit", `{"path":"a.go","old_string":"x = 2","new_string":"x = 3"}`, "@@ diff"),
			call("5", "read", `{"path":"a.go"}`, "1: package a\n2: var x = 3"),
		}}},
		{Line: 3, Assistant: &transcript.Step{Text: "done"}},
	}}
	dir := t.TempDir()
	if _, err := Import(s, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.LoadScenario(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, c := range sc.Steps[1].Assistant.Calls {
		got = append(got, c.Answer != nil)
	}
	if want := []bool{false, false, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
	if string(sc.Files[0].Data) != "package a\nvar x = 1\n" {
		t.Errorf("a.go = %q, want the first read's", sc.Files[0].Data)
	}
}

// The real agents' captures of lab agents (capture/testdata/agents: Claude Code, Codex,
// opencode, pi, Qwen Code, each against the synthetic model) import into scenarios that load:
// the agents' own system prompts and tool lists, their requests' many forms, never a crash.
func TestImportRealAgentCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "capture", "testdata", "agents", "*", "requests.jsonl"))
	if len(files) < 5 {
		t.Fatalf("%d agent captures, want 5", len(files))
	}
	for _, f := range files {
		c, err := transcript.ReadCaptureFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		sum, err := Import(c.Session, t.TempDir(), Options{Capture: c.Lines})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if sum.Users == 0 || sum.Assistants == 0 {
			t.Errorf("%s: %+v: want a turn at least", f, sum)
		}
	}
}
