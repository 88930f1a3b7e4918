package hygiene

import "fmt"

// Measures is the set of spec 3.2.0 measures a session applies, one switch per measure. The zero
// value switches every measure off, which is a plain harness: no ids, full re-reads, uncapped
// output, plain edit confirmations, compaction as a separate request, reasoning never sent back,
// the date and the absolute working directory in a system prompt rebuilt for every request.
// [Spec] switches every measure on: the documented default.
type Measures struct {
	// ResultIDs gives every tool result an id and a read its bracket (§1).
	ResultIDs bool
	// Stubs answers an unchanged re-read that lies wholly inside an earlier full read still in
	// the request with a stub (§2). Needs ResultIDs.
	Stubs bool
	// Caps keeps the head and tail of a large result (§3). Needs ResultIDs (the elided line
	// names the full output by its id).
	Caps bool
	// Recall offers the recall tool, which shows any stored result again (§4). Needs ResultIDs.
	Recall bool
	// Diffs answers edit, multiedit, apply_patch and write with the unified diff of the change
	// (§5); off, with a plain confirmation.
	Diffs bool
	// SearchDedupe answers a repeated search or listing whose result is the same text with
	// "Same result as #id" (§6). Needs ResultIDs.
	SearchDedupe bool
	// CompactionNextTurn asks for the summary as the next turn of the same conversation and adds
	// the files-read table (§7); off, compaction is a separate request with its own system
	// prompt, no tools and the transcript pasted.
	CompactionNextTurn bool
	// DateInNote keeps the system prompt free of any clock, built once per session, and carries
	// the date in a note on the first user message and on the next one after it changed
	// (§10.1-3). Off, the system prompt carries today's date and is rebuilt for every request.
	DateInNote bool
	// NotesForChanges carries what changes during a session (mode, plan, instructions, MCP
	// instructions) as a note on the next user message (§10.3); off, the system prompt is
	// rebuilt with the new values.
	NotesForChanges bool
	// FixedToolList offers every tool the session could ever meet from the start, answering
	// `unavailable` when its requirement is not met (§10.4); off, the list changes with the mode.
	FixedToolList bool
	// ReasoningThisTurn sends each assistant message of the current turn back with its reasoning
	// and earlier turns' messages without (§8). Off, no reasoning is ever sent back.
	ReasoningThisTurn bool
	// RelativePaths names the project by its root's last component and no absolute path in the
	// system prompt, notes or task messages (§11). Off, the system prompt names the absolute
	// working directory.
	RelativePaths bool
}

// Spec returns every measure as spec 3.2.0 specifies it.
func Spec() Measures {
	return Measures{
		ResultIDs: true, Stubs: true, Caps: true, Recall: true, Diffs: true, SearchDedupe: true,
		CompactionNextTurn: true, DateInNote: true, NotesForChanges: true, FixedToolList: true,
		ReasoningThisTurn: true, RelativePaths: true,
	}
}

// Validate reports a combination of measures that cannot hold together.
func (m Measures) Validate() error {
	for _, need := range []struct {
		on   bool
		what string
	}{
		{m.Stubs, "stubs (§2)"}, {m.Caps, "caps (§3)"}, {m.Recall, "recall (§4)"}, {m.SearchDedupe, "search dedupe (§6)"},
	} {
		if need.on && !m.ResultIDs {
			return fmt.Errorf("hygiene: %s need result ids (§1): they name a result by its id", need.what)
		}
	}
	return nil
}
