// Package arms holds the arms the lab compares, as data: an arm is a named set of spec 3.2.0's
// measures ([hygiene.Measures]) plus zero or more practices, each a habit of real harnesses with
// its parameters ([Practice]). The built-in arms are an embedded YAML file (builtin.yaml); a user
// adds their own in a file of the same format ([Load]), checked strictly with file:line errors.
//
// The file format:
//
//	arms:
//	  - name: clock-minute            # [a-z0-9][a-z0-9._-]*, unique
//	    description: one line for lab arms and the report
//	    base: spec                     # spec (the default) or plain: every measure off
//	    measures:                      # measures switched from the base, by name
//	      date_in_note: false
//	    practices:                     # each a mapping with exactly one practice and its parameters
//	      - clock: {granularity: minute, place: first_user}
//	      - tool_order: {order: session}
//
// The measures are named as in [MeasureNames]; the practices and their parameters are documented
// on their types ([Clock], [Counter], [ToolOrder], [ToolListChurn], [Prune], [KeepLast], [Window],
// [Insert], [Cwd], [Instructions], [Reasoning]).
package arms

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lab/hygiene"
	"lab/internal/fileerr"
)

// Arm is one column of the lab's comparison: spec 3.2.0's measures the harness applies, and the
// practices of real harnesses it applies on top, in the order listed.
type Arm struct {
	// Name identifies the arm in results (the `arm` column).
	Name string `json:"name"`
	// Description is one line for `lab arms` and the report.
	Description string `json:"description"`
	// Base is the measures the arm starts from: "spec" (every measure on) or "plain" (every
	// measure off); Measures is the result after the file's `measures` switches.
	Base     string           `json:"base"`
	Measures hygiene.Measures `json:"-"`
	// Switched are the measures the file switched from the base, by [MeasureNames] name.
	Switched map[string]bool `json:"switched,omitempty"`
	// On lists the measures on in Measures, by [MeasureNames] name, in that order.
	On []string `json:"measures_on"`
	// Practices are the practices the arm applies, each with its parameters (defaults filled in).
	Practices []Practice `json:"practices,omitempty"`
	// Source is where the arm was defined: "built-in", or "FILE:LINE" of its name.
	Source string `json:"source"`
}

// Practice is one practice of a real harness, with its parameters: exactly one field is set.
type Practice struct {
	Clock         *Clock         `yaml:"clock" json:"clock,omitempty"`
	Counter       *Counter       `yaml:"counter" json:"counter,omitempty"`
	ToolOrder     *ToolOrder     `yaml:"tool_order" json:"tool_order,omitempty"`
	ToolListChurn *ToolListChurn `yaml:"tool_list_churn" json:"tool_list_churn,omitempty"`
	Prune         *Prune         `yaml:"prune" json:"prune,omitempty"`
	KeepLast      *KeepLast      `yaml:"keep_last" json:"keep_last,omitempty"`
	Window        *Window        `yaml:"window" json:"window,omitempty"`
	Insert        *Insert        `yaml:"insert" json:"insert,omitempty"`
	Cwd           *Cwd           `yaml:"cwd" json:"cwd,omitempty"`
	Instructions  *Instructions  `yaml:"instructions" json:"instructions,omitempty"`
	Reasoning     *Reasoning     `yaml:"reasoning" json:"reasoning,omitempty"`
}

// PracticeNames lists the practices a file may name, in the order of [Practice]'s fields.
func PracticeNames() []string {
	t := reflect.TypeFor[Practice]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = t.Field(i).Tag.Get("yaml")
	}
	return out
}

// Name returns the practice's name as a file writes it ("clock", "tool_order"), "" for none.
func (p Practice) Name() string {
	v := reflect.ValueOf(p)
	for i := 0; i < v.NumField(); i++ {
		if !v.Field(i).IsNil() {
			return v.Type().Field(i).Tag.Get("yaml")
		}
	}
	return ""
}

// params returns the practice's parameter struct (a pointer), nil for none.
func (p Practice) params() any {
	v := reflect.ValueOf(p)
	for i := 0; i < v.NumField(); i++ {
		if !v.Field(i).IsNil() {
			return v.Field(i).Interface()
		}
	}
	return nil
}

// Place is where a practice writes its line in the request.
type Place string

// The places a line may go.
const (
	// PlaceSystemStart and PlaceSystemEnd are the start and the end of the system prompt (the
	// gpt-oss "Current date:" and Llama 3.x "Today Date:" templates write the date first).
	PlaceSystemStart Place = "system_start"
	PlaceSystemEnd   Place = "system_end"
	// PlaceFirstUser is a block at the end of the person's first message.
	PlaceFirstUser Place = "first_user"
	// PlaceLatestUser is a block at the end of the latest user message only: it moves to each
	// new user message and leaves the earlier one.
	PlaceLatestUser Place = "latest_user"
	// PlaceEarlyBlock is a message of its own before the person's first message, rewritten in
	// place (as Claude Code's context reminder at the start of the messages).
	PlaceEarlyBlock Place = "early_block"
)

var places = []Place{PlaceSystemStart, PlaceSystemEnd, PlaceFirstUser, PlaceLatestUser, PlaceEarlyBlock}

