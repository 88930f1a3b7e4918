package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"golang.org/x/tools/txtar"

	"lab/internal/fileerr"
	"lab/prompts"
	"lab/tools"
)

// Scenario is a scripted agent session: a workspace, a fake clock and the steps of the
// conversation. Its file format is documented in scenarios/README.md.
type Scenario struct {
	// Name identifies the scenario in results (the `scenario` column).
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Project is the project's name, the last component of its root (spec 3.2.0 §11).
	Project string `yaml:"project"`
	// Workspace is the workspace archive, relative to the scenario file: a txtar file
	// (golang.org/x/tools/txtar) whose files are written into the sandbox.
	Workspace string `yaml:"workspace"`
	// StartDir is where the session was started, relative to the project root ("" = the root).
	StartDir string `yaml:"start_dir"`
	// Clock is the fake clock's start, RFC 3339 with a zone: the person's zone.
	Clock string `yaml:"clock"`
	// ClockPerRequest, when set, advances the fake clock by this much (Go duration syntax,
	// "20s") before every request, as wall time passes between an agent's steps; "" means 0.
	ClockPerRequest string `yaml:"clock_per_request"`
	// Mode is the permission mode the session starts in (prompts/modes/<mode>.md); "" means
	// "default".
	Mode string `yaml:"mode"`
	// Steps are the session's steps, in order.
	Steps []Step `yaml:"steps"`
	// ExpectedErrors is how many tool calls answer an error on purpose (a read of a file deleted
	// from outside, say); the scenario tests check that exactly so many do, in the spec arm.
	ExpectedErrors int `yaml:"expected_errors"`
	// Commands are the scripted outputs of the bash tool: the calls of one command string take
	// its entries in order, and its last entry repeats when they run out.
	Commands []Command `yaml:"commands"`
	// Shell gives the live driver a real shell: its bash tool runs each command with
	// /bin/sh in the workspace, without network and within Shell.Timeout. nil leaves bash to the
	// scripted Commands alone. bash is in the tool list when the scenario has either (spec 3.2.0
	// §10.4: only what is fixed for the session leaves a tool out). The scripted driver always
	// answers from Commands, so a run replays the same bytes.
	Shell *ShellConfig `yaml:"shell"`
	// Tools are the scenario's own tools: the tools of an imported agent session that the lab
	// has no tool for (an agent's web fetch, an MCP server's query). They are in the tool list
	// of every request, after the lab's, whatever the arm; every call of one replays its
	// recorded answer ([Call].Answer), which the loader requires.
	Tools []AgentTool `yaml:"tools"`
	// Capture names the requests file of the capture the scenario was imported from (the
	// lines of one conversation as `lab proxy --save-requests` writes them,
	// [row.RequestLine]), relative to the scenario file; "" for a scenario not imported from a
	// capture. Only the capture-as-sent arm reads it: it sends each request as the harness
	// sent it. [LoadScenario] reads it into Captured.
	Capture string `yaml:"capture"`

	// Imported says where an imported scenario came from and what its import left out
	// (scenario.yaml `source:`); nil for a scenario written by hand.
	Imported *ImportSource `yaml:"source"`

	// Captured are the requests of Capture, in order; set by [LoadScenario].
	Captured []CapturedRequest `yaml:"-"`
	// File is the scenario file's path; set by [LoadScenario].
	File string `yaml:"-"`
	// Files are the workspace's files, read from the archive by [LoadScenario].
	Files []txtar.File `yaml:"-"`
	// Start is Clock parsed.
	Start time.Time `yaml:"-"`
	// PerRequest is ClockPerRequest parsed.
	PerRequest time.Duration `yaml:"-"`
	// Source and Archive are the scenario file's and the workspace archive's bytes as read by
	// [LoadScenario], for [Scenario.Digest].
	Source  []byte `yaml:"-"`
	Archive []byte `yaml:"-"`
}

