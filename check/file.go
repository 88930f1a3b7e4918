package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"lab/internal/fileerr"
)

// Any in an expectation's scenario or arm matches every scenario (or arm) of the samples.
const Any = "*"

// All in a file's scenarios or arms list stands for every known scenario (or arm), as
// `lab run --scenario all` does.
const All = "all"

// The values of [Expectation].NoDivergenceBefore, the ranks of the order
// system < tools < conversation that a prompt's segments follow.
const (
	// SegmentTools: no request may diverge in the system prompt.
	SegmentTools = "tools"
	// SegmentConversation: no request may diverge in the system prompt or the tool list; it may
	// diverge only in the conversation (messages, reasoning, tool results, notes, the
	// generation prompt).
	SegmentConversation = "conversation"
)

// DefaultFromRequest is the first request (0-based) a per-request expectation checks when the
// file gives no from_request: the first request of a session meets whatever the server's cache
// held before (nothing, or another session's prompt), which says nothing about the harness.
const DefaultFromRequest = 1

// Known lists the names a check file may use. Parse rejects an expectation, a scenarios entry or
// an arms entry naming anything else. A nil list accepts every name.
type Known struct {
	// Scenarios are the scenario names (for `lab check`: the embedded scenarios, plus those of
	// the run folder evaluated).
	Scenarios []string
	// Arms are the arm names (harness.Arms, plus the run folder's).
	Arms []string
}

// File is a decoded check file: what to run and what to expect of the samples.
type File struct {
	// Path is the file as the user named it; errors and output name it.
	Path string `json:"file"`
	// Scenarios are the scenarios `lab check` runs, "all" expanded; when the file has no
	// scenarios key, those its expectations name (none when every expectation says "*").
	Scenarios []string `json:"scenarios"`
	// Arms are the arms `lab check` runs, "all" expanded; when the file has no arms key, those
	// its expectations name.
	Arms []string `json:"arms"`
	// Repeat is how many repetitions of each scenario × arm `lab check` runs; at least 1
	// (default 1).
	Repeat int `json:"repeat"`
	// Expect are the expectations, in file order; at least one.
	Expect []Expectation `json:"expect"`
}

// Expectation is one entry of a check file's expect list: a scenario and arm pattern and
// exactly one condition (MinCachedShare, NoDivergenceBefore or MaxRereadTokens).
type Expectation struct {
	// Line is the 1-based line of the entry in the file.
	Line int `json:"line"`
	// Scenario is a scenario name or [Any].
	Scenario string `json:"scenario"`
	// Arm is an arm name or [Any].
	Arm string `json:"arm"`

	// MinCachedShare, when set, is the least cached share (cached tokens / prompt tokens, a
	// number in 0..1) every request from FromRequest on must reach. Cached tokens are the
	// sample's cached_tokens when known, else its expected_cached_tokens.
	MinCachedShare *float64 `json:"min_cached_share,omitempty"`
	// ExceptTurnStarts, with MinCachedShare, exempts the first request of every user turn but
	// the first (step 1 of turn 2 on), where Qwen3's chat template drops the previous turns'
	// reasoning and the cache misses from there.
	ExceptTurnStarts bool `json:"except_turn_starts,omitempty"`
	// NoDivergenceBefore, when set, is [SegmentTools] or [SegmentConversation]: no request
	// from FromRequest on may first diverge from the server's cache in a segment earlier
	// than this one in the order system < tools < conversation. A request whose prompt only
	// extended the cache has no divergence and passes.
	NoDivergenceBefore string `json:"no_divergence_before,omitempty"`
	// FromRequest is the first request (0-based request_index) MinCachedShare and
	// NoDivergenceBefore check; [DefaultFromRequest] when the file gives none; 0 for
	// MaxRereadTokens, which counts every request.
	FromRequest int `json:"from_request"`
	// MaxRereadTokens, when set, is the most re-read tokens (the sum of reread_tokens over a
	// scenario × arm's requests, the mean over its repetitions) each matching scenario × arm may
	// have.
	MaxRereadTokens *int64 `json:"max_reread_tokens,omitempty"`
}

// Kind names the expectation's condition by its key in the file: "min_cached_share",
// "no_divergence_before" or "max_reread_tokens".
func (e *Expectation) Kind() string {
	switch {
	case e.MinCachedShare != nil:
		return keyMinShare
	case e.NoDivergenceBefore != "":
		return keyNoDivergence
	case e.MaxRereadTokens != nil:
		return keyMaxReread
	}
	return ""
}

