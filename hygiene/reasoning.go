package hygiene

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"lab/chat"
)

// CurrentTurnReasoning returns the messages a request carries, given the session's stored
// history (spec 3.2.0 §8). It is [CurrentTurnReasoningWith] with no inline tags: reasoning
// already held apart from the text (chat.Message Reasoning and Thinking) goes back for the
// current turn only.
func CurrentTurnReasoning(history []chat.Message, m Measures) []chat.Message {
	return CurrentTurnReasoningWith(history, m, nil)
}

// CurrentTurnReasoningWith returns the messages a request carries, given the session's stored
// history, following spec 3.2.0 §8:
//
//   - The current turn is every message after the last one that started a turn ([TurnStart]).
//   - With m.ReasoningThisTurn on, every assistant message of the current turn keeps the
//     reasoning it came with, in full: Reasoning (OpenAI reasoning_content, Ollama thinking) and
//     Thinking (Anthropic blocks, unchanged, with their signatures). Every assistant message of
//     an earlier turn carries none (both emptied). A message that came with none carries none.
//   - Reasoning written inline in an assistant message's Content between one of tags' pairs
//     ([SplitInlineReasoning]; quirks.json `reasoning-fields`) leaves Content in every message:
//     in the current turn it goes back as Reasoning (after reasoning the message already held,
//     the two joined by "\n"), in earlier turns it is dropped.
//
// With m.ReasoningThisTurn off (a plain harness) no message carries Reasoning or Thinking and
// Content is sent as stored, inline tags and all: a plain harness resends what it stored.
//
// The result is a new slice; history and its messages are not changed (§8: "What is stored is
// unchanged"). Messages share their ToolCalls and Thinking slices with history: callers must not
// modify them.
func CurrentTurnReasoningWith(history []chat.Message, m Measures, tags []TagPair) []chat.Message {
	return AppendTurnReasoning(make([]chat.Message, 0, len(history)), history, 0, TurnStart(history), m, tags)
}

// AppendTurnReasoning appends to dst the messages history[from:] as [CurrentTurnReasoningWith]
// gives them for the whole history, whose [TurnStart] is start, and returns the extended slice:
// so that a request whose history only grew since the previous one, in the same turn, is built
// from the previous one's messages and its new ones (start unchanged). history is not changed.
func AppendTurnReasoning(dst, history []chat.Message, from, start int, m Measures, tags []TagPair) []chat.Message {
	for i := from; i < len(history); i++ {
		dst = append(dst, history[i])
		msg := &dst[len(dst)-1]
		if msg.Role != chat.RoleAssistant {
			continue
		}
		if !m.ReasoningThisTurn {
			msg.Reasoning, msg.Thinking = "", nil
			continue
		}
		current := i > start
		if inline, rest, ok := splitInline(msg.Content, tags); ok {
			msg.Content = rest
			if current && inline != "" {
				if msg.Reasoning != "" {
					msg.Reasoning += "\n" + inline
				} else {
					msg.Reasoning = inline
				}
			}
		}
		if !current {
			msg.Reasoning, msg.Thinking = "", nil
		}
	}
	return dst
}

// TurnStart returns the index in history of the message after which the current turn runs
// (spec 3.2.0 §8), or -1 when every message belongs to it. That is the later of:
//
//   - the last user message that started a turn: one the person wrote, or a machine message that
//     starts a turn of its own (chat.Message Interjection false). A message delivered at a step
//     boundary while a turn runs (Interjection true) does not start a turn, and neither does a
//     tool result, a system message or an assistant message;
//   - the last compaction summary (chat.Message Summary true), whatever its role: it starts the
//     history afresh, so nothing before it carries reasoning, and neither does the summary
//     itself (it is the harness's text, not a step of the turn).
func TurnStart(history []chat.Message) int {
	for i := len(history) - 1; i >= 0; i-- {
		if msg := &history[i]; msg.Summary || (msg.Role == chat.RoleUser && !msg.Interjection) {
			return i
		}
	}
	return -1
}

// TagPair is one pair of inline reasoning tags a model family writes around its reasoning in the
// text of its answer, such as "<think>" and "</think>" (quirks.json `reasoning-fields`, spec
// 3.2.0 §8).
type TagPair struct {
	// Start opens the reasoning, End closes it. Neither may be empty.
	Start string `json:"start"`
	End   string `json:"end"`
	// Prefilled says the family's chat template ends its generation prompt with Start, so the
	// answer begins inside the reasoning and may hold End without Start: the text before the
	// first End is then the reasoning.
	Prefilled bool `json:"prefilled,omitempty"`
}

// SplitInlineReasoning takes the reasoning a model wrote inline at the start of its answer out
// of content (spec 3.2.0 §8: it goes back as reasoning, never as text in content). The first
// pair of tags that matches decides:
//
//   - content, after leading white space, begins with Start: the reasoning is the text up to the
//     first End after it, or all of the rest when End never comes (a cut-off answer); rest is
//     what follows End;
//   - else, for a Prefilled pair, content holds End and no Start before it: the reasoning is the
//     text before the first End, rest what follows it.
//
// The reasoning is returned with surrounding white space trimmed and rest with leading white
// space trimmed (Qwen3 writes "<think>\n" + reasoning + "\n</think>\n\n" + text). When no pair
// matches, reasoning is "" and rest is content unchanged. Tags elsewhere in the text are text.
func SplitInlineReasoning(content string, tags []TagPair) (reasoning, rest string) {
	reasoning, rest, _ = splitInline(content, tags)
	return reasoning, rest
}

