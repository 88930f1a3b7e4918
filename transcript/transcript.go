// Package transcript is a real agent session read from the agent's own record of it: a coding
// agent's session file (Claude Code's JSON lines under ~/.claude/projects/, Codex's rollout
// files under ~/.codex/sessions/) or a lab proxy capture. A [Session] is the neutral form the
// readers produce and `lab scenario import` turns into a lab scenario: the person's turns, the
// model's steps (reasoning, visible text, tool calls) with the recorded result of every call,
// the times they happened, and what was left out and why.
//
// The readers redact as they read: secrets (API keys, tokens, the values of `Authorization`
// and similar fields) and the recording user's home directory never reach a Session.
package transcript

import (
	"encoding/json"
	"time"
)

// Session is one agent session, in order.
type Session struct {
	// Format is the reader that produced it: "claude-code", "codex" or "capture".
	Format string
	// File is the file it was read from, as given to the reader.
	File string
	// Agent is the agent and its version as the file records them ("claude-code 2.0.14"),
	// "" when the file does not say.
	Agent string
	// Model is the model the session talked to as the file records it, "" when unknown.
	Model string
	// Project is the base name of the project root the session ran in ("linkstash"), and
	// StartDir where the session started relative to it ("" for the root). The absolute path
	// is not kept (it names the user's home).
	Project, StartDir string
	// Start is the time of the first event, zero when the file has no times.
	Start time.Time
	// Events are the session's events in order.
	Events []Event
	// Skipped are the records the reader read and did not keep, in file order: every line
	// of the file is either kept in an event or listed here.
	Skipped []Skip
}

// Event is one thing that happened in the session: exactly one of User, Assistant and Compact
// is set.
type Event struct {
	// Line is the 1-based line of the file the event starts at.
	Line int
	// Time is when it happened, zero when the file does not say.
	Time time.Time
	// User is what the person typed: a new turn.
	User *string
	// Assistant is one reply of the model: one request's answer.
	Assistant *Step
	// Compact is a compaction the agent made (its summary replaces the history, spec §7).
	Compact *Compact
}

// Step is one reply of the model and the results of the tool calls it made.
type Step struct {
	// Reasoning is the reasoning text the file holds ("" when none, or when the agent keeps
	// it encrypted: then ReasoningHidden is true).
	Reasoning       string
	ReasoningHidden bool
	// Text is the visible text of the reply.
	Text string
	// Calls are the reply's tool calls, in order, each with its recorded result.
	Calls []Call
	// Usage is the token counts the agent recorded for this reply's request, nil when none.
	Usage *Usage
}

// Call is one tool call and its recorded result.
type Call struct {
	// ID is the call's id in the file ("toolu_01…", "call_…").
	ID string
	// Name is the agent's tool name as the file records it ("Read", "shell", "mcp__db__query").
	Name string
	// Args is the call's arguments as the file records them: a JSON object.
	Args json.RawMessage
	// Tool and ToolArgs are the lab tool the call maps to and its arguments in the lab's
	// schema (tools package: read, list, glob, grep, edit, write, multiedit, apply_patch,
	// bash), when the reader maps this agent tool; Tool is "" otherwise, and the call can only
	// be replayed from its recorded result.
	Tool     string
	ToolArgs json.RawMessage
	// Result is the tool result the agent sent back to the model, as text; IsError whether
	// the agent marked it as an error. HasResult is false for a call the file holds no
	// result for (the session ended or was cut before it).
	Result    string
	IsError   bool
	HasResult bool
	// ResultLine is the 1-based line of the file the result is on, 0 without one.
	ResultLine int
}

// Compact is a compaction: the summary the model wrote and the line it is on.
type Compact struct {
	Summary string
}

// Usage is a request's token counts as the agent recorded them (the provider's usage fields);
// a nil field was not recorded. InputTokens is the whole prompt, cached part included
// ([lab/chat.Usage].Prompt's meaning: Anthropic's input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens, OpenAI's input_tokens); CachedTokens the part read from the
// prompt cache (cache_read_input_tokens, cached_input_tokens); CacheWriteTokens the part
// written to it (cache_creation_input_tokens, Codex's cache_write_input_tokens); OutputTokens
// the tokens generated, reasoning included; ReasoningTokens the reasoning part
// (reasoning_output_tokens).
type Usage struct {
	InputTokens, CachedTokens, CacheWriteTokens, OutputTokens, ReasoningTokens *int64
}

// Skip is a record of the file the reader did not keep.
type Skip struct {
	// Line is its 1-based line.
	Line int
	// Kind is the record's type as the file names it ("summary", "file-history-snapshot").
	Kind string
	// Why says why it was not kept ("not part of the conversation", "a hook's output").
	Why string
}
