package harness

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"lab/arms"
	"lab/cachesim"
	"lab/chat"
	"lab/hygiene"
	"lab/scenario"
)

// This file applies an arm's practices (package arms) to the request being built: what real
// harnesses do to earlier context that spec 3.2.0's one rule forbids ("Nothing already sent to
// the model is ever rewritten"). Each rewrite is marked (chat.Message.Marks) with the practice's
// name, so the re-read attribution names it ("prune in tool result 5").

// implemented lists the practices (package arms) the harness applies; [Supported] refuses an arm
// with any other, so that no arm is run as if it applied a practice it does not.
var implemented = map[string]bool{"prune": true, "keep_last": true, "reasoning": true,
	"clock": true, "counter": true, "insert": true, "tool_order": true, "window": true,
	"tool_list_churn": true}

// Supported returns an error naming the arm and its first practice the harness does not apply
// yet, nil when it applies them all.
func Supported(a arms.Arm) error {
	for _, p := range a.Practices {
		if !implemented[p.Name()] {
			return fmt.Errorf("arm %q (%s): the harness does not apply the practice %s yet", a.Name, a.Source, p.Name())
		}
	}
	return nil
}

// EstimateTokens is a practice's token estimate of a text: its characters (Unicode code points)
// divided by 4, rounded (opencode's Token.estimate), so the practices act alike on every server
// and tokenizer.
func EstimateTokens(s string) int { return (utf8.RuneCountInString(s) + 2) / 4 }

// reasoningHistory returns the history as the request carries it, with the reasoning spec 3.2.0
// §8 says (the current turn's), or the arm's reasoning practice's policy instead.
func (r *runner) reasoningHistory() []chat.Message {
	m := r.cfg.Arm.Measures
	p := r.cfg.Arm.Find("reasoning")
	if p == nil {
		return hygiene.CurrentTurnReasoning(r.history, m)
	}
	switch p.Reasoning.Keep {
	case arms.ReasoningNever:
		m.ReasoningThisTurn = false
	case arms.ReasoningThisTurn:
		m.ReasoningThisTurn = true
	case arms.ReasoningAllTurns:
		return append([]chat.Message(nil), r.history...)
	case arms.ReasoningLastMessages:
		out := append([]chat.Message(nil), r.history...)
		for i := range out[:max(len(out)-p.Reasoning.Messages, 0)] {
			out[i].Reasoning, out[i].Thinking = "", nil
		}
		return out
	}
	return hygiene.CurrentTurnReasoning(r.history, m)
}

// practiceOnResults applies the arm's practices that rewrite earlier tool output (prune in
// place, keep the last N observations), returning a copy; the stored history stays whole.
// A result the practice removed leaves the hygiene session's dedupe table, so no later re-read
// or search is a stub naming it; and a stub already in the history whose result the practice
// removed is sent as the full answer it stands for (spec 3.2.0 §2: "A stub names only a result
// that is in the request being built"; §6 alike). The stub lies after the result it names, so
// the request already differs from the cache before it: sending it in full costs its tokens, and
// no earlier divergence.
func (r *runner) practiceOnResults(history []chat.Message) []chat.Message {
	out := r.practiceRemove(history)
	if len(r.withdrawn) == 0 {
		return out
	}
	for i, m := range out {
		if m.Role != chat.RoleTool || m.Content != history[i].Content {
			continue
		}
		id := r.resultOf[m.ToolCallID]
		if ref, ok := r.hs.StubOf(id); ok && r.withdrawn[ref] {
			out[i].Content, _ = r.hs.Unstubbed(id)
		}
	}
	return out
}

// practiceRemove replaces the tool results the arm's prune and keep_last practices remove with
// their texts, marked, and tells the hygiene session which results left the request.
func (r *runner) practiceRemove(history []chat.Message) []chat.Message {
	prune, keep := r.cfg.Arm.Find("prune"), r.cfg.Arm.Find("keep_last")
	if prune == nil && keep == nil {
		return history
	}
	var results []int
	for i, m := range history {
		if m.Role == chat.RoleTool {
			results = append(results, i)
		}
	}
	out := append([]chat.Message(nil), history...)
	replace := func(i int, practice, text string) {
		out[i].Content = text
		out[i].Marks = []chat.Mark{{Practice: practice, Text: text}}
	}
	if keep != nil {
		for _, i := range results[:max(len(results)-keep.KeepLast.Results, 0)] {
			replace(i, "keep_last", keep.KeepLast.Text)
		}
	}
	if prune != nil {
		r.prune(prune.Prune, history, results)
		for _, i := range results {
			if r.pruned[history[i].ToolCallID] {
				replace(i, "prune", prune.Prune.Text)
			}
		}
	}
	for _, i := range results {
		if out[i].Content == history[i].Content {
			continue
		}
		if id := r.resultOf[history[i].ToolCallID]; id != "" && !r.withdrawn[id] {
			r.withdrawn[id] = true
			r.hs.Withdraw(id)
		}
	}
	return out
}