// Update is when a practice's line is written again.
type Update string

// The times a line is written again.
const (
	// UpdateRequest writes the line afresh for every request.
	UpdateRequest Update = "request"
	// UpdateTurn writes it at each user message and keeps it for the requests of that turn.
	UpdateTurn Update = "turn"
)

// Duration is a time.Duration written in Go syntax ("20s", "1m30s") in a file (read by
// [Parse], 0 or more) and in a manifest's arm definition (its text form).
type Duration time.Duration

// UnmarshalText reads Go duration syntax (a manifest's arm definition).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes Go duration syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Clock is a time line, as harnesses that tell the model the date or the time write one: the
// scenario's clock, cut to Granularity, formatted with Format, written as Text at Place and
// written again at each Update. Sources: the date lines of gpt-oss and Llama 3.x templates,
// Claude Code's and opencode's environment blocks, Codex's environment context.
type Clock struct {
	// Granularity is second, minute, hour or day (the default): the clock is truncated to it
	// before it is formatted, so a line changes only when the truncated time does.
	Granularity string `yaml:"granularity" json:"granularity"`
	// Format is a Go time layout; the default depends on Granularity ("Monday, 2006-01-02" for a
	// day, "2006-01-02 15:04" for a minute, and so on).
	Format string `yaml:"format" json:"format"`
	// Text is the line, {{value}} the formatted time (default "Current time: {{value}}").
	Text string `yaml:"text" json:"text"`
	// Place is where the line goes (default system_start).
	Place Place `yaml:"place" json:"place"`
	// Update is when it is written again (default request).
	Update Update `yaml:"update" json:"update"`
	// PerRequest advances the session's clock by this much before every request (default 0; the
	// scenario's clock_per_request adds to it), as wall time passes between an agent's steps.
	PerRequest Duration `yaml:"per_request" json:"per_request"`
}

// The counters a [Counter] may show.
const (
	CounterTokensLeft = "tokens_left"
	CounterStep       = "step"
)

// Counter is a line that counts, as harnesses that tell the model how much context is left
// ("42000 tokens left") or which step it is on ("Step 7") write one.
type Counter struct {
	// Kind is tokens_left (the default) or step.
	Kind string `yaml:"kind" json:"kind"`
	// Budget is the context budget in tokens tokens_left counts down from (default 128000): the
	// value is Budget less the previous request's prompt tokens as the server counted them
	// (Budget before the first request).
	Budget int `yaml:"budget" json:"budget"`
	// Text is the line, {{value}} the count (default "{{value}} tokens left" or "Step {{value}}").
	Text string `yaml:"text" json:"text"`
	// Place and Update as [Clock]'s (defaults system_end, request).
	Place  Place  `yaml:"place" json:"place"`
	Update Update `yaml:"update" json:"update"`
}

// The orders a [ToolOrder] may give the tool list.
const (
	OrderFixed   = "fixed"
	OrderSession = "session"
	OrderRequest = "request"
)

// ToolOrder is the order of the tool list, as harnesses that build it from a map or a set send
// it in no fixed order.
type ToolOrder struct {
	// Order is fixed (the harness's order), session (the default: shuffled once per session,
	// seeded by the repetition) or request (shuffled again for every request).
	Order string `yaml:"order" json:"order"`
	// Seed is mixed with the repetition (and the request index) into the shuffle's seed (default 0).
	Seed int64 `yaml:"seed" json:"seed"`
}

// The changes a [ToolListChurn] may make.
const (
	ChurnAdd      = "add"
	ChurnRemove   = "remove"
	ChurnDescribe = "describe"
)

// ToolListChurn changes the tool list every Every requests, as harnesses whose tools come and go
// (MCP servers reconnecting, tools filtered per step) or whose descriptions carry a timestamp.
type ToolListChurn struct {
	// Every is how many requests pass between changes (default 5; at least 1).
	Every int `yaml:"every" json:"every"`
	// Change is add (a tool joins the end of the list), remove (Tool leaves the list, and comes
	// back at the next change) or describe (the default: Tool's description ends with the time
	// of the change).
	Change string `yaml:"change" json:"change"`
	// Tool is the tool removed or described. Left out (""), it is the last tool of the list as
	// the harness builds it for the request, before any tool_order shuffle: the built-in tools
	// in the harness's table order (recall last, when spec 3.2.0 §4's recall is on) followed by
	// the tools of the MCP servers connected so far, so an MCP server's last tool once one has
	// connected. lab run refuses a name that is neither a built-in tool nor an MCP tool of a
	// scenario it runs.
	Tool string `yaml:"tool" json:"tool" empty:"the list's last tool"`
}

// The modes of a [Prune].
const (
	PruneBatch        = "batch"
	PruneEveryRequest = "every_request"
)

