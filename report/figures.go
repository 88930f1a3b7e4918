package report

import "lab/metrics"

// The figures of a row that the report's judgements (the prefill sanity check and the spec's
// claims) read, each read in one place: a row's figure is known or it is not, and an unknown
// one is left out, never counted as 0.

// promptOf returns a request's prompt tokens; false when unknown (no prompt: a request that
// failed before the server answered).
func promptOf(s *metrics.Sample) (int64, bool) { return s.PromptTokens, s.PromptTokens > 0 }

// rereadOf returns the prompt tokens a request read again (prefill of what the KV cache did not
// hold: prompt − cached tokens); false when unknown (the server's cached tokens or the prompt
// are unknown).
func rereadOf(s *metrics.Sample) (int64, bool) { return metrics.Int64(s.RereadTokens) }

// prefillOf returns a request's prefill time in nanoseconds as the server reported it (Ollama
// prompt_eval_duration); false when unknown: 0 (a server processes at least one token of every
// prompt, so 0 means the backend did not say) or a request that ended with an error.
func prefillOf(s *metrics.Sample) (int64, bool) { return s.PrefillNs, s.PrefillNs > 0 && s.Error == "" }