// prune decides which results the prune practice clears now (arms.Prune): walking back from the
// newest result, the newest ProtectResults results and those that start inside the newest
// ProtectTokens are protected; the others not yet pruned are cleared when the output passes the
// threshold (batch: the output not yet pruned; every_request: all of it as the tools gave it) and
// they add up to MinimumTokens.
func (r *runner) prune(p *arms.Prune, history []chat.Message, results []int) {
	if r.pruned == nil {
		r.pruned = map[string]bool{}
	}
	protected := map[int]bool{}
	total, unpruned := 0, 0
	for k := len(results) - 1; k >= 0; k-- {
		i := results[k]
		n := EstimateTokens(history[i].Content)
		if len(results)-1-k < p.ProtectResults || total < p.ProtectTokens {
			protected[i] = true
		}
		total += n
		if !r.pruned[history[i].ToolCallID] {
			unpruned += n
		}
	}
	output := unpruned
	if p.Mode == arms.PruneEveryRequest {
		output = total
	}
	if output <= p.ThresholdTokens {
		return
	}
	var cands []int
	freed := 0
	for _, i := range results {
		if !protected[i] && !r.pruned[history[i].ToolCallID] {
			cands = append(cands, i)
			freed += EstimateTokens(history[i].Content)
		}
	}
	if len(cands) == 0 || freed < p.MinimumTokens {
		return
	}
	for _, i := range cands {
		r.pruned[history[i].ToolCallID] = true
	}
}

// practiceLines writes the clock and counter practices' lines into the request being built
// (arms.Clock, arms.Counter): into the system prompt (msgs[0]), the first or the latest user
// message (before its session note, §10.3, which stays last), or an early block of its own
// before the person's first message. Each line is marked with its practice's name.
func (r *runner) practiceLines(msgs []chat.Message) []chat.Message {
	for _, p := range r.cfg.Arm.Practices {
		var line string
		var place arms.Place
		switch {
		case p.Clock != nil:
			at := r.clock
			if p.Clock.Update == arms.UpdateTurn {
				at = r.turnClock
			}
			line, place = p.Clock.Line(at.In(r.cfg.Scenario.Start.Location())), p.Clock.Place
		case p.Counter != nil:
			line, place = r.counterLine(p.Counter), p.Counter.Place
		default:
			continue
		}
		msgs = placeLine(msgs, place, p.Name(), line, r.cfg.Loop.Note.Open)
	}
	return msgs
}

// counterLine is the counter's line now: tokens left (the budget less the last prompt the
// server counted) or the step (the session's request number, from 1).
func (r *runner) counterLine(c *arms.Counter) string {
	prompt, index := r.lastPrompt, r.index
	if c.Update == arms.UpdateTurn {
		prompt, index = r.turnPrompt, r.turnIndex
	}
	v := int64(index + 1)
	if c.Kind == arms.CounterTokensLeft {
		v = int64(c.Budget) - prompt
	}
	return strings.ReplaceAll(c.Text, "{{value}}", strconv.FormatInt(v, 10))
}