// Prune replaces old tool output in place, as opencode prunes ("[Old tool result content
// cleared]"): once the tool output in the request passes ThresholdTokens, the results older than
// the protected newest ones are cleared, if that frees at least MinimumTokens. Tokens are
// estimated as characters / 4, rounded, per result (opencode's Token.estimate).
type Prune struct {
	// ThresholdTokens is the tool output, in estimated tokens, past which the harness prunes
	// (default ProtectTokens + MinimumTokens, as they run). Every parameter left out takes its
	// default, whatever else is given, and an explicit 0 means 0 (no protection, no minimum).
	ThresholdTokens int `yaml:"threshold_tokens" json:"threshold_tokens"`
	// ProtectTokens is the newest tool output, in estimated tokens, never pruned (default 40000,
	// opencode's PRUNE_PROTECT); a result that crosses the window is protected whole.
	ProtectTokens int `yaml:"protect_tokens" json:"protect_tokens"`
	// ProtectResults is how many of the newest results are never pruned, whatever their size
	// (default 0); both protections apply.
	ProtectResults int `yaml:"protect_results" json:"protect_results"`
	// MinimumTokens is the least a prune must free, in estimated tokens, to happen at all
	// (default 20000, opencode's PRUNE_MINIMUM).
	MinimumTokens int `yaml:"minimum_tokens" json:"minimum_tokens"`
	// Mode is batch (the default: a prune happens when the threshold is passed, and then not
	// again until the unpruned output passes it again) or every_request (every request prunes
	// whatever has left the protected window).
	Mode string `yaml:"mode" json:"mode"`
	// Text replaces a pruned result (default "[Old tool result content cleared]").
	Text string `yaml:"text" json:"text"`
}

// KeepLast keeps only the newest Results tool results in full and replaces older ones from the
// start (SWE-agent's "last N observations").
type KeepLast struct {
	// Results is how many of the newest results stay whole (at least 1).
	Results int `yaml:"results" json:"results"`
	// Text replaces an older result (default "[Older observation elided]").
	Text string `yaml:"text" json:"text"`
}

// Window drops whole oldest messages when the context passes MaxTokens, as a harness with a
// sliding window does: the messages after the person's first message go, oldest first (an
// assistant message with its tool results as one), until the request is at most TargetTokens.
// Tokens are estimated as characters / 4 of every message's text, reasoning and calls.
type Window struct {
	// MaxTokens is the size, in estimated tokens, past which messages are dropped (required).
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// TargetTokens is the size dropping brings the request to (default MaxTokens).
	TargetTokens int `yaml:"target_tokens" json:"target_tokens"`
}

// The roles an [Insert]ed message may have.
const (
	InsertSystemReminder = "system_reminder"
	InsertUser           = "user"
	InsertSystem         = "system"
)

// AfterLatestUser is the [Insert] position right after the latest user message.
const AfterLatestUser = "after_latest_user"

// Insert puts a message into the history and sends it with every request, as harnesses inject
// reminders (Claude Code's <system-reminder> messages, todo-list nags) into the conversation.
type Insert struct {
	// Role is system_reminder (the default: a user message wrapped in <system-reminder> tags),
	// user or system.
	Role string `yaml:"role" json:"role"`
	// Text is the message's text (default "Remember to keep the todo list up to date.").
	Text string `yaml:"text" json:"text"`
	// At is after_latest_user (the default: the message follows the latest user message, and
	// moves with it) or a 0-based index into the messages after the system prompt (a message
	// inserted there and kept there; past the end, it goes last).
	At string `yaml:"at" json:"at"`
}

// The places a [Cwd] names the working directory.
const (
	CwdSystemPrompt     = "system_prompt"
	CwdToolDescriptions = "tool_descriptions"
)

// Cwd runs every session in a folder of its own (as harnesses started in a fresh temporary
// folder, or a git worktree per task, do) and names its absolute path In the system prompt or
// the tool descriptions, so the first request differs from one session to the next (the
// harness's folder: /tmp/lab-session-<n>/<project>, n the session's place in the run from 1).
// Spec 3.2.0 §11 names no absolute path in the prompt; the practice does on purpose.
type Cwd struct {
	// In is system_prompt (the default: a line at the system prompt's end) or
	// tool_descriptions (the line ends the description of every tool that takes a path, and
	// bash's).
	In string `yaml:"in" json:"in"`
	// Text is the line, {{value}} the absolute path (default "Working directory: {{value}}").
	Text string `yaml:"text" json:"text"`
}

// The sources an [Instructions] practice embeds.
const (
	InstructionsFile      = "file"
	InstructionsGitStatus = "git_status"
)

// Instructions embeds an instruction file (AGENTS.md, CLAUDE.md and the like) or the output of
// git status in the system prompt, rebuilt whenever a scenario step changes it (the scenario's
// `instructions` and `git` steps), instead of spec 3.2.0 §10.3's note on the next user message.
// The file is read from the workspace as each request is built; git status is what the
// scenario's last `git` step said (nothing is embedded before one).
type Instructions struct {
	// Source is file (the default) or git_status.
	Source string `yaml:"source" json:"source"`
	// File is the instruction file's path in the workspace (default "AGENTS.md"); a missing file
	// embeds nothing.
	File string `yaml:"file" json:"file"`
	// Place is system_start or system_end (the default).
	Place Place `yaml:"place" json:"place"`
	// Text is the block, {{value}} the file's text or the status (default "Instructions from
	// {{file}}:\n{{value}}" or "git status:\n{{value}}").
	Text string `yaml:"text" json:"text"`
}

