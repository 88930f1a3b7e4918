package cachesim

import (
	"bytes"
	"encoding/json"
	"strings"

	"lab/chat"
)

// FirstDifference names the first part where a request (cur) stops matching an earlier one
// (prev), both listed by [Parts] or [DifferenceParts]: the name of the first part of cur whose
// name or text differs from prev's part at the same place. It is the divergence segment of a
// request whose rendered prompt is unknown (a cloud API: the provider renders and tokenizes it
// out of sight), so it names a part but no token.
//
// Where prev's part is "reasoning N" and cur's is "message N" (the message carried reasoning
// before and carries none now: a harness or API that drops reasoning at a new turn), the
// difference is "reasoning N", as [Attributor] names it. It returns "" when one list is a prefix
// of the other: cur repeats prev and may append to it (nothing prev held differs), or cur is
// the shorter (no segment, the zero Segment).
func FirstDifference(prev, cur []Part) Segment {
	for i := 0; i < len(prev) && i < len(cur); i++ {
		p, c := prev[i], cur[i]
		if p.Name == c.Name && p.Text == c.Text {
			continue
		}
		if p.Name.Kind == Reasoning && c.Name == (Segment{Kind: Message, Index: p.Name.Index}) {
			return p.Name
		}
		return c.Name
	}
	return Segment{}
}

// DifferenceParts lists a request's parts as [Parts] names them, each with the whole text a
// provider renders of it, for [FirstDifference]: where Parts keeps only what locates a part in a
// rendered prompt, here "tools" holds every tool's name, description and parameters (and comes
// first when the request has tools but no system message), an assistant's "message N" its text
// followed by each tool call's id, name and arguments (compacted JSON), and a "tool result N"
// the id and name of the call it answers followed by its text.
func DifferenceParts(req *chat.Request, noteOpen string) []Part {
	parts := Parts(req, noteOpen)
	hasTools := false
	for i := range parts {
		p := &parts[i]
		switch {
		case p.Name.Kind == ToolList:
			hasTools = true
			p.Text = toolsText(req.Tools)
		case p.Name.Kind == Message:
			if m, ok := messageAt(req, p.Name); ok && m.Role == chat.RoleAssistant {
				p.Text = assistantText(m)
			}
		case p.Name.Kind == ToolResult:
			if m, ok := messageAt(req, p.Name); ok {
				p.Text = m.ToolCallID + "\x00" + m.ToolName + "\x00" + m.Content
			}
		}
	}
	if !hasTools && len(req.Tools) > 0 {
		parts = append([]Part{{Name: Segment{Kind: ToolList}, Text: toolsText(req.Tools)}}, parts...)
	}
	return parts
}

// messageAt returns the message an indexed segment refers to.
func messageAt(req *chat.Request, seg Segment) (chat.Message, bool) {
	if !seg.Kind.Indexed() || seg.Index < 0 || seg.Index >= len(req.Messages) {
		return chat.Message{}, false
	}
	return req.Messages[seg.Index], true
}

func toolsText(tools []chat.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		b.WriteString(t.Name)
		b.WriteByte(0)
		b.WriteString(t.Description)
		b.WriteByte(0)
		b.WriteString(compact(t.Parameters))
		b.WriteByte('\n')
	}
	return b.String()
}

func assistantText(m chat.Message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		b.WriteByte(0)
		b.WriteString(tc.ID)
		b.WriteByte(0)
		b.WriteString(tc.Name)
		b.WriteByte(0)
		b.WriteString(compact(tc.Arguments))
	}
	return b.String()
}

// compact returns raw JSON without insignificant white space (raw itself when it is not JSON).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
