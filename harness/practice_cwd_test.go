package harness_test

import (
	"context"
	"strings"
	"testing"

	"lab/arms"
	"lab/backend/ollama"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

// replayOn runs a scenario as session number session of a run on be, which keeps its cache from
// the sessions it ran before (as a warm server does).
func replayOn(t *testing.T, be *renderBackend, sc *scenario.Scenario, arm arms.Arm, session int) []metrics.Sample {
	t.Helper()
	sink := &metrics.MemorySink{}
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm, Repetition: 1, RunID: "t", Session: session, Loop: loopConfig(t), Backend: be,
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return sink.Samples()
}

// twoSessions runs the tiny scenario twice with arm, as sessions 0 and 1 of a run on one
// backend, and attributes the second session's first request against what the first session
// left in the cache: the harness's own attribution starts each session with an empty cache.
func twoSessions(t *testing.T, arm arms.Arm) (first, second *renderBackend, firstSamples, secondSamples []metrics.Sample, cross cachesim.Attribution) {
	t.Helper()
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	be := &renderBackend{conv: conv}
	sc := load(t, "testdata/tiny.yaml")
	firstSamples = replayOn(t, be, sc, arm, 0)
	first = &renderBackend{requests: be.requests, rendered: be.rendered}
	left := be.prev
	be.requests, be.rendered = nil, nil
	secondSamples = replayOn(t, be, sc, arm, 1)
	second = be
	att := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: loopConfig(t).Note.Open}
	last := len(first.requests) - 1
	if _, err := att.Observe(first.requests[last], first.rendered[last], left, int64(len(first.rendered[last]))); err != nil {
		t.Fatal(err)
	}
	cross, err := att.Observe(second.requests[0], second.rendered[0], second.rendered[0], int64(len(second.rendered[0])))
	if err != nil {
		t.Fatal(err)
	}
	return first, second, firstSamples, secondSamples, cross
}

// The cwd practice names the session's own folder at the end of the system prompt: the same
// line in every request of a session, another in the next session, whose first request re-reads
// from the folder's number on, in the cwd line.
func TestCwdPracticeInSystemPrompt(t *testing.T) {
	first, second, s1, s2, cross := twoSessions(t, userArm(t, "      - cwd: {}\n"))
	for n, be := range []*renderBackend{first, second} {
		want := "\n\nWorking directory: " + harness.SessionDir(n, "demo")
		for i, r := range be.requests {
			if sys := r.Messages[0].Content; !strings.HasSuffix(sys, want) {
				t.Fatalf("session %d request %d: system prompt ends %q; want %q", n, i, sys[max(len(sys)-60, 0):], want)
			}
		}
	}
	if harness.SessionDir(1, "demo") != "/tmp/lab-session-2/demo" {
		t.Errorf("session 1's folder %q", harness.SessionDir(1, "demo"))
	}
	for _, s := range append(s1[1:], s2[1:]...) {
		if strings.HasPrefix(s.DivergenceSegment, "cwd") || s.DivergenceSegment == "system" {
			t.Errorf("request %d diverged at %q inside a session, where the folder stays", s.RequestIndex, s.DivergenceSegment)
		}
	}
	r := second.rendered[0]
	want := int64(strings.Index(r, "Working directory: /tmp/lab-session-2/") + len("Working directory: /tmp/lab-session-"))
	if cross.DivergenceSegment.String() != "cwd in system" || cross.ExpectedCachedTokens != want {
		t.Errorf("session 2's first request after session 1: diverged at %q, expected %d cached; want cwd in system, %d (the bytes before the folder's number)",
			cross.DivergenceSegment, cross.ExpectedCachedTokens, want)
	}
	// The backend's cache went on from session 1 to session 2: its count agrees.
	if c := s2[0].CachedTokens; c == nil || *c != want {
		t.Errorf("session 2's first request cached %v on the warm backend; want %d", c, want)
	}
	if cross.DivergenceToken == nil || first.rendered[0][:want] != r[:want] {
		t.Errorf("the two sessions' first requests differ before the cwd line")
	}
}