// The reasoning policies of a [Reasoning] practice.
const (
	ReasoningNever        = "never"
	ReasoningThisTurn     = "this_turn"
	ReasoningAllTurns     = "all_turns"
	ReasoningLastMessages = "last_messages"
)

// Reasoning says which assistant messages go back with their reasoning, overriding spec 3.2.0
// §8's measure (this turn's messages only).
type Reasoning struct {
	// Keep is never, this_turn (§8), all_turns or last_messages.
	Keep string `yaml:"keep" json:"keep"`
	// Messages is, for last_messages, how many of the newest messages (of any role) keep the
	// reasoning of the assistant messages among them (at least 1).
	Messages int `yaml:"messages" json:"messages"`
}

//go:embed builtin.yaml
var builtinYAML []byte

// BuiltinFile is the name built-in arms' errors and sources name.
const BuiltinFile = "built-in"

var builtin = func() []Arm {
	a, err := Parse(BuiltinFile, builtinYAML)
	if err != nil {
		panic(err)
	}
	return a
}()

// Builtin returns the lab's own arms, `spec` first, `plain` last (a fresh copy each call).
func Builtin() []Arm {
	out := make([]Arm, len(builtin))
	copy(out, builtin)
	return out
}

// MainArms are the arms the main job compares: the midnight claim of spec 3.2.0 §10.
const MainArms = "spec,date-in-system-prompt"

// Load reads a user's arm file ([Parse]); the arms may not reuse a built-in arm's name.
func Load(path string) ([]Arm, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	for _, a := range out {
		if b := find(builtin, a.Name); b != nil {
			return nil, &fileerr.SyntaxError{File: path, Line: line(a.Source), Msg: fmt.Sprintf("arm %q is a built-in arm's name: choose another", a.Name)}
		}
	}
	return out, nil
}

// Known returns the built-in arms followed by extra (a user's, from [Load]).
func Known(extra []Arm) []Arm { return append(Builtin(), extra...) }

// Select returns the arms of known named in a comma-separated list, in its order, or every
// known arm for "all" or "". An unknown name is an error listing the known ones.
func Select(known []Arm, names string) ([]Arm, error) {
	if names == "all" || names == "" {
		return slices.Clone(known), nil
	}
	var out []Arm
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		a := find(known, n)
		if a == nil {
			list := make([]string, len(known))
			for i, k := range known {
				list[i] = k.Name
			}
			return nil, fmt.Errorf("unknown arm %q (known: %s, all)", n, strings.Join(list, ", "))
		}
		out = append(out, *a)
	}
	return out, nil
}

func find(list []Arm, name string) *Arm {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

func line(source string) int {
	var n int
	if i := strings.LastIndexByte(source, ':'); i >= 0 {
		fmt.Sscanf(source[i+1:], "%d", &n)
	}
	return n
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Parse reads an arm file's bytes (file names it in errors and in each arm's Source). The file
// is read strictly: every problem is a *fileerr.SyntaxError naming file and line (only an empty
// file has no line): a key given twice in one mapping, a second YAML document, a YAML alias, a key
// that is not the format's, a practice that is not one of [PracticeNames], a parameter of the
// wrong type or out of its range, a required parameter missing, two arms of one name. A parameter
// left out takes its default; one given explicitly is checked, never replaced by the default.
func Parse(file string, data []byte) ([]Arm, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err == io.EOF {
		return nil, &fileerr.SyntaxError{File: file, Msg: emptyMsg}
	} else if err != nil {
		return nil, fileerr.FromYAML(file, err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return nil, &fileerr.SyntaxError{File: file, Line: second.Line, Msg: "a second YAML document (after ---): an arm file holds one, `arms:` with a list of arms"}
	} else if err != io.EOF {
		return nil, fileerr.FromYAML(file, err)
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
		return nil, &fileerr.SyntaxError{File: file, Msg: emptyMsg}
	}
	if err := checkTree(doc.Content[0]); err != nil {
		return nil, fileerr.FromYAML(file, err)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &fileerr.SyntaxError{File: file, Line: root.Line, Msg: "want a mapping with `arms:` and a list of arms"}
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Value != "arms" {
			return nil, &fileerr.SyntaxError{File: file, Line: k.Line, Msg: fmt.Sprintf("unknown key %q (want arms)", k.Value)}
		}
		list = root.Content[i+1]
	}
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		l := root.Line
		if list != nil {
			l = list.Line
		}
		return nil, &fileerr.SyntaxError{File: file, Line: l, Msg: "arms: want a list of arms"}
	}
	var out []Arm
	for _, n := range list.Content {
		a, err := parseArm(file, n)
		if err != nil {
			return nil, err
		}
		if prev := find(out, a.Name); prev != nil {
			return nil, &fileerr.SyntaxError{File: file, Line: line(a.Source), Msg: fmt.Sprintf("arm %q is defined twice (first at line %d)", a.Name, line(prev.Source))}
		}
		out = append(out, a)
	}
	return out, nil
}

const emptyMsg = "empty: want `arms:` with a list of arms"

// checkTree walks a document's nodes: a key given twice in one mapping and a YAML alias are
// errors at their line (yaml.v3's node API reports neither).
func checkTree(n *yaml.Node) error {
	switch n.Kind {
	case yaml.AliasNode:
		return &fileerr.SyntaxError{Line: n.Line, Msg: fmt.Sprintf("*%s: an arm file takes no YAML aliases: write the value out", n.Value)}
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode {
				if l, ok := first[k.Value]; ok {
					return &fileerr.SyntaxError{Line: k.Line, Msg: fmt.Sprintf("key %q given twice (first at line %d)", k.Value, l)}
				}
				first[k.Value] = k.Line
			}
		}
	}
	for _, c := range n.Content {
		if err := checkTree(c); err != nil {
			return err
		}
	}
	return nil
}

