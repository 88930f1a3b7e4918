// Package scorecard judges, from outside, whether a coding agent keeps the rules of context
// hygiene (spec 3.2.0) that its requests show: the requests one session sent, as a lab proxy
// saved and decoded them, go in; one [Entry] per rule comes out, kept or broken, with the request
// where it first broke and the tokens that cost.
//
// What the requests alone cannot tell (which read shows a file unchanged, which call came with
// reasoning) comes from the script the agent was driven by ([Facts], which lab/scriptmodel works
// out from its scripts). Without facts, the rules that need them are not judged.
package scorecard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"lab/chat"
	"lab/hygiene"
)

// Verdict is an [Entry]'s outcome.
type Verdict string

// The verdicts.
const (
	// Kept: the session gave the rule occasion and kept it every time.
	Kept Verdict = "kept"
	// Broken: at least one request broke the rule ([Entry].Request is the first).
	Broken Verdict = "broken"
	// NotSeen: nothing in the session gave the rule occasion (no re-read reached the agent, no
	// compaction happened), or the facts it needs are missing; [Entry].Detail says which.
	NotSeen Verdict = "not seen"
)

// The rules, in the order of the scorecard's rows. Each names the spec 3.2.0 section it follows.
const (
	// RuleSystemStable: the system prompt is made once per session and sent unchanged (§10.1).
	RuleSystemStable = "system prompt unchanged"
	// RuleNoClock: nothing in the system prompt is a clock, no date or time (§10.2).
	RuleNoClock = "no clock in the system prompt"
	// RuleToolsStable: the tool list is the same for the whole session (§10.4).
	RuleToolsStable = "tool list unchanged"
	// RuleAppendOnly: nothing already sent is rewritten (the one rule, §10.5); a turn's
	// reasoning dropped after the turn is §8's, judged by [RuleReasoning].
	RuleAppendOnly = "nothing sent rewritten"
	// RuleStubs: an unchanged re-read is answered with a stub, not the file again (§2).
	RuleStubs = "unchanged re-read answered short"
	// RuleCap: a large output is capped on the way in (§3: over 400 lines or 40,000 characters).
	RuleCap = "large output capped"
	// RuleReasoning: reasoning goes back during its turn and not after it (§8).
	RuleReasoning = "reasoning back during the turn only"
	// RuleNoAbsolutePaths: the system prompt, tool descriptions and the harness's own text name
	// no absolute path of the machine (§11).
	RuleNoAbsolutePaths = "no absolute paths in the prompt"
	// RuleCompaction: compaction is asked for as the next turn of the same conversation (§7).
	RuleCompaction = "compaction as the next turn"
)

// Rules lists the rules in the scorecard's order, each with its spec 3.2.0 section.
var Rules = []struct{ Name, Section string }{
	{RuleSystemStable, "§10.1"},
	{RuleNoClock, "§10.2"},
	{RuleToolsStable, "§10.4"},
	{RuleAppendOnly, "§10.5"},
	{RuleStubs, "§2"},
	{RuleCap, "§3"},
	{RuleReasoning, "§8"},
	{RuleNoAbsolutePaths, "§11"},
	{RuleCompaction, "§7"},
}

// Request is one request of the session, in the order it was sent.
type Request struct {
	// Index is the row's request_index in its conversation (0-based).
	Index int32
	// Req is the request body decoded by the lab's decoder for its API (lab/capture).
	Req *chat.Request
	// Segment is the row's divergence_segment ("" when none or unknown).
	Segment string
	// Reread is the row's re-read tokens (the server re-read them because the prompt diverged
	// from its cache); nil when unknown.
	Reread *int64
}

// Reread is a read that shows a file unchanged since an earlier full read of it, as a script
// knows: the step whose answer spec 3.2.0 §2 makes a stub.
type Reread struct {
	// Path is the file, as the script names it.
	Path string
	// Call is the re-read's tool call id, Of the earlier read's: the ids the scripted model gave
	// the calls, which the agent sends back with their results.
	Call, Of string
}

