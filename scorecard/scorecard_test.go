package scorecard

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"lab"
	"lab/chat"
	"lab/hygiene"
	"lab/metrics"
	"lab/row"
)

// words is the fake tokenizer: a token is a run of characters that are neither white space nor
// '/', so "/tmp/x/project" is 3 tokens and "line 7" is 2.
func words(s string) (int, error) {
	return len(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '/' })), nil
}

func wc(s string) int64 { n, _ := words(s); return int64(n) }

func config(t *testing.T) *hygiene.Config {
	t.Helper()
	c, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sys(s string) chat.Message  { return chat.Message{Role: chat.RoleSystem, Content: s} }
func user(s string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: s} }
func text(s string) chat.Message { return chat.Message{Role: chat.RoleAssistant, Content: s} }
func call(id, name, args string) chat.Message {
	return chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}
func res(id, s string) chat.Message {
	return chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: s}
}

var baseTools = []chat.Tool{
	{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "bash", Description: "Run a command.", Parameters: json.RawMessage(`{"type":"object"}`)},
}

// req is a request with the base tools and msgs.
func req(msgs ...chat.Message) *chat.Request { return &chat.Request{Messages: msgs, Tools: baseTools} }

// session numbers reqs 0, 1, … in order.
func session(reqs ...*chat.Request) []Request {
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		out[i] = Request{Index: int32(i), Req: r}
	}
	return out
}

// score scores in and returns the entry of rule.
func score(t *testing.T, in Input, rule string) Entry {
	t.Helper()
	if in.Config == nil {
		in.Config = config(t)
	}
	for _, e := range Score(in) {
		if e.Rule == rule {
			return e
		}
	}
	t.Fatalf("no entry for %q", rule)
	return Entry{}
}

func i64(n int64) *int64 { return &n }

func tokens(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// check asserts e's verdict, first request, times and tokens (nil: unknown or not broken).
func check(t *testing.T, e Entry, v Verdict, request int32, times int, tok *int64) {
	t.Helper()
	if e.Verdict != v || e.Request != request || e.Times != times || tokens(e.Tokens) != tokens(tok) {
		t.Errorf("%s: got %s request %d times %d tokens %s (%q); want %s request %d times %d tokens %s",
			e.Rule, e.Verdict, e.Request, e.Times, tokens(e.Tokens), e.Detail, v, request, times, tokens(tok))
	}
}

func TestScoreOrderAndSections(t *testing.T) {
	es := Score(Input{Requests: session(req(sys("s"), user("u"))), Config: config(t)})
	if len(es) != len(Rules) {
		t.Fatalf("%d entries, want %d", len(es), len(Rules))
	}
	for i, e := range es {
		if e.Rule != Rules[i].Name || e.Section != Rules[i].Section {
			t.Errorf("entry %d: %s %s, want %s %s", i, e.Rule, e.Section, Rules[i].Name, Rules[i].Section)
		}
	}
}

func TestScorePanicsWithoutConfig(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Config is nil") {
			t.Errorf("recovered %v, want the nil Config panic", r)
		}
	}()
	Score(Input{Requests: session(req(sys("s"), user("u")))})
	t.Error("Score returned with a nil Config")
}

