// Package hygiene implements the rules of the context-hygiene specification 3.2.0 as a set of
// measures that can each be switched off, and the per-session state the rules need. The
// repository's docs/spec/ says, rule by rule, what the lab does, where the code is and what
// checks it.
//
// The pipeline, for one session:
//
//  1. [ParseConfig] reads loop.json's `context` section: the texts and numbers of the spec.
//  2. [NewSession] starts the session state for a set of [Measures].
//  3. Every tool result goes in through the session as it is inserted (the spec's one rule:
//     nothing already sent is rewritten): [Session.Read] gives a read its bracket or a stub (§1,
//     §2), [Session.Result] gives any other result its id (§1). Every result is stored in full.
//  4. [Session.Note] builds the note a user message carries (§10.3), [EnvironmentLines] the
//     environment block of the system prompt (§11), and [CurrentTurnReasoning] decides which
//     assistant messages carry their reasoning back (§8).
package hygiene