// With in: tool_descriptions the line ends the description of every tool that resolves paths
// (read, list, glob, grep, edit, write, multiedit, bash), marked: the next session's first
// request diverges in the first such tool's description, "cwd in tools".
func TestCwdPracticeInToolDescriptions(t *testing.T) {
	first, second, _, s2, cross := twoSessions(t, userArm(t, "      - cwd: {in: tool_descriptions}\n"))
	line := "Working directory: " + harness.SessionDir(1, "demo")
	for _, tl := range second.requests[0].Tools {
		named := strings.HasSuffix(tl.Description, "\n\n"+line)
		if want := tl.Name != "recall" && tl.Name != "apply_patch"; named != want {
			t.Errorf("tool %s: names the folder %v; want %v", tl.Name, named, want)
		}
		if named && (len(tl.Marks) != 1 || tl.Marks[0] != chat.Mark{Practice: "cwd", Text: line}) {
			t.Errorf("tool %s marks %+v", tl.Name, tl.Marks)
		}
	}
	if strings.Contains(second.requests[0].Messages[0].Content, "lab-session") {
		t.Error("the system prompt names the folder too")
	}
	r := second.rendered[0]
	want := int64(strings.Index(r, line) + len("Working directory: /tmp/lab-session-"))
	if cross.DivergenceSegment.String() != "cwd in tools" || cross.ExpectedCachedTokens != want {
		t.Errorf("session 2's first request: diverged at %q, expected %d cached; want cwd in tools, %d", cross.DivergenceSegment, cross.ExpectedCachedTokens, want)
	}
	if c := s2[0].CachedTokens; c == nil || *c != want {
		t.Errorf("session 2's first request cached %v; want %d", c, want)
	}
	// The re-read from the cwd line on counts as tools up to the tool list's end.
	seg := cachesim.Segments(r, cachesim.Parts(second.requests[0], "<session-note>"))
	if got := cachesim.SegmentAt(seg, int(want)).String(); got != "cwd in tools" {
		t.Errorf("segment at the folder's number: %q", got)
	}
	if first.requests[0].Tools[0].Description == second.requests[0].Tools[0].Description {
		t.Error("the two sessions' first tool descriptions are the same")
	}
}

// steps runs testdata/steps.yaml: the person edits AGENTS.md and git status changes before
// request 2, a rewind takes request 2 back before request 3, and request 5 starts turn 2.
func steps(t *testing.T, a arms.Arm) ([]metrics.Sample, *renderBackend) {
	t.Helper()
	return replay(t, load(t, "testdata/steps.yaml"), a)
}

// The instructions practice embeds AGENTS.md at the end of the system prompt as the workspace
// holds it: the request after the person edited it re-reads from the edit on, in the block.
func TestInstructionsPracticeFile(t *testing.T) {
	samples, be := steps(t, userArm(t, "      - instructions: {}\n"))
	before := "Instructions from AGENTS.md:\nKeep answers short."
	for i, r := range be.requests {
		sys, want := r.Messages[0].Content, before
		if i >= 2 {
			want = before + " Name the function."
		}
		if !strings.HasSuffix(sys, "\n\n"+want) || len(r.Messages[0].Marks) != 1 || r.Messages[0].Marks[0].Text != want {
			t.Fatalf("request %d: system prompt ends %q, marks %+v; want %q", i, sys[max(len(sys)-70, 0):], r.Messages[0].Marks, want)
		}
	}
	if s := samples[1].DivergenceSegment; strings.Contains(s, "system") {
		t.Errorf("request 1 diverged at %q before any edit", s)
	}
	s := samples[2]
	r := be.rendered[2]
	want := int64(strings.Index(r, before) + len(before))
	if s.DivergenceSegment != "instructions in system" || *s.ExpectedCachedTokens != want || *s.CachedTokens != want {
		t.Fatalf("request 2 diverged at %q, expected %d cached %d; want instructions in system, %d", s.DivergenceSegment, *s.ExpectedCachedTokens, *s.CachedTokens, want)
	}
	sysEnd := int64(strings.Index(r, before+" Name the function.") + len(before+" Name the function."))
	if got := *s.RereadSystemTokens; got != sysEnd-want {
		t.Errorf("request 2 re-read %d system tokens; want %d, from the edit to the prompt's end", got, sysEnd-want)
	}
	if *s.RereadToolsTokens == 0 {
		t.Error("request 2 re-read no tool list, which follows the system prompt")
	}
	for _, r := range be.requests {
		for _, m := range r.Messages[1:] {
			if strings.Contains(m.Content, "edited the instructions") {
				t.Fatalf("the practice's arm also sent a note: %q", m.Content)
			}
		}
	}
}

