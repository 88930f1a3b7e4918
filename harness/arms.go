package harness

import (
	"fmt"
	"strings"

	"lab/hygiene"
)

// Arm is a named set of measures: one column of the lab's comparison.
type Arm struct {
	Name string
	// Description is one line for `lab arms` and the report.
	Description string
	// Measures are the spec's measures the arm applies.
	Measures hygiene.Measures
	// Practice holds what real harnesses do that the spec forbids; the zero value does none.
	Practice Practice
}

// Practice is a set of things real harnesses do to earlier context, which the spec's one rule
// forbids ("Nothing already sent to the model is ever rewritten").
type Practice struct {
	// PruneAfterChars, when not 0, replaces the output of every tool result but the newest
	// KeepResults with PrunedText once the history's tool results exceed this many characters
	// (as OpenCode and others prune old tool output in place). A pruned result stays pruned.
	PruneAfterChars int
	// KeepLastResults, when not 0, keeps only the newest this many tool results in full and
	// replaces older ones with ElidedText, from the start (the SWE-agent "last N observations").
	KeepLastResults int
	// ReasoningAllTurns sends every assistant message back with its reasoning, earlier turns
	// included (against §8's "earlier turns carry none").
	ReasoningAllTurns bool
}

// The texts that replace tool output the practices remove.
const (
	PrunedText = "[Old tool result content cleared]"
	ElidedText = "[Older observation elided]"
	// pruneKeep is how many of the newest tool results pruning leaves alone.
	pruneKeep = 4
)

// Arms returns every arm the lab knows, `spec` first: spec 3.2.0 as written, one ablation per
// measure the harness implements (that measure alone switched off, with the measures that depend
// on it), the practices real harnesses use instead, and `plain`, every measure off.
func Arms() []Arm {
	with := func(f func(*hygiene.Measures)) hygiene.Measures {
		m := hygiene.Spec()
		f(&m)
		return m
	}
	return []Arm{
		{Name: "spec", Description: "every measure as spec 3.2.0 specifies", Measures: hygiene.Spec()},
		{Name: "date-in-system-prompt", Description: "the system prompt starts with today's date and is rebuilt for every request, as several harnesses do (instead of §10.2's note)",
			Measures: with(func(m *hygiene.Measures) { m.DateInNote = false })},
		{Name: "no-result-ids", Description: "no ids or brackets on tool results (§1 off), so no stubs, caps, recall or search dedupe either",
			Measures: with(func(m *hygiene.Measures) {
				m.ResultIDs, m.Stubs, m.Caps, m.Recall, m.SearchDedupe = false, false, false, false, false
			})},
		{Name: "no-stubs", Description: "an unchanged re-read is answered in full (§2 off)",
			Measures: with(func(m *hygiene.Measures) { m.Stubs = false })},
		{Name: "no-caps", Description: "large output goes in uncapped (§3 off)",
			Measures: with(func(m *hygiene.Measures) { m.Caps = false })},
		{Name: "no-recall", Description: "no recall tool (§4 off)",
			Measures: with(func(m *hygiene.Measures) { m.Recall = false })},
		{Name: "no-diffs", Description: "edits answer with a plain confirmation instead of the diff (§5 off)",
			Measures: with(func(m *hygiene.Measures) { m.Diffs = false })},
		{Name: "no-search-dedupe", Description: "a repeated search or listing is answered in full (§6 off)",
			Measures: with(func(m *hygiene.Measures) { m.SearchDedupe = false })},
		{Name: "compaction-separate-request", Description: "compaction as a separate request with its own system prompt, no tools and the transcript pasted (§7 off)",
			Measures: with(func(m *hygiene.Measures) { m.CompactionNextTurn = false })},
		{Name: "changes-in-system-prompt", Description: "a changed mode, plan or MCP instructions rebuild the system prompt instead of arriving as a note (§10.3 off)",
			Measures: with(func(m *hygiene.Measures) { m.NotesForChanges = false })},
		{Name: "tool-list-changes", Description: "the tool list drops the tools the permission mode forbids instead of answering unavailable (§10.4 off)",
			Measures: with(func(m *hygiene.Measures) { m.FixedToolList = false })},
		{Name: "reasoning-never", Description: "reasoning is never sent back, not even during the turn (§8 off)",
			Measures: with(func(m *hygiene.Measures) { m.ReasoningThisTurn = false })},
		{Name: "absolute-paths", Description: "the system prompt names the absolute working directory (§11 off)",
			Measures: with(func(m *hygiene.Measures) { m.RelativePaths = false })},
		{Name: "prune-old-output", Description: "once tool output passes 40,000 characters, old results are cleared in place, all but the newest 4 (a practice the spec forbids)",
			Measures: hygiene.Spec(), Practice: Practice{PruneAfterChars: 40000}},
		{Name: "last-5-observations", Description: "only the newest 5 tool results are kept, older ones elided, from the start (SWE-agent style)",
			Measures: hygiene.Spec(), Practice: Practice{KeepLastResults: 5}},
		{Name: "reasoning-all-turns", Description: "every assistant message goes back with its reasoning, earlier turns included (§8 says earlier turns carry none)",
			Measures: hygiene.Spec(), Practice: Practice{ReasoningAllTurns: true}},
		{Name: "plain", Description: "every measure off: a plain harness", Measures: hygiene.Measures{}},
	}
}

// MainArms are the arms the main job compares: the midnight claim of spec 3.2.0 §10.
const MainArms = "spec,date-in-system-prompt"

// SelectArms returns the arms named in a comma-separated list, or every arm for "all". An unknown
// name is an error listing the known ones.
func SelectArms(names string) ([]Arm, error) {
	all := Arms()
	if names == "all" || names == "" {
		return all, nil
	}
	var out []Arm
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, a := range all {
			if a.Name == n {
				out, found = append(out, a), true
				break
			}
		}
		if !found {
			known := make([]string, len(all))
			for i, a := range all {
				known[i] = a.Name
			}
			return nil, fmt.Errorf("unknown arm %q (known: %s, all)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}
