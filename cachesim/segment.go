package cachesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// practiceWord is what a [Segment]'s Practice may be: a practice's name as an arm file writes it.
var practiceWord = regexp.MustCompile(`^[a-z][a-z_]*$`)

// SegmentKind is the kind of a [Segment]: which piece of a request a part of its rendered prompt
// belongs to. The zero value, [NoSegment], is no segment at all.
type SegmentKind uint8

// The kinds of segment [Parts] and [Segments] name, with the text [Segment.String] gives (N the
// message's 0-based index in the request).
const (
	// NoSegment is no segment: "" (no divergence, an offset outside every segment).
	NoSegment SegmentKind = iota
	// SystemPrompt is the first message when it is a system message: "system".
	SystemPrompt
	// ToolList is the request's tool list: "tools".
	ToolList
	// SystemMessage is a later system message (a second system prompt): "system N".
	SystemMessage
	// DeveloperMessage is a message whose role is "developer": "developer N".
	DeveloperMessage
	// Message is a user or assistant message's text and tool calls, or a message of another
	// role: "message N".
	Message
	// Reasoning is an assistant message's reasoning: "reasoning N".
	Reasoning
	// ToolResult is a tool message (role tool): "tool result N".
	ToolResult
	// Note is the session note at the end of a user message ([SplitNote]): "note".
	Note
	// GenerationPrompt is what the chat template writes after the last message: "generation
	// prompt".
	GenerationPrompt
	// Item is a piece of a request the lab keeps but does not read as text (chat.Message.Item:
	// an image or file part, a server tool's block, an item of a type it does not know):
	// "item N".
	Item
	numSegmentKinds
)

// segmentWords is each kind's text: the whole text for a kind without an index, the word
// before the index for the others.
var segmentWords = [numSegmentKinds]string{
	NoSegment:        "",
	SystemPrompt:     "system",
	ToolList:         "tools",
	SystemMessage:    "system",
	DeveloperMessage: "developer",
	Message:          "message",
	Reasoning:        "reasoning",
	ToolResult:       "tool result",
	Item:             "item",
	Note:             "note",
	GenerationPrompt: "generation prompt",
}

// SegmentKinds returns every kind but [NoSegment], in the order of the constants.
func SegmentKinds() []SegmentKind {
	out := make([]SegmentKind, 0, numSegmentKinds-1)
	for k := NoSegment + 1; k < numSegmentKinds; k++ {
		out = append(out, k)
	}
	return out
}

// Indexed reports whether a segment of kind k names a message by its index ("message N").
func (k SegmentKind) Indexed() bool {
	switch k {
	case SystemMessage, DeveloperMessage, Message, Reasoning, ToolResult, Item:
		return true
	}
	return false
}

// String returns the kind's word ("message", "tool result", "system" for both system kinds),
// or "SegmentKind(N)" for a value outside the constants.
func (k SegmentKind) String() string {
	if k >= numSegmentKinds {
		return "SegmentKind(" + strconv.Itoa(int(k)) + ")"
	}
	return segmentWords[k]
}

// Segment names a part of a request's rendered prompt: its kind and, for the kinds that belong
// to one message ([SegmentKind.Indexed]), the message's 0-based index in the request (chat
// Request.Messages); Index is 0 for the other kinds. Its String is the name the results schema
// writes in the divergence_segment column ("system", "tools", "message 3", "reasoning 3",
// "tool result 4", "item 5", "note", "generation prompt"); [ParseSegment] reads it back. The zero value
// is no segment ("").
//
// Practice, when set, names a harness practice's text inside that segment (a clock line, a
// counter, an inserted reminder: chat.Message.Marks); the name is then the practice, " in ", and
// the segment's own name ("clock in message 1", "instructions in system"). The re-read it
// causes counts in its segment's kind ([Reread]).
type Segment struct {
	Kind     SegmentKind
	Index    int
	Practice string
}

// String returns the segment's name: the kind's word, followed by a space and the index for
// an indexed kind ("message 3"), after "PRACTICE in " for a practice's text; "" for no segment.
func (s Segment) String() string {
	name := s.Kind.String()
	if s.Kind.Indexed() {
		name += " " + strconv.Itoa(s.Index)
	}
	if s.Practice != "" {
		return s.Practice + " in " + name
	}
	return name
}

// ParseSegment reads a segment's name as [Segment.String] writes it ("" is no segment). A name
// that is no segment's ("message", "message -1", "chat 2") is an error quoting it.
func ParseSegment(name string) (Segment, error) {
	if practice, host, ok := strings.Cut(name, " in "); ok && practiceWord.MatchString(practice) {
		seg, err := ParseSegment(host)
		if err != nil || seg.Kind == NoSegment {
			return Segment{}, fmt.Errorf("cachesim: %q is not a segment name", name)
		}
		seg.Practice = practice
		return seg, nil
	}
	for k := NoSegment; k < numSegmentKinds; k++ {
		if !k.Indexed() {
			if name == segmentWords[k] {
				return Segment{Kind: k}, nil
			}
			continue
		}
		n, ok := strings.CutPrefix(name, segmentWords[k]+" ")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || strconv.Itoa(i) != n {
			break
		}
		return Segment{Kind: k, Index: i}, nil
	}
	return Segment{}, fmt.Errorf("cachesim: %q is not a segment name", name)
}
