package transcript

import (
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReadCodex reads a Codex rollout file: the JSON lines Codex writes under
// ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl, each a RolloutLine
// {"timestamp", "type", "payload"} of codex-rs's RolloutItem (codex-rs/protocol: SessionMeta,
// ResponseItem, Compacted, TurnContext, EventMsg, and the newer WorldState and
// token_usage_record), checked against @openai/codex 0.171.0's own files. A resumed session
// (codex exec resume) appends to the same file, so one file holds every turn. file names the
// file in errors and locates the recording user's home (the folder holding .codex/).
//
// What it keeps, per record:
//   - response_item message, role user: the person's text as a User event, when the agent did
//     not write it (the message's content_item_kinds are all user.*; without kinds, text not
//     starting with one of the agent's context tags: <environment_context>,
//     <user_instructions>, "# AGENTS.md instructions", …). Role assistant: the reply's Text.
//     Role developer or system: the agent's instructions, skipped.
//   - response_item reasoning: the summary texts and content texts as Reasoning;
//     encrypted_content sets ReasoningHidden.
//   - response_item function_call, custom_tool_call, local_shell_call: Calls (Args: the
//     arguments string decoded; a custom tool's {"input": …}; a local shell call's action);
//     function_call_output and custom_tool_call_output: their results (a string, an object's
//     content, or content items' texts), IsError from success false or the exit code the
//     output reports ("Process exited with code N", "Exit code: N", metadata.exit_code).
//   - token_usage_record (usage) and event_msg token_count (info.last_token_usage, when the
//     reply has no usage yet): the reply's Usage (input_tokens is the whole prompt,
//     cached_input_tokens, cache_write_input_tokens, output_tokens, reasoning_output_tokens).
//   - compacted (message: the summary) and response_item compaction (encrypted): Compact.
//   - Everything else is skipped with what it is: session_meta and turn_context (read for
//     Agent, Model and Project), world_state, the other event_msg records (the agent's UI
//     events: user_message, agent_message, item_completed, exec_command_end, … repeat the
//     response items), ghost_snapshot, web_search_call (a search the provider ran), and
//     records this reader does not know.
//
// A reply is the response items between two tool results (or user turns, or usage records).
//
// Tools map to the lab's (Tool, ToolArgs): exec_command{cmd, workdir}, shell{command: argv,
// workdir} (bash -lc SCRIPT is SCRIPT), shell_command{command, workdir} and local_shell_call to
// bash with cwd the project-relative workdir; apply_patch (the custom tool's input, the
// function's {input}, shell ["apply_patch", PATCH], or an apply_patch heredoc) to apply_patch
// with the patch's paths made relative. A workdir or patch path outside the project, and every
// other tool (update_plan, view_image, write_stdin, MCP tools, web_search), keep Tool "".
//
// Lost: the instructions and context the agent adds (base_instructions, developer messages,
// environment context, AGENTS.md), the UI events, images, the sandbox and approval settings.
//
// Errors (each a [SyntaxError] naming the file and line): a line that is not JSON (but the last
// line cut short, skipped), a line that is not UTF-8, a Claude Code session line or a lab
// capture's requests line, a file with no rollout record at all, a line over [MaxLine].
func ReadCodex(r io.Reader, file string) (*Session, error) {
	raw, secrets, err := readLines(r, file)
	if err != nil {
		return nil, err
	}
	s := &Session{Format: FormatCodex, File: file}
	c := newCleaner(file, secrets, raw)
	lines := make([]cxLine, len(raw))
	ok := make([]bool, len(raw))
	for i, l := range raw {
		if err := json.Unmarshal(l.text, &lines[i]); err != nil {
			if err := badLine(s, l, err); err != nil {
				return nil, err
			}
			continue
		}
		if lines[i].Payload == nil && Sniff(l.text) == FormatClaudeCode {
			return nil, otherFormat(file, l.n, FormatClaudeCode, FormatCodex)
		}
		if lines[i].Type == "" && captureLike(l.text) {
			return nil, otherFormat(file, l.n, "capture", FormatCodex)
		}
		ok[i] = true
		// The project root: the session's cwd, or its first turn's.
		switch lines[i].Type {
		case "session_meta", "turn_context":
			var p struct {
				Cwd string `json:"cwd"`
			}
			_ = json.Unmarshal(lines[i].Payload, &p)
			c.setRoot(p.Cwd)
		}
	}
	if len(raw) > 0 && !slices.ContainsFunc(lines, func(l cxLine) bool { return l.Payload != nil }) {
		return nil, &SyntaxError{File: file, Line: raw[0].n, Msg: `no Codex rollout record in the file (a JSON object {"timestamp", "type", "payload"} a line)`}
	}
	s.Project, s.StartDir = c.project()
	rd := cxReader{s: s, c: c, calls: map[string]callRef{}}
	for i, l := range lines {
		if ok[i] {
			rd.line(raw[i].n, l)
		}
	}
	s.redactSkipped(c.text)
	s.finish()
	return s, nil
}

// cxLine is one rollout line.
type cxLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// cxItem is a ResponseItem (and the other payloads' fields the reader uses).
type cxItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   []cxText        `json:"summary"`
	Encrypted *string         `json:"encrypted_content"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Input     *string         `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	Meta      *struct {
		Kinds []string `json:"content_item_kinds"`
	} `json:"internal_chat_message_metadata_passthrough"`
}

