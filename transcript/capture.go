package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"time"

	"lab/capture"
	"lab/chat"
	"lab/metrics"
	"lab/tools"
)

// Capture is a capture read by [ReadCaptureFile]: the session of its longest conversation and
// that conversation's request lines as the file holds them, redacted ([RedactText]), for the
// capture-as-sent arm.
type Capture struct {
	Session *Session
	// Conversation is the conversation read: the lines' scenario, arm and repetition
	// ("conversation-0001", "capture", 1 for lab proxy; a run's scenario, arm and repetition
	// for lab run --save-requests).
	Conversation string
	// Lines are the conversation's lines, in order, each a requests line as the file holds it
	// (credentials already redacted by the proxy) with its text passed through [RedactText].
	Lines [][]byte
}

// ReadCapture reads a capture's requests file into a [Session]: see [ReadCaptureFile].
func ReadCapture(file string) (*Session, error) {
	c, err := ReadCaptureFile(file)
	if err != nil {
		return nil, err
	}
	return c.Session, nil
}

// captureLine is one line of a requests file (row.RequestLine).
type captureLine struct {
	Scenario     string          `json:"scenario"`
	Arm          string          `json:"arm"`
	Repetition   int             `json:"repetition"`
	RequestIndex int32           `json:"request_index"`
	API          string          `json:"api"`
	Body         json.RawMessage `json:"body"`
	Reply        *struct {
		Reasoning string          `json:"reasoning"`
		Content   string          `json:"content"`
		ToolCalls []chat.ToolCall `json:"tool_calls"`
	} `json:"reply"`
}

// ReadCaptureFile reads a requests file of `lab proxy --save-requests` (or `lab run
// --save-requests`: requests-0001-of-0001.jsonl), one JSON line per request with its
// conversation (scenario, arm, repetition), API, body and, when the capture kept it, reply. It
// takes the conversation with the most requests (the first of them on a tie; every line of
// another is a [Skip]) and reads its requests with their API's decoder
// (capture.DecodeKnownRequest: an api it does not decode is an error): the person's messages become user events, each request's reply an
// assistant step (the reply of the line, else the assistant message the next request sends
// back; the last request's reply is not in the file when the line does not hold it), the tool
// messages the results of its calls, matched by id. A request whose history does not continue
// the previous one's (a compaction: the history restarted from a summary) becomes a compact
// event. A call of a lab tool (tools.Table, but recall) keeps its name and arguments as the
// lab's; any other is unmapped. The requests file holds no times: when it lies in its run
// folder (lab proxy's, lab run's), each event takes the started_at of its request's row, and
// the session starts at the first; otherwise the events have none. Lines that are
// not requests lines (a Claude Code or Codex session's, one that is not UTF-8), or have no api
// or body, are an error naming the file and line; a request its decoder refuses too.
func ReadCaptureFile(file string) (*Capture, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	type numbered struct {
		line int
		l    captureLine
		raw  []byte
	}
	// The user names the whole file holds, to redact wherever one stands in a path.
	names := userNames(string(data), homeNames())
	var all []numbered
	count := map[string]int{}
	var order []string
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if bad := invalidUTF8(raw); bad >= 0 {
			return nil, &SyntaxError{File: file, Line: i + 1, Msg: fmt.Sprintf("invalid UTF-8 at byte %d of the line: lab proxy writes UTF-8, so the file is damaged or not a capture", bad+1)}
		}
		if f := Sniff(raw); f != "" {
			return nil, otherFormat(file, i+1, f, "capture")
		}
		var l captureLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: want a requests line (a JSON object with scenario, arm, api, body): %v", file, i+1, err)
		}
		if len(l.Body) == 0 {
			return nil, fmt.Errorf("%s:%d: a requests line without a body", file, i+1)
		}
		if l.API == "" {
			return nil, fmt.Errorf("%s:%d: a requests line without api: this lab reads a capture whose lines name their API (lab proxy --save-requests, or lab run --save-requests on the sim, ollama, llamacpp or anthropic backend)", file, i+1)
		}
		key := fmt.Sprintf("%s/%s/%d", l.Scenario, l.Arm, l.Repetition)
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
		all = append(all, numbered{i + 1, l, raw})
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s: no request", file)
	}
	best := order[0]
	for _, k := range order {
		if count[k] > count[best] {
			best = k
		}
	}
	c := &Capture{Conversation: best}
	s := &Session{Format: "capture", File: file, Agent: "lab proxy capture"}
	var reqs []*chat.Request
	var replies []*chat.Reply
	var lines []int
	for _, n := range all {
		key := fmt.Sprintf("%s/%s/%d", n.l.Scenario, n.l.Arm, n.l.Repetition)
		if key != best {
			s.Skipped = append(s.Skipped, Skip{Line: n.line, Kind: "request", Why: "another conversation (" + key + ") than the one imported (" + best + ", the longest)"})
			continue
		}
		req, err := capture.DecodeKnownRequest(n.l.API, n.l.Body)
		if err != nil {
			return nil, &SyntaxError{File: file, Line: n.line, Msg: fmt.Sprintf("%s request: %v", n.l.API, err)}
		}
		if len(req.Messages) == 0 {
			s.Skipped = append(s.Skipped, Skip{Line: n.line, Kind: n.l.API, Why: "a request without messages (not a conversation's)"})
			continue
		}
		reqs, lines = append(reqs, req), append(lines, n.line)
		var rep *chat.Reply
		if n.l.Reply != nil {
			rep = &chat.Reply{Reasoning: n.l.Reply.Reasoning, Content: n.l.Reply.Content, ToolCalls: n.l.Reply.ToolCalls}
		}
		replies = append(replies, rep)
		c.Lines = append(c.Lines, []byte(redactText(string(n.raw), names)))
		if s.Model == "" {
			var b struct {
				Model string `json:"model"`
			}
			if json.Unmarshal(n.l.Body, &b) == nil {
				s.Model = b.Model
			}
		}
	}
	s.Events = captureEvents(reqs, replies, lines)
	if times := requestTimes(file, best); times != nil {
		// Each event takes the start of the request its line holds: the clock of the capture.
		at := map[int]time.Time{}
		for _, n := range all {
			if fmt.Sprintf("%s/%s/%d", n.l.Scenario, n.l.Arm, n.l.Repetition) == best {
				if t, ok := times[n.l.RequestIndex]; ok {
					at[n.line] = t
				}
			}
		}
		for i := range s.Events {
			s.Events[i].Time = at[s.Events[i].Line]
		}
		if len(s.Events) > 0 {
			s.Start = s.Events[0].Time
		}
	}
	if len(reqs) > 0 {
		s.Project, s.StartDir = projectOf(reqs[0])
	}
	s.redact(func(t string) string { return redactText(t, names) })
	c.Session = s
	return c, nil
}