// Prompts returns the prompt files (paths below prompts/, sorted) a session of the scenario
// reads: system.md and blocks/context.md always, modes/<mode>.md for the mode it starts in and
// every mode it switches to, and tasks/compact.md when it compacts.
func (s *Scenario) Prompts() []string {
	mode := s.Mode
	if mode == "" {
		mode = "default"
	}
	names := []string{"system.md", "blocks/context.md", "modes/" + mode + ".md"}
	for _, st := range s.Steps {
		switch {
		case st.Mode != nil:
			names = append(names, "modes/"+*st.Mode+".md")
		case st.Compact != nil:
			names = append(names, "tasks/compact.md")
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Digest returns "sha256:<hex>", the digest of what the scenario's sessions are made of, for
// [metrics.Manifest].ScenarioDigests: SHA-256 over, in this order, the scenario file, its
// workspace archive, each prompt of [Scenario.Prompts] in that order, and loopJSON (loop.json
// as the harness read it). Each part is written as its name, a space, its length in bytes in
// decimal, a newline, then its bytes; the names are "scenario", "workspace",
// "prompts/<path>" and "loop.json". The scenario file's own name and folder are not part of
// it: the same content loaded from a path or embedded has one digest. A prompt file that does
// not exist counts as empty (the loader refused modes without one).
func (s *Scenario) Digest(loopJSON []byte) string {
	h := sha256.New()
	part := func(name string, data []byte) {
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	part("scenario", s.Source)
	part("workspace", s.Archive)
	for _, p := range s.Prompts() {
		data, _ := fs.ReadFile(prompts.FS, p)
		part("prompts/"+p, data)
	}
	part("loop.json", loopJSON)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Step is one step of a scenario: exactly one of its kinds (User, Assistant, Clock, Compact,
// Mode, Plan, MCP, Outside, Instructions, Git, Rewind) is set.
type Step struct {
	// User is what the person types; it starts a turn.
	User *string
	// Assistant is the model's scripted answer to the request the harness sends at this point.
	Assistant *AssistantStep
	// Clock moves the fake clock: "+DURATION" (Go syntax, "+4m") or an RFC 3339 time.
	Clock *string
	// Compact compacts the session here (spec 3.2.0 §7): the harness asks for a summary, which
	// the model answers with Compact.Summary, and the history starts afresh from it.
	Compact *CompactStep
	// Mode is the person switching the permission mode (spec 3.2.0 §10.3).
	Mode *string
	// Plan is the person changing the plan (§10.3); "" empties it.
	Plan *string
	// MCP is an MCP server connecting late (§10.4): its tools join the list, its instructions
	// come as a note.
	MCP *MCPServer
	// Outside is a file changed or deleted from outside the session.
	Outside *OutsideChange
	// Instructions is the person editing the instruction file: its new text, written to the
	// arm's instructions practice's file in the workspace (AGENTS.md by default, and for an arm
	// without the practice); spec 3.2.0 §10.3 says the edit in a note on the next user message.
	Instructions *string
	// Git is what `git status` says from now on (session state that an instructions practice
	// with source git_status embeds); "" empties it.
	Git *string
	// Rewind takes back the last Rewind requests of the current turn as an undo: the model's
	// replies to them with their tool results leave the history (at least 1, at most the
	// assistant steps since the turn's user step or the last compaction).
	Rewind *int
	// Line is the step's line in the scenario file.
	Line int
	// At is the clock after a Clock step (set by [LoadScenario]).
	At time.Time
}

// DefaultInstructionsFile is the instruction file an instructions step writes for an arm
// whose instructions practice names none, or that has no such practice: AGENTS.md at the
// project root (arms.Instructions.File's default).
const DefaultInstructionsFile = "AGENTS.md"

// ShellConfig is a scenario's `shell:` mapping: a real shell for the live driver.
type ShellConfig struct {
	// Timeout bounds the wall time of each command, in Go duration syntax ("30s"); "" means
	// [tools.DefaultShellTimeout]. At most [MaxShellTimeout].
	Timeout string `yaml:"timeout"`
	// Limit is Timeout parsed; set by [LoadScenario].
	Limit time.Duration `yaml:"-"`
}

// MaxShellTimeout is the longest timeout a scenario's shell may give its commands.
const MaxShellTimeout = 10 * time.Minute

// HasShell reports whether the session's tool list has bash: the scenario scripts commands or
// gives a real shell.
func (s *Scenario) HasShell() bool {
	if len(s.Commands) > 0 || s.Shell != nil {
		return true
	}
	for _, st := range s.Steps {
		if st.Assistant == nil {
			continue
		}
		for _, c := range st.Assistant.Calls {
			if c.Tool == "bash" && c.Answer != nil {
				return true
			}
		}
	}
	return false
}

// Command is one scripted output of the bash tool.
type Command struct {
	// Command is the command string a bash call gives, exactly.
	Command string `yaml:"command"`
	// Output is what the command prints (stdout and stderr as one text).
	Output string `yaml:"output"`
	// Exit is the exit status; not 0 adds a last line "(exit status N)".
	Exit int `yaml:"exit"`
}

// ImportSource is an imported scenario's `source:` mapping: the reader's format, the file's
// base name, the agent and model it records, and every record the import did not keep (the
// reader's skipped lines and the events the importer dropped), with its line and why.
type ImportSource struct {
	Format  string          `yaml:"format"`
	File    string          `yaml:"file"`
	Agent   string          `yaml:"agent,omitempty"`
	Model   string          `yaml:"model,omitempty"`
	Skipped []SkippedRecord `yaml:"skipped,omitempty"`
}

// SkippedRecord is one record of an imported file that is not in the scenario.
type SkippedRecord struct {
	Line int    `yaml:"line"`
	Kind string `yaml:"kind"`
	Why  string `yaml:"why"`
}

// AgentTool is one of a scenario's own tools ([Scenario].Tools): the agent's name, its
// description and the JSON Schema of its parameters as the session's agent declared them.
type AgentTool struct {
	// Name is the tool's name in the tool list and in calls: letters, digits, '_' and '-', at
	// most 64 (what the model APIs accept), and not the name of a lab tool.
	Name string `yaml:"name"`
	// Description is the tool's description in the tool list.
	Description string `yaml:"description"`
	// Parameters is the JSON Schema of its arguments, as a mapping; none means an object of
	// any properties ({"type":"object"}).
	Parameters map[string]any `yaml:"parameters"`
}

// CapturedRequest is one request of a capture ([Scenario].Captured): the line of the requests
// file it is on, its API (capture.APIOllamaChat and the others) and its body exactly as the
// harness sent it (credentials redacted), and the reply the server gave, when the line has it.
type CapturedRequest struct {
	Line  int
	API   string
	Body  json.RawMessage
	Reply *CapturedReply
}

// CapturedReply is the reply the server gave to a captured request, as a requests line holds
// it (`reply`: reasoning, content, tool_calls with id, name and arguments).
type CapturedReply struct {
	Reasoning string         `json:"reasoning,omitempty"`
	Content   string         `json:"content,omitempty"`
	ToolCalls []CapturedCall `json:"tool_calls,omitempty"`
}

// CapturedCall is one tool call of a [CapturedReply].
type CapturedCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// RecordedStep is an assistant step some of whose calls replay their recorded answers
// ([Call].Answer): its turn and step as the rows number them (turn: the user steps so far;
// step: the requests since the turn's user step, compactions included, 1-based), its line and
// how many of its calls are recorded.
type RecordedStep struct {
	Turn, Step, Line, Calls int
}

// RecordedSteps returns the scenario's assistant steps with calls replayed from recorded
// answers, in order (none for a scenario without them).
func (s *Scenario) RecordedSteps() []RecordedStep {
	var out []RecordedStep
	turn, step := 0, 0
	for _, st := range s.Steps {
		switch {
		case st.User != nil:
			turn, step = turn+1, 0
		case st.Compact != nil:
			step++
		case st.Assistant != nil:
			step++
			n := 0
			for _, c := range st.Assistant.Calls {
				if c.Answer != nil {
					n++
				}
			}
			if n > 0 {
				out = append(out, RecordedStep{Turn: turn, Step: step, Line: st.Line, Calls: n})
			}
		}
	}
	return out
}

// HasAgentTool reports whether name is one of the scenario's own tools.
func (s *Scenario) HasAgentTool(name string) bool {
	return slices.ContainsFunc(s.Tools, func(t AgentTool) bool { return t.Name == name })
}

// MCPServer is an MCP server that connects during the session.
type MCPServer struct {
	Server       string
	Instructions string
	Tools        []MCPTool
}

// MCPTool is one tool an MCP server offers; every call of it answers Result.
type MCPTool struct {
	Name        string
	Description string
	Result      string
}

// OutsideChange is a change to the workspace made outside the session: Content written to Path,
// or Path deleted.
type OutsideChange struct {
	Path    string
	Content string
	Delete  bool
}

// CompactStep is a compaction: the model's scripted summary of the session so far.
type CompactStep struct {
	// Reasoning is what the model thought before it wrote the summary.
	Reasoning string
	// Summary is the summary the model writes; it must not be empty (§7: a reply with no
	// summary fails the compaction).
	Summary string
}

// AssistantStep is the model's reply at one step: reasoning, text and tool calls.
type AssistantStep struct {
	// Reasoning is what the model thought before this step.
	Reasoning string
	// Text is the visible text of the reply.
	Text string
	// Calls are the tool calls, in order.
	Calls []Call
}

// Call is one scripted tool call.
type Call struct {
	// Tool is the tool's name: a built-in tool of [tools.Table] (read, list, glob, grep, edit,
	// write, multiedit, apply_patch, bash, recall) or a tool of an MCP server connected before.
	Tool string
	// Args is the arguments as a JSON object, keys in the order the scenario wrote them.
	Args json.RawMessage
	// Line is the call's line in the scenario file.
	Line int
	// ExpectError says the call answers an error on purpose (a read of a file deleted from
	// outside, say): the loader does not check that its paths exist (scenario.yaml
	// `expect_error: true` beside the call's tool).
	ExpectError bool
	// Answer, when set, is the call's recorded answer (scenario.yaml `answer: TEXT` beside the
	// call's tool): the harness gives it as the call's result instead of running the tool,
	// through the arm's measures like any result (caps, result ids). An imported session's
	// importer writes it where the workspace cannot reproduce the result (a tool the lab has
	// not, a shell command, a read of a part of a file the session never showed whole). The
	// loader does not check a recorded call's paths; the manifest lists the steps that hold one
	// ([Scenario.RecordedSteps]).
	Answer *string
}

// SyntaxError is a problem in a scenario file, at a line: it prints as "file:line: message"
// (File the scenario file as the user named it). It is [fileerr.SyntaxError], the one type of
// a wrong file the user wrote: check.SyntaxError is the same type, so errors.As with either
// matches both.
type SyntaxError = fileerr.SyntaxError

// LoadScenario reads and checks a scenario file strictly: an unknown field, a step that calls an
// unknown tool or misses an argument, a path outside the workspace, a clock going backwards or a
// step out of order is a *SyntaxError "file:line: message". A file that cannot be read is another
// error.
func LoadScenario(path string) (*Scenario, error) {
	return LoadScenarioFS(os.DirFS(filepath.Dir(path)), filepath.Base(path), path)
}

// LoadScenarioFS is [LoadScenario] for a file of fsys (such as the embedded scenarios). name is
// the file's path in fsys; shown is how errors name the file.
func LoadScenarioFS(fsys fs.FS, name, shown string) (*Scenario, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("load scenario %s: %w", shown, err)
	}
	s, err := parseScenario(shown, data)
	if err != nil {
		return nil, err
	}
	ws := path.Join(path.Dir(name), s.Workspace)
	arch, err := fs.ReadFile(fsys, ws)
	if err != nil {
		return nil, &SyntaxError{File: shown, Msg: fmt.Sprintf("workspace %q: %v", s.Workspace, err)}
	}
	s.Source, s.Archive = data, arch
	s.Files = txtar.Parse(arch).Files
	if err := checkArchive(path.Join(path.Dir(filepath.ToSlash(shown)), s.Workspace), arch, s.Files); err != nil {
		return nil, err
	}
	for _, f := range s.Files {
		if _, err := tools.Inside(f.Name); err != nil || f.Name == "." {
			return nil, &SyntaxError{File: shown, Msg: fmt.Sprintf("workspace %q: file %q: %v", s.Workspace, f.Name, err)}
		}
	}
	if err := checkPaths(s); err != nil {
		return nil, err
	}
	if s.Capture != "" {
		shownCap := path.Join(path.Dir(filepath.ToSlash(shown)), s.Capture)
		data, err := fs.ReadFile(fsys, path.Join(path.Dir(name), s.Capture))
		if err != nil {
			return nil, &SyntaxError{File: shown, Line: fileerr.TopKeyLine(s.Source, "capture"), Msg: fmt.Sprintf("capture %q: %v", s.Capture, err)}
		}
		if s.Captured, err = ParseCaptured(shownCap, data); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ParseCaptured reads a requests file of a capture (one JSON object a line: scenario, arm,
// repetition, request_index, api, body, and reply when the capture kept it; blank lines
// skipped) into its requests, in file order. file names it in errors: a line that is not such
// an object, or has no api or body, is a *SyntaxError naming the line.
func ParseCaptured(file string, data []byte) ([]CapturedRequest, error) {
	var out []CapturedRequest
	for i, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var line struct {
			API   string          `json:"api"`
			Body  json.RawMessage `json:"body"`
			Reply *CapturedReply  `json:"reply"`
		}
		if err := json.Unmarshal(l, &line); err != nil {
			return nil, &SyntaxError{File: file, Line: i + 1, Msg: "want a requests line (a JSON object with api and body): " + err.Error()}
		}
		if line.API == "" || len(line.Body) == 0 {
			return nil, &SyntaxError{File: file, Line: i + 1, Msg: "a requests line needs api and body (lab proxy --save-requests writes both)"}
		}
		out = append(out, CapturedRequest{Line: i + 1, API: line.API, Body: line.Body, Reply: line.Reply})
	}
	if len(out) == 0 {
		return nil, &SyntaxError{File: file, Msg: "no request"}
	}
	return out, nil
}

// scenarioName is what a scenario's name may be: it names plot files, benchmark names and report
// sections.
var scenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

func parseScenario(file string, data []byte) (*Scenario, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &SyntaxError{File: file, Msg: "empty file"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, fileerr.FromYAML(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := extra.Line
		if err != nil {
			return nil, fileerr.FromYAML(file, err)
		}
		return nil, &SyntaxError{File: file, Line: line, Msg: "a second YAML document: a scenario file holds one"}
	}
	s.File = file
	bad := func(line int, format string, args ...any) error {
		return &SyntaxError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"project", s.Project}, {"workspace", s.Workspace}, {"clock", s.Clock}} {
		if f.v == "" {
			return nil, bad(0, "missing field %s", f.name)
		}
	}
	if !scenarioName.MatchString(s.Name) {
		return nil, bad(fileerr.TopKeyLine(data, "name"), "name %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit (it names files and report sections)", s.Name)
	}
	if strings.ContainsAny(s.Project, "/\\\x00") || s.Project == "." || s.Project == ".." {
		return nil, bad(fileerr.TopKeyLine(data, "project"), "project %q: want a single path component (no NUL byte)", s.Project)
	}
	start, err := time.Parse(time.RFC3339, s.Clock)
	if err != nil {
		return nil, bad(0, "clock %q: want an RFC 3339 time with a zone, such as 2026-11-05T22:05:00+01:00", s.Clock)
	}
	s.Start = start
	if s.ClockPerRequest != "" {
		d, err := time.ParseDuration(s.ClockPerRequest)
		if err != nil || d < 0 {
			return nil, bad(fileerr.TopKeyLine(data, "clock_per_request"), "clock_per_request %q: want a duration of 0 or more, such as 20s", s.ClockPerRequest)
		}
		s.PerRequest = d
	}
	if _, err := tools.Inside(s.StartDir); err != nil {
		return nil, bad(0, "start_dir: %v", err)
	}
	if len(s.Steps) == 0 {
		return nil, bad(0, "no steps")
	}
	if s.Shell != nil {
		s.Shell.Limit = tools.DefaultShellTimeout
		if s.Shell.Timeout != "" {
			d, err := time.ParseDuration(s.Shell.Timeout)
			if err != nil || d <= 0 || d > MaxShellTimeout {
				return nil, bad(fileerr.TopKeyLine(data, "shell"), "shell: timeout %q: want a duration above 0 and at most %s, such as 30s", s.Shell.Timeout, MaxShellTimeout)
			}
			s.Shell.Limit = d
		}
	}

	if s.Mode != "" && !modeExists(s.Mode) {
		return nil, bad(0, "mode %q: no prompts/modes/%s.md (the modes are %s)", s.Mode, s.Mode, strings.Join(Modes(), ", "))
	}
	if err := checkAgentTools(&s, data); err != nil {
		return nil, err
	}
	mcpTools := map[string]bool{} // tools of MCP servers connected so far
	now := start
	prev := "" // kind of the previous user/assistant step
	prevCalls := false
	replies := 0     // assistant steps since the turn's user step or the last compaction
	rewound := false // a rewind came last among the user, assistant, compact and rewind steps
	for i := range s.Steps {
		st := &s.Steps[i]
		afterRewind := rewound
		if st.User != nil || st.Assistant != nil || st.Compact != nil {
			rewound = false
		}
		switch {
		case st.Clock != nil:
			at, err := advance(now, *st.Clock)
			if err != nil {
				return nil, bad(st.Line, "clock: %v", err)
			}
			if at.Before(now) {
				return nil, bad(st.Line, "clock goes backwards: %s is before %s", at.Format(time.RFC3339), now.Format(time.RFC3339))
			}
			now, st.At = at, at
		case st.User != nil:
			if strings.TrimSpace(*st.User) == "" {
				return nil, bad(st.Line, "user: empty message")
			}
			if afterRewind {
				return nil, bad(st.Line, "user step right after a rewind: the request taken back is sent again, and an assistant step answers it first")
			}
			if prev == "user" {
				return nil, bad(st.Line, "two user steps in a row: the first has no assistant reply")
			}
			if prev == "assistant" && prevCalls {
				return nil, bad(st.Line, "user step after an assistant step with calls: the calls' results need an assistant step first")
			}
			prev, prevCalls, replies = "user", false, 0
		case st.Assistant != nil:
			if prev == "" {
				return nil, bad(st.Line, "assistant step before any user step")
			}
			if prev == "assistant" && !prevCalls {
				return nil, bad(st.Line, "assistant step after a final answer: a user step must come first")
			}
			a := st.Assistant
			if a.Text == "" && len(a.Calls) == 0 && a.Reasoning == "" {
				return nil, bad(st.Line, "assistant step with no reasoning, text or calls")
			}
			for _, c := range a.Calls {
				if mcpTools[c.Tool] {
					continue
				}
				if s.HasAgentTool(c.Tool) {
					if c.Answer == nil {
						return nil, bad(c.Line, "%s: a call of one of the scenario's own tools needs answer: TEXT, its recorded answer (the lab cannot run it)", c.Tool)
					}
					continue
				}
				if err := checkCall(c); err != nil {
					return nil, bad(c.Line, "%s: %v", c.Tool, err)
				}
				if c.Tool == "bash" {
					var args struct {
						Command string `json:"command"`
						Cwd     string `json:"cwd"`
					}
					if err := json.Unmarshal(c.Args, &args); err != nil {
						return nil, bad(c.Line, "bash: %v", err)
					}
					if c.Answer == nil && !slices.ContainsFunc(s.Commands, func(cm Command) bool { return cm.Command == args.Command }) {
						return nil, bad(c.Line, "bash: no entry for %q in the scenario's commands", args.Command)
					}
					if _, err := tools.Inside(args.Cwd); err != nil {
						return nil, bad(c.Line, "bash: cwd: %v", err)
					}
				}
			}
			prev, prevCalls = "assistant", len(a.Calls) > 0
			replies++
		case st.Rewind != nil:
			n := *st.Rewind
			switch {
			case replies == 0:
				return nil, bad(st.Line, "rewind: %d: nothing to take back: no assistant step since the turn's user step, the last compaction or the last rewind", n)
			case n < 1 || n > replies:
				return nil, bad(st.Line, "rewind: %d: want 1 to %d, the assistant steps since the turn's user step, the last compaction or the last rewind", n, replies)
			}
			// What follows is what followed the first reply taken back: an assistant step.
			replies -= n
			rewound = true
			if replies == 0 {
				prev, prevCalls = "user", false
			} else {
				prev, prevCalls = "assistant", true
			}
		case st.Instructions != nil, st.Git != nil:
		case st.Mode != nil:
			if !modeExists(*st.Mode) {
				return nil, bad(st.Line, "mode %q: no prompts/modes/%s.md (the modes are %s)", *st.Mode, *st.Mode, strings.Join(Modes(), ", "))
			}
		case st.MCP != nil:
			for _, t := range st.MCP.Tools {
				if tools.Lookup(t.Name) != nil || t.Name == "" {
					return nil, bad(st.Line, "mcp: tool %q: empty or the name of a built-in tool", t.Name)
				}
				if s.HasAgentTool(t.Name) {
					return nil, bad(st.Line, "mcp: tool %q: the name of one of the scenario's own tools (tools:)", t.Name)
				}
				mcpTools[t.Name] = true
			}
		case st.Outside != nil:
			if _, err := tools.Inside(st.Outside.Path); err != nil && strings.IndexByte(st.Outside.Path, 0) >= 0 {
				return nil, bad(st.Line, "outside: %v", err)
			} else if err != nil || st.Outside.Path == "" {
				return nil, bad(st.Line, "outside: path %q: want a path inside the workspace", st.Outside.Path)
			}
		case st.Plan != nil:
		case st.Compact != nil:
			if prev == "" || prev == "user" {
				return nil, bad(st.Line, "compact right after a user step: the user's message needs an assistant reply first")
			}
			if strings.TrimSpace(st.Compact.Summary) == "" {
				return nil, bad(st.Line, "compact: empty summary (spec §7: a reply with no summary fails the compaction)")
			}
			replies = 0
		}
	}
	if prev != "assistant" || prevCalls {
		return nil, bad(s.Steps[len(s.Steps)-1].Line, "the session must end with an assistant step without calls")
	}
	return &s, nil
}

// agentToolName is what the name of a scenario's own tool may be: what the model APIs accept
// as a function's name (OpenAI, Anthropic: ^[a-zA-Z0-9_-]{1,64}$).
var agentToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkAgentTools checks the scenario's own tools: a valid name, not a lab tool's, each once.
func checkAgentTools(s *Scenario, data []byte) error {
	line := fileerr.TopKeyLine(data, "tools")
	seen := map[string]bool{}
	for _, t := range s.Tools {
		switch {
		case !agentToolName.MatchString(t.Name):
			return &SyntaxError{File: s.File, Line: line, Msg: fmt.Sprintf("tools: name %q: want 1 to 64 letters, digits, '_' or '-'", t.Name)}
		case tools.Lookup(t.Name) != nil:
			return &SyntaxError{File: s.File, Line: line, Msg: fmt.Sprintf("tools: %q is a lab tool: a call of it runs the lab's own (give it answer: TEXT to replay a recorded answer)", t.Name)}
		case seen[t.Name]:
			return &SyntaxError{File: s.File, Line: line, Msg: fmt.Sprintf("tools: %q is named twice", t.Name)}
		}
		seen[t.Name] = true
		if t.Parameters != nil {
			if _, err := json.Marshal(t.Parameters); err != nil {
				return &SyntaxError{File: s.File, Line: line, Msg: fmt.Sprintf("tools: %q: parameters: %v", t.Name, err)}
			}
		}
	}
	return nil
}

// ToolSchema returns the JSON Schema of t's parameters ({"type":"object"} when it gives none).
func (t AgentTool) ToolSchema() json.RawMessage {
	if t.Parameters == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	b, err := json.Marshal(t.Parameters)
	if err != nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

func advance(now time.Time, v string) (time.Time, error) {
	if strings.HasPrefix(v, "+") {
		d, err := time.ParseDuration(v[1:])
		if err != nil {
			return now, fmt.Errorf("%q: want +DURATION such as +4m", v)
		}
		return now.Add(d), nil
	}
	if strings.HasPrefix(v, "-") {
		return now, fmt.Errorf("%q: the clock never goes backwards", v)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return now, fmt.Errorf("%q: want +DURATION or an RFC 3339 time", v)
	}
	return t, nil
}

// CheckCall checks a call of a built-in tool's arguments as the loader checks a scripted
// call ([tools.Table]'s argument rules and the tool's own check), without its paths' existence:
// nil when a scenario may hold it.
func CheckCall(tool string, args json.RawMessage) error {
	return checkCall(Call{Tool: tool, Args: args})
}

// checkCall checks a scripted call against its tool's argument rules in [tools.Table]: a known
// tool, no unknown argument, every required one, each of the kind the table gives (a path
// inside the workspace, a whole number, a string), then the tool's own check.
func checkCall(c Call) error {
	t := tools.Lookup(c.Tool)
	if t == nil {
		return fmt.Errorf("unknown tool (the tools are %s, and the tools of MCP servers connected before the call)", strings.Join(tools.Names(), ", "))
	}
	var args map[string]any
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	for name := range args {
		if !slices.ContainsFunc(t.Args, func(a tools.Arg) bool { return a.Name == name }) {
			return fmt.Errorf("unknown argument %q", name)
		}
	}
	var missing []string
	for _, a := range t.Args {
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("missing argument %s", strings.Join(quoteAll(missing), ", "))
	}
	// Paths first, then numbers, then strings: one call's first problem is the one named.
	for _, kind := range []tools.ArgKind{tools.PathArg, tools.CountArg, tools.StringArg} {
		for _, a := range t.Args {
			v, ok := args[a.Name]
			if !ok || a.Kind != kind {
				continue
			}
			switch kind {
			case tools.PathArg:
				ps, isStr := v.(string)
				if !isStr {
					return fmt.Errorf("%s: want a string", a.Name)
				}
				if _, err := tools.Inside(ps); err != nil {
					return err
				}
			case tools.CountArg:
				if f, isNum := v.(float64); !isNum || f < 0 || f != float64(int(f)) {
					return fmt.Errorf("%s: want a whole number ≥ 0", a.Name)
				}
			case tools.StringArg:
				if _, isStr := v.(string); !isStr {
					return fmt.Errorf("%s: want a string", a.Name)
				}
			}
		}
	}
	if t.Check != nil {
		return t.Check(args)
	}
	return nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// UnmarshalYAML decodes a step, checking its keys strictly and keeping its line.
func (st *Step) UnmarshalYAML(n *yaml.Node) error {
	n = resolve(n)
	st.Line = n.Line
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return &SyntaxError{Line: n.Line, Msg: "a step is a mapping with exactly one of user, assistant, clock, compact, mode, plan, mcp, outside, instructions, git, rewind"}
	}
	key, val := n.Content[0], resolve(n.Content[1])
	switch key.Value {
	case "user", "clock", "mode", "plan", "instructions", "git":
		if val.Kind != yaml.ScalarNode {
			return &SyntaxError{Line: val.Line, Msg: key.Value + ": want a string"}
		}
		v := val.Value
		field := map[string]**string{"user": &st.User, "clock": &st.Clock, "mode": &st.Mode, "plan": &st.Plan,
			"instructions": &st.Instructions, "git": &st.Git}[key.Value]
		*field = &v
	case "rewind":
		n, err := strconv.Atoi(val.Value)
		if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!int" || err != nil {
			return &SyntaxError{Line: val.Line, Msg: "rewind: want a whole number of requests"}
		}
		st.Rewind = &n
	case "mcp":
		var m MCPServer
		if err := decodeStrict(val, &m, "server", "instructions", "tools"); err != nil {
			return err
		}
		st.MCP = &m
	case "outside":
		var o OutsideChange
		if err := decodeStrict(val, &o, "path", "content", "delete"); err != nil {
			return err
		}
		st.Outside = &o
	case "compact":
		if val.Kind != yaml.MappingNode {
			return &SyntaxError{Line: val.Line, Msg: "compact: want a mapping with summary and optional reasoning"}
		}
		var c CompactStep
		for i := 0; i+1 < len(val.Content); i += 2 {
			k, v := val.Content[i], resolve(val.Content[i+1])
			if v.Kind != yaml.ScalarNode {
				return &SyntaxError{Line: v.Line, Msg: "compact." + k.Value + ": want a string"}
			}
			switch k.Value {
			case "summary":
				c.Summary = v.Value
			case "reasoning":
				c.Reasoning = v.Value
			default:
				return &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("compact: unknown field %q (want summary, reasoning)", k.Value)}
			}
		}
		st.Compact = &c
	case "assistant":
		var a AssistantStep
		if err := a.decode(val); err != nil {
			return err
		}
		st.Assistant = &a
	default:
		return &SyntaxError{Line: key.Line, Msg: fmt.Sprintf("unknown step %q (want user, assistant, clock, compact, mode, plan, mcp, outside, instructions, git or rewind)", key.Value)}
	}
	return nil
}

func (a *AssistantStep) decode(n *yaml.Node) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return &SyntaxError{Line: n.Line, Msg: "assistant: want a mapping with reasoning, text, calls"}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], resolve(n.Content[i+1])
		switch key.Value {
		case "reasoning", "text":
			if val.Kind != yaml.ScalarNode {
				return &SyntaxError{Line: val.Line, Msg: key.Value + ": want a string"}
			}
			if key.Value == "reasoning" {
				a.Reasoning = val.Value
			} else {
				a.Text = val.Value
			}
		case "calls":
			if val.Kind != yaml.SequenceNode {
				return &SyntaxError{Line: val.Line, Msg: "calls: want a list of tool: {arguments}"}
			}
			for _, c := range val.Content {
				call, err := decodeCall(resolve(c))
				if err != nil {
					return err
				}
				a.Calls = append(a.Calls, call)
			}
		default:
			return &SyntaxError{Line: key.Line, Msg: fmt.Sprintf("assistant: unknown field %q (want reasoning, text, calls)", key.Value)}
		}
	}
	return nil
}

func decodeCall(n *yaml.Node) (Call, error) {
	const shape = "a call is a mapping tool: {arguments}, with expect_error: true beside it when its error is the point, or answer: TEXT when it replays a recorded answer"
	if n.Kind != yaml.MappingNode || len(n.Content) < 2 || len(n.Content) > 6 {
		return Call{}, &SyntaxError{Line: n.Line, Msg: shape}
	}
	// tool: {arguments}, beside it expect_error: true and answer: TEXT, in any order.
	var call Call
	var key, val *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		switch k.Value {
		case "expect_error":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&call.ExpectError) != nil {
				return Call{}, &SyntaxError{Line: v.Line, Msg: "expect_error: want true or false"}
			}
		case "answer":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				return Call{}, &SyntaxError{Line: v.Line, Msg: "answer: want a string, the call's recorded answer"}
			}
			a := v.Value
			call.Answer = &a
		default:
			if key != nil {
				return Call{}, &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("call: unknown field %q beside the tool %q (want expect_error, answer)", k.Value, key.Value)}
			}
			key, val = k, v
		}
	}
	if key == nil {
		return Call{}, &SyntaxError{Line: n.Line, Msg: shape}
	}
	if val.Kind != yaml.MappingNode {
		return Call{}, &SyntaxError{Line: val.Line, Msg: key.Value + ": arguments must be a mapping"}
	}
	args, err := nodeJSON(val)
	if err != nil {
		return Call{}, &SyntaxError{Line: val.Line, Msg: key.Value + ": " + err.Error()}
	}
	call.Tool, call.Args, call.Line = key.Value, args, key.Line
	return call, nil
}

