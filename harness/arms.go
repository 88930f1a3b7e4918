package harness

import (
	"lab/arms"
)

// CacheBreakpoints is where the arm places explicit prompt-cache markers (Anthropic
// cache_control, chat.Request.CacheBreakpoints): at the end of the system prompt when the arm keeps
// it the same for the whole session (the date travels in a note, §10.2, changes arrive as notes,
// §10.3, and no practice writes into it), and at the end of the last message always, so each
// request reads what the one before it wrote. No marker after the tool list: Anthropic caches
// tools before the system prompt, and a cached tool list would be found by the next session,
// whose cold start relies on a nonce at the start of the system prompt.
func CacheBreakpoints(a arms.Arm) []string {
	if a.Measures.DateInNote && a.Measures.NotesForChanges && !rewritesSystem(a) {
		return []string{"system", "last-message"}
	}
	return []string{"last-message"}
}

// rewritesSystem reports whether one of the arm's practices writes into the system prompt.
func rewritesSystem(a arms.Arm) bool {
	for _, p := range a.Practices {
		switch {
		case p.Clock != nil && (p.Clock.Place == arms.PlaceSystemStart || p.Clock.Place == arms.PlaceSystemEnd),
			p.Counter != nil && (p.Counter.Place == arms.PlaceSystemStart || p.Counter.Place == arms.PlaceSystemEnd),
			p.Instructions != nil:
			return true
		}
	}
	return false
}
