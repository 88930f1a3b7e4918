package transcript

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// ReadClaudeCode reads a Claude Code session file: the JSON lines Claude Code writes under
// ~/.claude/projects/<the project's path, dashed>/<session id>.jsonl, as its 2.1 releases write
// them (checked against @anthropic-ai/claude-code 2.1.332's own files and its sdk-tools.d.ts,
// the tools' input schemas). file names the file in errors and locates the recording user's
// home (the folder holding .claude/).
//
// What it keeps, per line type:
//   - "user" lines: the person's text (message.content, a string or its text blocks) as a User
//     event; tool_result blocks as the results of their calls (the text the model read,
//     is_error as IsError; an image block becomes "[image]"); a line with isCompactSummary as
//     the summary of a Compact event. Not kept: isMeta lines (notes the agent adds), slash
//     commands and their output (<command-name>, <local-command-stdout>, …), the ! shell
//     mode's lines (<bash-input>, <bash-stdout>), "[Request interrupted by user…]"; text blocks
//     beside tool results (reminders the agent adds to a result's message) are dropped.
//   - "assistant" lines: one line per content block, the lines of one reply sharing message.id,
//     joined into one Step: text blocks as Text, thinking blocks as Reasoning (a thinking block
//     without its text, or a redacted_thinking block, sets ReasoningHidden), tool_use blocks as
//     Calls, server tools (server_tool_use) as unmapped Calls with their *_tool_result block as
//     result; message.usage as Usage (the reply's last line's). Lines the agent wrote in the
//     model's place (isApiErrorMessage, model "<synthetic>") are skipped.
//   - "system" lines with subtype compact_boundary: a Compact event (its summary is the next
//     isCompactSummary line's); other system lines are the agent's notes, skipped.
//   - Lines of subagents (isSidechain) are skipped: a subagent's conversation is its own.
//   - Lines on a branch the session left (a rewind, an edited earlier prompt): the conversation
//     is the path from the last line back through parentUuid (logicalParentUuid across a
//     compaction); user and assistant lines off that path are skipped, but for the other
//     blocks of a reply on it and the results of its calls.
//   - A line seen before (the same uuid: a resumed session's copy of its history) is skipped.
//   - Bookkeeping records (summary, file-history-snapshot, queue-operation, attachment,
//     last-prompt, api-request…, cost-state, mode, tools-used, …) are skipped with what they
//     are; a record type it does not know is skipped as such, never an error.
//
// Tools map to the lab's (Tool, ToolArgs): Read{file_path, offset, limit} to read; Edit to edit
// (not with replace_all); MultiEdit to multiedit (not with replace_all); Write to write;
// Glob{pattern, path} to glob; Grep{pattern, path} to grep when it filters no files (no glob,
// type or multiline; -i becomes (?i)); LS{path} to list (without ignore); Bash{command} to bash
// with the line's cwd (not run_in_background). A path outside the project, and every other tool
// (Task/Agent, TodoWrite, WebFetch, WebSearch, NotebookEdit, mcp__…), keep Tool "".
//
// Lost: the system prompt and tool list (they are the lab's own when replayed), attachments
// (environment, reminders, file contents the agent attached), images, the toolUseResult
// details beyond the text the model read, permission decisions, costs.
//
// Errors (each a [SyntaxError] naming the file and line): a line that is not JSON (but the
// last line cut short, skipped), a line that is not UTF-8, a Codex rollout record or a lab
// capture's requests line, a file with no Claude Code line at all, a line over [MaxLine].
func ReadClaudeCode(r io.Reader, file string) (*Session, error) {
	raw, secrets, err := readLines(r, file)
	if err != nil {
		return nil, err
	}
	s := &Session{Format: FormatClaudeCode, File: file}
	c := newCleaner(file, secrets, raw)
	lines := make([]ccLine, len(raw))
	ok := make([]bool, len(raw))
	for i, l := range raw {
		if err := json.Unmarshal(l.text, &lines[i]); err != nil {
			if err := badLine(s, l, err); err != nil {
				return nil, err
			}
			continue
		}
		if lines[i].Payload != nil && Sniff(l.text) == FormatCodex {
			return nil, otherFormat(file, l.n, FormatCodex, FormatClaudeCode)
		}
		if lines[i].Type == "" && captureLike(l.text) {
			return nil, otherFormat(file, l.n, "capture", FormatClaudeCode)
		}
		ok[i] = true
		if lines[i].Cwd != "" && !lines[i].IsSidechain {
			c.setRoot(lines[i].Cwd)
		}
	}
	if len(raw) > 0 && !slices.ContainsFunc(lines, func(l ccLine) bool {
		_, bookkeeping := ccBookkeeping[l.Type]
		return l.UUID != "" || l.Message != nil || bookkeeping
	}) {
		return nil, &SyntaxError{File: file, Line: raw[0].n, Msg: `no Claude Code session line in the file (a JSON object with "type" and "uuid" or "message" a line)`}
	}
	s.Project, s.StartDir = c.project()
	onPath := ccPath(lines, ok)
	rd := ccReader{s: s, c: c, calls: map[string]*Call{}}
	seen := map[string]bool{}
	for i, l := range lines {
		if !ok[i] {
			continue
		}
		n := raw[i].n
		switch {
		case l.IsSidechain:
			s.skip(n, l.Type, "a subagent's line (isSidechain): its conversation is its own")
			continue
		case l.UUID != "" && seen[l.UUID]:
			s.skip(n, l.Type, "a line seen before (the same uuid): a resumed session's copy of its history")
			continue
		}
		if l.UUID != "" {
			seen[l.UUID] = true
		}
		if s.Agent == "" && l.Version != "" {
			s.Agent = "claude-code " + l.Version
		}
		if onPath != nil && (l.Type == "user" || l.Type == "assistant") && !onPath[l.UUID] && !rd.belongs(l) {
			s.skip(n, l.Type, "on a branch the session left (a rewind or an edited earlier prompt): not on the path to its last line")
			continue
		}
		switch l.Type {
		case "user":
			rd.user(n, l)
		case "assistant":
			rd.assistant(n, l)
		case "system":
			if l.Subtype == "compact_boundary" {
				s.Events = append(s.Events, Event{Line: n, Time: parseTime(l.Timestamp), Compact: &Compact{}})
				rd.step = nil
				continue
			}
			s.skip(n, "system", "the agent's own note (system/"+l.Subtype+"), not sent as the conversation")
		default:
			why, known := ccBookkeeping[l.Type]
			if !known {
				why = "a record type this reader does not know"
			}
			s.skip(n, l.Type, why)
		}
	}
	s.redactSkipped(c.text)
	s.finish()
	return s, nil
}