func parseArm(file string, n *yaml.Node) (Arm, error) {
	bad := func(l int, format string, args ...any) (Arm, error) {
		return Arm{}, &fileerr.SyntaxError{File: file, Line: l, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Kind != yaml.MappingNode {
		return bad(n.Line, "an arm is a mapping with name, description, base, measures, practices")
	}
	a := Arm{Base: "spec"}
	nameLine := n.Line
	var measures, practices *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name", "description", "base":
			if v.Kind != yaml.ScalarNode {
				return bad(v.Line, "%s: want a string", k.Value)
			}
			switch k.Value {
			case "name":
				a.Name, nameLine = v.Value, v.Line
			case "description":
				a.Description = v.Value
			default:
				a.Base = v.Value
			}
		case "measures":
			measures = v
		case "practices":
			practices = v
		default:
			return bad(k.Line, "unknown field %q (want name, description, base, measures, practices)", k.Value)
		}
	}
	if !nameRE.MatchString(a.Name) || a.Name == "all" {
		return bad(nameLine, "name: %q: want lower-case letters, digits, '.', '_' or '-' (and not all)", a.Name)
	}
	if a.Description == "" {
		return bad(nameLine, "arm %q: description: missing", a.Name)
	}
	a.Source = fmt.Sprintf("%s:%d", file, nameLine)
	if file == BuiltinFile {
		a.Source = BuiltinFile
	}
	switch a.Base {
	case "spec":
		a.Measures = hygiene.Spec()
	case "plain":
	default:
		return bad(nameLine, "arm %q: base: %q: want spec or plain", a.Name, a.Base)
	}
	if measures != nil {
		if measures.Kind != yaml.MappingNode {
			return bad(measures.Line, "measures: want a mapping of measure: true|false")
		}
		a.Switched = map[string]bool{}
		for i := 0; i+1 < len(measures.Content); i += 2 {
			k, v := measures.Content[i], measures.Content[i+1]
			p := measureField(&a.Measures, k.Value)
			if p == nil {
				return bad(k.Line, "measures: unknown measure %q (want %s)", k.Value, strings.Join(MeasureNames(), ", "))
			}
			var on bool
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&on) != nil {
				return bad(v.Line, "measures.%s: want true or false", k.Value)
			}
			*p = on
			a.Switched[k.Value] = on
		}
		if len(a.Switched) == 0 {
			a.Switched = nil // `measures: {}` switches nothing, as the manifest JSON says
		}
	}
	if err := a.Measures.Validate(); err != nil {
		return bad(nameLine, "arm %q: %v", a.Name, err)
	}
	a.On = []string{}
	for _, name := range MeasureNames() {
		if MeasureOn(a.Measures, name) {
			a.On = append(a.On, name)
		}
	}
	if practices != nil {
		if practices.Kind != yaml.SequenceNode {
			return bad(practices.Line, "practices: want a list of practice: {parameters}")
		}
		for _, pn := range practices.Content {
			p, err := parsePractice(pn)
			if err != nil {
				return Arm{}, fileerr.FromYAML(file, err)
			}
			for _, q := range a.Practices {
				if q.Name() == p.Name() {
					return bad(pn.Line, "practices: %s given twice", p.Name())
				}
			}
			a.Practices = append(a.Practices, p)
		}
	}
	return a, nil
}

// measureTable names each measure as a file writes it.
var measureTable = []struct {
	name  string
	field func(*hygiene.Measures) *bool
}{
	{"result_ids", func(m *hygiene.Measures) *bool { return &m.ResultIDs }},
	{"stubs", func(m *hygiene.Measures) *bool { return &m.Stubs }},
	{"caps", func(m *hygiene.Measures) *bool { return &m.Caps }},
	{"recall", func(m *hygiene.Measures) *bool { return &m.Recall }},
	{"diffs", func(m *hygiene.Measures) *bool { return &m.Diffs }},
	{"search_dedupe", func(m *hygiene.Measures) *bool { return &m.SearchDedupe }},
	{"compaction_next_turn", func(m *hygiene.Measures) *bool { return &m.CompactionNextTurn }},
	{"date_in_note", func(m *hygiene.Measures) *bool { return &m.DateInNote }},
	{"notes_for_changes", func(m *hygiene.Measures) *bool { return &m.NotesForChanges }},
	{"fixed_tool_list", func(m *hygiene.Measures) *bool { return &m.FixedToolList }},
	{"reasoning_this_turn", func(m *hygiene.Measures) *bool { return &m.ReasoningThisTurn }},
	{"relative_paths", func(m *hygiene.Measures) *bool { return &m.RelativePaths }},
}

