package cachesim

import (
	"fmt"
	"slices"
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
	// Window is what the server keeps of a sequence longer than its context window: set for
	// Ollama's runner ([NewWindow] of its num_ctx), which truncates and shifts its slot and so
	// empties it for the next request but its first num_keep tokens; the next request's expected
	// cached tokens are then counted against what the slot kept. The zero value keeps the whole
	// sequence (a server whose overflow the lab does not model: the overflow is only marked).
	Window Window
	// CacheReuse is llama-server's --cache-reuse, the minimum chunk its slot reuses after the
	// common prefix ([ChunkReuse]): nil where the server has no chunk reuse or its setting is
	// unknown (the chunk reuse is then not modelled and Attribution.ChunkReusedTokens is nil), 0
	// where it is off.
	CacheReuse *int
	// Order is the provider's render order of the system prompt and the tool list
	// ([OrderOf] the cache model; the zero value is Qwen3's, [SystemThenTools]): the order of
	// the segments [PartsInOrder] names in the rendered prompt.
	Order RenderOrder
	// HostCache is llama-server's host-memory prompt cache (--cache-ram), shared by the
	// Attributors of the sessions that follow each other on the server: before each request the
	// slot may save its prompt there and restore a cached one ([HostCache].Launch, for a request
	// pinned to its slot), and the expected cached tokens are then counted against what it
	// restored. nil where the server has none (--cache-ram 0) or it is not modelled.
	HostCache *HostCache

	// cacheText is the text the cache held after the last observed request and cacheTokens its
	// tokens; whole tokenizes prompts and cache texts, each step only what it appends, and counts
	// the prompt's tokens up to each segment's end, for the segments' token spans (Tok's
	// [PromptTokenizer.Prompts] when it has one, made for wholeOf); boundsText and boundsAt keep
	// the last prompt and the token count up to each of its segment ends (by byte offset), which
	// the next prompt reuses as far as the two are the same.
	cacheText   string
	cacheTokens []int32
	whole       *Incremental
	wholeOf     Tokenizer
	boundsText  string
	boundsAt    map[int]int64
	// reasoning holds the indexes of the messages that carried reasoning in the last observed
	// request.
	reasoning map[int]bool
	// practiceSegs are the last observed request's segments written by a harness practice
	// (Segment.Practice set), by byte offset in its rendering (boundsText).
	practiceSegs []ByteSpan
	// shifted is true when Window cut what the cache held after the last request, or HostCache
	// restored a cached prompt into the slot, or the cache keeps written prefixes: cacheTokens
	// are then the kept tokens and cacheText is "" (their text is not a prefix of any prompt).
	shifted bool
	// written are the prefixes a cache that keeps them wrote ([Attributor.ObserveWrites]); nil
	// until a request wrote through ObserveWrites.
	written *prefixEntries
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
	// prefix of the prompt and what the cache held after the previous request (for a cache that
	// keeps written prefixes, [Attributor.ObserveWrites], the longest of them that starts the
	// prompt), at most PromptTokens − 1 (a server evaluates at least the last prompt token to
	// sample from it).
	ExpectedCachedTokens int64
	// DivergenceToken is the 0-based index of the first prompt token that differs from what the
	// cache held; nil when the prompt matched the whole cache or the cache was empty.
	DivergenceToken *int64
	// DivergenceSegment names the part of the prompt where the first differing byte lies: a
	// [Part] name from [Parts] ("system", "tools", "message N", "reasoning N", "tool result N",
	// "note"; N a 0-based message index) or "generation prompt"; no segment (the zero Segment,
	// "") when DivergenceToken is nil.
	// A message that carried reasoning in the previous request and carries none now diverges at
	// "reasoning N": the template dropped its reasoning there.
	DivergenceSegment Segment
	// Excerpt shows the first differing byte: what the KV cache held there (the previous
	// prompt and the reply the model generated, as the server holds it) against what this
	// prompt renders; nil when DivergenceToken is, or when the cache's text is not known (after
	// a context shift, a host-cache restore, or a cache of written prefixes whose entry ends
	// within a segment).
	Excerpt *Excerpt
	// ReasoningTokensSent is the number of prompt tokens that are reasoning sent back: the sum of
	// the tokenized Reasoning of every message of the request.
	ReasoningTokensSent int64
	// Spans are the segments of the rendered prompt ([Segments] of [Parts]) as token ranges of
	// the tokenizer's tokens: contiguous, in order, the first starting at 0 and the last ending
	// at PromptTokens. A segment's end is the token count of the prompt up to the segment's last
	// byte, so a token that straddles two segments counts in the first. [Attribution.Split]
	// splits a re-read range with them.
	Spans []TokenSpan
	// ChunkReusedTokens is the part of ExpectedCachedTokens that llama-server's chunk reuse
	// supplies beyond the common prefix ([ChunkReuse]): the re-read tokens it saves. nil when the
	// Attributor does not model chunk reuse (Attributor.CacheReuse nil).
	ChunkReusedTokens *int64
	// ReusedChunks are the chunks that reuse supplies, as prompt positions in order (the
	// prefix is not one of them; empty when ChunkReusedTokens is 0 or nil). [Attribution.Split]
	// takes them out of the re-read range.
	ReusedChunks []TokenRange
	// ContextOverflow is true when the prompt, or the text the cache holds after the request
	// (prompt and reply), takes more than NumCtx tokens: the server truncates or shifts its
	// context, which empties its KV cache for the next request.
	ContextOverflow bool
	// Warnings are problems with these figures that do not invalidate them, in this order: the
	// tokenizer's prompt count differs from the server's; a context overflow (the text starts
	// with [WarningContextOverflow]).
	Warnings []string
}