// splitInline is SplitInlineReasoning that also says whether a pair matched.
func splitInline(content string, tags []TagPair) (reasoning, rest string, ok bool) {
	const space = " \t\r\n"
	for _, p := range tags {
		if p.Start == "" || p.End == "" {
			continue
		}
		if body, found := strings.CutPrefix(strings.TrimLeft(content, space), p.Start); found {
			r, after, closed := strings.Cut(body, p.End)
			if !closed {
				return strings.Trim(r, space), "", true
			}
			return strings.Trim(r, space), strings.TrimLeft(after, space), true
		}
		if p.Prefilled {
			if r, after, found := strings.Cut(content, p.End); found && !strings.Contains(r, p.Start) {
				return strings.Trim(r, space), strings.TrimLeft(after, space), true
			}
		}
	}
	return "", content, false
}

// Quirks is quirks.json (embedded as lab.QuirksJSON): what differs between model families and
// dialects that the spec leaves to the lab. Only `reasoning-fields` so far (spec 3.2.0 §8).
type Quirks struct {
	// Comment is the file's own explanation, for people; the code ignores it.
	Comment string `json:"_comment"`
	// ReasoningFields says where each dialect carries reasoning and which inline tags each model
	// family writes it between.
	ReasoningFields ReasoningFields `json:"reasoning-fields"`
}

// ReasoningFields is quirks.json `reasoning-fields`.
type ReasoningFields struct {
	// Dialects maps a dialect ("openai", "ollama", "anthropic") to its reasoning fields.
	Dialects map[string]DialectReasoning `json:"dialects"`
	// Families lists the model families that write reasoning inline, tried in order.
	Families []ModelFamily `json:"families"`
	// Default is the tags for a model no family matches.
	Default []TagPair `json:"default"`
}

// DialectReasoning names where one dialect carries reasoning on the wire.
type DialectReasoning struct {
	// Request is the field (or block type) an assistant message of a request carries its
	// reasoning in (§8).
	Request string `json:"request"`
	// Response lists the fields a response may carry the model's reasoning in, in the order a
	// backend looks for them.
	Response []string `json:"response"`
}

// ModelFamily is one model family that writes its reasoning inline in its answer.
type ModelFamily struct {
	// Name names the family, for people.
	Name string `json:"name"`
	// Match lists lowercase substrings of a model name that select the family.
	Match []string `json:"match"`
	// Tags are the family's reasoning tags, tried in order.
	Tags []TagPair `json:"tags"`
}

// requiredDialects are the dialects the lab speaks; quirks.json must name each.
var requiredDialects = []string{"openai", "ollama", "anthropic"}

// ParseQuirks decodes quirks.json strictly: an unknown key, trailing data, a missing dialect
// (openai, ollama, anthropic) or field, a family with no name, match or tags, or a tag pair with
// an empty start or end is an error.
func ParseQuirks(data []byte) (*Quirks, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var q Quirks
	if err := dec.Decode(&q); err != nil {
		return nil, fmt.Errorf("quirks.json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("quirks.json: data after the top-level object")
	}
	rf := q.ReasoningFields
	for _, d := range requiredDialects {
		dr, ok := rf.Dialects[d]
		if !ok {
			return nil, fmt.Errorf("quirks.json: reasoning-fields.dialects has no %q", d)
		}
		if dr.Request == "" || len(dr.Response) == 0 {
			return nil, fmt.Errorf("quirks.json: reasoning-fields.dialects.%s needs request and response", d)
		}
	}
	checkTags := func(where string, tags []TagPair) error {
		if len(tags) == 0 {
			return fmt.Errorf("quirks.json: %s has no tags", where)
		}
		for i, p := range tags {
			if p.Start == "" || p.End == "" {
				return fmt.Errorf("quirks.json: %s tag pair %d needs start and end", where, i)
			}
		}
		return nil
	}
	for i, f := range rf.Families {
		if f.Name == "" || len(f.Match) == 0 {
			return nil, fmt.Errorf("quirks.json: reasoning-fields.families[%d] needs name and match", i)
		}
		for _, s := range f.Match {
			if s == "" || s != strings.ToLower(s) {
				return nil, fmt.Errorf("quirks.json: family %s: match %q must be non-empty lowercase", f.Name, s)
			}
		}
		if err := checkTags("family "+f.Name, f.Tags); err != nil {
			return nil, err
		}
	}
	if err := checkTags("reasoning-fields.default", rf.Default); err != nil {
		return nil, err
	}
	return &q, nil
}

// InlineTags returns the inline reasoning tags of model (a model name as the server knows it,
// such as "qwen3:8b"): those of the first family one of whose match strings the lowercased name
// contains, else the default tags.
func (q *Quirks) InlineTags(model string) []TagPair {
	name := strings.ToLower(model)
	for _, f := range q.ReasoningFields.Families {
		for _, s := range f.Match {
			if strings.Contains(name, s) {
				return f.Tags
			}
		}
	}
	return q.ReasoningFields.Default
}