// cxText is a content part, a summary part or a reasoning content part.
type cxText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// cxUsage is Codex's TokenUsage.
type cxUsage struct {
	InputTokens     *int64 `json:"input_tokens"`
	CachedTokens    *int64 `json:"cached_input_tokens"`
	CacheWrite      *int64 `json:"cache_write_input_tokens"`
	OutputTokens    *int64 `json:"output_tokens"`
	ReasoningTokens *int64 `json:"reasoning_output_tokens"`
}

func (u *cxUsage) usage() *Usage {
	return &Usage{InputTokens: u.InputTokens, CachedTokens: u.CachedTokens, CacheWriteTokens: u.CacheWrite, OutputTokens: u.OutputTokens, ReasoningTokens: u.ReasoningTokens}
}

// callRef finds a call in the session: its step and index.
type callRef struct {
	step *Step
	i    int
}

// cxReader builds a Session from rollout lines.
type cxReader struct {
	s *Session
	c *cleaner
	// step is the reply being read, nil when the next model item starts a new one.
	step  *Step
	calls map[string]callRef
}

// cxContextTags start the user-role text Codex writes itself (older files have no
// content_item_kinds to tell it by).
var cxContextTags = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>", "<user_shell_command>", "<turn_aborted>", "<permissions instructions>", "<skills_instructions>", "<collaboration_mode>"}

// line reads one rollout line.
func (rd *cxReader) line(n int, l cxLine) {
	s, c := rd.s, rd.c
	t := parseTime(l.Timestamp)
	switch l.Type {
	case "session_meta":
		var p struct {
			CLIVersion string `json:"cli_version"`
		}
		_ = json.Unmarshal(l.Payload, &p)
		if s.Agent == "" && p.CLIVersion != "" {
			s.Agent = "codex " + c.text(p.CLIVersion)
		}
		s.skip(n, l.Type, "the session's metadata (read for Agent and Project)")
	case "turn_context":
		var p struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(l.Payload, &p)
		if s.Model == "" {
			s.Model = c.text(p.Model)
		}
		s.skip(n, l.Type, "a turn's settings (read for Model and Project)")
	case "world_state":
		s.skip(n, l.Type, "the agent's context state (instructions, environment): the lab's harness sends its own")
	case "token_usage_record":
		var p struct {
			Usage *cxUsage `json:"usage"`
		}
		_ = json.Unmarshal(l.Payload, &p)
		rd.usage(n, l.Type, p.Usage)
	case "event_msg":
		var p struct {
			Type string `json:"type"`
			Info *struct {
				Last *cxUsage `json:"last_token_usage"`
			} `json:"info"`
		}
		_ = json.Unmarshal(l.Payload, &p)
		kind := "event_msg/" + p.Type
		if p.Type == "token_count" {
			if p.Info == nil || p.Info.Last == nil {
				s.skip(n, kind, "a token count without usage")
				return
			}
			rd.usage(n, kind, p.Info.Last)
			return
		}
		s.skip(n, kind, "an event of the agent's UI: the conversation is in the response items")
	case "compacted":
		var p struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(l.Payload, &p)
		if len(s.Events) > 0 {
			if last := s.Events[len(s.Events)-1].Compact; last != nil && last.Summary == "" {
				last.Summary = c.text(p.Message)
				return
			}
		}
		s.Events = append(s.Events, Event{Line: n, Time: t, Compact: &Compact{Summary: c.text(p.Message)}})
		rd.step = nil
	case "response_item":
		var it cxItem
		if err := json.Unmarshal(l.Payload, &it); err != nil {
			s.skip(n, l.Type, "a response item this reader cannot read")
			return
		}
		rd.item(n, t, it)
	default:
		s.skip(n, l.Type, "a record type this reader does not know")
	}
}

