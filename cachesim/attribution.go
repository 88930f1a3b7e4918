package cachesim

import (
	"fmt"
	"strconv"
	"strings"

	"lab/chat"
)

// WarningContextOverflow starts the warning of an [Attribution] marked ContextOverflow. It is the
// same text as metrics.WarningContextOverflow, which readers of the results' warnings column
// match (cachesim does not import metrics).
const WarningContextOverflow = "context overflow"

// Attributor follows one prefix cache (a server slot, one conversation) from request to request:
// for each request it measures what a perfect prefix cache could reuse of the prompt given what
// the cache held after the previous request, where the two first differ, and which parts of the
// request the re-read tokens lie in. It is the attribution `lab run` records per request, usable
// by any caller that has the request, the prompt as the server rendered it and the served
// model's tokenizer (a capture proxy).
//
// Set the exported fields before the first [Attributor.Observe]; the zero value of the rest is an
// empty cache. An Attributor is not safe for concurrent use.
type Attributor struct {
	// Tok is the served model's tokenizer; nil makes every Attribution Unknown.
	Tok Tokenizer
	// NumCtx is the server's context window in tokens (Ollama num_ctx, llama-server -c); 0 when
	// unknown or unlimited, which never marks a ContextOverflow.
	NumCtx int
	// NoteOpen is the tag that opens a session note at the end of a user message (loop.json's
	// note.open, "<session-note>"); "" when the harness sends no notes. See [Parts].
	NoteOpen string

	// cacheText is the text the cache held after the last observed request and cacheTokens its
	// tokens; whole tokenizes prompts and cache texts, each step only what it appends.
	cacheText   string
	cacheTokens []int32
	whole       *Incremental
	// reasoning holds the indexes of the messages that carried reasoning in the last observed
	// request.
	reasoning map[int]bool
}

// Attribution is what [Attributor.Observe] measured about one request, all counts in tokens of
// the served model's tokenizer (Attributor.Tok).
type Attribution struct {
	// Unknown is true when nothing could be measured: the Attributor has no tokenizer or the
	// server's rendered prompt is unknown (cloud APIs show none). Every other field is then zero.
	Unknown bool
	// PromptTokens is the rendered prompt's length by the tokenizer (the server's own count may
	// differ; see Warnings).
	PromptTokens int64
	// ExpectedCachedTokens is what a perfect prefix cache could reuse: the longest common token
	// prefix of the prompt and what the cache held after the previous request, at most
	// PromptTokens − 1 (a server evaluates at least the last prompt token to sample from it).
	ExpectedCachedTokens int64
	// DivergenceToken is the 0-based index of the first prompt token that differs from what the
	// cache held; nil when the prompt matched the whole cache or the cache was empty.
	DivergenceToken *int64
	// DivergenceSegment names the part of the prompt where the first differing byte lies: a
	// [Part] name from [Parts] ("system", "tools", "message N", "reasoning N", "tool result N",
	// "note"; N a 0-based message index) or "generation prompt"; "" when DivergenceToken is nil.
	// A message that carried reasoning in the previous request and carries none now diverges at
	// "reasoning N": the template dropped its reasoning there.
	DivergenceSegment string
	// ReasoningTokensSent is the number of prompt tokens that are reasoning sent back: the sum of
	// the tokenized Reasoning of every message of the request.
	ReasoningTokensSent int64
	// Reread is the prompt from the first byte that differs from what the cache held to its
	// end, by the kind of segment it lies in. Each segment's part is tokenized alone, so the sum
	// may differ from PromptTokens − ExpectedCachedTokens by a token or two per segment.
	Reread Reread
	// ContextOverflow is true when the prompt, or the text the cache holds after the request
	// (prompt and reply), takes more than NumCtx tokens: the server truncates or shifts its
	// context, which empties its KV cache for the next request.
	ContextOverflow bool
	// Warnings are problems with these figures that do not invalidate them, in this order: the
	// tokenizer's prompt count differs from the server's; a context overflow (the text starts
	// with [WarningContextOverflow]).
	Warnings []string
}

// Reread splits the re-read part of a prompt by the kind of segment it lies in, in tokens.
type Reread struct {
	// System lies in the system prompt ("system").
	System int64
	// Tools lies in the tool list ("tools").
	Tools int64
	// Message lies in user and assistant messages, text and tool calls ("message N").
	Message int64
	// ToolResult lies in tool results ("tool result N").
	ToolResult int64
	// Reasoning lies in reasoning sent back ("reasoning N").
	Reasoning int64
	// Note lies in session notes ("note").
	Note int64
	// Other lies elsewhere: the generation prompt after the last message.
	Other int64
}

// Total returns the sum of every kind.
func (r Reread) Total() int64 {
	return r.System + r.Tools + r.Message + r.ToolResult + r.Reasoning + r.Note + r.Other
}

// add counts n tokens in the segment called name.
func (r *Reread) add(name string, n int64) {
	kind, _, _ := strings.Cut(name, " ")
	switch kind {
	case "system":
		r.System += n
	case "tools":
		r.Tools += n
	case "message":
		r.Message += n
	case "tool":
		r.ToolResult += n
	case "reasoning":
		r.Reasoning += n
	case "note":
		r.Note += n
	default:
		r.Other += n
	}
}