// TokenSpan is a named segment of a rendered prompt as the token range [Start, End).
type TokenSpan struct {
	Name       Segment
	Start, End int64
}

// Split divides the tokens a server re-read, positions [cached, prompt) of the prompt in the
// server's count (prompt − cached tokens), among the kinds of segment they lie in, by token
// position ([Attribution].Spans). When chunk reuse supplied part of the cached tokens
// (ReusedChunks), the re-read positions are those after the prefix of cached less the chunks'
// tokens, the chunks excepted: the same count, prompt − cached. What no span holds (positions past the tokenizer's count of the
// prompt, when the server counts more) is Unattributed, so the kinds add up to prompt − cached
// exactly. cached is clamped to [0, prompt]. An Unknown attribution (no spans) puts everything in
// Unattributed.
func (at *Attribution) Split(cached, prompt int64) Reread {
	var r Reread
	prompt = max(prompt, 0)
	cached = min(max(cached, 0), prompt)
	var held int64
	for _, rr := range rereadRanges(cached, prompt, at.ReusedChunks) {
		for _, sp := range at.Spans {
			lo, hi := max(sp.Start, rr.Start), min(sp.End, rr.End)
			if hi > lo {
				r.add(sp.Name, hi-lo)
				held += hi - lo
			}
		}
	}
	r.Unattributed = prompt - cached - held
	return r
}

// Reread splits the re-read part of a prompt by the kind of segment it lies in, in tokens
// ([Attribution.Split]).
type Reread struct {
	// System lies in system messages: the system prompt ("system"), a later system message
	// ("system N") or a developer message ("developer N").
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
	// Other lies in the generation prompt after the last message ("generation prompt").
	Other int64
	// Unattributed lies in no segment: positions the server counted beyond the tokenizer's
	// count of the prompt.
	Unattributed int64
}

// Total returns the sum of every kind.
func (r Reread) Total() int64 {
	return r.System + r.Tools + r.Message + r.ToolResult + r.Reasoning + r.Note + r.Other + r.Unattributed
}

