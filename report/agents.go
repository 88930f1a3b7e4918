package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"lab/metrics"
	"lab/row"
	"lab/scorecard"
)

// AgentRun is one real coding agent's part of `lab agents`: the rows its lab proxy recorded and
// the request bodies it saved (one [row.RequestLine] per row), or why the agent has none.
type AgentRun struct {
	Agent   string
	Version string
	// Error is why the agent could not be installed, configured or started, or why its capture
	// could not be read; "" when it ran.
	Error  string
	Rows   []metrics.Sample
	Bodies []row.RequestLine
	// Scorecard is the agent's hygiene scorecard ([scorecard.Score] over its main
	// conversation); nil when it was not judged, with ScorecardError saying why when that was
	// a failure.
	Scorecard      []scorecard.Entry
	ScorecardError string
	// ScriptSteps and ScriptServed count a scripted run's steps and those the scripted model
	// served (0, 0 for a run without a script); ScriptNotes name each step that was not, and
	// why (skipped for want of a tool, not reached because the agent stopped, an error).
	ScriptSteps, ScriptServed int
	ScriptNotes               []string
}

// LoadAgentCapture reads a lab proxy's capture folder (the part layout, [metrics.ReadRun]) and
// its saved request bodies (every requests-*.jsonl in dir, [row.RequestLine] a line). Errors
// name the file and line.
func LoadAgentCapture(dir string) ([]metrics.Sample, []row.RequestLine, error) {
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		return nil, nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "requests-*.jsonl"))
	sort.Strings(files)
	var bodies []row.RequestLine
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
		for n := 1; sc.Scan(); n++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var l row.RequestLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				f.Close()
				return nil, nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			bodies = append(bodies, l)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return rows, bodies, nil
}

// AgentRequest is one request of an agent's session as the agents' report shows it.
type AgentRequest struct {
	// Conversation is the row's scenario (the conversation the proxy grouped it into) and
	// Index its request_index there.
	Conversation string
	Index        int32
	// Side is the row's side_request: a request the agent sent beside its session (a title, a
	// memory sub-agent), a conversation of its own.
	Side bool
	// Segment is the row's divergence_segment: where the server's rendering of this request
	// first differed from the previous one of its conversation ("" for a first request).
	Segment string
	// Offset is the byte offset in the saved request body where it first differs from the
	// previous body of its conversation; -1 when there is no previous body or the bodies are
	// missing, or they are equal. Before and After are short excerpts of the two bodies there.
	Offset        int
	Before, After string
	// Prompt, Cached, Expected and Reread are the row's token counts; nil is unknown.
	Prompt                   int64
	Cached, Expected, Reread *int64
	// Match is cached = expected within 1 % of expected (both known); Reason says why not.
	Match  bool
	Reason string
}

// AgentSummary is one agent's line of the agents' table.
type AgentSummary struct {
	Agent, Version string
	Requests       int
	// Prompt sums every row's prompt tokens; PromptWhereCached and Cached the rows whose cached
	// tokens are known; Reread the rows whose re-read tokens are known, and RereadKnown counts
	// those rows (0: the re-read tokens are unknown, never 0).
	Prompt, PromptWhereCached, Cached, Reread int64
	RereadKnown                               int
	// CachedWhereExpected over ExpectedWhereCached is the cache efficiency (rows with both).
	CachedWhereExpected, ExpectedWhereCached int64
	// Matched counts the rows with cached = expected within 1 %.
	Matched int
	Error   string
}

// CachedShare returns Cached over PromptWhereCached (the rows whose cached tokens are known),
// nil when no row's cached tokens are known.
func (s *AgentSummary) CachedShare() *float64 {
	if s.PromptWhereCached == 0 {
		return nil
	}
	return new(float64(s.Cached) / float64(s.PromptWhereCached))
}

// RereadTokens returns Reread, nil when no row's re-read tokens are known.
func (s *AgentSummary) RereadTokens() *int64 {
	if s.RereadKnown == 0 {
		return nil
	}
	return new(s.Reread)
}

// Efficiency returns the cache efficiency (cached over expected cached tokens, on the rows
// where both are known), nil when none is.
func (s *AgentSummary) Efficiency() *float64 {
	if s.ExpectedWhereCached == 0 {
		return nil
	}
	return new(float64(s.CachedWhereExpected) / float64(s.ExpectedWhereCached))
}

// excerptBytes is how much of each body an excerpt shows before and after the first difference.
const excerptBytes = 24