// MeasureNames lists the measures as a file names them, in [hygiene.Measures]' order: result_ids
// (§1), stubs (§2), caps (§3), recall (§4), diffs (§5), search_dedupe (§6), compaction_next_turn
// (§7), date_in_note (§10.1-2), notes_for_changes (§10.3), fixed_tool_list (§10.4),
// reasoning_this_turn (§8), relative_paths (§11).
func MeasureNames() []string {
	out := make([]string, len(measureTable))
	for i, m := range measureTable {
		out[i] = m.name
	}
	return out
}

// MeasureOn reports whether the measure of that [MeasureNames] name is on in m.
func MeasureOn(m hygiene.Measures, name string) bool {
	if p := measureField(&m, name); p != nil {
		return *p
	}
	return false
}

func measureField(m *hygiene.Measures, name string) *bool {
	for _, e := range measureTable {
		if e.name == name {
			return e.field(m)
		}
	}
	return nil
}

func parsePractice(n *yaml.Node) (Practice, error) {
	bad := func(l int, format string, args ...any) (Practice, error) {
		return Practice{}, &fileerr.SyntaxError{Line: l, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return bad(n.Line, "a practice is a mapping with exactly one of %s", strings.Join(PracticeNames(), ", "))
	}
	k, v := n.Content[0], n.Content[1]
	var p Practice
	pv := reflect.ValueOf(&p).Elem()
	var field reflect.Value
	for i := 0; i < pv.NumField(); i++ {
		if pv.Type().Field(i).Tag.Get("yaml") == k.Value {
			field = pv.Field(i)
		}
	}
	if !field.IsValid() {
		return bad(k.Line, "unknown practice %q (want %s)", k.Value, strings.Join(PracticeNames(), ", "))
	}
	t := field.Type().Elem()
	params := reflect.New(t)
	g := given{}
	// A practice written with nothing after it ("- insert:") takes every default, as {} does.
	if !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
		if v.Kind != yaml.MappingNode {
			return bad(v.Line, "%s: want a mapping of its parameters", k.Value)
		}
		allowed := yamlKeys(t)
		for i := 0; i+1 < len(v.Content); i += 2 {
			pk, pval := v.Content[i], v.Content[i+1]
			j := slices.Index(allowed, pk.Value)
			if j < 0 {
				return bad(pk.Line, "%s: unknown parameter %q (want %s)", k.Value, pk.Value, strings.Join(allowed, ", "))
			}
			if err := decodeParam(params.Elem().Field(j), pval); err != nil {
				return bad(pk.Line, "%s: %s: %v", k.Value, pk.Value, err)
			}
			g[pk.Value] = pk.Line
		}
	}
	field.Set(params)
	if err := p.params().(interface{ check(given) error }).check(g); err != nil {
		l := k.Line
		var pe *paramError
		if errors.As(err, &pe) && g[pe.key] > 0 {
			l = g[pe.key]
		}
		return bad(l, "%s: %v", k.Value, err)
	}
	return p, nil
}

// given records the parameters a file gave a practice explicitly: each one's key and line. A
// practice's check fills in the default of a parameter left out, and checks one given.
type given map[string]int

func (g given) has(key string) bool { _, ok := g[key]; return ok }

// paramError is a problem with one parameter of a practice: the error points at the parameter's
// line (the practice's when the file left the parameter out).
type paramError struct{ key, msg string }

func (e *paramError) Error() string { return e.key + ": " + e.msg }

func perr(key, format string, args ...any) error {
	return &paramError{key, fmt.Sprintf(format, args...)}
}

// decodeParam reads a parameter's value node into f: a string field takes any scalar, an integer
// field a whole number, a [Duration] Go duration syntax of 0 or more. An error says what was
// wanted and what the file gave.
func decodeParam(f reflect.Value, n *yaml.Node) error {
	want := "a string"
	switch {
	case f.Type() == reflect.TypeFor[Duration]():
		want = "a duration such as 20s or 1m30s"
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		want = "a whole number"
	}
	switch {
	case n.Kind == yaml.MappingNode:
		return fmt.Errorf("want %s, got a mapping", want)
	case n.Kind == yaml.SequenceNode:
		return fmt.Errorf("want %s, got a list", want)
	case n.Kind != yaml.ScalarNode:
		return fmt.Errorf("want %s", want)
	case n.Tag == "!!null":
		return fmt.Errorf("no value: want %s (leave the parameter out for its default)", want)
	}
	switch {
	case f.Type() == reflect.TypeFor[Duration]():
		d, err := time.ParseDuration(n.Value)
		if err != nil {
			return fmt.Errorf("want %s, got %q", want, n.Value)
		}
		if d < 0 {
			return fmt.Errorf("%s: want 0 or more", n.Value)
		}
		f.Set(reflect.ValueOf(Duration(d)))
	case f.Kind() == reflect.String:
		f.SetString(n.Value)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		var x int64
		if n.ShortTag() != "!!int" || n.Decode(&x) != nil || f.OverflowInt(x) {
			return fmt.Errorf("want %s, got %q", want, n.Value)
		}
		f.SetInt(x)
	default:
		return fmt.Errorf("unsupported parameter type %s", f.Type()) // a new field's type: teach decodeParam
	}
	return nil
}