// usage sets the last reply's usage; a reply that has one already (token_count after
// token_usage_record) leaves it.
func (rd *cxReader) usage(n int, kind string, u *cxUsage) {
	s := rd.s
	if u == nil {
		s.skip(n, kind, "a usage record without usage")
		return
	}
	var st *Step
	for i := len(s.Events) - 1; i >= 0 && st == nil; i-- {
		if s.Events[i].User != nil || s.Events[i].Compact != nil {
			break
		}
		st = s.Events[i].Assistant
	}
	switch {
	case st == nil:
		s.skip(n, kind, "a usage record without a reply before it")
	case st.Usage != nil:
		s.skip(n, kind, "the reply's usage again")
	default:
		st.Usage = u.usage()
		rd.step = nil // a reply's usage comes after its last item
	}
}

// open returns the reply being read, or a new one.
func (rd *cxReader) open(n int, t time.Time) *Step {
	if rd.step == nil {
		rd.step = &Step{}
		rd.s.Events = append(rd.s.Events, Event{Line: n, Time: t, Assistant: rd.step})
	}
	return rd.step
}

func (rd *cxReader) item(n int, t time.Time, it cxItem) {
	s, c := rd.s, rd.c
	kind := "response_item/" + it.Type
	switch it.Type {
	case "message":
		var parts []cxText
		var text string
		if json.Unmarshal(it.Content, &text) != nil {
			_ = json.Unmarshal(it.Content, &parts)
		}
		var texts []string
		if text != "" {
			texts = append(texts, text)
		}
		for _, p := range parts {
			switch p.Type {
			case "input_image":
				texts = append(texts, "[image]")
			default:
				if p.Text != "" {
					texts = append(texts, p.Text)
				}
			}
		}
		switch it.Role {
		case "user":
			joined := strings.Join(texts, "\n")
			if why := cxAgentWrote(it, joined); why != "" {
				s.skip(n, kind, why)
				return
			}
			if strings.TrimSpace(joined) == "" {
				s.skip(n, kind, "a user message without text")
				return
			}
			s.Events = append(s.Events, Event{Line: n, Time: t, User: ptr(c.text(joined))})
			rd.step = nil
		case "assistant":
			st := rd.open(n, t)
			st.Text = joinText(st.Text, c.text(strings.Join(texts, "\n")))
		default:
			s.skip(n, kind, "the agent's instructions (role "+it.Role+")")
		}
	case "reasoning":
		st := rd.open(n, t)
		for _, p := range it.Summary {
			st.Reasoning = joinText(st.Reasoning, c.text(p.Text))
		}
		var content []cxText
		_ = json.Unmarshal(it.Content, &content)
		for _, p := range content {
			st.Reasoning = joinText(st.Reasoning, c.text(p.Text))
		}
		if it.Encrypted != nil && *it.Encrypted != "" {
			st.ReasoningHidden = true
		}
	case "function_call", "custom_tool_call", "local_shell_call":
		call := Call{ID: it.CallID, Name: it.Name}
		var args json.RawMessage
		switch it.Type {
		case "function_call":
			a := ""
			if it.Arguments != nil {
				a = *it.Arguments
			}
			if decodeArgs(json.RawMessage(a)) != nil {
				args = json.RawMessage(a)
			} else {
				args, _ = json.Marshal(map[string]string{"arguments": a})
			}
		case "custom_tool_call":
			in := ""
			if it.Input != nil {
				in = *it.Input
			}
			args, _ = json.Marshal(map[string]string{"input": in})
		case "local_shell_call":
			call.Name = "local_shell"
			args = it.Action
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
		}
		cxMap(&call, it, args, c)
		call.Args = c.json(args)
		st := rd.open(n, t)
		st.Calls = append(st.Calls, call)
		if call.ID != "" {
			rd.calls[call.ID] = callRef{st, len(st.Calls) - 1}
		}
	case "function_call_output", "custom_tool_call_output":
		ref, found := rd.calls[it.CallID]
		if !found || ref.step.Calls[ref.i].HasResult {
			s.skip(n, kind, "a tool result whose call the file does not hold (or a second result for one call)")
			return
		}
		call := &ref.step.Calls[ref.i]
		text, failed := cxOutput(it.Output)
		call.Result, call.IsError, call.HasResult, call.ResultLine = c.text(text), failed, true, n
		rd.step = nil // the next model item is the next reply's
	case "compaction", "compaction_summary":
		s.Events = append(s.Events, Event{Line: n, Time: t, Compact: &Compact{}})
		rd.step = nil
	case "ghost_snapshot":
		s.skip(n, kind, "the agent's snapshot of the work tree (for undo)")
	case "web_search_call":
		s.skip(n, kind, "a web search the provider ran: no tool result in the conversation")
	default:
		s.skip(n, kind, "a response item type this reader does not know")
	}
}