// Without the practice the edit is a §10.3 note on the next user message; git status is in no
// request.
func TestInstructionsStepNotesWithoutPractice(t *testing.T) {
	samples, be := steps(t, arm(t, "spec"))
	for i, r := range be.requests {
		if r.Messages[0].Content != be.requests[0].Messages[0].Content {
			t.Fatalf("request %d changed the spec arm's system prompt", i)
		}
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "modified:   main.go") {
				t.Fatalf("request %d names the git status", i)
			}
		}
	}
	if s := samples[2].DivergenceSegment; strings.Contains(s, "system") {
		t.Errorf("request 2 diverged at %q", s)
	}
	last := be.requests[5].Messages[len(be.requests[5].Messages)-1].Content
	if !strings.Contains(last, "<session-note>\nThe person edited the instructions:\nKeep answers short. Name the function.\n</session-note>") {
		t.Errorf("turn 2's user message %q; want the edit as a note", last)
	}
}

// With source git_status the block is what the last git step said, at the start of the system
// prompt; none before the first git step.
func TestInstructionsPracticeGitStatus(t *testing.T) {
	samples, be := steps(t, userArm(t, "      - instructions: {source: git_status, place: system_start}\n"))
	block := "git status:\nOn branch main\nChanges not staged for commit:\n\tmodified:   main.go"
	for i, r := range be.requests {
		sys := r.Messages[0].Content
		if has := strings.HasPrefix(sys, block+"\n\n"); has != (i >= 2) {
			t.Fatalf("request %d: system prompt starts %q", i, sys[:min(len(sys), 60)])
		}
	}
	s := samples[2]
	want := int64(strings.Index(be.rendered[2], block))
	if s.DivergenceSegment != "instructions in system" || *s.ExpectedCachedTokens != want || *s.CachedTokens != want {
		t.Fatalf("request 2 diverged at %q, expected %d cached %d; want instructions in system, %d (the system prompt's start)", s.DivergenceSegment, *s.ExpectedCachedTokens, *s.CachedTokens, want)
	}
	if *s.RereadSystemTokens <= int64(len(be.requests[2].Messages[0].Content))-10 {
		t.Errorf("request 2 re-read %d system tokens; want about the whole system prompt", *s.RereadSystemTokens)
	}
}

// A rewind takes request 2 back: request 3 sends what request 2 sent, all of it in the cache
// but the last token, and the README read taken back leaves the dedupe table, so reading it
// again is a full read.
func TestRewindStep(t *testing.T) {
	samples, be := steps(t, arm(t, "spec"))
	if len(be.requests[3].Messages) != len(be.requests[2].Messages) || be.rendered[3] != be.rendered[2] {
		t.Fatalf("request 3 is not request 2 again: %d and %d messages", len(be.requests[3].Messages), len(be.requests[2].Messages))
	}
	s := samples[3]
	if want := s.PromptTokens - 1; *s.ExpectedCachedTokens != want || *s.CachedTokens != want || *s.RereadTokens != 1 {
		t.Errorf("request 3 expected %d cached %d re-read %d; want %d cached, 1 re-read", *s.ExpectedCachedTokens, *s.CachedTokens, *s.RereadTokens, want)
	}
	if s.DivergenceSegment != "" {
		t.Errorf("request 3 diverged at %q; want nowhere, a prefix of the cache", s.DivergenceSegment)
	}
	msgs := be.requests[4].Messages
	if len(msgs) != len(be.requests[2].Messages)+2 {
		t.Fatalf("request 4 has %d messages; want request 2's and one reply with its result", len(msgs))
	}
	got := msgs[len(msgs)-1].Content
	if !strings.HasPrefix(got, "[#0004 README.md") || !strings.Contains(got, "3: Prints a greeting.") {
		t.Errorf("the README read after the rewind answered %q; want a full read with a new id", got)
	}
	if r := msgs[len(msgs)-2]; r.Reasoning != "Read the README after all." {
		t.Errorf("request 4's last reply %q; want the one after the rewind", r.Reasoning)
	}
}

// With notes off (changes-in-system-prompt) the edit rebuilds the system prompt with the
// file's new text, as the arm does for a plan or a mode: request 2 re-reads from the system
// prompt, and no note carries it.
func TestInstructionsStepWithNotesOff(t *testing.T) {
	samples, be := steps(t, arm(t, "changes-in-system-prompt"))
	block := "Instructions from AGENTS.md:\nKeep answers short. Name the function."
	for i, r := range be.requests {
		if has := strings.Contains(r.Messages[0].Content, block); has != (i >= 2) {
			t.Fatalf("request %d: system prompt has the edit: %v", i, has)
		}
		if last := r.Messages[len(r.Messages)-1].Content; strings.Contains(last, "edited the instructions") {
			t.Fatalf("request %d carries a note: %q", i, last)
		}
	}
	if s := samples[2].DivergenceSegment; s != "system" {
		t.Errorf("request 2 diverged at %q; want system", s)
	}
}