func TestSystemStable(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		rs := session(req(sys("be brief"), user("a")), req(sys("be brief"), user("a"), text("b")), req(sys("be brief"), user("a"), text("b"), user("c")))
		e := score(t, Input{Requests: rs}, RuleSystemStable)
		check(t, e, Kept, -1, 0, nil)
		if e.Detail != "the same 8 bytes on all 3 requests" {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("changed at request 2", func(t *testing.T) {
		rs := session(req(sys("be brief"), user("a")), req(sys("be brief"), user("a"), text("b")), req(sys("be terse"), user("a"), text("b"), user("c")))
		rs[1].Reread = i64(40) // not a break: its system prompt is the one before it
		rs[2].Reread, rs[2].Segment = i64(120), "system"
		e := score(t, Input{Requests: rs}, RuleSystemStable)
		check(t, e, Broken, 2, 1, i64(120))
		if e.Segment != "system" || !strings.Contains(e.Detail, "be terse") {
			t.Errorf("segment %q detail %q", e.Segment, e.Detail)
		}
	})
	t.Run("re-read unknown", func(t *testing.T) {
		rs := session(req(sys("v1"), user("a")), req(sys("v2"), user("a")))
		check(t, score(t, Input{Requests: rs}, RuleSystemStable), Broken, 1, 1, nil)
	})
	t.Run("one request", func(t *testing.T) {
		check(t, score(t, Input{Requests: session(req(sys("s"), user("u")))}, RuleSystemStable), NotSeen, -1, 0, nil)
	})
}

func TestNoClock(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		rs := session(req(sys("You are a coding agent."), user("a")), req(sys("You are a coding agent."), user("a"), text("b")))
		check(t, score(t, Input{Requests: rs}, RuleNoClock), Kept, -1, 0, nil)
	})
	t.Run("date changing at request 3", func(t *testing.T) {
		var rs []Request
		for i := range 5 {
			day := "2026-12-01"
			if i >= 3 {
				day = "2026-12-02"
			}
			rs = append(rs, Request{Index: int32(i), Req: req(sys("Today is "+day+"."), user("a")), Reread: i64(int64(7 + i))})
		}
		rs[3].Reread = i64(500)
		e := score(t, Input{Requests: rs}, RuleNoClock)
		// Every request holds a clock; only the change at 3 cost a re-read.
		check(t, e, Broken, 0, 5, i64(500))
		if e.Detail != "the system prompt holds 2026-12-01" {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("time of day", func(t *testing.T) {
		rs := session(req(sys("It is 23:59 now."), user("a")))
		check(t, score(t, Input{Requests: rs}, RuleNoClock), Broken, 0, 1, i64(0))
	})
}

func TestToolsStable(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		rs := session(req(sys("s"), user("a")), req(sys("s"), user("a"), text("b")))
		e := score(t, Input{Requests: rs}, RuleToolsStable)
		check(t, e, Kept, -1, 0, nil)
		if e.Detail != "the same 2 tools on all 2 requests" {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("a tool added", func(t *testing.T) {
		more := append(append([]chat.Tool{}, baseTools...), chat.Tool{Name: "grep", Parameters: json.RawMessage(`{}`)})
		r2 := &chat.Request{Messages: []chat.Message{sys("s"), user("a"), text("b"), user("c")}, Tools: more}
		rs := session(req(sys("s"), user("a")), req(sys("s"), user("a"), text("b")), r2)
		rs[2].Reread = i64(300)
		e := score(t, Input{Requests: rs}, RuleToolsStable)
		check(t, e, Broken, 2, 1, i64(300))
		if e.Detail != "tools 2 → 3: [read,bash] → [read,bash,grep]" {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("a description changed", func(t *testing.T) {
		changed := append([]chat.Tool{}, baseTools...)
		changed[1].Description = "Run a shell command."
		rs := session(req(sys("s"), user("a")), &chat.Request{Messages: []chat.Message{sys("s"), user("a")}, Tools: changed})
		rs[1].Reread = i64(9)
		e := score(t, Input{Requests: rs}, RuleToolsStable)
		check(t, e, Broken, 1, 1, i64(9))
		if e.Detail != "the tools' descriptions or schemas changed" {
			t.Errorf("detail %q", e.Detail)
		}
	})
}

func TestAppendOnly(t *testing.T) {
	full := "package main\n\nfunc main() {}\n"
	r0 := req(sys("s"), user("fix it"))
	r1 := req(sys("s"), user("fix it"), call("c1", "read", `{"path": "main.go"}`), res("c1", full))
	r2 := req(sys("s"), user("fix it"), call("c1", "read", `{"path":"main.go"}`), res("c1", full), text("done"), user("thanks"))
	t.Run("pure appends", func(t *testing.T) {
		// The arguments' spacing differs between requests 1 and 2: the same JSON, not a rewrite.
		e := score(t, Input{Requests: session(r0, r1, r2)}, RuleAppendOnly)
		check(t, e, Kept, -1, 0, nil)
	})
	t.Run("a result replaced by a stub", func(t *testing.T) {
		r3 := req(sys("s"), user("fix it"), call("c1", "read", `{"path":"main.go"}`), res("c1", "[#0001 main.go pruned]"), text("done"), user("thanks"), text("ok"))
		rs := session(r0, r1, r2, r3)
		rs[3].Reread, rs[3].Segment = i64(77), "messages"
		e := score(t, Input{Requests: rs}, RuleAppendOnly)
		check(t, e, Broken, 3, 1, i64(77))
		if e.Segment != "messages" || !strings.HasPrefix(e.Detail, "message 3 (tool) rewritten: ") {
			t.Errorf("segment %q detail %q", e.Segment, e.Detail)
		}
	})
	t.Run("history cut", func(t *testing.T) {
		r3 := req(sys("s"), user("fix it"), text("done"), user("thanks"))
		rs := session(r0, r1, r2, r3)
		rs[3].Reread = i64(50)
		e := score(t, Input{Requests: rs}, RuleAppendOnly)
		check(t, e, Broken, 3, 1, i64(50))
		if !strings.Contains(e.Detail, "message 2 (assistant) rewritten") {
			t.Errorf("detail %q", e.Detail)
		}
		r3 = req(sys("s"), user("fix it"))
		rs = session(r0, r1, r2, r3)
		e = score(t, Input{Requests: rs}, RuleAppendOnly)
		check(t, e, Broken, 3, 1, nil)
		if e.Detail != "history cut from 5 to 1 messages" {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("reasoning dropped after its turn", func(t *testing.T) {
		withR := call("c1", "read", `{"path":"main.go"}`)
		withR.Reasoning = "I should read main.go first."
		withR.Thinking = []chat.ThinkingBlock{{Text: "read it", Signature: "sig"}}
		a := req(sys("s"), user("fix it"), withR, res("c1", full))
		b := req(sys("s"), user("fix it"), call("c1", "read", `{"path":"main.go"}`), res("c1", full), text("done"), user("thanks"))
		check(t, score(t, Input{Requests: session(r0, a, b)}, RuleAppendOnly), Kept, -1, 0, nil)
	})
}

// rereadSession reads main.go as call_1_4 in turn 1 and again as call_2_1 in turn 2, answered
// with again.
func rereadSession(first, again string) []Request {
	r0 := req(sys("s"), user("look"))
	r1 := req(sys("s"), user("look"), call("call_1_4", "read", `{"path":"main.go"}`), res("call_1_4", first))
	r2 := req(sys("s"), user("look"), call("call_1_4", "read", `{"path":"main.go"}`), res("call_1_4", first), text("seen"),
		user("again"), call("call_2_1", "read", `{"path":"main.go"}`), res("call_2_1", again))
	return session(r0, r1, r2)
}

func TestStubs(t *testing.T) {
	var b strings.Builder
	b.WriteString("[#0001 main.go lines 1-40 of 40 sha 1c9e04ab]\n")
	for i := range 40 {
		fmt.Fprintf(&b, "line %d of the file\n", i+1)
	}
	first := b.String()
	facts := Facts{Rereads: []Reread{{Path: "main.go", Call: "call_2_1", Of: "call_1_4"}}}
	t.Run("read again in full", func(t *testing.T) {
		again := strings.Replace(first, "#0001", "#0002", 1)
		e := score(t, Input{Requests: rereadSession(first, again), Facts: facts, CountTokens: words}, RuleStubs)
		// The bracket is 8 tokens ("[#0002", "main.go", "lines", "1-40", "of", "40", "sha",
		// "1c9e04ab]") and each of the 40 lines 5.
		check(t, e, Broken, 2, 1, i64(8+40*5))
		if wc(again) != 8+40*5 {
			t.Fatalf("hand count %d, words %d", 8+40*5, wc(again))
		}
	})
	t.Run("no tokenizer", func(t *testing.T) {
		e := score(t, Input{Requests: rereadSession(first, first), Facts: facts}, RuleStubs)
		check(t, e, Broken, 2, 1, nil)
	})
	t.Run("a stub", func(t *testing.T) {
		stub := "[#0002 main.go lines 1-40 of 40 sha 1c9e04ab] Unchanged since #0001, which already shows lines 1-40."
		e := score(t, Input{Requests: rereadSession(first, stub), Facts: facts, CountTokens: words}, RuleStubs)
		check(t, e, Kept, -1, 0, nil)
		if !strings.HasPrefix(e.Detail, "main.go: ") {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("no facts", func(t *testing.T) {
		check(t, score(t, Input{Requests: rereadSession(first, first), CountTokens: words}, RuleStubs), NotSeen, -1, 0, nil)
	})
	t.Run("calls matched by position", func(t *testing.T) {
		// The harness names its calls itself: the script's calls (call_1_4, call_2_1) are its
		// first and second.
		sess := rereadSession(first, first)
		for _, r := range sess {
			for k := range r.Req.Messages {
				m := &r.Req.Messages[k]
				m.ToolCallID = strings.Replace(strings.Replace(m.ToolCallID, "call_1_4", "h1", 1), "call_2_1", "h2", 1)
				for j := range m.ToolCalls {
					m.ToolCalls[j].ID = strings.Replace(strings.Replace(m.ToolCalls[j].ID, "call_1_4", "h1", 1), "call_2_1", "h2", 1)
				}
			}
		}
		f := facts
		f.Calls = []string{"call_1_4", "call_2_1"}
		check(t, score(t, Input{Requests: sess, Facts: f}, RuleStubs), Broken, 2, 1, nil)
		// Without the script's call list, nothing ties the harness's calls to its steps.
		check(t, score(t, Input{Requests: sess, Facts: facts}, RuleStubs), NotSeen, -1, 0, nil)
	})
	t.Run("re-read not in the requests", func(t *testing.T) {
		f := Facts{Rereads: []Reread{{Path: "main.go", Call: "call_9_9", Of: "call_1_4"}}}
		check(t, score(t, Input{Requests: rereadSession(first, first), Facts: f}, RuleStubs), NotSeen, -1, 0, nil)
	})
}

func lines(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "line %d", i+1)
	}
	return b.String()
}

func TestCap(t *testing.T) {
	cfg := config(t)
	t.Run("3000 lines sent whole", func(t *testing.T) {
		big := lines(3000)
		r0 := req(sys("s"), user("build"))
		r1 := req(sys("s"), user("build"), call("c1", "bash", `{}`), res("c1", "ok"))
		r2 := req(sys("s"), user("build"), call("c1", "bash", `{}`), res("c1", "ok"), call("c2", "bash", `{}`), res("c2", big))
		r3 := req(sys("s"), user("build"), call("c1", "bash", `{}`), res("c1", "ok"), call("c2", "bash", `{}`), res("c2", big), text("done"))
		e := score(t, Input{Requests: session(r0, r1, r2, r3), Config: cfg, CountTokens: words}, RuleCap)
		// Whole: 3000 lines of 2 tokens. Capped: 200 head and 100 tail lines of 2 tokens and
		// "[2700 lines elided, full output #0000]", 6 tokens.
		want := int64(3000*2 - (300*2 + 6))
		if got := wc(big) - wc(cfg.CapText(big, "#0000")); got != want {
			t.Fatalf("hand count %d, CapText gives %d", want, got)
		}
		// Sent again on request 3, the same result is one break.
		check(t, e, Broken, 2, 1, i64(want))
		if !strings.HasPrefix(e.Detail, "a result of 3000 lines") {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("no tokenizer", func(t *testing.T) {
		rs := session(req(sys("s"), user("a"), call("c1", "bash", `{}`), res("c1", lines(401))))
		check(t, score(t, Input{Requests: rs, Config: cfg}, RuleCap), Broken, 0, 1, nil)
	})
	t.Run("over the characters", func(t *testing.T) {
		long := strings.Repeat("x", 40001)
		rs := session(req(sys("s"), user("a"), call("c1", "bash", `{}`), res("c1", long)))
		e := score(t, Input{Requests: rs, Config: cfg, CountTokens: func(s string) (int, error) { return len(s), nil }}, RuleCap)
		check(t, e, Broken, 0, 1, i64(int64(40001-len(cfg.CapText(long, "#0000")))))
	})
	t.Run("two large results in one request", func(t *testing.T) {
		rs := session(req(sys("s"), user("a"), call("c1", "bash", `{}`), res("c1", lines(500)), call("c2", "bash", `{}`), res("c2", lines(600))))
		e := score(t, Input{Requests: rs, Config: cfg, CountTokens: words}, RuleCap)
		// Times counts requests; the cost is both results'.
		want := wc(lines(500)) - wc(cfg.CapText(lines(500), "#0000")) + wc(lines(600)) - wc(cfg.CapText(lines(600), "#0000"))
		check(t, e, Broken, 0, 1, i64(want))
	})
	t.Run("small results", func(t *testing.T) {
		// 400 lines ending in a newline are 400 lines (the cap's own count), not over it.
		rs := session(req(sys("s"), user("a"), call("c1", "bash", `{}`), res("c1", lines(400)+"\n"), call("c2", "bash", `{}`), res("c2", "ok")))
		e := score(t, Input{Requests: rs, Config: cfg, CountTokens: words}, RuleCap)
		check(t, e, Kept, -1, 0, nil)
	})
	t.Run("no results", func(t *testing.T) {
		check(t, score(t, Input{Requests: session(req(sys("s"), user("a"))), Config: cfg}, RuleCap), NotSeen, -1, 0, nil)
	})
}

func TestReasoning(t *testing.T) {
	thought := "the bug is in main.go"
	t.Run("after its turn", func(t *testing.T) {
		a := text("fixed")
		a.Reasoning = thought
		rs := session(req(sys("s"), user("fix")), req(sys("s"), user("fix"), a, user("thanks")))
		e := score(t, Input{Requests: rs, CountTokens: words}, RuleReasoning)
		// "the", "bug", "is", "in", "main.go".
		check(t, e, Broken, 1, 1, i64(5))
		if wc(thought) != 5 {
			t.Fatalf("hand count 5, words %d", wc(thought))
		}
	})
	t.Run("thinking blocks after their turn", func(t *testing.T) {
		a := text("fixed")
		a.Thinking = []chat.ThinkingBlock{{Text: "one two ", Signature: "s1"}, {Text: "three", Signature: "s2"}}
		rs := session(req(sys("s"), user("fix"), a, user("thanks")))
		check(t, score(t, Input{Requests: rs, CountTokens: words}, RuleReasoning), Broken, 0, 1, i64(3))
	})
	t.Run("left out during its turn", func(t *testing.T) {
		rs := session(req(sys("s"), user("fix")), req(sys("s"), user("fix"), call("call_1_1", "read", `{}`), res("call_1_1", "x")))
		e := score(t, Input{Requests: rs, Facts: Facts{Reasoned: []string{"call_1_1"}}, CountTokens: words}, RuleReasoning)
		check(t, e, Broken, 1, 1, nil)
		if !strings.Contains(e.Detail, "call_1_1") {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("sent during its turn, across an interjection", func(t *testing.T) {
		c := call("call_1_1", "read", `{}`)
		c.Reasoning = thought
		said := user("also check the tests")
		said.Interjection = true
		rs := session(req(sys("s"), user("fix")), req(sys("s"), user("fix"), c, res("call_1_1", "x"), said))
		e := score(t, Input{Requests: rs, Facts: Facts{Reasoned: []string{"call_1_1"}}, CountTokens: words}, RuleReasoning)
		check(t, e, Kept, -1, 0, nil)
	})
	t.Run("no facts and no reasoning", func(t *testing.T) {
		rs := session(req(sys("s"), user("fix"), text("ok"), user("thanks")))
		check(t, score(t, Input{Requests: rs}, RuleReasoning), NotSeen, -1, 0, nil)
	})
}

func TestNoAbsolutePaths(t *testing.T) {
	t.Run("twice in the system prompt", func(t *testing.T) {
		rs := session(req(sys("Project root: /tmp/x/project\nWorking directory: /tmp/x/project"), user("a")))
		e := score(t, Input{Requests: rs, Absolute: []string{"/tmp/x/project/", ""}, CountTokens: words}, RuleNoAbsolutePaths)
		check(t, e, Broken, 0, 1, i64(2*3))
		if !strings.HasPrefix(e.Detail, "2 absolute paths such as /tmp/x/project") {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("every request, and in a tool description", func(t *testing.T) {
		tools := []chat.Tool{{Name: "read", Description: "Paths under /tmp/x/project."}}
		a := &chat.Request{Messages: []chat.Message{sys("s"), user("a")}, Tools: tools}
		b := &chat.Request{Messages: []chat.Message{sys("s"), user("a"), text("b")}, Tools: tools}
		e := score(t, Input{Requests: session(a, b), Absolute: []string{"/tmp/x/project"}, CountTokens: words}, RuleNoAbsolutePaths)
		check(t, e, Broken, 0, 2, i64(2*3))
	})
	t.Run("the project under the home folder", func(t *testing.T) {
		// Each path named once: the project (3 tokens) is not also counted as the home (2).
		rs := session(req(sys("Project: /tmp/x/project\nHome: /tmp/x"), user("a")))
		e := score(t, Input{Requests: rs, Absolute: []string{"/tmp/x", "/tmp/x/project"}, CountTokens: words}, RuleNoAbsolutePaths)
		check(t, e, Broken, 0, 1, i64(3+2))
		if !strings.HasPrefix(e.Detail, "2 absolute paths") {
			t.Errorf("detail %q", e.Detail)
		}
	})
	t.Run("no tokenizer", func(t *testing.T) {
		rs := session(req(sys("Project: /tmp/x/project"), user("a")))
		check(t, score(t, Input{Requests: rs, Absolute: []string{"/tmp/x/project"}}, RuleNoAbsolutePaths), Broken, 0, 1, nil)
	})
	t.Run("only in a tool result", func(t *testing.T) {
		rs := session(req(sys("Project: project (paths are relative to its root)"), user("a"),
			call("c1", "bash", `{"cmd":"pwd"}`), res("c1", "/tmp/x/project")))
		check(t, score(t, Input{Requests: rs, Absolute: []string{"/tmp/x/project"}, CountTokens: words}, RuleNoAbsolutePaths), Kept, -1, 0, nil)
	})
	t.Run("no paths given", func(t *testing.T) {
		rs := session(req(sys("/tmp/x/project"), user("a")))
		check(t, score(t, Input{Requests: rs, Absolute: []string{"", "/"}}, RuleNoAbsolutePaths), NotSeen, -1, 0, nil)
	})
}

func TestCompaction(t *testing.T) {
	long := req(sys("s"), user("a"), text("b"), user("c"), text("d"))
	t.Run("none", func(t *testing.T) {
		rs := session(req(sys("s"), user("a")), long)
		check(t, score(t, Input{Requests: rs}, RuleCompaction), NotSeen, -1, 0, nil)
	})
	t.Run("a separate summary request", func(t *testing.T) {
		rs := session(req(sys("s"), user("a")), long, req(sys("Summarise this transcript."), user("a b c d")))
		rs[2].Reread = i64(900)
		check(t, score(t, Input{Requests: rs}, RuleCompaction), Broken, 2, 1, i64(900))
	})
	t.Run("in the conversation", func(t *testing.T) {
		summary := user("Summary: a, b, c, d.")
		summary.Summary = true
		rs := session(req(sys("s"), user("a")), long, req(append(long.Messages[:len(long.Messages):len(long.Messages)], user("Summarise."))...),
			req(sys("s"), summary, user("e")))
		check(t, score(t, Input{Requests: rs}, RuleCompaction), Kept, -1, 0, nil)
	})
}

// fakeBody is what the fake decoder reads: the system prompt, or a failure.
type fakeBody struct {
	System string `json:"system"`
	Fail   string `json:"fail"`
}

func TestSession(t *testing.T) {
	rows := []metrics.Sample{
		{Scenario: "conversation-0002", RequestIndex: 0},
		{Scenario: "conversation-0001", RequestIndex: 3, RereadTokens: i64(33), DivergenceSegment: "messages"},
		{Scenario: "conversation-0001", RequestIndex: 0, RereadTokens: i64(10)},
		{Scenario: "conversation-0001", RequestIndex: 2},
		{Scenario: "conversation-0001", RequestIndex: 1},
		{Scenario: "conversation-0001", RequestIndex: 4},
	}
	// More side rows than the main conversation has rows: still left out.
	for i := range 8 {
		rows = append(rows, metrics.Sample{Scenario: "conversation-0003", RequestIndex: int32(i), SideRequest: true})
	}
	body := func(conv string, i int32, b fakeBody) row.RequestLine {
		raw, _ := json.Marshal(b)
		return row.RequestLine{Scenario: conv, RequestIndex: i, API: "openai-chat", Body: raw}
	}
	bodies := []row.RequestLine{
		body("conversation-0001", 4, fakeBody{System: "four"}),
		body("conversation-0001", 0, fakeBody{System: "zero"}),
		body("conversation-0001", 2, fakeBody{Fail: "truncated body"}),
		body("conversation-0001", 3, fakeBody{System: "three"}),
		body("conversation-0002", 0, fakeBody{System: "other"}),
		body("conversation-0003", 0, fakeBody{System: "side"}),
	}
	var apis []string
	decode := func(api string, raw []byte) (*chat.Request, error) {
		apis = append(apis, api)
		var b fakeBody
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, err
		}
		if b.Fail != "" {
			return nil, errors.New(b.Fail)
		}
		return &chat.Request{Messages: []chat.Message{sys(b.System)}}, nil
	}
	reqs, skipped, err := Session(rows, bodies, decode)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Index   int32
		System  string
		Segment string
		Reread  string
	}
	var g []got
	for _, r := range reqs {
		g = append(g, got{r.Index, r.Req.Messages[0].Content, r.Segment, tokens(r.Reread)})
	}
	want := []got{{0, "zero", "", "10"}, {3, "three", "messages", "33"}, {4, "four", "", "nil"}}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("requests %+v, want %+v", g, want)
	}
	wantSkipped := []string{"request 1: no saved body", "request 2: truncated body"}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("skipped %q, want %q", skipped, wantSkipped)
	}
	if len(apis) != 4 || apis[0] != "openai-chat" {
		t.Errorf("decoder called with %q, want 4 calls of openai-chat", apis)
	}

	t.Run("only side requests", func(t *testing.T) {
		_, _, err := Session(rows[6:], bodies, decode)
		if err == nil || !strings.Contains(err.Error(), "8 rows") {
			t.Errorf("err %v, want the no-conversation error", err)
		}
	})
}

// The clock rule finds the dates and times harnesses write, and not a file position.
func TestClocks(t *testing.T) {
	got := clocks("Error at main.go:12:34. Today: 2026/12/03, 3 December 2026, Dec 3, 2026, 12.03.2026 and Wed Dec 02 2026 at 23:59.")
	want := []string{"2026/12/03", "3 December 2026", "Dec 3, 2026", "12.03.2026", "Wed Dec 02 2026", "23:59"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("clocks = %q, want %q", got, want)
	}
}
