package hygiene

import "lab/chat"

// CurrentTurnReasoning returns the messages a request carries, given the session's stored
// history: with §8 on, each assistant message after the last user message (the current turn)
// keeps its reasoning and every earlier one carries none; with §8 off, none carries any. The
// stored history is not changed (§8: "What is stored is unchanged"). A tool result never starts a
// turn.
func CurrentTurnReasoning(history []chat.Message, m Measures) []chat.Message {
	out := make([]chat.Message, len(history))
	copy(out, history)
	lastUser := -1
	for i, msg := range out {
		if msg.Role == chat.RoleUser {
			lastUser = i
		}
	}
	for i := range out {
		if out[i].Role != chat.RoleAssistant {
			continue
		}
		if !m.ReasoningThisTurn || i < lastUser {
			out[i].Reasoning = ""
		}
	}
	return out
}