// FirstDifference returns the byte offset where b first differs from a (-1 when they are
// equal) and an excerpt of each around it: a few bytes of shared context, then what each
// holds there, cut at whole UTF-8 characters.
func FirstDifference(a, b []byte) (int, string, string) {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return -1, "", ""
	}
	from := max(0, i-excerptBytes)
	for from > 0 && !utf8.RuneStart(a[from]) {
		from--
	}
	cut := func(s []byte) string {
		end := min(len(s), i+2*excerptBytes)
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out := string(s[from:end])
		if from > 0 {
			out = "…" + out
		}
		if end < len(s) {
			out += "…"
		}
		return out
	}
	return i, cut(a), cut(b)
}

// AgentRequests returns each row of run in request order with its divergence and match.
func AgentRequests(run AgentRun) []AgentRequest {
	type key struct {
		conv string
		idx  int32
	}
	bodies := map[key][]byte{}
	for _, l := range run.Bodies {
		bodies[key{l.Scenario, l.RequestIndex}] = l.Body
	}
	rows := append([]metrics.Sample(nil), run.Rows...)
	sort.SliceStable(rows, func(i, j int) bool {
		if !rows[i].StartedAt.Equal(rows[j].StartedAt) {
			return rows[i].StartedAt.Before(rows[j].StartedAt)
		}
		return rows[i].RequestIndex < rows[j].RequestIndex
	})
	prev := map[string][]byte{}
	out := make([]AgentRequest, 0, len(rows))
	for _, s := range rows {
		r := AgentRequest{Conversation: s.Scenario, Index: s.RequestIndex, Side: s.SideRequest, Segment: s.DivergenceSegment,
			Offset: -1, Prompt: s.PromptTokens, Cached: s.CachedTokens, Expected: s.ExpectedCachedTokens, Reread: s.RereadTokens}
		body, ok := bodies[key{s.Scenario, s.RequestIndex}]
		if p, seen := prev[s.Scenario]; ok && seen {
			r.Offset, r.Before, r.After = FirstDifference(p, body)
		}
		if ok {
			prev[s.Scenario] = body
		}
		switch {
		case s.Error != "":
			r.Reason = "error: " + s.Error
		case s.CachedTokens == nil:
			r.Reason = "cached tokens unknown"
		case s.ExpectedCachedTokens == nil:
			r.Reason = "expected cached tokens unknown"
		default:
			c, e := float64(*s.CachedTokens), float64(*s.ExpectedCachedTokens)
			if math.Abs(c-e) <= 0.01*e || c == e {
				r.Match = true
			} else {
				r.Reason = fmt.Sprintf("cached %d, expected %d", *s.CachedTokens, *s.ExpectedCachedTokens)
			}
		}
		if !r.Match && s.Warnings != "" {
			r.Reason += " (" + s.Warnings + ")"
		}
		out = append(out, r)
	}
	return out
}

// SummarizeAgent sums an agent's requests into its line of the agents' table.
func SummarizeAgent(run AgentRun, reqs []AgentRequest) AgentSummary {
	s := AgentSummary{Agent: run.Agent, Version: run.Version, Requests: len(reqs), Error: run.Error}
	for _, r := range reqs {
		s.Prompt += r.Prompt
		if r.Cached != nil {
			s.Cached += *r.Cached
			s.PromptWhereCached += r.Prompt
		}
		if r.Reread != nil {
			s.Reread += *r.Reread
			s.RereadKnown++
		}
		if r.Cached != nil && r.Expected != nil {
			s.CachedWhereExpected += *r.Cached
			s.ExpectedWhereCached += *r.Expected
		}
		if r.Match {
			s.Matched++
		}
	}
	return s
}

