package capture

import (
	"strings"
	"testing"

	"lab/chat"
)

// A keyless session run again from its start after the date changed (a new session: the same
// first prompt under the rebuilt system prompt, without the first run's reply) is not the
// first run continued: the grouper's doc asks for the conversation's whole last request and
// its reply after it before a rebuilt system prompt keeps the session.
func TestKeylessRunAgainAfterMidnightIsANewConversation(t *testing.T) {
	var g grouper
	tools := []chat.Tool{{Name: "read"}}
	prompt := func(date string) chat.Message {
		return sys("You are an expert coding assistant operating inside pi." + strings.Repeat(" Use the tools.", 20) + "\nCurrent date: " + date)
	}
	t1 := &chat.Request{Messages: []chat.Message{prompt("2026-12-02"), user("look around")}, Tools: tools}
	c1, _ := g.assign("", "", t1)
	g.update(c1, t1, &chat.Reply{Content: "a small Go project"}, false)
	again := &chat.Request{Messages: []chat.Message{prompt("2026-12-03"), user("look around")}, Tools: tools}
	if c, created := g.assign("", "", again); !created || c == c1 {
		t.Fatalf("the session run again under the new date joined %s (new %v), want a conversation of its own", c.name, created)
	}
}