// String describes the expectation in one line, for example
// "midnight/spec: cached share ≥ 0.25 from request 1".
func (e *Expectation) String() string {
	who := e.Scenario + "/" + e.Arm
	switch {
	case e.MinCachedShare != nil:
		s := fmt.Sprintf("%s: cached share ≥ %s from request %d", who, formatShare(*e.MinCachedShare), e.FromRequest)
		if e.ExceptTurnStarts {
			s += ", except at turn starts"
		}
		return s
	case e.NoDivergenceBefore != "":
		return fmt.Sprintf("%s: no divergence before %s from request %d", who, e.NoDivergenceBefore, e.FromRequest)
	case e.MaxRereadTokens != nil:
		return fmt.Sprintf("%s: re-read tokens ≤ %s", who, formatInt(*e.MaxRereadTokens))
	}
	return who
}

// The keys of a check file.
const (
	keyScenarios        = "scenarios"
	keyArms             = "arms"
	keyRepeat           = "repeat"
	keyExpect           = "expect"
	keyScenario         = "scenario"
	keyArm              = "arm"
	keyMinShare         = "min_cached_share"
	keyExceptTurnStarts = "except_turn_starts"
	keyNoDivergence     = "no_divergence_before"
	keyFromRequest      = "from_request"
	keyMaxReread        = "max_reread_tokens"
)

var (
	topKeys         = []string{keyScenarios, keyArms, keyRepeat, keyExpect}
	expectationKeys = []string{keyScenario, keyArm, keyMinShare, keyExceptTurnStarts, keyNoDivergence, keyFromRequest, keyMaxReread}
)

// SyntaxError is a problem in a check file: it prints as "file:line: message" (or "file:
// message" when the problem has no single line; File the check file as the user named it). It
// is [fileerr.SyntaxError], the one type of a wrong file the user wrote: scenario.SyntaxError is
// the same type, so errors.As with either matches both.
type SyntaxError = fileerr.SyntaxError

// Load reads and decodes the check file at path with [Parse]. A file that cannot be read is an
// error wrapping the fs error (errors.Is(err, fs.ErrNotExist) for a missing file); a file that
// reads but is wrong is a *[SyntaxError].
func Load(path string, known Known) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read check file: %w", err)
	}
	return Parse(path, data, known)
}

// Parse decodes a check file (YAML; JSON is YAML too) strictly: an unknown key, a repeated key,
// a value of the wrong type, an unknown scenario or arm, a negative number, a share outside
// 0..1, an expectation with no condition or with two, or a second YAML document is a
// *[SyntaxError] naming name and the line.
func Parse(name string, data []byte, known Known) (*File, error) {
	p := &parser{file: name, known: known}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, p.errorf(0, "empty file: want a mapping with an expect list")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, p.yamlError(err)
		}
		return nil, p.errorf(extra.Line, "a second YAML document: a check file holds one")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return p.parseFile(root)
}

type parser struct {
	file  string
	known Known
}

func (p *parser) errorf(line int, format string, args ...any) *SyntaxError {
	return &SyntaxError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// yamlError turns a YAML syntax error into a *SyntaxError with its line.
func (p *parser) yamlError(err error) error {
	line, msg := fileerr.SplitYAMLLine(strings.TrimPrefix(err.Error(), "yaml: "))
	return p.errorf(line, "%s", msg)
}

// fields checks that n is a mapping with only the allowed keys, each once, and returns the
// values by key and the keys' nodes.
func (p *parser) fields(n *yaml.Node, what string, allowed []string) (map[string]*yaml.Node, map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, p.errorf(n.Line, "%s: want a mapping, got %s", what, describe(n))
	}
	vals, keys := map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, nil, p.errorf(k.Line, "%s: key %s: want a name", what, describe(k))
		}
		if !slices.Contains(allowed, k.Value) {
			return nil, nil, p.errorf(k.Line, "%s: unknown key %q (known: %s)", what, k.Value, strings.Join(allowed, ", "))
		}
		if prev, dup := keys[k.Value]; dup {
			return nil, nil, p.errorf(k.Line, "%s: key %q given twice (first at line %d)", what, k.Value, prev.Line)
		}
		vals[k.Value], keys[k.Value] = v, k
	}
	return vals, keys, nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return strconv.Quote(n.Value)
		default:
			return n.Value
		}
	}
	return "a document"
}

func (p *parser) str(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || n.Value == "" {
		return "", p.errorf(n.Line, "%s: want a name, got %s", key, describe(n))
	}
	return n.Value, nil
}

func (p *parser) integer(n *yaml.Node, key string) (int64, error) {
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, p.errorf(n.Line, "%s: want a whole number, got %s", key, describe(n))
	}
	if v < 0 {
		return 0, p.errorf(n.Line, "%s: %d is negative", key, v)
	}
	return v, nil
}