// requestTimes returns when each request of the conversation key (scenario/arm/repetition)
// started, by request index, from the rows of the run folder the requests file is in (a
// capture's or a run's started_at); nil when the folder holds no run or no such row.
func requestTimes(file, key string) map[int32]time.Time {
	_, rows, err := metrics.ReadRun(filepath.Dir(file))
	if err != nil {
		return nil
	}
	out := map[int32]time.Time{}
	for _, r := range rows {
		if fmt.Sprintf("%s/%s/%d", r.Scenario, r.Arm, r.Repetition) == key && !r.StartedAt.IsZero() {
			out[r.RequestIndex] = r.StartedAt.UTC()
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// projectLine and startedLine are the environment lines of the lab's own system prompt (spec
// §11, loop.json context.env): "Project: NAME (paths are relative to its root)", "Started in:
// DIR (relative to the project root)"; workingDir a harness's "Working directory: /abs/path".
var (
	projectLine = regexp.MustCompile(`(?m)^Project: ([^\s/]+) \(`)
	startedLine = regexp.MustCompile(`(?m)^Started in: (\S+) \(`)
	workingDir  = regexp.MustCompile(`(?m)^Working directory: (\S+)$`)
)

// projectOf is the project and start folder a captured request's system prompt names, "" when
// it names none.
func projectOf(req *chat.Request) (project, startDir string) {
	for _, m := range req.Messages {
		if m.Role != chat.RoleSystem {
			continue
		}
		if p := projectLine.FindStringSubmatch(m.Content); p != nil {
			project = p[1]
			if d := startedLine.FindStringSubmatch(m.Content); d != nil {
				startDir = d[1]
			}
			return project, startDir
		}
		if w := workingDir.FindStringSubmatch(m.Content); w != nil {
			return path.Base(w[1]), ""
		}
	}
	return "", ""
}

// conversational drops the system and developer messages: the harness's own, not the session's.
func conversational(msgs []chat.Message) []chat.Message {
	var out []chat.Message
	for _, m := range msgs {
		if m.Role == chat.RoleUser || m.Role == chat.RoleAssistant || m.Role == chat.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// captureEvents turns a conversation's requests, in order, into the session's events.
func captureEvents(reqs []*chat.Request, replies []*chat.Reply, lines []int) []Event {
	var ev []Event
	var prev []chat.Message // the previous request's messages and its reply
	lastStep := func() *Step {
		for i := len(ev) - 1; i >= 0; i-- {
			if ev[i].Assistant != nil {
				return ev[i].Assistant
			}
			if ev[i].User != nil || ev[i].Compact != nil {
				return nil
			}
		}
		return nil
	}
	for i, req := range reqs {
		msgs := conversational(req.Messages)
		from := 0
		if i > 0 {
			if continues(prev, msgs) {
				from = len(prev)
			} else {
				// The history restarted: a compaction. The previous request asked for the
				// summary (its last user message the task, its reply the summary).
				summary := ""
				if len(msgs) > 0 && msgs[0].Role == chat.RoleUser {
					summary, from = msgs[0].Content, 1
				}
				if n := len(ev); n >= 2 && ev[n-1].Assistant != nil && len(ev[n-1].Assistant.Calls) == 0 && ev[n-2].User != nil {
					if summary == "" {
						summary = ev[n-1].Assistant.Text
					}
					ev = ev[:n-2]
				}
				ev = append(ev, Event{Line: lines[i], Compact: &Compact{Summary: summary}})
			}
		}
		for _, m := range msgs[from:] {
			switch m.Role {
			case chat.RoleUser:
				text := m.Content
				ev = append(ev, Event{Line: lines[i], User: &text})
			case chat.RoleAssistant:
				// History the first request carried, or a reply no line recorded.
				ev = append(ev, Event{Line: lines[i], Assistant: stepOf(m.Reasoning, m.Content, m.ToolCalls)})
			case chat.RoleTool:
				if st := lastStep(); st != nil {
					for k := range st.Calls {
						if c := &st.Calls[k]; c.ID == m.ToolCallID && !c.HasResult {
							c.Result, c.HasResult, c.ResultLine = m.Content, true, lines[i]
							break
						}
					}
				}
			}
		}
		// The request's reply: the line's, else the next request's message after these.
		rep := replies[i]
		if rep == nil && i+1 < len(reqs) {
			next := conversational(reqs[i+1].Messages)
			if len(msgs) < len(next) && next[len(msgs)].Role == chat.RoleAssistant && continues(msgs, next) {
				m := next[len(msgs)]
				rep = &chat.Reply{Reasoning: m.Reasoning, Content: m.Content, ToolCalls: m.ToolCalls}
			}
		}
		prev = msgs
		if rep != nil {
			ev = append(ev, Event{Line: lines[i], Assistant: stepOf(rep.Reasoning, rep.Content, rep.ToolCalls)})
			prev = append(append([]chat.Message(nil), msgs...), chat.Message{Role: chat.RoleAssistant, Content: rep.Content, ToolCalls: rep.ToolCalls})
		}
	}
	return ev
}

// continues reports whether msgs starts with prev's messages, by role and, for tool messages,
// call id (texts may differ: a harness rewrites earlier results, drops earlier reasoning).
func continues(prev, msgs []chat.Message) bool {
	if len(msgs) < len(prev) {
		return false
	}
	for i, m := range prev {
		if msgs[i].Role != m.Role || msgs[i].ToolCallID != m.ToolCallID {
			return false
		}
		if m.Role == chat.RoleUser && msgs[i].Content != m.Content && !msgs[i].Summary {
			return false
		}
	}
	return true
}

// stepOf is a reply as a step: its calls mapped to the lab's tools by name (the lab's own
// harness, captured), recall excepted (its results are the captured session's store).
func stepOf(reasoning, text string, calls []chat.ToolCall) *Step {
	st := &Step{Reasoning: reasoning, Text: text}
	for _, tc := range calls {
		c := Call{ID: tc.ID, Name: tc.Name, Args: tc.Arguments}
		if tools.Lookup(tc.Name) != nil && tc.Name != "recall" {
			c.Tool, c.ToolArgs = tc.Name, tc.Arguments
		}
		st.Calls = append(st.Calls, c)
	}
	return st
}
