package capture

import (
	"net/http"
	"strings"
	"testing"

	"lab/chat"
)

func sideReq(msgs ...chat.Message) *chat.Request { return &chat.Request{Messages: msgs} }

func sys(s string) chat.Message  { return chat.Message{Role: chat.RoleSystem, Content: s} }
func user(s string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: s} }
func asst(s string) chat.Message { return chat.Message{Role: chat.RoleAssistant, Content: s} }

// A title request sent under the session's key, with its own system prompt and the session's
// first user message, is a conversation of its own, marked a side request; the session's next
// turn still joins the session.
func TestGroupSideRequestUnderKey(t *testing.T) {
	var g grouper
	const key = "x-session-affinity ses_1"
	main1 := sideReq(sys("You are opencode."), user("fix the bug"))
	c1, _ := g.assign(key, "", main1)
	g.update(c1, main1, &chat.Reply{Content: "done"}, false)
	title := sideReq(sys("Write a short title."), user("fix the bug"))
	c2, created := g.assign(key, "", title)
	if !created || c2 == c1 {
		t.Fatalf("title request joined %s, want a conversation of its own", c2.name)
	}
	if !strings.Contains(c2.side, "system prompt of its own") {
		t.Errorf("title request side = %q, want the system prompt named", c2.side)
	}
	g.update(c2, title, &chat.Reply{Content: "Fix the bug"}, false)
	main2 := sideReq(sys("You are opencode."), user("fix the bug"), asst("done"), user("now test it"))
	c3, created := g.assign(key, "", main2)
	if created || c3 != c1 {
		t.Fatalf("second turn went to %s (new %v), want %s", c3.name, created, c1.name)
	}
	if c1.side != "" {
		t.Errorf("session marked side %q", c1.side)
	}
	// A session that rebuilt its system prompt and appends is still the session, not a side
	// request.
	g.update(c1, main2, &chat.Reply{Content: "tested"}, false)
	main3 := sideReq(sys("You are opencode. Today is Thursday."), user("fix the bug"), asst("done"), user("now test it"), asst("tested"), user("commit"))
	if c, created := g.assign(key, "", main3); created || c != c1 {
		t.Fatalf("rebuilt system prompt went to %s (new %v), want %s", c.name, created, c1.name)
	}
}

// Without a key (Qwen Code, pi), a memory sub-agent's request with its own system prompt is a
// side request; the same session run again with the same system prompt is not.
func TestGroupSideRequestWithoutKey(t *testing.T) {
	var g grouper
	main1 := sideReq(sys("You are Qwen Code."), user("list the files"))
	c1, _ := g.assign("", "", main1)
	g.update(c1, main1, &chat.Reply{Content: "a.go"}, false)
	mem := sideReq(sys("You extract memories from a conversation."), user("user: list the files\nassistant: a.go"))
	c2, created := g.assign("", "", mem)
	if !created || c2.side == "" {
		t.Fatalf("memory request: new %v side %q, want a side request of its own", created, c2.side)
	}
	g.update(c2, mem, &chat.Reply{Content: "none"}, false)
	again := sideReq(sys("You are Qwen Code."), user("list the files"))
	c3, created := g.assign("", "", again)
	if !created || c3.side != "" {
		t.Fatalf("the session again: new %v side %q, want a new conversation, not a side request", created, c3.side)
	}
}

// A request whose headers name a parent session (a sub-agent) is a side request, and says so.
func TestGroupSideRequestByHeader(t *testing.T) {
	var g grouper
	r := sideReq(sys("You are opencode."), user("explore"))
	c, _ := g.assign("x-session-affinity ses_2", "header X-Parent-Session-Id (a sub-agent of session ses_1)", r)
	if !strings.Contains(c.side, "X-Parent-Session-Id") {
		t.Errorf("side = %q, want the header named", c.side)
	}
}

func TestSessionKeyAgents(t *testing.T) {
	for _, tc := range []struct {
		name, own string
		h         http.Header
		env       *envelope
		want      string
	}{
		{"opencode", "", http.Header{"X-Session-Affinity": {"ses_1"}, "X-Session-Id": {"ses_1"}}, nil, "x-session-affinity ses_1"},
		{"claude", "", http.Header{"X-Claude-Code-Session-Id": {"abc"}}, nil, "x-claude-code-session-id abc"},
		{"codex body first", "", http.Header{"Session-Id": {"t1"}, "Thread-Id": {"t1"}}, &envelope{PromptCacheKey: "t1"}, "prompt_cache_key t1"},
		{"codex header", "", http.Header{"Thread-Id": {"t1"}}, nil, "thread-id t1"},
		{"own header first", "X-My-Run", http.Header{"X-My-Run": {"r9"}, "X-Claude-Code-Session-Id": {"abc"}}, nil, "x-my-run r9"},
		{"own header absent", "X-My-Run", http.Header{"X-Claude-Code-Session-Id": {"abc"}}, nil, "x-claude-code-session-id abc"},
		{"none", "", http.Header{"User-Agent": {"qwen"}}, &envelope{}, ""},
	} {
		if got := sessionKey(tc.own, tc.h, tc.env); got != tc.want {
			t.Errorf("%s: sessionKey = %q, want %q", tc.name, got, tc.want)
		}
		// The headers the handler keeps for the recorder give the same key.
		if got := sessionKey(tc.own, keyHeaders(tc.own, tc.h), tc.env); got != tc.want {
			t.Errorf("%s: sessionKey of the kept headers = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The handler keeps only the headers that may name a session, by any case of their names, and
// none of a request's credentials.
func TestKeyHeadersKeepsTheSessionHeadersOnly(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer sk-1"}, "User-Agent": {"codex"}, "x-my-run": {"r9"}, "Thread-Id": {"t1"}, "Content-Type": {"application/json"}}
	got := keyHeaders("X-My-Run", h)
	want := http.Header{"x-my-run": {"r9"}, "Thread-Id": {"t1"}}
	if len(got) != len(want) || got.Get("Thread-Id") != "t1" || got["x-my-run"][0] != "r9" {
		t.Errorf("keyHeaders = %v, want %v", got, want)
	}
	if got := keyHeaders("", http.Header{"User-Agent": {"qwen"}}); got != nil {
		t.Errorf("keyHeaders of no session header = %v, want nil", got)
	}
}

// Under a key, a request that adds to its last message (Claude Code's appended reminders)
// continues the session; without a key, a message that starts as another does ("task 1",
// "task 10") is another task.
func TestGroupExtendedMessage(t *testing.T) {
	for _, tc := range []struct {
		key  string
		same bool
	}{{"x-claude-code-session-id s1", true}, {"", false}} {
		var g grouper
		r1 := sideReq(sys("You are Claude."), user("task 1"))
		c1, _ := g.assign(tc.key, "", r1)
		g.update(c1, r1, nil, true)
		r2 := sideReq(sys("You are Claude."), user("task 10"))
		c2, _ := g.assign(tc.key, "", r2)
		if (c2 == c1) != tc.same {
			t.Errorf("key %q: the extended message went to %s, first %s; want the same %v", tc.key, c2.name, c1.name, tc.same)
		}
	}
}