// Facts are what the requests cannot show by themselves and the driving script knows.
type Facts struct {
	// Rereads are the script's unchanged re-reads.
	Rereads []Reread
	// Reasoned are the tool call ids of the replies that came with reasoning.
	Reasoned []string
	// Prompts are the turns' user prompts, in order.
	Prompts []string
	// Calls are the ids of every tool call the script makes, in order. A session whose calls
	// carry none of these ids (a harness that names its calls itself, such as the lab's own
	// running the script as a scenario) has its calls matched to them by position: its k-th
	// tool call is the script's k-th.
	Calls []string
}

// Input is one agent session to judge.
type Input struct {
	// Requests are the session's requests (its main conversation, side requests left out), in
	// the order sent.
	Requests []Request
	// Facts are the script's ([Facts]); the zero value judges without them.
	Facts Facts
	// Absolute are the machine's absolute paths the prompt should not name (§11): the agent's
	// project folder and home folder. Empty strings are ignored; an occurrence of a path under
	// another one given counts once.
	Absolute []string
	// Config is the spec's numbers (loop.json `context`): the §3 cap. Required.
	Config *hygiene.Config
	// CountTokens counts a text's tokens with the served model's tokenizer; nil leaves the
	// token costs that only a count can give unknown.
	CountTokens func(string) (int, error)
}

// Entry is one rule's line of the scorecard.
type Entry struct {
	// Rule is one of the Rule* names and Section its spec 3.2.0 section.
	Rule    string  `json:"rule"`
	Section string  `json:"section"`
	Verdict Verdict `json:"verdict"`
	// Request is the index ([Request].Index) of the first request that broke the rule; -1 when
	// none did. Segment is that request's divergence segment.
	Request int32  `json:"request"`
	Segment string `json:"segment,omitempty"`
	// Times is how many requests broke it.
	Times int `json:"times"`
	// Tokens is what breaking it cost, in tokens: for a rule whose break makes the server re-read
	// (a system prompt, tool list or message changed), the re-read tokens of the requests that
	// broke it; for a rule whose break sends more (a re-read in full, an output uncapped,
	// reasoning after its turn, an absolute path), the tokens sent beyond what the rule allows,
	// counted with the tokenizer. nil when unknown (a row without re-read tokens, no tokenizer),
	// and nil for a rule not broken.
	Tokens *int64 `json:"tokens"`
	// Detail says what was seen: what changed, or why the rule was not judged.
	Detail string `json:"detail,omitempty"`
}

// Score judges in's session against every rule of [Rules] and returns one entry per rule, in
// that order. It panics if in.Config is nil.
func Score(in Input) []Entry {
	if in.Config == nil {
		panic("scorecard: Input.Config is nil")
	}
	return []Entry{
		systemStable(in), noClock(in), toolsStable(in), appendOnly(in),
		stubs(in), capped(in), reasoning(in), noAbsolutePaths(in), compaction(in),
	}
}

func entry(rule string) Entry {
	for _, r := range Rules {
		if r.Name == rule {
			return Entry{Rule: rule, Section: r.Section, Request: -1}
		}
	}
	panic("scorecard: unknown rule " + rule)
}

// breaks collects a rule's breaks: the first request, how many, and their cost.
type breaks struct {
	e     Entry
	known bool
	sum   int64
	// counted are the requests already in Times.
	counted map[int32]bool
}

func newBreaks(rule string) *breaks {
	return &breaks{e: entry(rule), known: true, counted: map[int32]bool{}}
}

// add records that r broke the rule, costing cost tokens (nil: unknown), with detail for the
// first break. A request that breaks it more than once counts once in Times; its costs add up.
func (b *breaks) add(r Request, cost *int64, detail string) {
	if b.e.Times == 0 {
		b.e.Request, b.e.Segment, b.e.Detail = r.Index, r.Segment, detail
	}
	if !b.counted[r.Index] {
		b.counted[r.Index] = true
		b.e.Times++
	}
	if cost == nil {
		b.known = false
	} else {
		b.sum += *cost
	}
}

