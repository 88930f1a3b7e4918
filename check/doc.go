// Package check is the lab's CI gate: declared expectations about a run's samples, checked.
//
// It works in three steps:
//
//  1. [Load] (or [Parse]) decodes a check file (YAML; JSON is YAML too) strictly into a [File]:
//     which scenarios and arms to run, how many repetitions, and a list of [Expectation]s. Any
//     mistake (an unknown key, a wrong type, an unknown scenario or arm, a negative number, a
//     share outside 0..1) is a *[SyntaxError] printed as "file:line: message". The format is
//     documented in checks/README.md.
//  2. [EvaluateRuns] (or [Evaluate], without manifests) leaves out the sessions that did not
//     complete (report.Sessions) and checks every expectation against a run's []metrics.Sample, for example those
//     metrics.ReadRun returns, and returns a [Result]: each expectation [Held] or [Failed] with
//     the requests (scenario, arm, repetition, request index, first divergent segment) that
//     broke it.
//  3. [WriteText] prints one line per failure and a summary ("3 expectations, 2 held, 1
//     failed"); [WriteJSON] prints the whole result as one JSON document.
//
// Three kinds of expectation cover what a harness author wants a CI job to hold:
//
//   - min_cached_share: every request from a given one on has at least this share of its prompt
//     tokens cached (cached_tokens when the server said, else expected_cached_tokens; the
//     output says which);
//   - no_divergence_before: no request first diverges from the server's cache in a segment
//     earlier than the one named, in the order system < tools < conversation;
//   - max_reread_tokens: a scenario × arm re-reads at most this many tokens in all (the mean over
//     repetitions).
//
// The package reads samples only; running scenarios is cmd/lab's job (`lab check`).
package check
