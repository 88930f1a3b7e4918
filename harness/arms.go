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
}

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
