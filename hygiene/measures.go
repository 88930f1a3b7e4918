package hygiene

import "fmt"

// Measures is the set of spec 3.2.0 measures a session applies. The zero value switches every
// measure off; [Spec] switches every measure on. An arm of the lab is a named Measures value.
type Measures struct {
	// ResultIDs gives every tool result an id and a read its bracket (§1).
	ResultIDs bool
	// Stubs answers an unchanged re-read that lies wholly inside an earlier full read still in
	// the request with a stub (§2). Needs ResultIDs.
	Stubs bool
	// DateInNote keeps the system prompt free of any clock, built once per session, and carries
	// the date in a note on the first user message and on the next one after it changed
	// (§10.1-3). Off, the practice of several harnesses applies: the system prompt carries
	// today's date and is rebuilt for every request.
	DateInNote bool
	// ReasoningThisTurn sends each assistant message of the current turn back with its reasoning
	// and earlier turns' messages without (§8). Off, no reasoning is ever sent back.
	ReasoningThisTurn bool
	// RelativePaths names the project by its root's last component and no absolute path in the
	// system prompt (§11). Off, the system prompt names the absolute working directory.
	RelativePaths bool
}

// Spec returns every measure as spec 3.2.0 specifies it.
func Spec() Measures {
	return Measures{ResultIDs: true, Stubs: true, DateInNote: true, ReasoningThisTurn: true, RelativePaths: true}
}

// Validate reports a combination of measures that cannot hold together.
func (m Measures) Validate() error {
	if m.Stubs && !m.ResultIDs {
		return fmt.Errorf("hygiene: stubs (§2) need result ids (§1): a stub names an earlier result by its id")
	}
	return nil
}