// WriteAgentsReport writes the Markdown report comparing the agents: the agents' table (one
// line per agent: requests, cached share, re-read tokens, cache efficiency, rows with cached =
// expected within 1 %, or why the agent has no rows), then per agent each request with the
// segment where it first diverged from the previous request of its conversation, where the
// two saved request bodies first differ (an excerpt of each), tokens re-read, the cached
// share and the cache efficiency, and the reason of every row that does not match.
func WriteAgentsReport(w io.Writer, runs []AgentRun) error {
	var b strings.Builder
	b.WriteString("# Real coding agents through lab proxy\n\n")
	b.WriteString("| agent | version | requests | cached share | re-read tokens | cache efficiency | cached = expected (1 %) | error |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|\n")
	all := make([][]AgentRequest, len(runs))
	for i, run := range runs {
		all[i] = AgentRequests(run)
		s := SummarizeAgent(run, all[i])
		match := "–"
		if s.Requests > 0 {
			match = fmt.Sprintf("%d/%d", s.Matched, s.Requests)
		}
		reread := "unknown"
		if n := s.RereadTokens(); n != nil {
			reread = fmt.Sprint(*n)
			if s.RereadKnown < s.Requests {
				reread += fmt.Sprintf(" (%d unknown)", s.Requests-s.RereadKnown)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", s.Agent, s.Version, s.Requests,
			percent(s.CachedShare()), reread, percent(s.Efficiency()), match, cell(s.Error))
	}
	writeScorecard(&b, runs)
	for i, run := range runs {
		fmt.Fprintf(&b, "\n## %s %s\n\n", run.Agent, run.Version)
		if run.Error != "" {
			fmt.Fprintf(&b, "Not measured: %s\n", run.Error)
			continue
		}
		if run.ScriptSteps > 0 {
			fmt.Fprintf(&b, "The script: %d of %d steps served.\n", run.ScriptServed, run.ScriptSteps)
			for _, n := range run.ScriptNotes {
				fmt.Fprintf(&b, "- %s\n", cell(n))
			}
			b.WriteString("\n")
		}
		if len(all[i]) == 0 {
			b.WriteString("No request reached the proxy.\n")
			continue
		}
		b.WriteString("| conversation | # | prompt | cached | expected | re-read | cached share | efficiency | diverged at | body changed (before → after) | reason |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|\n")
		for _, r := range all[i] {
			var share, eff *float64
			if r.Cached != nil && r.Prompt > 0 {
				share = new(float64(*r.Cached) / float64(r.Prompt))
			}
			if r.Cached != nil && r.Expected != nil && *r.Expected > 0 {
				eff = new(float64(*r.Cached) / float64(*r.Expected))
			}
			change := "–"
			if r.Offset >= 0 {
				change = fmt.Sprintf("byte %d: %q → %q", r.Offset, r.Before, r.After)
			}
			seg := r.Segment
			if seg == "" {
				seg = "–"
			}
			conv := r.Conversation
			if r.Side {
				conv += " (side)"
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(conv), r.Index, r.Prompt,
				count(r.Cached), count(r.Expected), count(r.Reread), percent(share), percent(eff), cell(seg), cell(change), cell(r.Reason))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeScorecard writes the hygiene scorecard, one row per rule of [scorecard.Rules] and one
// column per agent with a scorecard (a broken cell names its request, segment, count and cost),
// then per agent each broken or not-seen entry with what was seen; nothing when no agent has one.
func writeScorecard(b *strings.Builder, runs []AgentRun) {
	var with []AgentRun
	for _, r := range runs {
		if r.Scorecard != nil {
			with = append(with, r)
		}
	}
	failures := func() {
		for _, r := range runs {
			if r.Scorecard == nil && r.ScorecardError != "" {
				fmt.Fprintf(b, "\nNo hygiene scorecard for %s: %s\n", r.Agent, r.ScorecardError)
			}
		}
	}
	if len(with) == 0 {
		failures()
		return
	}
	b.WriteString("\n## Hygiene scorecard (spec 3.2.0, as the requests show it)\n\n")
	b.WriteString("Each cell: kept, not seen (the session gave the rule no occasion), or broken at request #N of the\n")
	b.WriteString("agent's main conversation, with how many requests broke it and the tokens that cost (re-read\n")
	b.WriteString("tokens where the break made the server re-read, else the tokens sent beyond the rule).\n\n")
	b.WriteString("| rule | §")
	for _, r := range with {
		fmt.Fprintf(b, " | %s", r.Agent)
	}
	b.WriteString(" |\n|---|---")
	for range with {
		b.WriteString("|---")
	}
	b.WriteString("|\n")
	for i, rule := range scorecard.Rules {
		fmt.Fprintf(b, "| %s | %s", rule.Name, rule.Section)
		for _, r := range with {
			b.WriteString(" | ")
			if i < len(r.Scorecard) {
				b.WriteString(scoreCell(r.Scorecard[i]))
			}
		}
		b.WriteString(" |\n")
	}
	failures()
	for _, r := range with {
		var lines []string
		for _, e := range r.Scorecard {
			if e.Verdict == scorecard.Broken || e.Verdict == scorecard.NotSeen {
				lines = append(lines, fmt.Sprintf("- %s (%s), %s: %s", e.Rule, e.Section, e.Verdict, cell(e.Detail)))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(b, "\n%s:\n\n%s\n", r.Agent, strings.Join(lines, "\n"))
		}
	}
}

// scoreCell is one scorecard cell: "kept", "not seen", or "broken at #N (segment), ×T, K tokens".
func scoreCell(e scorecard.Entry) string {
	if e.Verdict != scorecard.Broken {
		return string(e.Verdict)
	}
	c := fmt.Sprintf("**broken** at #%d", e.Request)
	if e.Segment != "" {
		c += " (" + cell(e.Segment) + ")"
	}
	if e.Times > 1 {
		c += fmt.Sprintf(", ×%d", e.Times)
	}
	return c + ", " + count(e.Tokens) + " tokens"
}

// count formats a token count, "unknown" for nil.
func count(p *int64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}