func (p *parser) share(n *yaml.Node, key string) (float64, error) {
	var v float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") || n.Decode(&v) != nil {
		return 0, p.errorf(n.Line, "%s: want a share between 0 and 1, got %s", key, describe(n))
	}
	if math.IsNaN(v) || v < 0 || v > 1 {
		return 0, p.errorf(n.Line, "%s: %s is outside 0..1 (a share: 0.9 is 90 %%)", key, n.Value)
	}
	return v, nil
}

func (p *parser) boolean(n *yaml.Node, key string) (bool, error) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, p.errorf(n.Line, "%s: want true or false, got %s", key, describe(n))
	}
	return v, nil
}

// names decodes a scenarios or arms list (a list of names, or one name) and expands "all".
func (p *parser) names(n *yaml.Node, key string, known []string) ([]string, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
		if len(items) == 0 {
			return nil, p.errorf(n.Line, "%s: empty list", key)
		}
	}
	var out []string
	for _, it := range items {
		v, err := p.str(it, key)
		if err != nil {
			return nil, err
		}
		if v == All {
			if known == nil {
				return nil, p.errorf(it.Line, "%s: %q needs the list of known names", key, All)
			}
			for _, k := range known {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
			continue
		}
		if err := p.checkName(it.Line, key, v, known, false); err != nil {
			return nil, err
		}
		if slices.Contains(out, v) {
			return nil, p.errorf(it.Line, "%s: %q listed twice", key, v)
		}
		out = append(out, v)
	}
	return out, nil
}

func (p *parser) checkName(line int, key, v string, known []string, anyOK bool) error {
	if anyOK && v == Any {
		return nil
	}
	if known != nil && !slices.Contains(known, v) {
		extra := ""
		if anyOK {
			extra = `, or "*" for every one`
		}
		return p.errorf(line, "%s: unknown %s %q (known: %s%s)", key, key, v, strings.Join(known, ", "), extra)
	}
	return nil
}

func (p *parser) parseFile(root *yaml.Node) (*File, error) {
	vals, _, err := p.fields(root, "check file", topKeys)
	if err != nil {
		return nil, err
	}
	f := &File{Path: p.file, Repeat: 1}
	listed := map[string]bool{}
	if n, ok := vals[keyScenarios]; ok {
		if f.Scenarios, err = p.names(n, "scenario", p.known.Scenarios); err != nil {
			return nil, err
		}
		listed[keyScenarios] = true
	}
	if n, ok := vals[keyArms]; ok {
		if f.Arms, err = p.names(n, "arm", p.known.Arms); err != nil {
			return nil, err
		}
		listed[keyArms] = true
	}
	if n, ok := vals[keyRepeat]; ok {
		r, err := p.integer(n, keyRepeat)
		if err != nil {
			return nil, err
		}
		if r < 1 {
			return nil, p.errorf(n.Line, "repeat: want at least 1")
		}
		f.Repeat = int(r)
	}
	list, ok := vals[keyExpect]
	if !ok {
		return nil, p.errorf(root.Line, "no expect list: a check file needs at least one expectation")
	}
	if list.Kind != yaml.SequenceNode {
		return nil, p.errorf(list.Line, "expect: want a list of expectations, got %s", describe(list))
	}
	if len(list.Content) == 0 {
		return nil, p.errorf(list.Line, "expect: the list is empty: a check file needs at least one expectation")
	}
	for _, item := range list.Content {
		e, err := p.expectation(item)
		if err != nil {
			return nil, err
		}
		// An expectation about a scenario or arm the file does not run could never be checked
		// by `lab check FILE`.
		for _, c := range []struct {
			key, v string
			list   []string
		}{{keyScenarios, e.Scenario, f.Scenarios}, {keyArms, e.Arm, f.Arms}} {
			if listed[c.key] && c.v != Any && !slices.Contains(c.list, c.v) {
				return nil, p.errorf(e.Line, "%q is not among the file's %s (%s)", c.v, c.key, strings.Join(c.list, ", "))
			}
		}
		f.Expect = append(f.Expect, e)
	}
	// Without a scenarios (arms) key, the file runs those its expectations name.
	for _, e := range f.Expect {
		if !listed[keyScenarios] && e.Scenario != Any && !slices.Contains(f.Scenarios, e.Scenario) {
			f.Scenarios = append(f.Scenarios, e.Scenario)
		}
		if !listed[keyArms] && e.Arm != Any && !slices.Contains(f.Arms, e.Arm) {
			f.Arms = append(f.Arms, e.Arm)
		}
	}
	return f, nil
}