func yamlKeys(t reflect.Type) []string {
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = t.Field(i).Tag.Get("yaml")
	}
	return out
}

// oneOf sets *v to def when the file left key out, and checks it is one of allowed.
func oneOf[T ~string](g given, key string, v *T, def T, allowed ...T) error {
	if !g.has(key) {
		*v = def
	}
	if !slices.Contains(allowed, *v) {
		s := make([]string, len(allowed))
		for i, a := range allowed {
			s[i] = string(a)
		}
		return perr(key, "%q: want %s", *v, strings.Join(s, ", "))
	}
	return nil
}

// atLeast sets *v to def when the file left key out, and checks it is at least min.
func atLeast(g given, key string, v *int, def, min int) error {
	if !g.has(key) {
		*v = def
	}
	if *v < min {
		return perr(key, "%d: want at least %d", *v, min)
	}
	return nil
}

// required checks that the file gave key, which has no default.
func required(g given, key string) error {
	if !g.has(key) {
		return perr(key, "missing (required)")
	}
	return nil
}

// someText sets *v to def when the file left key out, and refuses an empty one given.
func someText(g given, key string, v *string, def string) error {
	if !g.has(key) {
		*v = def
	}
	if *v == "" {
		return perr(key, "empty: want some text (leave %s out for %q)", key, def)
	}
	return nil
}

// valueText is [someText] for a text that must hold {{value}}.
func valueText(g given, key string, v *string, def string) error {
	if err := someText(g, key, v, def); err != nil {
		return err
	}
	if !strings.Contains(*v, "{{value}}") {
		return perr(key, "%q has no {{value}}", *v)
	}
	return nil
}

// Layouts are the default formats of a [Clock] per granularity.
var Layouts = map[string]string{
	"second": "2006-01-02 15:04:05",
	"minute": "2006-01-02 15:04",
	"hour":   "2006-01-02 15:00",
	"day":    "Monday, 2006-01-02",
}

func (c *Clock) check(g given) error {
	if err := oneOf(g, "granularity", &c.Granularity, "day", "second", "minute", "hour", "day"); err != nil {
		return err
	}
	if err := someText(g, "format", &c.Format, Layouts[c.Granularity]); err != nil {
		return err
	}
	if err := valueText(g, "text", &c.Text, "Current time: {{value}}"); err != nil {
		return err
	}
	if err := oneOf(g, "place", &c.Place, PlaceSystemStart, places...); err != nil {
		return err
	}
	return oneOf(g, "update", &c.Update, UpdateRequest, UpdateRequest, UpdateTurn)
}

// Truncate cuts t to the clock's granularity in t's own zone.
func (c *Clock) Truncate(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	switch c.Granularity {
	case "second":
		return time.Date(y, mo, d, h, mi, s, 0, t.Location())
	case "minute":
		return time.Date(y, mo, d, h, mi, 0, 0, t.Location())
	case "hour":
		return time.Date(y, mo, d, h, 0, 0, 0, t.Location())
	}
	return time.Date(y, mo, d, 0, 0, 0, 0, t.Location())
}

// Line returns the clock's line for the time t.
func (c *Clock) Line(t time.Time) string {
	return strings.ReplaceAll(c.Text, "{{value}}", c.Truncate(t).Format(c.Format))
}

func (c *Counter) check(g given) error {
	if err := oneOf(g, "kind", &c.Kind, CounterTokensLeft, CounterTokensLeft, CounterStep); err != nil {
		return err
	}
	if err := atLeast(g, "budget", &c.Budget, 128000, 1); err != nil {
		return err
	}
	def := "{{value}} tokens left"
	if c.Kind == CounterStep {
		def = "Step {{value}}"
	}
	if err := valueText(g, "text", &c.Text, def); err != nil {
		return err
	}
	if err := oneOf(g, "place", &c.Place, PlaceSystemEnd, places...); err != nil {
		return err
	}
	return oneOf(g, "update", &c.Update, UpdateRequest, UpdateRequest, UpdateTurn)
}

func (o *ToolOrder) check(g given) error {
	return oneOf(g, "order", &o.Order, OrderSession, OrderFixed, OrderSession, OrderRequest)
}

func (c *ToolListChurn) check(g given) error {
	if err := atLeast(g, "every", &c.Every, 5, 1); err != nil {
		return err
	}
	if err := oneOf(g, "change", &c.Change, ChurnDescribe, ChurnAdd, ChurnRemove, ChurnDescribe); err != nil {
		return err
	}
	switch {
	case g.has("tool") && c.Change == ChurnAdd:
		return perr("tool", "only with change: remove or describe (add adds a tool of its own)")
	case g.has("tool") && c.Tool == "":
		return perr("tool", "empty: name a tool (leave tool out for the list's last tool)")
	}
	return nil
}

// The defaults of a [Prune]'s protect_tokens and minimum_tokens: opencode's PRUNE_PROTECT and
// PRUNE_MINIMUM, in estimated tokens.
const (
	DefaultPruneProtect = 40000
	DefaultPruneMinimum = 20000
)

// PrunedText is the default text of a pruned tool result (opencode's).
const PrunedText = "[Old tool result content cleared]"