// ccBookkeeping are Claude Code's records that are not the conversation, and what each is.
var ccBookkeeping = map[string]string{
	"summary":               "a title the agent wrote for its session list",
	"file-history-snapshot": "the agent's backup of the files it edited (for undo)",
	"queue-operation":       "a prompt queued and taken (the prompt is the next user line)",
	"attachment":            "context the agent attached (environment, reminders, files): the lab's harness sends its own",
	"last-prompt":           "the agent's note of the last prompt",
	"api-request":           "the agent's note of a request's parameters",
	"api-request-shape":     "the agent's note of a request's system prompt and tools",
	"api-request-blob":      "the agent's copy of a request's message",
	"cost-state":            "the agent's cost and duration counters",
	"mode":                  "the agent's permission mode",
	"tools-used":            "the agent's list of the tools used",
	"atis-latch":            "the agent's internal state",
	"custom-title":          "a title the person gave the session",
	"tag":                   "a tag the person gave the session",
	"progress":              "a tool's progress while it ran",
}

// ccLine is one line of a Claude Code session file: the fields the reader uses.
type ccLine struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID *string         `json:"logicalParentUuid"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	IsAPIErrorMessage bool            `json:"isApiErrorMessage"`
	Timestamp         string          `json:"timestamp"`
	Cwd               string          `json:"cwd"`
	Version           string          `json:"version"`
	Message           *ccMessage      `json:"message"`
	Payload           json.RawMessage `json:"payload"`
}

// ccMessage is a line's message: the Anthropic Messages API's message as Claude Code keeps it.
type ccMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *ccUsage        `json:"usage"`
}

// ccUsage is the Messages API's usage of a reply.
type ccUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
}

// ccBlock is a content block of a message.
type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ccPath returns the uuids on the path from the session's last conversation line back to its
// first, following parentUuid (logicalParentUuid where a compaction cut the chain); nil when the
// file has no uuids (nothing to tell branches by).
func ccPath(lines []ccLine, ok []bool) map[string]bool {
	byUUID := map[string]int{}
	leaf := -1
	for i, l := range lines {
		if !ok[i] || l.UUID == "" || l.IsSidechain {
			continue
		}
		if _, dup := byUUID[l.UUID]; dup {
			continue // a copy of a line seen before
		}
		byUUID[l.UUID] = i
		switch l.Type {
		case "user", "assistant", "system", "attachment":
			leaf = i
		}
	}
	if leaf < 0 {
		return nil
	}
	on := map[string]bool{}
	for i := leaf; i >= 0; {
		l := lines[i]
		if on[l.UUID] {
			break // a cycle: stop
		}
		on[l.UUID] = true
		parent := l.ParentUUID
		if parent == nil || *parent == "" {
			parent = l.LogicalParentUUID
		}
		if parent == nil {
			break
		}
		next, found := byUUID[*parent]
		if !found {
			break
		}
		i = next
	}
	return on
}

// ccReader builds a Session from Claude Code lines.
type ccReader struct {
	s *Session
	c *cleaner
	// calls are the session's calls by id, for their results.
	calls map[string]*Call
	// step is the reply being read and msgID its message id: lines with the same id join it.
	step  *Step
	msgID string
}

// belongs says whether a line off the conversation's path is still part of it: another block
// of the reply being read, or a line holding only results of calls already read.
func (rd *ccReader) belongs(l ccLine) bool {
	if l.Message == nil {
		return false
	}
	if l.Type == "assistant" {
		return rd.step != nil && l.Message.ID != "" && l.Message.ID == rd.msgID
	}
	blocks, ok := ccBlocks(l.Message.Content)
	if !ok || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		if b.Type != "tool_result" || rd.calls[b.ToolUseID] == nil {
			return false
		}
	}
	return true
}

// ccBlocks decodes a message's content as blocks; a string content is one text block.
func ccBlocks(raw json.RawMessage) ([]ccBlock, bool) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []ccBlock{{Type: "text", Text: text}}, true
	}
	var blocks []ccBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, false
	}
	return blocks, true
}

// ccNotTyped are the starts of user text Claude Code writes itself, and what each is.
var ccNotTyped = []struct{ prefix, why string }{
	{"<command-name>", "a slash command the person ran (the agent's record of it)"},
	{"<command-message>", "a slash command the person ran (the agent's record of it)"},
	{"<local-command-stdout>", "a slash command's output"},
	{"<local-command-stderr>", "a slash command's output"},
	{"<local-command-caveat>", "the agent's caveat before a slash command's output"},
	{"<bash-input>", "a command the person ran in the agent's shell mode (!)"},
	{"<bash-stdout>", "the output of a command the person ran in the agent's shell mode (!)"},
	{"<bash-stderr>", "the output of a command the person ran in the agent's shell mode (!)"},
	{"[Request interrupted by user", "the agent's note that the person interrupted the reply"},
}

func (rd *ccReader) user(n int, l ccLine) {
	s, c := rd.s, rd.c
	if l.Message == nil {
		s.skip(n, "user", "a user line without a message")
		return
	}
	blocks, ok := ccBlocks(l.Message.Content)
	if !ok {
		s.skip(n, "user", "a user line whose content is neither text nor blocks")
		return
	}
	var texts []string
	results, orphans := 0, 0
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			call := rd.calls[b.ToolUseID]
			if call == nil || call.HasResult {
				orphans++
				continue
			}
			call.Result = c.text(ccResultText(b.Content))
			call.IsError, call.HasResult, call.ResultLine = b.IsError, true, n
			results++
		case "text":
			texts = append(texts, b.Text)
		case "image":
			texts = append(texts, "[image]")
		}
	}
	if results > 0 {
		return // text beside results is the agent's (reminders), not the person's
	}
	if orphans > 0 {
		s.skip(n, "user", "a tool result whose call the file does not hold (or a second result for one call)")
		return
	}
	text := strings.Join(texts, "\n\n")
	t := parseTime(l.Timestamp)
	if l.IsCompactSummary {
		if len(s.Events) > 0 {
			if last := s.Events[len(s.Events)-1].Compact; last != nil && last.Summary == "" {
				last.Summary = c.text(text)
				return
			}
		}
		s.Events = append(s.Events, Event{Line: n, Time: t, Compact: &Compact{Summary: c.text(text)}})
		rd.step = nil
		return
	}
	if l.IsMeta {
		s.skip(n, "user", "a note the agent added (isMeta), not typed by the person")
		return
	}
	trimmed := strings.TrimSpace(text)
	for _, nt := range ccNotTyped {
		if strings.HasPrefix(trimmed, nt.prefix) {
			s.skip(n, "user", nt.why)
			return
		}
	}
	if trimmed == "" {
		s.skip(n, "user", "a user line without text")
		return
	}
	s.Events = append(s.Events, Event{Line: n, Time: t, User: ptr(c.text(text))})
	rd.step = nil
}

// ccResultText returns a tool result's content as the text the model read: a string as is,
// blocks' texts joined by newlines, an image as "[image]", any other block as its JSON.
func ccResultText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		var blk ccBlock
		_ = json.Unmarshal(b, &blk)
		switch blk.Type {
		case "text":
			parts = append(parts, blk.Text)
		case "image":
			parts = append(parts, "[image]")
		default:
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func (rd *ccReader) assistant(n int, l ccLine) {
	s, c := rd.s, rd.c
	m := l.Message
	if m == nil {
		s.skip(n, "assistant", "an assistant line without a message")
		return
	}
	if l.IsAPIErrorMessage || m.Model == "<synthetic>" {
		s.skip(n, "assistant", "a message the agent wrote in the model's place (an API error or a notice)")
		return
	}
	blocks, ok := ccBlocks(m.Content)
	if !ok {
		s.skip(n, "assistant", "an assistant line whose content is neither text nor blocks")
		return
	}
	if s.Model == "" && m.Model != "" {
		s.Model = m.Model
	}
	if rd.step == nil || m.ID == "" || m.ID != rd.msgID {
		rd.step = &Step{}
		rd.msgID = m.ID
		s.Events = append(s.Events, Event{Line: n, Time: parseTime(l.Timestamp), Assistant: rd.step})
	}
	st := rd.step
	cwd := c.cwdOf(l.Cwd)
	for _, b := range blocks {
		switch b.Type {
		case "text":
			st.Text = joinText(st.Text, c.text(b.Text))
		case "thinking":
			if b.Thinking == "" {
				st.ReasoningHidden = true
			}
			st.Reasoning = joinText(st.Reasoning, c.text(b.Thinking))
		case "redacted_thinking":
			st.ReasoningHidden = true
		case "tool_use", "server_tool_use":
			call := &Call{ID: b.ID, Name: b.Name, Args: c.json(b.Input)}
			if len(call.Args) == 0 {
				call.Args = json.RawMessage("{}")
			}
			if b.Type == "tool_use" {
				ccMap(call, b.Input, c, cwd)
			}
			st.Calls = append(st.Calls, *call)
			// The results find their call by id: point at the step's copy.
			rd.calls[b.ID] = &st.Calls[len(st.Calls)-1]
			rd.reindex(st)
		default:
			if strings.HasSuffix(b.Type, "_tool_result") && b.ToolUseID != "" {
				if call := rd.calls[b.ToolUseID]; call != nil && !call.HasResult {
					call.Result, call.HasResult, call.ResultLine = c.text(string(b.Content)), true, n
				}
			}
		}
	}
	if u := m.Usage; u != nil {
		st.Usage = &Usage{CachedTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens, OutputTokens: u.OutputTokens}
		if u.InputTokens != nil {
			total := *u.InputTokens
			if u.CacheReadInputTokens != nil {
				total += *u.CacheReadInputTokens
			}
			if u.CacheCreationInputTokens != nil {
				total += *u.CacheCreationInputTokens
			}
			st.Usage.InputTokens = &total
		}
	}
}

// reindex points the call map at a step's calls again after its slice grew (append may have
// moved them).
func (rd *ccReader) reindex(st *Step) {
	for i := range st.Calls {
		if st.Calls[i].ID != "" {
			rd.calls[st.Calls[i].ID] = &st.Calls[i]
		}
	}
}

// joinText appends a block's text to a reply's, a blank line between blocks.
func joinText(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n\n" + b
}

// ccMap maps a Claude Code tool call onto the lab's tools (see [ReadClaudeCode]) from its
// input as recorded (paths still absolute); cwd is the project-relative folder the line ran in.
func ccMap(call *Call, input json.RawMessage, c *cleaner, cwd string) {
	m := decodeArgs(input)
	if m == nil {
		return
	}
	path := func(key string) (string, bool) { return c.rel(argString(m, key), cwd) }
	switch call.Name {
	case "Read":
		p, ok := path("file_path")
		if !ok {
			return
		}
		a := labArgs{{"path", p}}
		if n, ok := argCount(m, "offset"); ok && n > 0 {
			a = append(a, labArg{"offset", n})
		}
		if n, ok := argCount(m, "limit"); ok && n > 0 {
			a = append(a, labArg{"limit", n})
		}
		call.mapped(c, "read", a)
	case "Edit":
		p, ok := path("file_path")
		if !ok || argTrue(m, "replace_all") {
			return
		}
		call.mapped(c, "edit", labArgs{{"path", p}, {"old_string", argString(m, "old_string")}, {"new_string", argString(m, "new_string")}})
	case "MultiEdit":
		p, ok := path("file_path")
		list, _ := m["edits"].([]any)
		if !ok || len(list) == 0 {
			return
		}
		edits := make([]labArgs, 0, len(list))
		for _, e := range list {
			em, _ := e.(map[string]any)
			if em == nil || argTrue(em, "replace_all") {
				return
			}
			edits = append(edits, labArgs{{"old_string", argString(em, "old_string")}, {"new_string", argString(em, "new_string")}})
		}
		call.mapped(c, "multiedit", labArgs{{"path", p}, {"edits", edits}})
	case "Write":
		p, ok := path("file_path")
		if !ok {
			return
		}
		call.mapped(c, "write", labArgs{{"path", p}, {"content", argString(m, "content")}})
	case "Glob":
		a := labArgs{{"pattern", argString(m, "pattern")}}
		if argString(m, "pattern") == "" {
			return
		}
		if argString(m, "path") != "" {
			p, ok := path("path")
			if !ok {
				return
			}
			if p != "." {
				a = append(a, labArg{"path", p})
			}
		} else if cwd != "" {
			a = append(a, labArg{"path", cwd})
		}
		call.mapped(c, "glob", a)
	case "Grep":
		pattern := argString(m, "pattern")
		if pattern == "" || argString(m, "glob") != "" || argString(m, "type") != "" || argTrue(m, "multiline") {
			return
		}
		if argTrue(m, "-i") {
			pattern = "(?i)" + pattern
		}
		a := labArgs{{"pattern", pattern}}
		if argString(m, "path") != "" {
			p, ok := path("path")
			if !ok {
				return
			}
			if p != "." {
				a = append(a, labArg{"path", p})
			}
		} else if cwd != "" {
			a = append(a, labArg{"path", cwd})
		}
		call.mapped(c, "grep", a)
	case "LS":
		if ig, _ := m["ignore"].([]any); len(ig) > 0 {
			return
		}
		a := labArgs{}
		if argString(m, "path") != "" {
			p, ok := path("path")
			if !ok {
				return
			}
			if p != "." {
				a = append(a, labArg{"path", p})
			}
		} else if cwd != "" {
			a = append(a, labArg{"path", cwd})
		}
		call.mapped(c, "list", a)
	case "Bash":
		command := argString(m, "command")
		if command == "" || argTrue(m, "run_in_background") {
			return
		}
		call.mapped(c, "bash", bashArgs(command, cwd))
	}
}