func (p *parser) expectation(n *yaml.Node) (Expectation, error) {
	e := Expectation{Line: n.Line, FromRequest: DefaultFromRequest}
	vals, keys, err := p.fields(n, "expectation", expectationKeys)
	if err != nil {
		return e, err
	}
	for _, k := range []string{keyScenario, keyArm} {
		v, ok := vals[k]
		if !ok {
			return e, p.errorf(n.Line, "expectation: missing %s (a name, or \"*\" for every one)", k)
		}
		s, err := p.str(v, k)
		if err != nil {
			return e, err
		}
		known := p.known.Scenarios
		if k == keyArm {
			known, e.Arm = p.known.Arms, s
		} else {
			e.Scenario = s
		}
		if err := p.checkName(v.Line, k, s, known, true); err != nil {
			return e, err
		}
	}
	var conds []string
	for _, k := range []string{keyMinShare, keyNoDivergence, keyMaxReread} {
		if _, ok := vals[k]; ok {
			conds = append(conds, k)
		}
	}
	switch len(conds) {
	case 0:
		return e, p.errorf(n.Line, "expectation: no condition: want one of %s, %s or %s", keyMinShare, keyNoDivergence, keyMaxReread)
	case 1:
	default:
		return e, p.errorf(keys[conds[1]].Line, "expectation: both %s and %s: give one condition per entry", conds[0], conds[1])
	}
	switch conds[0] {
	case keyMinShare:
		v, err := p.share(vals[keyMinShare], keyMinShare)
		if err != nil {
			return e, err
		}
		e.MinCachedShare = &v
		if b, ok := vals[keyExceptTurnStarts]; ok {
			if e.ExceptTurnStarts, err = p.boolean(b, keyExceptTurnStarts); err != nil {
				return e, err
			}
		}
	case keyNoDivergence:
		v := vals[keyNoDivergence]
		s, err := p.str(v, keyNoDivergence)
		if err != nil {
			return e, err
		}
		seg, ok := divergenceLimit(s)
		if !ok {
			if s == "system" {
				return e, p.errorf(v.Line, "%s: system: no segment comes before the system prompt, so this could never fail; want tools or conversation", keyNoDivergence)
			}
			return e, p.errorf(v.Line, "%s: unknown segment %q: want tools (no divergence in the system prompt) or conversation (none in the system prompt or the tool list; message, reasoning, tool result, note and generation prompt mean the same)", keyNoDivergence, s)
		}
		e.NoDivergenceBefore = seg
	case keyMaxReread:
		v, err := p.integer(vals[keyMaxReread], keyMaxReread)
		if err != nil {
			return e, err
		}
		e.MaxRereadTokens = &v
	}
	if k, ok := keys[keyExceptTurnStarts]; ok && e.MinCachedShare == nil {
		return e, p.errorf(k.Line, "%s goes with %s only", keyExceptTurnStarts, keyMinShare)
	}
	if v, ok := vals[keyFromRequest]; ok {
		if e.MaxRereadTokens != nil {
			return e, p.errorf(keys[keyFromRequest].Line, "%s goes with %s or %s: %s counts every request", keyFromRequest, keyMinShare, keyNoDivergence, keyMaxReread)
		}
		r, err := p.integer(v, keyFromRequest)
		if err != nil {
			return e, err
		}
		if r > math.MaxInt32 {
			return e, p.errorf(v.Line, "%s: %d is too large", keyFromRequest, r)
		}
		e.FromRequest = int(r)
	}
	if e.MaxRereadTokens != nil {
		e.FromRequest = 0
	}
	return e, nil
}

// divergenceLimit maps a no_divergence_before value to its canonical name: tools, or
// conversation for every segment kind of the conversation.
func divergenceLimit(s string) (string, bool) {
	switch s {
	case SegmentTools:
		return SegmentTools, true
	case SegmentConversation, "message", "messages", "reasoning", "tool result", "tool results", "note", "notes", "generation prompt":
		return SegmentConversation, true
	}
	return "", false
}

// segmentRank places a sample's divergence_segment in the order system (0) < tools (1) <
// conversation (2), by position in the prompt: a later system or developer message ("system N",
// "developer N") lies in the conversation. ok is false for a name the lab does not write.
func segmentRank(seg string) (rank int, ok bool) {
	switch seg {
	case "system":
		return 0, true
	case "tools":
		return 1, true
	case "note", "generation prompt":
		return 2, true
	}
	for _, p := range []string{"message ", "reasoning ", "tool result ", "system ", "developer "} {
		if n, found := strings.CutPrefix(seg, p); found {
			if _, err := strconv.Atoi(n); err == nil {
				return 2, true
			}
		}
	}
	return 0, false
}

// limitRank is the rank of a canonical no_divergence_before value.
func limitRank(limit string) int {
	if limit == SegmentTools {
		return 1
	}
	return 2
}

func formatShare(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// formatInt writes n with thousands separators: 60,000.
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
