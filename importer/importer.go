// Package importer turns a real agent session ([transcript.Session]) into a lab scenario that
// every arm replays: scenario.yaml with the person's turns, the model's steps (reasoning, text,
// tool calls) and clock steps from the session's times, and workspace.txtar with what the
// session's tool results show of the files. A call whose result the workspace cannot give
// again (a tool the lab has not, a shell command, a search, a read of a file the session never
// showed whole, an edit that no longer applies) replays its recorded answer (scenario.yaml
// `answer:`), and the manifest of every run of the scenario names those steps. Everything it
// writes passes through [transcript.RedactText].
package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"lab"
	"lab/hygiene"
	"lab/scenario"
	"lab/tools"
	"lab/transcript"
)

// Options are an import's choices.
type Options struct {
	// Name is the scenario's name; "" takes the session's project, else "imported".
	Name string
	// Clock is the fake clock's start for a session without times (a capture); the zero value
	// is [DefaultClock].
	Clock time.Time
	// Capture, when set, is the captured conversation's request lines (transcript.Capture),
	// written as requests.jsonl for the capture-as-sent arm (scenario.yaml `capture:`).
	Capture [][]byte
}

// DefaultClock is the clock start of a session that records no time.
var DefaultClock = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Summary is what an import kept, mapped, recorded and skipped.
type Summary struct {
	// Dir is the scenario's folder, Name its name.
	Dir, Name string
	// Users, Assistants, Compacts and Clocks count the scenario's steps of each kind; Added
	// counts the assistant steps the import wrote where the session has none (its last reply
	// not recorded, calls the person interrupted), each saying so in its text.
	Users, Assistants, Compacts, Clocks, Added int
	// Joined counts the person's messages joined to the turn before them (two messages before
	// a reply are one user step, each joined one listed in Skipped with the line it joined).
	Joined int
	// Calls counts the session's tool calls, Mapped those of a lab tool (the others are the
	// agent's own, AgentTools); Run those that run for real on the workspace, Recorded those
	// that replay their recorded answer, by why (RecordedWhy).
	Calls, Mapped, Run, Recorded int
	RecordedWhy                  map[string]int
	// Files are the workspace's files with the content the session showed, Listed those
	// only a listing named (empty).
	Files, Listed int
	// AgentTools are the scenario's own tools (the agent's unmapped ones).
	AgentTools []string
	// Skipped are the records left out (the reader's and the importer's), as the scenario's
	// source: lists them.
	Skipped []scenario.SkippedRecord
}

// Why a call replays its recorded answer.
const (
	WhyUnmapped = "a tool the lab has not"
	WhyShell    = "a shell command"
	WhySearch   = "a search of files the workspace holds only in part"
	WhyPartial  = "a read of a file the session never showed whole"
	WhyDiffers  = "the workspace would answer otherwise"
	WhyError    = "an error answer"
	WhyNoResult = "no result recorded"
)