// decodeStrict decodes a mapping node into v, refusing keys not in allowed (checked at every
// level by name) with the key's line.
func decodeStrict(n *yaml.Node, v any, allowed ...string) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return &SyntaxError{Line: n.Line, Msg: "want a mapping of " + strings.Join(allowed, ", ")}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(allowed, k.Value) {
			return &SyntaxError{Line: k.Line, Msg: fmt.Sprintf("unknown field %q (want %s)", k.Value, strings.Join(allowed, ", "))}
		}
	}
	// Nested values are checked by yaml's own decoder with known fields.
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return &SyntaxError{Line: n.Line, Msg: err.Error()}
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		_, msg := fileerr.SplitYAMLLine(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
		return &SyntaxError{Line: n.Line, Msg: msg}
	}
	return nil
}

// resolve follows a YAML alias (*name) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// nodeJSON encodes a YAML node as JSON, keeping the order of mapping keys.
func nodeJSON(n *yaml.Node) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, n); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		if n.Tag == "!!str" {
			v = n.Value
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(out)
	default:
		return fmt.Errorf("line %d: unsupported YAML value", n.Line)
	}
	return nil
}

// Modes returns the permission modes a scenario may name: prompts/modes/<mode>.md.
func Modes() []string { return prompts.Modes() }

func modeExists(m string) bool { return slices.Contains(prompts.Modes(), m) }