// cxAgentWrote says why a user-role message is the agent's and not the person's, "" when the
// person typed it.
func cxAgentWrote(it cxItem, text string) string {
	if it.Meta != nil && len(it.Meta.Kinds) > 0 {
		for _, k := range it.Meta.Kinds {
			if !strings.HasPrefix(k, "user.") {
				return "context the agent added (" + strings.Join(it.Meta.Kinds, ", ") + "), not typed by the person"
			}
		}
		return ""
	}
	trimmed := strings.TrimSpace(text)
	for _, tag := range cxContextTags {
		if strings.HasPrefix(trimmed, tag) {
			return "context the agent added (" + tag + "), not typed by the person"
		}
	}
	return ""
}

var (
	exitLine     = regexp.MustCompile(`(?m)^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$`)
	patchHeredoc = regexp.MustCompile(`(?s)^\s*apply_patch\s+<<-?\s*['"]?(\w+)['"]?\s*\n(.*?)\n\s*(\w+)\s*$`)
)

// cxOutput returns a tool output's text (what the model read) and whether it reports a
// failure: success false, or a non-zero exit code.
func cxOutput(raw json.RawMessage) (string, bool) {
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var obj struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		var items []cxText
		switch {
		case json.Unmarshal(raw, &items) == nil:
			parts := make([]string, 0, len(items))
			for _, p := range items {
				if p.Type == "input_image" {
					parts = append(parts, "[image]")
				} else {
					parts = append(parts, p.Text)
				}
			}
			return strings.Join(parts, "\n"), false
		case json.Unmarshal(raw, &obj) == nil:
			t, _ := cxOutput(obj.Content)
			return t, obj.Success != nil && !*obj.Success
		}
		return string(raw), false
	}
	// The older shell output: {"output": "...", "metadata": {"exit_code": N}} as a string.
	var legacy struct {
		Output   *string `json:"output"`
		Metadata *struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if strings.HasPrefix(text, "{") && json.Unmarshal([]byte(text), &legacy) == nil && legacy.Output != nil && legacy.Metadata != nil && legacy.Metadata.ExitCode != nil {
		return text, *legacy.Metadata.ExitCode != 0
	}
	if m := exitLine.FindStringSubmatch(text); m != nil {
		code, _ := strconv.Atoi(m[1])
		return text, code != 0
	}
	return text, false
}

// cxMap maps a Codex tool call onto the lab's tools (see [ReadCodex]) from its arguments as
// recorded (paths still absolute).
func cxMap(call *Call, it cxItem, args json.RawMessage, c *cleaner) {
	m := decodeArgs(args)
	workdir := func(key string) (string, bool) {
		w := argString(m, key)
		if w == "" {
			return "", true
		}
		r, ok := c.rel(w, "")
		if r == "." {
			r = ""
		}
		return r, ok
	}
	patch := func(p, cwd string) {
		if rel, ok := c.relPatch(p, cwd); ok {
			call.mapped(c, "apply_patch", labArgs{{"patch", rel}})
		}
	}
	script := func(command, cwd string) {
		if h := patchHeredoc.FindStringSubmatch(command); h != nil && h[1] == h[3] {
			patch(h[2], cwd)
			return
		}
		call.mapped(c, "bash", bashArgs(command, cwd))
	}
	switch it.Type {
	case "custom_tool_call":
		if it.Name == "apply_patch" && it.Input != nil {
			patch(*it.Input, "")
		}
		return
	case "local_shell_call":
		var a struct {
			Command []string `json:"command"`
			Workdir string   `json:"working_directory"`
		}
		if json.Unmarshal(args, &a) != nil || len(a.Command) == 0 {
			return
		}
		cwd := ""
		if a.Workdir != "" {
			r, ok := c.rel(a.Workdir, "")
			if !ok {
				return
			}
			if r != "." {
				cwd = r
			}
		}
		script(shellScript(a.Command), cwd)
		return
	}
	if m == nil {
		return
	}
	switch it.Name {
	case "exec_command":
		cwd, ok := workdir("workdir")
		if cmd := argString(m, "cmd"); ok && cmd != "" {
			script(cmd, cwd)
		}
	case "shell_command":
		cwd, ok := workdir("workdir")
		if cmd := argString(m, "command"); ok && cmd != "" {
			script(cmd, cwd)
		}
	case "shell", "container.exec":
		cwd, ok := workdir("workdir")
		list, _ := m["command"].([]any)
		if !ok || len(list) == 0 {
			return
		}
		argv := make([]string, 0, len(list))
		for _, a := range list {
			s, isString := a.(string)
			if !isString {
				return
			}
			argv = append(argv, s)
		}
		if len(argv) == 2 && (argv[0] == "apply_patch" || argv[0] == "applypatch") {
			patch(argv[1], cwd)
			return
		}
		script(shellScript(argv), cwd)
	case "apply_patch":
		if in := argString(m, "input"); in != "" {
			patch(in, "")
		}
	}
}
