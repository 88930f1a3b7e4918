// Package harness is the lab's agent loop: it replays a scripted scenario (package scenario)
// through the context-hygiene measures of an [Arm] and sends each request to a [Backend],
// recording one metrics.Sample per request. The tools it runs are package tools'.
//
// For one session ([RunSession]):
//
//  1. The scenario's workspace is written into a sandbox (tools.NewSandboxWorkspace: a private
//     folder, shown as /tmp/lab-sandbox/<scenario>); the tools (read, list, grep, edit) run for
//     real there.
//  2. The system prompt is built once (spec 3.2.0 §10.1), with the environment lines (§11); the
//     practice arm that puts the date in it rebuilds it for every request.
//  3. A user step appends the person's message, with a <session-note> carrying the date on the
//     first message and the first one after the date changed (§10.3).
//  4. An assistant step is one request: the system prompt, the fixed tool list (§10.4) and the
//     history, the current turn's assistant messages with their reasoning (§8). The backend
//     sends it and leaves the server's cache as if the model had written the scripted reply.
//     The harness computes the expected cached tokens (the longest common token prefix of the
//     rendered prompt and what the server's cache held) and where the two first differ.
//  5. The reply's tool calls run; each result is inserted through the hygiene session (ids,
//     brackets, stubs, diffs: §1, §2, §5) and appended.
//
// [Run] runs a matrix of scenarios × arms × repetitions and writes results/run_id=<run-id>/ (one part per shard: metrics.CreatePart).
package harness