// Import writes s as a scenario into dir (created): scenario.yaml, workspace.txtar and, with
// opt.Capture, requests.jsonl; then loads it back with scenario.LoadScenario, so what it wrote
// is a scenario the lab runs. It returns what it kept. An error names what could not be
// written, or the loader's file:line.
func Import(s *transcript.Session, dir string, opt Options) (*Summary, error) {
	if s == nil || len(s.Events) == 0 {
		file := ""
		if s != nil {
			file = s.File + ": "
		}
		return nil, fmt.Errorf("%sno event to import: the file holds no turn of a conversation", file)
	}
	if !slices.ContainsFunc(s.Events, func(e transcript.Event) bool { return e.User != nil && strings.TrimSpace(*e.User) != "" }) {
		return nil, fmt.Errorf("%s: no message of the person (%d events, none a user turn): a scenario starts with one, and this file has none to import", s.File, len(s.Events))
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		return nil, err
	}
	project := sanitizeComponent(s.Project)
	if project == "" {
		project = "project"
	}
	name := opt.Name
	if name == "" {
		name = scenarioName(s.Project)
	}
	sum := &Summary{Dir: dir, Name: name, RecordedWhy: map[string]int{}}
	for _, sk := range s.Skipped {
		sum.Skipped = append(sum.Skipped, scenario.SkippedRecord{Line: sk.Line, Kind: sk.Kind, Why: sk.Why})
	}
	known, listed := initialFiles(s.Events, project)
	var files []txtar.File
	for p, c := range known {
		files = append(files, txtar.File{Name: p, Data: []byte(c)})
	}
	for p := range listed {
		files = append(files, txtar.File{Name: p})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	sum.Files, sum.Listed = len(known), len(listed)
	files = redactFiles(files)
	decided, err := decide(s.Events, files, known, project)
	if err != nil {
		return nil, err
	}
	b := &builder{sum: sum, noteOpen: loop.Note.Open, decided: decided, agentTools: map[string]string{}}
	b.steps(s)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	start := s.Start
	if start.IsZero() {
		start = opt.Clock
		if start.IsZero() {
			start = DefaultClock
		}
	}
	doc := b.document(s, name, project, start, len(opt.Capture) > 0)
	quoteTabs(doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("write scenario: %w", err)
	}
	head := fmt.Sprintf("# Imported by lab scenario import --from %s from %s.\n# Calls with answer: replay the session's recorded answer; the others run on workspace.txtar.\n", s.Format, filepath.Base(s.File))
	out := map[string][]byte{
		"scenario.yaml":   append([]byte(head), buf.Bytes()...),
		"workspace.txtar": txtar.Format(&txtar.Archive{Comment: []byte("What the session's tool results show of the files (" + filepath.Base(s.File) + ").\n"), Files: files}),
	}
	if len(opt.Capture) > 0 {
		var req bytes.Buffer
		for _, l := range opt.Capture {
			req.WriteString(transcript.RedactText(string(bytes.TrimRight(l, "\r\n"))))
			req.WriteByte('\n')
		}
		out["requests.jsonl"] = req.Bytes()
	}
	for f, data := range out {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := scenario.LoadScenario(filepath.Join(dir, "scenario.yaml")); err != nil {
		return sum, fmt.Errorf("the imported scenario does not load (a bug of the importer): %w", err)
	}
	return sum, nil
}

// decision is how one call is replayed: Answer nil runs it on the workspace.
type decision struct {
	answer   *string
	why      string
	unmapped bool // the call is of the agent's tool, not the lab's
}

// decide replays the session's calls in order on the workspace (a sandbox of files, the
// lab's tools, every measure off) and says, for each call (keyed by event and call index),
// whether it runs for real or replays its recorded answer, and why.
func decide(events []transcript.Event, files []txtar.File, known map[string]string, project string) (map[[2]int]decision, error) {
	tmp, err := os.MkdirTemp("", "lab-import-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ws, err := tools.NewWorkspace(files, tmp, project)
	if err != nil {
		return nil, err
	}
	defer ws.Remove()
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		return nil, err
	}
	hs, err := hygiene.NewSession(loop, hygiene.Measures{})
	if err != nil {
		return nil, err
	}
	host := filepath.Join(tmp, project)
	content := map[string]bool{} // files whose content the workspace holds as the session's
	stale := map[string]bool{}   // files a read showed otherwise than the workspace holds them
	for p := range known {
		content[p] = true
	}
	out := map[[2]int]decision{}
	for ei, ev := range events {
		if ev.Assistant == nil {
			continue
		}
		for ci, c := range ev.Assistant.Calls {
			key := [2]int{ei, ci}
			record := func(why string) {
				a := c.Result
				if !c.HasResult {
					a, why = "(no result recorded: the session ended before it)", WhyNoResult
				}
				a = idBracket.ReplaceAllString(a, "")
				if c.IsError && !strings.HasPrefix(a, "Error") {
					a = "Error: " + a
				}
				a = transcript.RedactText(a)
				out[key] = decision{answer: &a, why: why}
			}
			switch {
			case c.Tool == "" || scenario.CheckCall(c.Tool, c.ToolArgs) != nil:
				record(WhyUnmapped)
				d := out[key]
				d.unmapped = true
				out[key] = d
				continue
			case !c.HasResult:
				record(WhyNoResult)
				continue
			case c.IsError:
				record(WhyError)
				continue
			case c.Tool == "bash":
				record(WhyShell)
				continue
			case c.Tool == "grep":
				record(WhySearch)
				continue
			}
			p := pathArg(c.ToolArgs)
			if c.Tool == "read" {
				sh, ok := readShown(c.Result, c.ToolArgs)
				data, err := os.ReadFile(filepath.Join(host, filepath.FromSlash(p)))
				switch {
				case stale[p]:
					record(WhyDiffers)
				case !content[p] || err != nil:
					record(WhyPartial)
				case ok && !sh.matches(string(data)):
					// Changed outside the session's calls: from here on the workspace's copy is
					// not the session's.
					record(WhyDiffers)
					stale[p] = true
				}
				// An answer without numbered lines of a file the workspace holds (a harness's
				// "unchanged since" stub of an earlier read, spec §2) runs for real: the file is
				// as that read showed it.
				continue
			}
			if stale[p] && (c.Tool == "edit" || c.Tool == "multiedit") {
				record(WhyDiffers)
				continue
			}
			res := ws.Run(hs, c.Tool, c.ToolArgs)
			if strings.HasPrefix(res, "Error: ") {
				record(WhyDiffers)
				continue
			}
			switch c.Tool {
			case "write":
				content[p], stale[p] = true, false
			case "apply_patch":
				for _, f := range patchFiles(c.ToolArgs) {
					if _, err := os.Stat(filepath.Join(host, filepath.FromSlash(f))); err == nil && !content[f] {
						// A patch of a file the workspace held only in part: what it left is
						// not the session's.
						content[f] = false
					}
				}
			}
		}
	}
	return out, nil
}

// builder writes the scenario's steps from the session's events, keeping the scenario's flow
// (a user step, then assistant steps until one without calls).
type builder struct {
	sum        *Summary
	noteOpen   string
	decided    map[[2]int]decision
	agentTools map[string]string // agent tool name → the scenario's tool name
	toolOrder  []scenario.AgentTool
	steps_     []*yaml.Node
	prev       string // "user", "calls" (an assistant step with calls), "final", "" at the start
	userLine   int    // the file's line of the last user step
	last       time.Time
}

func (b *builder) skip(line int, kind, why string) {
	b.sum.Skipped = append(b.sum.Skipped, scenario.SkippedRecord{Line: line, Kind: kind, Why: why})
}

// added writes an assistant step the session has none for, saying why.
func (b *builder) added(why string) {
	b.steps_ = append(b.steps_, mapping("assistant", mapping("text", str("(not in the session: "+why+")"))))
	b.sum.Assistants++
	b.sum.Added++
	b.prev = "final"
}

func (b *builder) steps(s *transcript.Session) {
	for ei, ev := range s.Events {
		if !ev.Time.IsZero() {
			if !b.last.IsZero() && ev.Time.After(b.last) {
				if d := ev.Time.Sub(b.last).Round(time.Second); d > 0 {
					b.steps_ = append(b.steps_, mapping("clock", str("+"+d.String())))
					b.sum.Clocks++
				}
			}
			if ev.Time.After(b.last) {
				b.last = ev.Time
			}
		}
		switch {
		case ev.User != nil:
			text := transcript.RedactText(b.dropNote(*ev.User))
			if strings.TrimSpace(text) == "" {
				b.skip(ev.Line, "user", "an empty message")
				continue
			}
			switch b.prev {
			case "user":
				// Two messages before a reply: one turn (a scenario's user step is answered
				// before the next), recorded as such.
				last := b.steps_[len(b.steps_)-1]
				last.Content[1].Value += "\n\n" + text
				b.sum.Joined++
				b.skip(ev.Line, "user", fmt.Sprintf("a second message before a reply: joined to the turn before it (line %d), a blank line between", b.userLine))
				continue
			case "calls":
				b.added("the person wrote before the calls' results were answered")
			}
			b.steps_ = append(b.steps_, mapping("user", str(text)))
			b.sum.Users++
			b.prev, b.userLine = "user", ev.Line
		case ev.Compact != nil:
			summary := transcript.RedactText(ev.Compact.Summary)
			if strings.TrimSpace(summary) == "" {
				b.skip(ev.Line, "compact", "a compaction without a summary")
				continue
			}
			switch b.prev {
			case "":
				b.skip(ev.Line, "compact", "a compaction before the first message")
				continue
			case "user":
				b.added("the compaction came before a reply")
			}
			b.steps_ = append(b.steps_, mapping("compact", mapping("summary", str(summary))))
			b.sum.Compacts++
		case ev.Assistant != nil:
			b.assistant(s, ei, ev)
		}
	}
	if b.prev != "final" {
		b.added("the session's last reply is not recorded")
	}
}

func (b *builder) assistant(s *transcript.Session, ei int, ev transcript.Event) {
	a := ev.Assistant
	if b.prev == "" {
		b.skip(ev.Line, "assistant", "a reply before the person's first message")
		return
	}
	var fields []*yaml.Node
	if a.Reasoning != "" {
		fields = append(fields, str("reasoning"), str(transcript.RedactText(a.Reasoning)))
	}
	if a.Text != "" {
		fields = append(fields, str("text"), str(transcript.RedactText(a.Text)))
	}
	var calls []*yaml.Node
	for ci, c := range a.Calls {
		b.sum.Calls++
		d := b.decided[[2]int{ei, ci}]
		tool, args := c.Tool, c.ToolArgs
		if d.unmapped {
			tool, args = b.agentTool(c.Name), c.Args
		} else {
			b.sum.Mapped++
		}
		argNode := jsonNode(json.RawMessage(transcript.RedactText(string(args))))
		call := mapping(tool, argNode)
		if d.answer != nil {
			call.Content = append(call.Content, str("answer"), str(*d.answer))
			b.sum.Recorded++
			b.sum.RecordedWhy[d.why]++
		} else {
			b.sum.Run++
		}
		calls = append(calls, call)
	}
	if len(calls) > 0 {
		fields = append(fields, str("calls"), &yaml.Node{Kind: yaml.SequenceNode, Content: calls})
	}
	if len(fields) == 0 {
		b.skip(ev.Line, "assistant", "a reply with no reasoning, text or call the file holds")
		return
	}
	if b.prev == "final" {
		b.skip(ev.Line, "assistant", "a reply after the turn's final answer, without a message of the person between: not replayed")
		return
	}
	b.steps_ = append(b.steps_, mapping("assistant", &yaml.Node{Kind: yaml.MappingNode, Content: fields}))
	b.sum.Assistants++
	b.prev = "final"
	if len(calls) > 0 {
		b.prev = "calls"
	}
}

// dropNote drops a session note of the lab's own harness (§10, a captured lab session's): every
// arm writes its own.
func (b *builder) dropNote(text string) string {
	if b.noteOpen == "" {
		return text
	}
	if i := strings.Index(text, "\n\n"+b.noteOpen); i >= 0 {
		return text[:i]
	}
	if strings.HasPrefix(text, b.noteOpen) {
		return ""
	}
	return text
}

var badToolChar = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// agentTool returns the scenario's tool for an agent's unmapped tool, declaring it once.
func (b *builder) agentTool(name string) string {
	if t, ok := b.agentTools[name]; ok {
		return t
	}
	t := badToolChar.ReplaceAllString(name, "_")
	if t == "" {
		t = "tool"
	}
	if tools.Lookup(t) != nil || t == "recall" {
		t = "agent_" + t
	}
	if len(t) > 64 {
		t = t[:64]
	}
	for taken := true; taken; {
		taken = false
		for _, v := range b.agentTools {
			if v == t {
				t, taken = t+"_", true
			}
		}
	}
	b.agentTools[name] = t
	b.toolOrder = append(b.toolOrder, scenario.AgentTool{Name: t, Description: "The agent's " + name + " tool (imported: each call replays the session's recorded answer)."})
	b.sum.AgentTools = append(b.sum.AgentTools, t)
	return t
}

// document is the scenario file's YAML.
func (b *builder) document(s *transcript.Session, name, project string, start time.Time, capture bool) *yaml.Node {
	desc := fmt.Sprintf("Imported from %s (%s)", filepath.Base(s.File), s.Format)
	if s.Agent != "" {
		desc += ", " + s.Agent
	}
	if s.Model != "" {
		desc += ", model " + s.Model
	}
	doc := mapping("name", str(name), "description", str(transcript.RedactText(desc)), "project", str(project),
		"workspace", str("workspace.txtar"))
	if d := s.StartDir; d != "" {
		if p, err := tools.Inside(d); err == nil && p != "" && p != "." {
			doc.Content = append(doc.Content, str("start_dir"), str(p))
		}
	}
	doc.Content = append(doc.Content, str("clock"), str(start.Format(time.RFC3339)))
	if capture {
		doc.Content = append(doc.Content, str("capture"), str("requests.jsonl"))
	}
	src := mapping("format", str(s.Format), "file", str(transcript.RedactText(filepath.Base(s.File))))
	if s.Agent != "" {
		src.Content = append(src.Content, str("agent"), str(transcript.RedactText(s.Agent)))
	}
	if s.Model != "" {
		src.Content = append(src.Content, str("model"), str(transcript.RedactText(s.Model)))
	}
	if len(b.sum.Skipped) > 0 {
		var sk []*yaml.Node
		for _, r := range b.sum.Skipped {
			sk = append(sk, mapping("line", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(r.Line)}, "kind", str(transcript.RedactText(r.Kind)), "why", str(transcript.RedactText(r.Why))))
		}
		src.Content = append(src.Content, str("skipped"), &yaml.Node{Kind: yaml.SequenceNode, Content: sk})
	}
	doc.Content = append(doc.Content, str("source"), src)
	if len(b.toolOrder) > 0 {
		var ts []*yaml.Node
		for _, t := range b.toolOrder {
			ts = append(ts, mapping("name", str(t.Name), "description", str(t.Description)))
		}
		doc.Content = append(doc.Content, str("tools"), &yaml.Node{Kind: yaml.SequenceNode, Content: ts})
	}
	doc.Content = append(doc.Content, str("steps"), &yaml.Node{Kind: yaml.SequenceNode, Content: b.steps_})
	return doc
}

// quoteTabs writes every string holding a line that starts with a tab double-quoted: the YAML
// encoder would write it as a literal block it cannot read back (a tab where the block's
// indentation is).
func quoteTabs(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "\n") && (strings.HasPrefix(n.Value, "\t") || strings.Contains(n.Value, "\n\t") || strings.HasPrefix(n.Value, " ")) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteTabs(c)
	}
}