// add counts n tokens in the segment seg.
func (r *Reread) add(seg Segment, n int64) {
	switch seg.Kind {
	case SystemPrompt, SystemMessage, DeveloperMessage:
		r.System += n
	case ToolList:
		r.Tools += n
	case Message:
		r.Message += n
	case ToolResult:
		r.ToolResult += n
	case Reasoning:
		r.Reasoning += n
	case Note:
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
	return a.observe(req, rendered, cacheText, nil, promptTokens)
}

// ObserveWrites is [Attributor.Observe] for a cache that keeps prefixes of the prompt at the
// places a request marks, not the whole sequence (chat.Result.CacheWrites: the Anthropic
// Messages API's `cache_control` breakpoints, backends.md §6): writes are the token positions p
// (0 < p ≤ the prompt's tokens; others are ignored) whose prefixes prompt[:p] the cache wrote
// for this request, an empty slice when it wrote none. The reply is never cached. From then on
// the expected cached tokens of a request are the longest prefix of its prompt that an earlier
// request of the session wrote, at most the prompt less one token (a perfect lookup: any entry,
// however far back; the provider's own lookup may find less, Anthropic's only within 20 blocks
// of a breakpoint), and the divergence is counted against the longest entry the last request
// that wrote one wrote. Errors are Observe's.
func (a *Attributor) ObserveWrites(req *chat.Request, rendered string, writes []int, promptTokens int64) (Attribution, error) {
	if writes == nil {
		writes = []int{}
	}
	return a.observe(req, rendered, "", writes, promptTokens)
}

// observe is Observe (writes nil) and ObserveWrites.
func (a *Attributor) observe(req *chat.Request, rendered, cacheText string, writes []int, promptTokens int64) (Attribution, error) {
	if a.Tok == nil || rendered == "" {
		return Attribution{Unknown: true}, nil
	}
	if a.whole == nil || a.wholeOf != a.Tok {
		if p, ok := a.Tok.(PromptTokenizer); ok {
			a.whole = p.Prompts()
		} else {
			a.whole = &Incremental{Tok: a.Tok}
		}
		a.wholeOf = a.Tok
		a.boundsText, a.boundsAt = "", nil
	}
	prompt, err := a.whole.Encode(rendered)
	if err != nil {
		return Attribution{}, fmt.Errorf("tokenize the rendered prompt: %w", err)
	}
	at := Attribution{PromptTokens: int64(len(prompt))}
	if promptTokens >= 0 && int64(len(prompt)) != promptTokens {
		at.Warnings = append(at.Warnings, fmt.Sprintf("the lab's tokenizer counts %d prompt tokens, the server %d", len(prompt), promptTokens))
	}
	if a.HostCache != nil {
		// What the slot holds when the server takes the common prefix: a restored prompt's text
		// is not known, only its tokens (as after a shift).
		if held, restored := a.HostCache.Launch(a.cacheTokens, prompt, true); restored {
			a.cacheText, a.cacheTokens, a.shifted = "", held, true
		}
	}
	common := CommonPrefix(prompt, a.cacheTokens)
	at.ExpectedCachedTokens = int64(min(common, max(len(prompt)-1, 0)))
	if a.written != nil {
		// A cache of written prefixes: only a whole entry is reused.
		at.ExpectedCachedTokens = int64(min(a.written.longest(prompt), max(len(prompt)-1, 0)))
	}
	if a.CacheReuse != nil {
		at.ExpectedCachedTokens, at.ReusedChunks = reuseChunks(a.cacheTokens, prompt, *a.CacheReuse)
		at.ChunkReusedTokens = new(at.ExpectedCachedTokens - int64(min(common, max(len(prompt)-1, 0))))
	}
	segs := Segments(rendered, PartsInOrder(req, a.NoteOpen, a.Order))
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
	// Each segment's token span ends at the count of the prompt's tokens up to its last byte;
	// the count up to an offset within what this prompt shares with the last one is the last's.
	same := CommonPrefixBytes(rendered, a.boundsText)
	boundsAt := make(map[int]int64, len(segs))
	var start int64
	for i, sg := range segs {
		end := int64(len(prompt))
		if i < len(segs)-1 {
			n, ok := a.boundsAt[sg.End]
			if !ok || sg.End > same {
				c, err := a.whole.Count(rendered[:sg.End])
				if err != nil {
					return Attribution{}, fmt.Errorf("tokenize the prompt up to %s: %w", sg.Name, err)
				}
				n = int64(c)
			}
			boundsAt[sg.End] = n
			end = min(n, end)
		}
		end = max(end, start)
		at.Spans = append(at.Spans, TokenSpan{Name: sg.Name, Start: start, End: end})
		start = end
	}
	if common < len(prompt) && common < len(a.cacheTokens) {
		d := int64(common)
		at.DivergenceToken = &d
		if a.shifted {
			// The slot kept its first tokens only: the first token it lacks names the segment.
			for _, sp := range at.Spans {
				if int64(common) >= sp.Start && int64(common) < sp.End {
					at.DivergenceSegment = sp.Name
					break
				}
			}
		} else {
			// A prompt that is all of it a prefix of what the cache held (a request sent again
			// after an undo) differs in its last token only: the token that ends the rendering
			// merges across its end, and the last segment names it.
			at.DivergenceSegment = SegmentAt(segs, min(divergeAt, len(rendered)-1))
		}
		// A message that carried reasoning last time and carries none now (a new turn: spec
		// 3.2.0 §8, and the template drops it) diverges where its reasoning was.
		if d := at.DivergenceSegment; d.Kind == Message && a.reasoning[d.Index] && !reasoning[d.Index] {
			at.DivergenceSegment.Kind = Reasoning
		}
		// Where the last prompt held a practice's text and this one holds something else there
		// (a clock line that moved on to the next user message, a reminder re-sent further on),
		// the practice's text is what the cache no longer matches: it names the divergence.
		if old := SegmentAt(a.practiceSegs, divergeAt); old.Practice != "" && at.DivergenceSegment.Practice == "" && !a.shifted {
			at.DivergenceSegment = old
		}
		if !a.shifted && a.cacheText != "" {
			at.Excerpt = ExcerptAt(a.cacheText, rendered, divergeAt)
		}
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
	lastShifted := a.shifted
	a.shifted = false
	if kept, _, cut := a.Window.Hold(heldTokens, nil); cut {
		held, heldTokens, a.shifted = "", kept, true
		if !at.ContextOverflow { // a sequence that fills the window exactly is shifted too
			at.ContextOverflow = true
			at.Warnings = append(at.Warnings, fmt.Sprintf("%s: the prompt (%d tokens) and the reply fill the context window of %d: the server shifts its context, which empties its KV cache for the next request",
				WarningContextOverflow, len(prompt), a.Window.NumCtx))
		}
	}
	last, lastText := a.cacheTokens, a.cacheText
	a.cacheText, a.cacheTokens, a.reasoning = held, heldTokens, reasoning
	a.boundsText, a.boundsAt = rendered, boundsAt
	a.practiceSegs = a.practiceSegs[:0]
	for _, sg := range segs {
		if sg.Name.Practice != "" {
			a.practiceSegs = append(a.practiceSegs, sg)
		}
	}
	if writes != nil {
		if a.written == nil {
			a.written = &prefixEntries{}
		}
		a.written.write(prompt, writes)
		deepest := 0
		for _, p := range writes {
			if p <= len(prompt) {
				deepest = max(deepest, p)
			}
		}
		// What the next request diverges from: this request's deepest entry, else the last
		// one written. Its text, for naming the divergence by byte as after any request (a
		// practice's text included), is the rendering up to the last segment end within the
		// entry: a breakpoint ends a segment but for the template's closing tokens, which lie
		// in the next segment's span, so a prompt that differs there is named by that segment
		// either way. An entry that holds no whole segment keeps its tokens only (as after a
		// shift).
		a.cacheText, a.cacheTokens, a.shifted = lastText, last, lastShifted
		if deepest > 0 {
			a.cacheText, a.cacheTokens, a.shifted = "", slices.Clone(prompt[:deepest]), true
			for _, sg := range segs {
				if n, ok := boundsAt[sg.End]; ok && n <= int64(deepest) && sg.End > len(a.cacheText) {
					a.cacheText, a.shifted = rendered[:sg.End], false
				}
			}
		}
	}
	return at, nil
}

// reuseChunks is llama-server's lookup with chunk reuse: [ChunkReuse], then its rule that at
// least one prompt token is evaluated (server-context.cpp update_slots, "need to evaluate at
// least 1 token": n_past−1 when the whole prompt was found), which takes the last token off the
// last chunk when a chunk ends the prompt. It returns the cached tokens and the chunks.
func reuseChunks(cache, prompt []int32, minChunk int) (int64, []TokenRange) {
	n, chunks := ChunkReuse(cache, prompt, minChunk)
	if n == len(prompt) && n > 0 {
		n--
		if k := len(chunks) - 1; k >= 0 {
			chunks[k].End--
			if chunks[k].Len() == 0 {
				chunks = chunks[:k]
			}
		}
	}
	return int64(n), chunks
}

// Parts lists a request's pieces in the order Qwen3's chat template renders them
// ([SystemThenTools]); it is [PartsInOrder] with that order.
func Parts(req *chat.Request, noteOpen string) []Part {
	return PartsInOrder(req, noteOpen, SystemThenTools)
}

// PartsInOrder lists a request's pieces in the order a provider's prompt renders them (order),
// named as [Attribution].DivergenceSegment names them, for [Segments]:
//
//   - with [ToolsThenSystem] (Anthropic), first "tools" (anchored on the last tool's
//     description) when the request has tools;
//   - the first message, when it is a system message: "system", then, with [SystemThenTools]
//     (Qwen3's template, OpenAI), "tools" when the request has tools;
//   - either way, a practice's mark in a tool's description (chat.Tool.Marks) is a segment of
//     its own inside the tools ("cwd in tools");
//   - a later system message (a second system prompt, or Claude Code's system message inside
//     Anthropic's `messages`): "system N"; a message whose role is "developer" (OpenAI's
//     developer message, where it stands): "developer N";
//     both count as system prompt in [Reread];
//   - a user message: "message N", and "note" for a session note at its end ([SplitNote]): text
//     pasted into the message, a transcript with notes in it included, is the message's;
//   - an assistant message: "reasoning N" when it carries reasoning, then "message N" (its text,
//     or the first tool call's name in quotes when it has no text);
//   - a tool message (role tool): "tool result N";
//   - a piece the lab keeps but does not read (chat.Message.Item set): "item N";
//   - a message of any other role: "message N";
//   - a practice's text inside a message (chat.Message.Marks) is a segment of its own inside the
//     message's ("clock in message 1"), and a mark without text names the whole message
//     ("window in message 2": the first message a window kept after its cut).
//
// N is the message's 0-based index in req.Messages.
func PartsInOrder(req *chat.Request, noteOpen string, order RenderOrder) []Part {
	var parts []Part
	if order == ToolsThenSystem {
		parts = append(parts, toolParts(req.Tools)...)
	}
	for i, m := range req.Messages {
		from := len(parts)
		parts = messageParts(parts, req, i, noteOpen, order)
		for _, mk := range m.Marks {
			if mk.Text == "" {
				for k := from; k < len(parts); k++ {
					if parts[k].Name.Practice == "" {
						parts[k].Name.Practice = mk.Practice
					}
				}
			}
		}
	}
	return parts
}

// messageParts appends the parts of message i of req to parts, as [PartsInOrder] names them.
func messageParts(parts []Part, req *chat.Request, i int, noteOpen string, order RenderOrder) []Part {
	m := req.Messages[i]
	if len(m.Marks) > 0 && m.Item == "" && m.Role != chat.RoleAssistant {
		return append(parts, markedParts(req, i, noteOpen, order)...)
	}
	switch {
	case m.Item != "":
		parts = append(parts, Part{Name: Segment{Kind: Item, Index: i}, Text: m.Content})
	case m.Role == chat.RoleSystem && i == 0:
		parts = append(parts, Part{Name: Segment{Kind: SystemPrompt}, Text: m.Content})
		if order == SystemThenTools {
			parts = append(parts, toolParts(req.Tools)...)
		}
	case m.Role == chat.RoleSystem:
		parts = append(parts, Part{Name: Segment{Kind: SystemMessage, Index: i}, Text: m.Content})
	case m.Role == "developer":
		parts = append(parts, Part{Name: Segment{Kind: DeveloperMessage, Index: i}, Text: m.Content})
	case m.Role == chat.RoleUser:
		text, note := SplitNote(m.Content, noteOpen)
		parts = append(parts, Part{Name: Segment{Kind: Message, Index: i}, Text: text})
		if note != "" {
			parts = append(parts, Part{Name: Segment{Kind: Note}, Text: note})
		}
	case m.Role == chat.RoleAssistant:
		if m.Reasoning != "" {
			parts = append(parts, Part{Name: Segment{Kind: Reasoning, Index: i}, Text: m.Reasoning})
		}
		text := m.Content
		if text == "" && len(m.ToolCalls) > 0 {
			text = `"` + m.ToolCalls[0].Name + `"`
		}
		parts = append(parts, Part{Name: Segment{Kind: Message, Index: i}, Text: text})
	case m.Role == chat.RoleTool:
		parts = append(parts, Part{Name: Segment{Kind: ToolResult, Index: i}, Text: m.Content})
	default:
		parts = append(parts, Part{Name: Segment{Kind: Message, Index: i}, Text: m.Content})
	}
	return parts
}

// toolParts lists the tool list's parts: one [ToolList] part ending at the last tool's
// description, and before it, for each practice mark in a description (chat.Tool.Marks), the
// mark's text as a segment named with its practice ("cwd in tools") and the rest of that
// description as the tool list's. No tools, no parts.
func toolParts(list []chat.Tool) []Part {
	if len(list) == 0 {
		return nil
	}
	var out []Part
	for _, t := range list {
		if len(t.Marks) == 0 {
			continue
		}
		text := t.Description
		for _, mk := range t.Marks {
			j := strings.Index(text, mk.Text)
			if j < 0 || mk.Text == "" {
				break
			}
			if before := text[:j]; strings.TrimSpace(before) != "" {
				out = append(out, Part{Name: Segment{Kind: ToolList}, Text: before})
			}
			out = append(out, Part{Name: Segment{Kind: ToolList, Practice: mk.Practice}, Text: mk.Text})
			text = text[j+len(mk.Text):]
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, Part{Name: Segment{Kind: ToolList}, Text: text})
		}
	}
	if last := list[len(list)-1]; len(last.Marks) == 0 {
		out = append(out, Part{Name: Segment{Kind: ToolList}, Text: last.Description})
	}
	return out
}

// markedParts lists the parts of message i, which carries practice marks (chat.Message.Marks):
// its parts as [PartsInOrder] names them without marks, each cut around the marks' texts it
// holds, a mark's text named with its practice inside the part's segment ("clock in message 1").
// The tool list is among them only where order puts it after the first message; its marks are
// the tools' own (chat.Tool.Marks), never the message's.
func markedParts(req *chat.Request, i int, noteOpen string, order RenderOrder) []Part {
	m := req.Messages[i]
	one := *req
	bare := m
	bare.Marks = nil
	one.Messages = make([]chat.Message, i+1)
	one.Messages[i] = bare
	if i > 0 || order != SystemThenTools {
		one.Tools = nil
	}
	var out []Part
	marks := m.Marks
	for _, p := range PartsInOrder(&one, noteOpen, order) {
		if p.Name.Kind != NoSegment && i > 0 && p.Name.Index != i && p.Name.Kind.Indexed() {
			continue
		}
		if p.Name.Kind == ToolList {
			out = append(out, p)
			continue
		}
		text := p.Text
		named := func(mk chat.Mark) Part {
			seg := p.Name
			seg.Practice = mk.Practice
			return Part{Name: seg, Text: mk.Text}
		}
		// Marks written at the end of the text (chat.Mark.End) are found there, the last one
		// last: never at an earlier occurrence of their text.
		var tail []Part
		for k := len(marks) - 1; k >= 0 && marks[k].End && marks[k].Text != ""; k-- {
			trimmed := strings.TrimRight(text, " \t\r\n")
			if !strings.HasSuffix(trimmed, marks[k].Text) {
				break
			}
			tail = append([]Part{named(marks[k])}, tail...)
			text, marks = trimmed[:len(trimmed)-len(marks[k].Text)], marks[:k]
		}
		for len(marks) > 0 {
			j := strings.Index(text, marks[0].Text)
			if j < 0 || marks[0].Text == "" {
				break
			}
			if before := text[:j]; strings.TrimSpace(before) != "" {
				out = append(out, Part{Name: p.Name, Text: before})
			}
			out = append(out, named(marks[0]))
			text = text[j+len(marks[0].Text):]
			marks = marks[1:]
		}
		if strings.TrimSpace(text) != "" {
			out = append(out, Part{Name: p.Name, Text: text})
		}
		out = append(out, tail...)
	}
	return out
}

// SplitNote splits a user message's content into its text and the session note that ends it,
// as a harness following spec 3.2.0 §10.3 appends one (a block after the person's words):
// "\n\n", the open tag, the note, the close tag, and nothing after it but white space. The close
// tag is the open tag's ("<session-note>" closes with "</session-note>"); the note holds exactly
// one of each. Anything else (no note, a note followed by more text, a pasted transcript that
// quotes notes) is all text, note "". noteOpen "" finds no note.
func SplitNote(content, noteOpen string) (text, note string) {
	if noteOpen == "" {
		return content, ""
	}
	j := strings.LastIndex(content, "\n\n"+noteOpen)
	if j < 0 {
		return content, ""
	}
	note = content[j:]
	if c, ok := strings.CutPrefix(noteOpen, "<"); ok {
		closeTag := "</" + c
		if !strings.HasSuffix(strings.TrimRight(note, " \t\r\n"), closeTag) ||
			strings.Count(note, noteOpen) != 1 || strings.Count(note, closeTag) != 1 {
			return content, ""
		}
	}
	return content[:j], note
}