// Observe measures one request against what the cache held after the previous observed request
// and returns the figures; then it remembers what the cache holds now: cacheText (the prompt
// followed by the reply as the model wrote it, [chat.Result].CacheText), or rendered when
// cacheText is "".
//
// req is the request as sent, for naming segments ([Parts]); rendered is the prompt as the
// server rendered it (its chat template applied, special tokens as text); promptTokens is the
// server's count of the prompt, compared with the tokenizer's (a difference is a warning; a
// negative count skips the comparison). With no tokenizer or rendered "" Observe returns an
// Unknown Attribution and remembers nothing. Errors are the tokenizer's, wrapped; the
// Attributor's state is then unchanged.
func (a *Attributor) Observe(req *chat.Request, rendered, cacheText string, promptTokens int64) (Attribution, error) {
	if a.Tok == nil || rendered == "" {
		return Attribution{Unknown: true}, nil
	}
	if a.whole == nil || a.whole.Tok != a.Tok {
		a.whole = &Incremental{Tok: a.Tok}
	}
	prompt, err := a.whole.Encode(rendered)
	if err != nil {
		return Attribution{}, fmt.Errorf("tokenize the rendered prompt: %w", err)
	}
	at := Attribution{PromptTokens: int64(len(prompt))}
	if promptTokens >= 0 && int64(len(prompt)) != promptTokens {
		at.Warnings = append(at.Warnings, fmt.Sprintf("the lab's tokenizer counts %d prompt tokens, the server %d", len(prompt), promptTokens))
	}
	common := CommonPrefix(prompt, a.cacheTokens)
	at.ExpectedCachedTokens = int64(min(common, max(len(prompt)-1, 0)))
	segs := Segments(rendered, Parts(req, a.NoteOpen))
	divergeAt := CommonPrefixBytes(rendered, a.cacheText)
	reasoning := map[int]bool{}
	for i, m := range req.Messages {
		if m.Reasoning == "" {
			continue
		}
		reasoning[i] = true
		ids, err := a.Tok.Encode(m.Reasoning)
		if err != nil {
			return Attribution{}, fmt.Errorf("tokenize reasoning: %w", err)
		}
		at.ReasoningTokensSent += int64(len(ids))
	}
	if common < len(prompt) && common < len(a.cacheTokens) {
		d := int64(common)
		at.DivergenceToken = &d
		at.DivergenceSegment = SegmentAt(segs, divergeAt)
		// A message that carried reasoning last time and carries none now (a new turn: spec
		// 3.2.0 §8, and the template drops it) diverges where its reasoning was.
		if s, ok := strings.CutPrefix(at.DivergenceSegment, "message "); ok {
			if n, err := strconv.Atoi(s); err == nil && a.reasoning[n] && !reasoning[n] {
				at.DivergenceSegment = "reasoning " + s
			}
		}
	}
	// Attribute the re-read part, from the first differing byte on, to the segments it covers.
	for _, sg := range segs {
		if sg.End <= divergeAt {
			continue
		}
		ids, err := a.Tok.Encode(rendered[max(sg.Start, divergeAt):sg.End])
		if err != nil {
			return Attribution{}, fmt.Errorf("tokenize the re-read part: %w", err)
		}
		at.Reread.add(sg.Name, int64(len(ids)))
	}
	held, heldTokens := rendered, prompt
	if cacheText != "" {
		if heldTokens, err = a.whole.Encode(cacheText); err != nil {
			return Attribution{}, fmt.Errorf("tokenize the server's cache text: %w", err)
		}
		held = cacheText
	}
	if n, used := a.NumCtx, max(len(prompt), len(heldTokens)); n > 0 && used > n {
		at.ContextOverflow = true
		at.Warnings = append(at.Warnings, fmt.Sprintf("%s: the prompt (%d tokens) and the reply take %d tokens, more than the context window of %d: the server truncates or shifts its context, which empties its KV cache for the next request",
			WarningContextOverflow, len(prompt), used, n))
	}
	a.cacheText, a.cacheTokens, a.reasoning = held, heldTokens, reasoning
	return at, nil
}

// Parts lists a request's pieces in the order a chat template renders them, named as
// [Attribution].DivergenceSegment names them, for [Segments]:
//
//   - the first message, when it is a system message: "system", then "tools" (anchored on the
//     last tool's description) when the request has tools;
//   - a user message: "message N", and "note" for a session note at its end (from its last
//     "\n\n" followed by noteOpen; none when noteOpen is "");
//   - an assistant message: "reasoning N" when it carries reasoning, then "message N" (its text,
//     or the first tool call's name in quotes when it has no text);
//   - any other message: "tool result N".
//
// N is the message's 0-based index in req.Messages.
func Parts(req *chat.Request, noteOpen string) []Part {
	var parts []Part
	for i, m := range req.Messages {
		n := strconv.Itoa(i)
		switch {
		case m.Role == chat.RoleSystem && i == 0:
			parts = append(parts, Part{Name: "system", Text: m.Content})
			if len(req.Tools) > 0 {
				parts = append(parts, Part{Name: "tools", Text: req.Tools[len(req.Tools)-1].Description})
			}
		case m.Role == chat.RoleUser:
			text, note := m.Content, ""
			if noteOpen != "" {
				if j := strings.LastIndex(m.Content, "\n\n"+noteOpen); j >= 0 {
					text, note = m.Content[:j], m.Content[j:]
				}
			}
			parts = append(parts, Part{Name: "message " + n, Text: text})
			if note != "" {
				parts = append(parts, Part{Name: "note", Text: note})
			}
		case m.Role == chat.RoleAssistant:
			if m.Reasoning != "" {
				parts = append(parts, Part{Name: "reasoning " + n, Text: m.Reasoning})
			}
			text := m.Content
			if text == "" && len(m.ToolCalls) > 0 {
				text = `"` + m.ToolCalls[0].Name + `"`
			}
			parts = append(parts, Part{Name: "message " + n, Text: text})
		default:
			parts = append(parts, Part{Name: "tool result " + n, Text: m.Content})
		}
	}
	return parts
}
