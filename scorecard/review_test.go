package scorecard

import (
	"strings"
	"testing"
)

// Claude Code sends its environment block ("Primary working directory: /…/project") as a
// system-role message inside messages, after the first user message: the harness's own text,
// which §11 says names no absolute path. The rule reads only the leading system messages and
// the user messages, so it misses it.
func TestNoAbsolutePathsInASystemMessageOfTheHistory(t *testing.T) {
	env := sys("# Environment\n - Primary working directory: /tmp/x/project\n - Platform: linux")
	rs := session(req(sys("You are an agent."), user("look around"), env))
	e := score(t, Input{Requests: rs, Absolute: []string{"/tmp/x/project"}, CountTokens: words}, RuleNoAbsolutePaths)
	check(t, e, Broken, 0, 1, i64(3))
}

// A session with no request gave §11 no occasion: not seen, as every other rule says of it.
func TestNoAbsolutePathsWithoutRequestsIsNotSeen(t *testing.T) {
	e := score(t, Input{Absolute: []string{"/tmp/x/project"}}, RuleNoAbsolutePaths)
	check(t, e, NotSeen, -1, 0, nil)
}

// A summary asked for by a separate request (its own system prompt, a pasted transcript) is a
// side request, left out of Input.Requests (Session leaves side requests out); the main
// conversation then only shows a shorter history under its own system prompt and tools. §7
// wants the summary asked for as the next turn of the same conversation, which these requests
// do not show: the rule must not call it kept.
func TestCompactionBySideRequestIsNotKept(t *testing.T) {
	long := req(sys("s"), user("a"), text("b"), user("c"), text("d"))
	summary := user("Summary: a, b, c, d.")
	summary.Summary = true
	rs := session(req(sys("s"), user("a")), long, req(sys("s"), summary, user("e")))
	if e := score(t, Input{Requests: rs}, RuleCompaction); e.Verdict == Kept {
		t.Errorf("compaction without its summary request in the conversation: %s (%q), want not kept", e.Verdict, e.Detail)
	}
}

// Compaction is the one deliberate break of the one rule, and the system prompt may be built
// again after it (§10.1): a compaction done as §7 says breaks neither "nothing sent rewritten"
// nor "system prompt unchanged".
func TestCompactionInTheConversationBreaksNoOtherRule(t *testing.T) {
	long := req(sys("s"), user("a"), text("b"), user("c"), text("d"))
	ask := req(append(long.Messages[:len(long.Messages):len(long.Messages)], user("Summarise."))...)
	summary := user("Summary: a, b, c, d.")
	summary.Summary = true
	rs := session(req(sys("s"), user("a")), long, ask, req(sys("s, rebuilt"), summary, user("e")))
	check(t, score(t, Input{Requests: rs}, RuleAppendOnly), Kept, -1, 0, nil)
	check(t, score(t, Input{Requests: rs}, RuleSystemStable), Kept, -1, 0, nil)
	check(t, score(t, Input{Requests: rs}, RuleCompaction), Kept, -1, 0, nil)
}

// Entry.Tokens of a break that sends more is "the tokens sent beyond what the rule allows": a
// request that sends two earlier assistant messages with their reasoning sends both.
func TestReasoningAfterItsTurnCountsEveryMessage(t *testing.T) {
	a1 := call("c1", "read", `{}`)
	a1.Reasoning = "one two"
	a2 := text("done")
	a2.Reasoning = "three four five"
	rs := session(req(sys("s"), user("fix"), a1, res("c1", "x"), a2, user("thanks")))
	check(t, score(t, Input{Requests: rs, CountTokens: words}, RuleReasoning), Broken, 0, 1, i64(5))
}

// §3: "Reads and recall are not capped this way: each has its own window (2000 lines from an
// offset)." A read of a 1000-line file answered whole keeps the rule.
func TestCapLeavesReadsAlone(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		b.WriteString("line\n")
	}
	rs := session(req(sys("s"), user("look"), call("c1", "read", `{"path":"big.txt"}`), res("c1", b.String())))
	if e := score(t, Input{Requests: rs}, RuleCap); e.Verdict == Broken {
		t.Errorf("a read of 1000 lines: %s (%q), want not broken", e.Verdict, e.Detail)
	}
}

// §2 is about a read; a harness without a read tool (Codex) runs the script's read as a shell
// command, and §6 says "a command's output twice is two results". A `cat` run twice gives §2
// no occasion: it is not a broken stub rule.
func TestStubsLeaveAShellCatAlone(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		b.WriteString("line " + strings.Repeat("x", i%7) + " of the file\n")
	}
	first := b.String()
	r0 := req(sys("s"), user("look"))
	r1 := req(sys("s"), user("look"), call("call_1_4", "exec_command", `{"cmd":"cat main.go"}`), res("call_1_4", first))
	r2 := req(sys("s"), user("look"), call("call_1_4", "exec_command", `{"cmd":"cat main.go"}`), res("call_1_4", first), text("seen"),
		user("again"), call("call_2_1", "exec_command", `{"cmd":"cat main.go"}`), res("call_2_1", first))
	facts := Facts{Rereads: []Reread{{Path: "main.go", Call: "call_2_1", Of: "call_1_4"}}}
	if e := score(t, Input{Requests: session(r0, r1, r2), Facts: facts}, RuleStubs); e.Verdict == Broken {
		t.Errorf("a shell cat run twice: %s (%q), want not broken (§6: a command's output twice is two results)", e.Verdict, e.Detail)
	}
}