// done returns the entry: broken with its cost, else kept, or not seen with why when the rule had
// no occasion (noOccasion != "").
func (b *breaks) done(noOccasion, keptDetail string) Entry {
	switch {
	case b.e.Times > 0:
		b.e.Verdict = Broken
		if b.known {
			b.e.Tokens = &b.sum
		}
	case noOccasion != "":
		b.e.Verdict, b.e.Detail = NotSeen, noOccasion
	default:
		b.e.Verdict, b.e.Detail = Kept, keptDetail
	}
	return b.e
}

// systemText is the request's leading system and developer messages (those before
// [history]), joined by newlines.
func systemText(r *chat.Request) string {
	lead := r.Messages[:len(r.Messages)-len(history(r))]
	parts := make([]string, len(lead))
	for i, m := range lead {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// history is the request's messages after its leading system and developer messages.
func history(r *chat.Request) []chat.Message {
	i := 0
	for i < len(r.Messages) && (r.Messages[i].Role == chat.RoleSystem || r.Messages[i].Role == chat.RoleDeveloper) {
		i++
	}
	return r.Messages[i:]
}

func systemStable(in Input) Entry {
	b := newBreaks(RuleSystemStable)
	if len(in.Requests) < 2 {
		return b.done("fewer than two requests", "")
	}
	for i := 1; i < len(in.Requests); i++ {
		prev, cur := systemText(in.Requests[i-1].Req), systemText(in.Requests[i].Req)
		if prev != cur && !compacted(in.Requests[i-1].Req, in.Requests[i].Req) {
			// §10.1: built again where everything is read again anyway, after a compaction.
			b.add(in.Requests[i], in.Requests[i].Reread, "changed at: "+excerptAt(prev, cur))
		}
	}
	return b.done("", fmt.Sprintf("the same %d bytes on all %d requests", len(systemText(in.Requests[0].Req)), len(in.Requests)))
}

// clockRE matches a date or a time of day as harnesses write them: 2026-12-01, 2026/12/01,
// 12/01/2026, 01.12.2026, "Tue Dec 01 2026", "December 1, 2026", "Dec 1, 2026",
// "1 December 2026", 23:59 (see [clocks] for the times it leaves out).
var clockRE = regexp.MustCompile(`\b\d{4}[-/]\d{2}[-/]\d{2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{4}\b|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? +(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* +\d{1,2},? +\d{4}\b|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* +\d{1,2}, +\d{4}\b|\b\d{1,2} +(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* +\d{4}\b|\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?\b`)

// clocks returns the dates and times of day in s ([clockRE]), leaving out a "time" that is part
// of something else: after a ':' or a digit (a file position, main.go:12:34) or before one
// more ':' and digit.
func clocks(s string) []string {
	var out []string
	for _, m := range clockRE.FindAllStringIndex(s, -1) {
		text := s[m[0]:m[1]]
		if strings.Contains(text, ":") && !strings.ContainsAny(text, "-/. ") {
			if m[0] > 0 && (s[m[0]-1] == ':' || s[m[0]-1] == '.' || (s[m[0]-1] >= '0' && s[m[0]-1] <= '9')) {
				continue
			}
			if m[1]+1 < len(s) && s[m[1]] == ':' && s[m[1]+1] >= '0' && s[m[1]+1] <= '9' {
				continue
			}
		}
		out = append(out, text)
	}
	return out
}

func noClock(in Input) Entry {
	b := newBreaks(RuleNoClock)
	if len(in.Requests) == 0 {
		return b.done("no requests", "")
	}
	var last string
	for i, r := range in.Requests {
		sys := systemText(r.Req)
		clocks := clocks(sys)
		now := strings.Join(clocks, " ")
		if len(clocks) > 0 {
			// The cost of a clock is the re-read where its value changed; a clock that kept
			// its value cost nothing yet, measured (0), on this request.
			var cost *int64
			if i > 0 && now != last {
				cost = r.Reread
			} else {
				cost = new(int64)
			}
			b.add(r, cost, "the system prompt holds "+strings.Join(clocks, ", "))
		}
		last = now
	}
	return b.done("", "no date or time in the system prompt")
}

// toolsKey is the tool list as sent: names, descriptions and schemas in order.
func toolsKey(ts []chat.Tool) string {
	var b bytes.Buffer
	for _, t := range ts {
		b.WriteString(t.Name)
		b.WriteByte(0)
		b.WriteString(t.Description)
		b.WriteByte(0)
		b.Write(t.Parameters)
		b.WriteByte(1)
	}
	return b.String()
}

func toolNames(ts []chat.Tool) string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func toolsStable(in Input) Entry {
	b := newBreaks(RuleToolsStable)
	if len(in.Requests) < 2 {
		return b.done("fewer than two requests", "")
	}
	for i := 1; i < len(in.Requests); i++ {
		p, c := in.Requests[i-1].Req.Tools, in.Requests[i].Req.Tools
		if toolsKey(p) == toolsKey(c) {
			continue
		}
		d := "the tools' descriptions or schemas changed"
		if pn, cn := toolNames(p), toolNames(c); pn != cn {
			d = fmt.Sprintf("tools %d → %d: [%s] → [%s]", len(p), len(c), short(pn, 80), short(cn, 80))
		}
		b.add(in.Requests[i], in.Requests[i].Reread, d)
	}
	return b.done("", fmt.Sprintf("the same %d tools on all %d requests", len(in.Requests[0].Req.Tools), len(in.Requests)))
}

// messageKey is what a message sends, reasoning left out (§8 governs it).
func messageKey(m chat.Message) string {
	var b strings.Builder
	b.WriteString(string(m.Role))
	b.WriteByte(0)
	b.WriteString(m.Content)
	b.WriteByte(0)
	b.WriteString(m.ToolCallID)
	b.WriteByte(0)
	b.WriteString(m.Item)
	for _, tc := range m.ToolCalls {
		b.WriteByte(1)
		b.WriteString(tc.ID)
		b.WriteByte(0)
		b.WriteString(tc.Name)
		b.WriteByte(0)
		b.WriteString(compactJSON(tc.Arguments))
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func appendOnly(in Input) Entry {
	b := newBreaks(RuleAppendOnly)
	if len(in.Requests) < 2 {
		return b.done("fewer than two requests", "")
	}
	for i := 1; i < len(in.Requests); i++ {
		if compacted(in.Requests[i-1].Req, in.Requests[i].Req) {
			continue // the one deliberate break (§7)
		}
		prev, cur := history(in.Requests[i-1].Req), history(in.Requests[i].Req)
		switch k := firstChange(prev, cur); {
		case k < 0:
		case k >= len(cur):
			b.add(in.Requests[i], in.Requests[i].Reread, fmt.Sprintf("history cut from %d to %d messages", len(prev), len(cur)))
		default:
			pm := prev[k]
			b.add(in.Requests[i], in.Requests[i].Reread, fmt.Sprintf("message %d (%s) rewritten: %s", k+1, pm.Role, excerptAt(pm.Content+toolText(pm), cur[k].Content+toolText(cur[k]))))
		}
	}
	return b.done("", "every request extends the one before it")
}

func toolText(m chat.Message) string {
	var b strings.Builder
	for _, tc := range m.ToolCalls {
		b.WriteString(" " + tc.Name + compactJSON(tc.Arguments))
	}
	return b.String()
}

// callIDs returns how the facts' call ids read in the session: each id itself when the
// session's tool calls carry any of them, else the session's call at the same position
// ([Facts].Calls); an id with no counterpart maps to itself.
func (in Input) callIDs() func(string) string {
	var session []string
	seen := map[string]bool{}
	for _, r := range in.Requests {
		for _, m := range r.Req.Messages {
			for _, tc := range m.ToolCalls {
				if tc.ID != "" && !seen[tc.ID] {
					seen[tc.ID] = true
					session = append(session, tc.ID)
				}
			}
		}
	}
	for _, id := range in.Facts.Calls {
		if seen[id] {
			return func(id string) string { return id }
		}
	}
	byPos := map[string]string{}
	for k, id := range in.Facts.Calls {
		if k < len(session) {
			byPos[id] = session[k]
		}
	}
	return func(id string) string {
		if v, ok := byPos[id]; ok {
			return v
		}
		return id
	}
}

// The kinds of tool a call used, as [kindOf] tells them.
const (
	toolOther = iota
	// toolRead: a file read or recall (§3 leaves its result uncapped, §2 stubs it).
	toolRead
	// toolShell: a command (§6: never deduplicated).
	toolShell
)

// kindOf tells what kind of tool the call with id used, from the call's tool name and that
// tool's schema in the request that carries it: a shell when the tool takes a command (a
// `command` or `cmd` argument: bash, Bash, exec_command, run_shell_command), a read when its
// name says read, view or recall (Read, read_file, read, view) and it takes no command, else
// another tool. An id no request carries is another tool.
func kindOf(in Input, id string) int {
	if id == "" {
		return toolOther
	}
	for _, r := range in.Requests {
		for _, m := range r.Req.Messages {
			for _, tc := range m.ToolCalls {
				if tc.ID != id {
					continue
				}
				for _, t := range r.Req.Tools {
					if t.Name != tc.Name {
						continue
					}
					var schema struct {
						Properties map[string]json.RawMessage `json:"properties"`
					}
					_ = json.Unmarshal(t.Parameters, &schema)
					if _, ok := schema.Properties["command"]; ok {
						return toolShell
					}
					if _, ok := schema.Properties["cmd"]; ok {
						return toolShell
					}
				}
				n := strings.ToLower(tc.Name)
				switch {
				case n == "bash" || n == "shell" || strings.Contains(n, "exec") || strings.Contains(n, "shell"):
					return toolShell
				case strings.Contains(n, "read") || n == "view" || n == "recall":
					return toolRead
				}
				return toolOther
			}
		}
	}
	return toolOther
}

// result finds the tool result answering call id in the session: its text and the first
// request that carries it.
func result(in Input, id string) (string, Request, bool) {
	for _, r := range in.Requests {
		for _, m := range r.Req.Messages {
			if m.Role == chat.RoleTool && m.ToolCallID == id {
				return m.Content, r, true
			}
		}
	}
	return "", Request{}, false
}

func (in Input) count(text string) *int64 {
	if in.CountTokens == nil {
		return nil
	}
	n, err := in.CountTokens(text)
	if err != nil {
		return nil
	}
	return new(int64(n))
}

func stubs(in Input) Entry {
	b := newBreaks(RuleStubs)
	if len(in.Facts.Rereads) == 0 {
		return b.done("the script has no unchanged re-read (no facts)", "")
	}
	judged, shell := 0, 0
	var kept []string
	id := in.callIDs()
	for _, rr := range in.Facts.Rereads {
		again, r, ok := result(in, id(rr.Call))
		first, _, ok0 := result(in, id(rr.Of))
		if !ok || !ok0 {
			continue
		}
		if kindOf(in, id(rr.Call)) == toolShell {
			// The agent read with its shell: a command, which §6 never deduplicates ("a
			// command's output twice is two results"); §2 had no occasion.
			shell++
			continue
		}
		judged++
		// A stub names the earlier result in a line; the file again holds the first read's
		// lines (whatever bracket or numbering comes around them).
		if !repeats(first, again) {
			kept = append(kept, fmt.Sprintf("%s: %d bytes for the first read's %d", rr.Path, len(again), len(first)))
			continue
		}
		b.add(r, in.count(again), fmt.Sprintf("%s read again unchanged: %d bytes, the first read %d", rr.Path, len(again), len(first)))
	}
	if judged == 0 && shell > 0 {
		return b.done("the agent read the file with its shell (a command's output twice is two results, §6): no read tool to judge", "")
	}
	if judged == 0 {
		return b.done("no re-read of the script reached the agent's requests with its first read", "")
	}
	return b.done("", strings.Join(kept, "; "))
}

// repeats reports whether again shows what first showed: at least half of first's non-blank
// lines (trimmed) are lines of again too.
func repeats(first, again string) bool {
	have := map[string]bool{}
	for _, l := range strings.Split(again, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	n, found := 0, 0
	for _, l := range strings.Split(first, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n++
		if have[l] {
			found++
		}
	}
	return n > 0 && 2*found >= n
}

func capped(in Input) Entry {
	b := newBreaks(RuleCap)
	c := in.Config.Cap
	seen := map[string]bool{}
	largest, largestLines := 0, 0
	for _, r := range in.Requests {
		for _, m := range r.Req.Messages {
			if m.Role != chat.RoleTool || kindOf(in, m.ToolCallID) == toolRead {
				// §3: reads (and recall) are not capped this way; each has its own window.
				continue
			}
			key := m.ToolCallID + "\x00" + m.Content
			if seen[key] {
				continue
			}
			seen[key] = true
			lines := len(hygiene.Lines(m.Content))
			if len(m.Content) > largest {
				largest, largestLines = len(m.Content), lines
			}
			if lines <= c.MaxLines && len([]rune(m.Content)) <= c.MaxChars {
				continue
			}
			var cost *int64
			if all, kept := in.count(m.Content), in.count(in.Config.CapText(m.Content, "#0000")); all != nil && kept != nil {
				cost = new(*all - *kept)
			}
			b.add(r, cost, fmt.Sprintf("a result of %d lines, %d bytes sent whole (the cap: %d lines, %d characters)", lines, len(m.Content), c.MaxLines, c.MaxChars))
		}
	}
	if len(seen) == 0 {
		return b.done("no tool results", "")
	}
	return b.done("", fmt.Sprintf("the largest result: %d lines, %d bytes", largestLines, largest))
}

// turnStart returns the index of the message that started the request's current turn: the last
// user message that is not an interjection; -1 when there is none.
func turnStart(msgs []chat.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == chat.RoleUser && !msgs[i].Interjection && msgs[i].Item == "" {
			return i
		}
	}
	return -1
}

func hasReasoning(m chat.Message) bool { return m.Reasoning != "" || len(m.Thinking) > 0 }

func reasoning(in Input) Entry {
	b := newBreaks(RuleReasoning)
	reasoned := map[string]bool{}
	id := in.callIDs()
	for _, c := range in.Facts.Reasoned {
		reasoned[id(c)] = true
	}
	during, after := 0, 0
	for _, r := range in.Requests {
		msgs := r.Req.Messages
		start := turnStart(msgs)
		for k, m := range msgs {
			if m.Role != chat.RoleAssistant {
				continue
			}
			if k < start && hasReasoning(m) {
				after++
				text := m.Reasoning
				for _, t := range m.Thinking {
					text += t.Text
				}
				b.add(r, in.count(text), fmt.Sprintf("an assistant message of an earlier turn (message %d) sent with its reasoning", k+1))
				continue
			}
			if k > start && len(m.ToolCalls) > 0 && reasoned[m.ToolCalls[0].ID] {
				during++
				if !hasReasoning(m) {
					// Reasoning left out during its turn costs no cache, the model's re-thinking.
					b.add(r, nil, fmt.Sprintf("the reply of call %s (message %d) sent back without its reasoning during its turn", m.ToolCalls[0].ID, k+1))
					break
				}
			}
		}
	}
	noOccasion := ""
	if during == 0 && after == 0 && len(in.Facts.Reasoned) == 0 {
		noOccasion = "no reply known to come with reasoning (no facts), and no reasoning sent after its turn"
	} else if during == 0 && after == 0 {
		noOccasion = "no reply that came with reasoning was sent back"
	}
	return b.done(noOccasion, fmt.Sprintf("reasoning sent back on %d assistant messages of their own turn, none after it", during))
}

func noAbsolutePaths(in Input) Entry {
	b := newBreaks(RuleNoAbsolutePaths)
	var paths []string
	for _, p := range in.Absolute {
		if p = strings.TrimRight(p, "/"); len(p) > 1 {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return b.done("no machine paths given to look for", "")
	}
	if len(in.Requests) == 0 {
		return b.done("no requests", "")
	}
	// Longest first, each match taken out before the next: the project folder under the home
	// folder is one path named, not the home folder too.
	sort.SliceStable(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, r := range in.Requests {
		// The harness's own text: the system prompt, the tool list, and user messages (notes,
		// task messages, the environment block). Tool calls and results are the model's and the
		// tools' answers, which §11 leaves as they are.
		var texts []string
		texts = append(texts, systemText(r.Req))
		for _, t := range r.Req.Tools {
			texts = append(texts, t.Description, string(t.Parameters))
		}
		for _, m := range history(r.Req) {
			// A system or developer message after the history's start is the harness's too
			// (Claude Code's environment block).
			if m.Role == chat.RoleUser || m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper {
				texts = append(texts, m.Content)
			}
		}
		all := strings.Join(texts, "\n")
		n := 0
		var first string
		cost := new(int64(0))
		for _, p := range paths {
			if c := strings.Count(all, p); c > 0 {
				n += c
				if first == "" {
					first = p
				}
				if t := in.count(p); t != nil && cost != nil {
					*cost += *t * int64(c)
				} else {
					cost = nil
				}
				all = strings.ReplaceAll(all, p, "\x00")
			}
		}
		if n == 0 {
			continue
		}
		b.add(r, cost, fmt.Sprintf("%d absolute paths such as %s in the system prompt, tools or user messages", n, first))
	}
	return b.done("", "")
}

// firstChange returns the index of the first message of prev that cur does not send as it was
// (messageKey: reasoning left out), len(cur) when cur stops before it, and -1 when cur sends
// every message of prev unchanged.
func firstChange(prev, cur []chat.Message) int {
	for k := range prev {
		if k >= len(cur) || messageKey(prev[k]) != messageKey(cur[k]) {
			return k
		}
	}
	return -1
}

// extends reports whether cur's history begins with prev's whole history, message for message.
func extends(prev, cur *chat.Request) bool {
	return firstChange(history(prev), history(cur)) < 0
}

// compacted reports whether cur replaced prev's history with a summary: its history is shorter
// and starts with a message prev did not hold (or one marked [chat.Message].Summary). A shorter
// history made only of prev's messages is a window or a prune, not a compaction.
func compacted(prev, cur *chat.Request) bool {
	ph, ch := history(prev), history(cur)
	if len(ch) == 0 || len(ch) >= len(ph) {
		return false
	}
	if ch[0].Summary {
		return true
	}
	for _, m := range ph {
		if messageKey(m) == messageKey(ch[0]) {
			return false
		}
	}
	return true
}

// compaction judges §7 by what the session shows. A compaction is a request whose history a
// summary replaced ([compacted]); it kept the rule when the request before it asked for the
// summary as the next turn of the same conversation: the same system prompt and tools, every
// message as the request before, and one more user message. A summary made anywhere else (a
// side request with a pasted transcript, which the session's own requests do not show) broke
// it. No compaction in the session is not seen.
func compaction(in Input) Entry {
	b := newBreaks(RuleCompaction)
	seen := 0
	for i := 1; i < len(in.Requests); i++ {
		if !compacted(in.Requests[i-1].Req, in.Requests[i].Req) {
			continue
		}
		seen++
		asked := false
		if i >= 2 {
			before, ask := in.Requests[i-2].Req, in.Requests[i-1].Req
			h := history(ask)
			asked = extends(before, ask) && len(h) > len(history(before)) && h[len(h)-1].Role == chat.RoleUser &&
				systemText(before) == systemText(ask) && toolsKey(before.Tools) == toolsKey(ask.Tools)
		}
		if !asked {
			b.add(in.Requests[i], in.Requests[i].Reread, "the history was replaced by a summary the conversation did not ask for as its next turn (a separate request made it)")
		}
	}
	if seen == 0 {
		return b.done("no compaction in the session", "")
	}
	return b.done("", fmt.Sprintf("compactions asked for as the next turn: %d", seen))
}

// excerptAt returns a short view of where b first differs from a: "…shared|a → b…".
func excerptAt(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-20)
	cut := func(s string) string {
		end := min(len(s), i+30)
		return strings.ToValidUTF8(s[min(from, len(s)):end], "")
	}
	return fmt.Sprintf("%q → %q", cut(a), cut(b))
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
