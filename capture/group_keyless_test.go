package capture

import (
	"strings"
	"testing"

	"lab/chat"
)

// Two harnesses without a session identity (Qwen Code and pi) through one proxy: pi's session,
// with its own system prompt and its own tools, is a session, not a side request of Qwen
// Code's. The side rule for keyless requests compares against the latest keyless
// conversation of any client.
func TestTwoKeylessHarnessesAreSessionsNotSide(t *testing.T) {
	var g grouper
	tools := []chat.Tool{{Name: "bash"}}
	qwen := &chat.Request{Messages: []chat.Message{sys("You are Qwen Code, an interactive CLI agent."), user("list the files")}, Tools: tools}
	c1, _ := g.assign("", "", qwen)
	g.update(c1, qwen, &chat.Reply{Content: "a.go"}, false)
	pi := &chat.Request{Messages: []chat.Message{sys("You are an expert coding assistant operating inside pi."), user("fix the build")}, Tools: tools}
	c2, created := g.assign("", "", pi)
	if !created || c2 == c1 {
		t.Fatalf("pi's first request joined %s, want a conversation of its own", c2.name)
	}
	if c2.side != "" {
		t.Errorf("pi's session marked a side request: %q", c2.side)
	}
}

// Claude Code starts every request's system prompt with the same billing header block, so a
// side request (a title) under the session's key shares the session's first 64 bytes and
// related takes it for the session's prompt rebuilt: it joins the session instead of being a
// conversation of its own marked side.
func TestClaudeTitleUnderTheBillingHeaderIsSide(t *testing.T) {
	var g grouper
	const key = "x-claude-code-session-id s1"
	const billing = "x-anthropic-billing-header: cc_version=2.1.332.5ac; cc_entrypoint=sdk-cli;"
	main1 := sideReq(sys(billing), sys("You are a Claude agent, built on Anthropic's Claude Agent SDK."+strings.Repeat(" Use the tools.", 40)), user("fix the bug"))
	c1, _ := g.assign(key, "", main1)
	g.update(c1, main1, &chat.Reply{Content: "done"}, false)
	title := sideReq(sys(billing), sys("Generate a concise, sentence-case title (3-7 words) for this coding session."), user("fix the bug"))
	c2, created := g.assign(key, "", title)
	if !created || c2 == c1 {
		t.Fatalf("title request joined %s (new %v), want a side conversation of its own", c2.name, created)
	}
	if c2.side == "" {
		t.Errorf("title request not marked a side request")
	}
}

// pi sends no session identity and writes the date into its system prompt: when the date
// changes at midnight between turns, its resumed session (the whole history and the new turn
// under the rebuilt prompt) is still the same conversation; a new session started under the new
// date is not, and neither is a resumed session with other tools (a sub-agent).
func TestKeylessSessionKeepsItsConversationAcrossADateChange(t *testing.T) {
	var g grouper
	tools := []chat.Tool{{Name: "read"}}
	prompt := func(date string) chat.Message {
		return sys("You are an expert coding assistant operating inside pi." + strings.Repeat(" Use the tools.", 20) + "\nCurrent date: " + date + "\nCurrent working directory: project")
	}
	t1 := &chat.Request{Messages: []chat.Message{prompt("2026-12-02"), user("look around")}, Tools: tools}
	c1, _ := g.assign("", "", t1)
	g.update(c1, t1, &chat.Reply{Content: "a small Go project"}, false)
	t3 := &chat.Request{Messages: []chat.Message{prompt("2026-12-03"), user("look around"), {Role: chat.RoleAssistant, Content: "a small Go project"}, user("now fix it")}, Tools: tools}
	c3, created := g.assign("", "", t3)
	if created || c3 != c1 {
		t.Fatalf("the session after midnight went to %s (new %v), want %s", c3.name, created, c1.name)
	}
	g.update(c3, t3, &chat.Reply{Content: "fixed"}, false)
	other := &chat.Request{Messages: []chat.Message{prompt("2026-12-03"), user("write a README")}, Tools: tools}
	if c, created := g.assign("", "", other); !created || c == c1 {
		t.Fatalf("a new session under the new date joined %s, want a conversation of its own", c.name)
	}
	var g2 grouper
	c1, _ = g2.assign("", "", t1)
	g2.update(c1, t1, &chat.Reply{Content: "a small Go project"}, false)
	sub := &chat.Request{Messages: t3.Messages, Tools: []chat.Tool{{Name: "read"}, {Name: "grep"}}}
	if c, created := g2.assign("", "", sub); !created || c == c1 {
		t.Fatalf("the rebuilt prompt with other tools joined %s, want a conversation of its own", c.name)
	}
}

// Qwen Code resumed after an edit: its system prompt holds the git status, which changed, and it
// rewrote a reminder in its first user message; with its history and the same tools it is still
// the same session.
func TestKeylessResumeWithRebuiltPromptAndRewrittenHistory(t *testing.T) {
	var g grouper
	tools := []chat.Tool{{Name: "read_file"}, {Name: "run_shell_command"}}
	prompt := func(status string) chat.Message {
		return sys("You are Qwen Code, an interactive CLI agent." + strings.Repeat(" Be careful.", 20) + "\ngit: Status: " + status + "\n# auto memory")
	}
	t1 := &chat.Request{Messages: []chat.Message{prompt("(clean)"), user("<reminder>skills: a</reminder>fix it")}, Tools: tools}
	c1, _ := g.assign("", "", t1)
	g.update(c1, t1, &chat.Reply{Content: "fixed"}, false)
	t2 := &chat.Request{Messages: []chat.Message{prompt("M greet.go"), user("<reminder>skills: a, b</reminder>fix it"), {Role: chat.RoleAssistant, Content: "fixed"}, user("now the README")}, Tools: tools}
	if c, created := g.assign("", "", t2); created || c != c1 {
		t.Fatalf("the resumed session went to %s (new %v), want %s", c.name, created, c1.name)
	}
}
