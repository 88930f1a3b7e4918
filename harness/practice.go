package harness

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"path"
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
	"lab/tools"
)

// This file applies an arm's practices (package arms) to the request being built: what real
// harnesses do to earlier context that spec 3.2.0's one rule forbids ("Nothing already sent to
// the model is ever rewritten"). Each rewrite is marked (chat.Message.Marks) with the practice's
// name, so the re-read attribution names it ("prune in tool result 5").

// implemented lists the practices (package arms) the harness applies; [Supported] refuses an arm
// with any other, so that no arm is run as if it applied a practice it does not.
var implemented = map[string]bool{"prune": true, "keep_last": true, "reasoning": true,
	"clock": true, "counter": true, "insert": true, "tool_order": true, "window": true,
	"tool_list_churn": true, "cwd": true, "instructions": true}

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
// before the person's first message; the cwd practice's line in the system prompt (at its end,
// where the environment lines are) and the instructions practice's block at its place in the
// system prompt ([runner.instructionsBlock]; none while it has nothing to embed). Each line is
// marked with its practice's name.
func (r *runner) practiceLines(msgs []chat.Message) []chat.Message {
	for _, p := range r.cfg.Arm.Practices {
		var line string
		var place arms.Place
		switch {
		case p.Cwd != nil && p.Cwd.In == arms.CwdSystemPrompt:
			line, place = r.cwdLine(p.Cwd), arms.PlaceSystemEnd
		case p.Instructions != nil:
			line, place = r.instructionsBlock(p.Instructions), p.Instructions.Place
			if line == "" {
				continue
			}
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
	list = r.cwdTools(r.churnTools(list))
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
// time passes between an agent's steps; a step into another day is the next request's
// "midnight" event ([runner.noteDay]).
func (r *runner) advanceClock() {
	step := r.cfg.Scenario.PerRequest
	if p := r.cfg.Arm.Find("clock"); p != nil {
		step += time.Duration(p.Clock.PerRequest)
	}
	r.clock = r.clock.Add(step)
	r.noteDay()
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
// time at the latest change. Tool "" is the list's last tool in the harness's order, before any
// tool_order shuffle. A call of a removed tool that the scenario scripts still runs: the model
// names a tool it saw earlier.
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

// SessionRoot is the folder the cwd practice's sessions run in: session n (0-based, its place
// in the run's order, [MatrixSession].Number) in SessionRoot/lab-session-<n+1>.
const SessionRoot = "/tmp"

// SessionDir returns the absolute path the cwd practice names as session n's working directory
// (arms.Cwd): [SessionRoot]/lab-session-<n+1>/<project>, as harnesses started in a fresh
// temporary folder or a worktree per task name theirs. It is the same for a session from run
// to run of the same matrix and differs from one session of a run to the next. Only the
// practice's line names it: the tools' answers name the sandbox as for every other arm, so arms
// differ by the practice alone.
func SessionDir(n int, project string) string {
	return path.Join(SessionRoot, fmt.Sprintf("lab-session-%d", n+1), project)
}

// cwdLine is the cwd practice's line: its text with the session's folder ([SessionDir]). Spec
// 3.2.0 §11 names no absolute path in the prompt; the practice names one on purpose.
func (r *runner) cwdLine(c *arms.Cwd) string {
	return strings.ReplaceAll(c.Text, "{{value}}", SessionDir(r.cfg.Session, r.cfg.Scenario.Project))
}

// cwdTools ends, for the cwd practice with in tool_descriptions, the description of every tool
// that resolves paths against the working directory (those whose arguments name a path, and
// bash) with a blank line and the practice's line, marked.
func (r *runner) cwdTools(list []chat.Tool) []chat.Tool {
	p := r.cfg.Arm.Find("cwd")
	if p == nil || p.Cwd.In != arms.CwdToolDescriptions {
		return list
	}
	line := r.cwdLine(p.Cwd)
	out := slices.Clone(list)
	for i, t := range out {
		if !namesPaths(t.Name) {
			continue
		}
		out[i].Description = t.Description + "\n\n" + line
		out[i].Marks = append(slices.Clone(t.Marks), chat.Mark{Practice: "cwd", Text: line})
	}
	return out
}

// namesPaths reports whether the built-in tool name takes a path argument (tools.PathArg) or
// runs commands in a folder (bash).
func namesPaths(name string) bool {
	t := tools.Lookup(name)
	if t == nil {
		return false
	}
	if name == "bash" {
		return true
	}
	return slices.ContainsFunc(t.Args, func(a tools.Arg) bool { return a.Kind == tools.PathArg })
}

// instructionsBlock is the instructions practice's block now (arms.Instructions): its text with
// the instruction file's path and its text as the workspace holds it when the request is built
// (source file: so an instructions or outside step that changed it changes the next request),
// or what the last git step said (source git_status); "" when there is nothing to embed (no such
// file, no git step yet). A file that cannot be read embeds nothing, with a warning (once).
func (r *runner) instructionsBlock(in *arms.Instructions) string {
	value := r.gitStatus
	if in.Source == arms.InstructionsFile {
		text, ok, err := r.ws.Peek(in.File)
		if err != nil && r.cfg.Warn != nil && !r.warnedInstructions {
			r.warnedInstructions = true
			r.cfg.Warn(fmt.Errorf("%s/%s: the instructions practice embeds nothing: %w", r.cfg.Scenario.Name, r.cfg.Arm.Name, err))
		}
		if !ok {
			return ""
		}
		value = text
	}
	value = strings.TrimRight(value, "\n")
	if value == "" {
		return ""
	}
	return strings.NewReplacer("{{file}}", in.File, "{{value}}", value).Replace(in.Text)
}

// editInstructions runs an instructions step: the person writes text to the instruction file
// (the arm's instructions practice's file, else [scenario.DefaultInstructionsFile]). With the
// practice of source file, its block, rebuilt for every request, carries the edit into the
// system prompt; without it, the edit is a change of spec 3.2.0 §10.3: a note on the next user
// message, or, with notes off, the system prompt rebuilt with it.
func (r *runner) editInstructions(text string) error {
	file := scenario.DefaultInstructionsFile
	p := r.cfg.Arm.Find("instructions")
	embedded := p != nil && p.Instructions.Source == arms.InstructionsFile
	if embedded {
		file = p.Instructions.File
	}
	if err := r.ws.Outside(file, text, false); err != nil {
		return fmt.Errorf("instructions step: %w", err)
	}
	if embedded {
		return nil
	}
	r.instructions = strings.TrimRight(text, "\n")
	r.changed("instructions", text)
	return nil
}

// replyMark is where a model reply of the current turn went into the session: the history's
// length and the hygiene session's dedupe table before it.
type replyMark struct {
	at int
	hs hygiene.Checkpoint
}

// beginReply records, before a model reply joins the history, where it goes (for [runner.rewind]).
func (r *runner) beginReply() {
	r.replies = append(r.replies, replyMark{at: len(r.history), hs: r.hs.Checkpoint()})
}

// rewind runs a rewind step: it takes back the last n requests of the current turn (at most as
// many as it has sent since its user message or the last compaction), as an undo: the model's
// replies to them and their tool results leave the history, and the reads and searches among
// those results leave the dedupe table and the §7 files-read table (§2: no stub names them;
// [hygiene.Session.RewindTo]). The next request then sends what the first request taken back
// sent, a prefix of what the server's cache holds. What the calls did to the workspace stays
// done, and their results stay stored (§1: ids are never reused).
func (r *runner) rewind(n int) {
	n = min(n, len(r.replies))
	if n <= 0 {
		return
	}
	m := r.replies[len(r.replies)-n]
	r.replies = r.replies[:len(r.replies)-n]
	r.history = r.history[:m.at]
	r.forgetSent()
	r.windowFrom = min(r.windowFrom, len(r.history))
	r.hs.RewindTo(m.hs)
}
