package chat

import (
	"slices"
	"strconv"
	"strings"
)

// Replied returns req's conversation followed by reply as an assistant message and, after it, a
// tool result per tool call (one after a reply without calls): the next request of a tool loop,
// whose rendering shows how a server's chat template writes the reply into the history. A call
// without an id (one the model generated: the harness numbers its calls only afterwards) gets
// "next-<i>", its result's; the results' text, ".", is never read. req and reply are not
// changed.
func Replied(req *Request, reply *Reply) *Request {
	calls := slices.Clone(reply.ToolCalls)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = "next-" + strconv.Itoa(i)
		}
	}
	next := *req
	next.Messages = append(slices.Clone(req.Messages), Message{Role: RoleAssistant, Reasoning: reply.Reasoning, Content: reply.Content, ToolCalls: calls})
	if len(calls) == 0 {
		next.Messages = append(next.Messages, Message{Role: RoleTool, ToolCallID: "next", Content: "."})
	}
	for _, tc := range calls {
		next.Messages = append(next.Messages, Message{Role: RoleTool, ToolCallID: tc.ID, ToolName: tc.Name, Content: "."})
	}
	return &next
}

// OpenTagStart returns where an open tag that s[:at] ends inside starts: the last '<' at most
// maxBack bytes before at with no '>', space or line break after it (the "<t" that "<think>" and
// "<tool_call>" share); at when there is none. Where two renderings part inside such a tag, the
// difference starts at the tag.
func OpenTagStart(s string, at, maxBack int) int {
	if i := strings.LastIndexByte(s[:at], '<'); i >= 0 && at-i <= maxBack && !strings.ContainsAny(s[i:at], "> \n") {
		return i
	}
	return at
}