// ElidedText is the default text of a result [KeepLast] elided.
const ElidedText = "[Older observation elided]"

func (p *Prune) check(g given) error {
	for _, f := range []struct {
		key string
		v   *int
	}{{"threshold_tokens", &p.ThresholdTokens}, {"protect_tokens", &p.ProtectTokens}, {"protect_results", &p.ProtectResults}, {"minimum_tokens", &p.MinimumTokens}} {
		if *f.v < 0 {
			return perr(f.key, "%d: want 0 or more", *f.v)
		}
	}
	// An omitted parameter takes its default whatever else is given; an explicit 0 means 0.
	if !g.has("protect_tokens") {
		p.ProtectTokens = DefaultPruneProtect
	}
	if !g.has("minimum_tokens") {
		p.MinimumTokens = DefaultPruneMinimum
	}
	if !g.has("threshold_tokens") {
		p.ThresholdTokens = p.ProtectTokens + p.MinimumTokens
	}
	if err := someText(g, "text", &p.Text, PrunedText); err != nil {
		return err
	}
	return oneOf(g, "mode", &p.Mode, PruneBatch, PruneBatch, PruneEveryRequest)
}

func (k *KeepLast) check(g given) error {
	if err := required(g, "results"); err != nil {
		return err
	}
	if k.Results < 1 {
		return perr("results", "%d: want at least 1", k.Results)
	}
	return someText(g, "text", &k.Text, ElidedText)
}

func (w *Window) check(g given) error {
	if err := required(g, "max_tokens"); err != nil {
		return err
	}
	if w.MaxTokens < 1 {
		return perr("max_tokens", "%d: want at least 1", w.MaxTokens)
	}
	if err := atLeast(g, "target_tokens", &w.TargetTokens, w.MaxTokens, 1); err != nil {
		return err
	}
	if w.TargetTokens > w.MaxTokens {
		return perr("target_tokens", "%d: want at most max_tokens (%d)", w.TargetTokens, w.MaxTokens)
	}
	return nil
}

func (in *Insert) check(g given) error {
	if err := oneOf(g, "role", &in.Role, InsertSystemReminder, InsertSystemReminder, InsertUser, InsertSystem); err != nil {
		return err
	}
	if err := someText(g, "text", &in.Text, "Remember to keep the todo list up to date."); err != nil {
		return err
	}
	if !g.has("at") {
		in.At = AfterLatestUser
	}
	if _, ok := in.Index(); !ok && in.At != AfterLatestUser {
		return perr("at", "%q: want after_latest_user or an index (0 or more)", in.At)
	}
	return nil
}

// Index returns the insert's fixed index, ok false when it follows the latest user message.
func (in *Insert) Index() (int, bool) {
	var n int
	if _, err := fmt.Sscanf(in.At, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != in.At {
		return 0, false
	}
	return n, true
}

func (c *Cwd) check(g given) error {
	if err := oneOf(g, "in", &c.In, CwdSystemPrompt, CwdSystemPrompt, CwdToolDescriptions); err != nil {
		return err
	}
	return valueText(g, "text", &c.Text, "Working directory: {{value}}")
}

func (in *Instructions) check(g given) error {
	if err := oneOf(g, "source", &in.Source, InstructionsFile, InstructionsFile, InstructionsGitStatus); err != nil {
		return err
	}
	if err := someText(g, "file", &in.File, "AGENTS.md"); err != nil {
		return err
	}
	// A path in the workspace, relative to the project root (spec 3.2.0 §11), as the
	// scenario's own paths are: never outside it.
	if clean := path.Clean(in.File); path.IsAbs(in.File) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return perr("file", "%q: want a path relative to the project root, inside it (such as AGENTS.md or docs/AGENTS.md)", in.File)
	}
	if err := oneOf(g, "place", &in.Place, PlaceSystemEnd, PlaceSystemStart, PlaceSystemEnd); err != nil {
		return err
	}
	def := "Instructions from {{file}}:\n{{value}}"
	if in.Source == InstructionsGitStatus {
		def = "git status:\n{{value}}"
	}
	return valueText(g, "text", &in.Text, def)
}

func (r *Reasoning) check(g given) error {
	policies := []string{ReasoningNever, ReasoningThisTurn, ReasoningAllTurns, ReasoningLastMessages}
	if !g.has("keep") {
		return perr("keep", "missing (required): want %s", strings.Join(policies, ", "))
	}
	if err := oneOf(g, "keep", &r.Keep, "", policies...); err != nil {
		return err
	}
	switch {
	case r.Keep == ReasoningLastMessages && !g.has("messages"):
		return perr("messages", "missing (required with keep: last_messages)")
	case r.Keep == ReasoningLastMessages && r.Messages < 1:
		return perr("messages", "%d: want at least 1", r.Messages)
	case r.Keep != ReasoningLastMessages && g.has("messages"):
		return perr("messages", "only with keep: last_messages")
	}
	return nil
}

// Find returns the practice of that name in the arm, nil when the arm has none.
func (a *Arm) Find(name string) *Practice {
	for i := range a.Practices {
		if a.Practices[i].Name() == name {
			return &a.Practices[i]
		}
	}
	return nil
}