func str(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		v, ok := kv[i+1].(*yaml.Node)
		if !ok {
			v = str(fmt.Sprint(kv[i+1]))
		}
		n.Content = append(n.Content, str(k), v)
	}
	return n
}

// jsonNode is a JSON object as a YAML mapping, keys in their order, in block style; a text
// that is not a JSON object is an empty mapping.
func jsonNode(raw json.RawMessage) *yaml.Node {
	var n yaml.Node
	if !json.Valid(raw) || yaml.Unmarshal(raw, &n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return &yaml.Node{Kind: yaml.MappingNode}
	}
	var clear func(*yaml.Node)
	clear = func(m *yaml.Node) {
		m.Style = 0
		for _, c := range m.Content {
			clear(c)
		}
	}
	root := n.Content[0]
	clear(root)
	if len(root.Content) == 0 {
		root.Style = yaml.FlowStyle
	}
	return root
}

// redactFiles returns the workspace's files with their names and contents redacted
// ([transcript.RedactText]), as the scenario's replays will see them (a call on a file whose name
// or content the redaction changed replays its recorded answer, as its result differs). A name the
// redaction makes the same as another's, or no longer a path inside the project, is the
// earlier file's: the later one is left out.
func redactFiles(files []txtar.File) []txtar.File {
	out := make([]txtar.File, 0, len(files))
	taken := map[string]bool{}
	for _, f := range files {
		p, err := tools.Inside(transcript.RedactText(f.Name))
		if err != nil || p == "" || p == "." {
			continue
		}
		name := path.Clean(p)
		if taken[name] {
			continue
		}
		taken[name] = true
		out = append(out, txtar.File{Name: name, Data: []byte(transcript.RedactText(string(f.Data)))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sanitizeComponent makes a project name a single path component.
func sanitizeComponent(p string) string {
	p = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '-'
		}
		return r
	}, p)
	if p == "." || p == ".." {
		return ""
	}
	return p
}

var nameChars = regexp.MustCompile(`[^a-z0-9._-]+`)

// scenarioName is a scenario name from a project's: lower case, other characters as '-'.
func scenarioName(project string) string {
	n := strings.Trim(nameChars.ReplaceAllString(strings.ToLower(project), "-"), "-._")
	if n == "" {
		return "imported"
	}
	return n
}