// placeLine writes line at place in msgs (msgs[0] the system prompt), marked as practice's.
func placeLine(msgs []chat.Message, place arms.Place, practice, line, noteOpen string) []chat.Message {
	mark := chat.Mark{Practice: practice, Text: line}
	addTo := func(i int, first bool) {
		m := msgs[i]
		m.Marks = slices.Clone(m.Marks)
		if first {
			m.Content = line + "\n\n" + m.Content
			m.Marks = append([]chat.Mark{mark}, m.Marks...)
		} else {
			text, note := cachesim.SplitNote(m.Content, noteOpen)
			m.Content = text + "\n\n" + line + note
			end := mark
			end.End = true
			m.Marks = append(m.Marks, end)
		}
		msgs[i] = m
	}
	users := func() (first, last int) {
		first, last = -1, -1
		for i, m := range msgs {
			if personal(m) {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		return first, last
	}
	switch place {
	case arms.PlaceSystemStart:
		addTo(0, true)
	case arms.PlaceSystemEnd:
		addTo(0, false)
	case arms.PlaceFirstUser, arms.PlaceLatestUser:
		first, last := users()
		i := first
		if place == arms.PlaceLatestUser {
			i = last
		}
		if i >= 0 {
			addTo(i, false)
		}
	case arms.PlaceEarlyBlock:
		early := chat.Message{Role: chat.RoleUser, Content: line, Marks: []chat.Mark{mark}}
		msgs = slices.Insert(msgs, 1, early)
	}
	return msgs
}

// written reports whether a practice wrote message m whole (an insert, an early clock block):
// a mark that is all its content.
func written(m chat.Message) bool {
	for _, mk := range m.Marks {
		if mk.Text != "" && mk.Text == m.Content {
			return true
		}
	}
	return false
}

// personal reports whether m is a message of the person's: a user message that is not an
// interjection, a piece the lab keeps unread, nor a message a practice wrote ([written]).
func personal(m chat.Message) bool {
	return m.Role == chat.RoleUser && m.Item == "" && !m.Interjection && !written(m)
}

// practiceInserts puts the insert practices' messages into the request (arms.Insert): after the
// latest user message, or at a fixed index of the messages after the system prompt.
func (r *runner) practiceInserts(msgs []chat.Message) []chat.Message {
	for _, p := range r.cfg.Arm.Practices {
		in := p.Insert
		if in == nil {
			continue
		}
		m := chat.Message{Role: chat.RoleUser, Content: in.Text}
		switch in.Role {
		case arms.InsertSystemReminder:
			m.Content = "<system-reminder>\n" + in.Text + "\n</system-reminder>"
		case arms.InsertSystem:
			m.Role = chat.RoleSystem
		}
		m.Marks = []chat.Mark{{Practice: "insert", Text: m.Content}}
		at := len(msgs)
		if i, ok := in.Index(); ok {
			at = min(1+i, len(msgs))
		} else {
			for i := len(msgs) - 1; i > 0; i-- {
				if personal(msgs[i]) {
					at = i + 1
					break
				}
			}
		}
		msgs = slices.Insert(msgs, at, m)
	}
	return msgs
}

// practiceTools returns the tool list in the tool_order practice's order (arms.ToolOrder): each
// tool sorted by a hash of the seed, the repetition, its name and, for order request, the
// request's index, so a session's order is the same on every run and stable when tools join.
func (r *runner) practiceTools(list []chat.Tool) []chat.Tool {
	list = r.churnTools(list)
	p := r.cfg.Arm.Find("tool_order")
	if p == nil || p.ToolOrder.Order == arms.OrderFixed {
		return list
	}
	key := func(name string) uint64 {
		h := fnv.New64a()
		request := -1
		if p.ToolOrder.Order == arms.OrderRequest {
			request = r.index
		}
		// The name last: FNV-1a spreads a change in an early byte over the whole hash, where
		// one in the last byte would move every name's hash alike and keep their order.
		fmt.Fprintf(h, "%d/%d/%d/%s", p.ToolOrder.Seed, r.cfg.Repetition, request, name)
		return h.Sum64()
	}
	out := slices.Clone(list)
	slices.SortStableFunc(out, func(a, b chat.Tool) int { return cmp.Compare(key(a.Name), key(b.Name)) })
	return out
}

// advanceClock moves the session's clock on before a request by the scenario's
// clock_per_request and the clock practice's per_request step (arms.Clock.PerRequest), as wall
// time passes between an agent's steps.
func (r *runner) advanceClock() {
	step := r.cfg.Scenario.PerRequest
	if p := r.cfg.Arm.Find("clock"); p != nil {
		step += time.Duration(p.Clock.PerRequest)
	}
	r.clock = r.clock.Add(step)
}

// moveClock runs a clock step: "+DURATION" moves the session's clock on from where the
// per-request steps brought it; a time sets it, unless the per-request steps already passed it
// (the clock never goes backwards). Without per-request steps both are the time the scenario
// file computes (scenario.Step.At).
func (r *runner) moveClock(st scenario.Step) {
	if d, ok := strings.CutPrefix(*st.Clock, "+"); ok {
		if v, err := time.ParseDuration(d); err == nil {
			r.clock = r.clock.Add(v)
			return
		}
	}
	if st.At.After(r.clock) {
		r.clock = st.At
	}
}

// practiceWindow drops whole oldest messages after the person's first message once the request
// passes the window practice's size (arms.Window), down to its target: an assistant message and
// the tool results that answer it go together, and the latest user message and what follows it
// always stay. What was dropped stays dropped (until a compaction starts the history afresh),
// and its results leave the hygiene session's dedupe table (§2: no stub names them).
func (r *runner) practiceWindow(system string, history []chat.Message) []chat.Message {
	p := r.cfg.Arm.Find("window")
	if p == nil {
		return history
	}
	first, last := -1, -1
	for i, m := range history {
		if m.Role == chat.RoleUser && !m.Interjection {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return history
	}
	size := func(m chat.Message) int {
		n := EstimateTokens(m.Content) + EstimateTokens(m.Reasoning)
		for _, tc := range m.ToolCalls {
			n += EstimateTokens(tc.Name) + EstimateTokens(string(tc.Arguments))
		}
		return n
	}
	total := EstimateTokens(system)
	for i, m := range history {
		if i <= first || i >= r.windowFrom {
			total += size(m)
		}
	}
	start := max(r.windowFrom, first+1)
	if total > p.Window.MaxTokens {
		for start < last && total > p.Window.TargetTokens {
			// One unit: a message and the tool results after it.
			end := start + 1
			for end < last && history[end].Role == chat.RoleTool {
				end++
			}
			for _, m := range history[start:end] {
				total -= size(m)
				if m.Role == chat.RoleTool {
					if id := r.resultOf[m.ToolCallID]; id != "" && !r.withdrawn[id] {
						r.withdrawn[id] = true
						r.hs.Withdraw(id)
					}
				}
			}
			start = end
		}
		r.windowFrom = start
	}
	if r.windowFrom <= first+1 {
		return history
	}
	out := append(slices.Clone(history[:first+1]), history[r.windowFrom:]...)
	// The first message kept after the cut is where the prompt now differs from the one before
	// the cut: the attribution names it with the practice (a mark without text).
	kept := &out[first+1]
	kept.Marks = append(slices.Clone(kept.Marks), chat.Mark{Practice: "window"})
	return out
}

// churnTools changes the tool list as the tool_list_churn practice says (arms.ToolListChurn):
// at every Every-th request of the session (request Every, 2×Every, …) add puts one more tool
// at the end of the list, remove takes Tool out until the next change (out after an odd number
// of changes, back after an even one), and describe ends Tool's description with the session's
// time at the latest change. Tool "" is the list's last tool. A call of a removed tool that
// the scenario scripts still runs: the model names a tool it saw earlier.
func (r *runner) churnTools(list []chat.Tool) []chat.Tool {
	p := r.cfg.Arm.Find("tool_list_churn")
	if p == nil || len(list) == 0 {
		return list
	}
	c := p.ToolListChurn
	changes := r.index / c.Every
	if r.index%c.Every == 0 && changes > 0 {
		r.churnedAt = r.clock
	}
	if changes == 0 {
		return list
	}
	name := c.Tool
	if name == "" {
		name = list[len(list)-1].Name
	}
	out := slices.Clone(list)
	switch c.Change {
	case arms.ChurnAdd:
		for k := 1; k <= changes; k++ {
			out = append(out, chat.Tool{Name: fmt.Sprintf("extra_tool_%d", k),
				Description: fmt.Sprintf("An extra tool that joined the list at request %d.", k*c.Every),
				Parameters:  []byte(`{"type":"object","properties":{}}`)})
		}
	case arms.ChurnRemove:
		if changes%2 == 1 {
			out = slices.DeleteFunc(out, func(t chat.Tool) bool { return t.Name == name })
		}
	case arms.ChurnDescribe:
		for i := range out {
			if out[i].Name == name {
				out[i].Description += " Updated " + r.churnedAt.Format(time.RFC3339) + "."
			}
		}
	}
	return out
}
