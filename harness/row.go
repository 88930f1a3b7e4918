package harness

import (
	"encoding/json"

	"lab/cachesim"
	"lab/chat"
	"lab/metrics"
)

// This file fills a row (metrics.Sample) from what was measured about one request, for the
// harness's own requests and for the requests `lab proxy` captures (package capture), so that
// both write the same columns the same way.

// SetResult copies what the server reported about a request into its row: prompt, cached
// (with its source), completion tokens, the server's prefill and load times, and the provider's
// normalised usage (cache writes with their 5-minute and 1-hour split, reasoning tokens
// generated, usage_fields: each figure's wire field as sorted JSON, so the same usage gives the
// same text), and cost_usd: res.CostUSD, else price(usage) when price is set and knows the
// model. The times the client measures itself (time to first token, total, request bytes) are
// the caller's.
func SetResult(s *metrics.Sample, res *chat.Result, price func(*chat.Usage) (float64, bool)) {
	s.PromptTokens = res.PromptTokens
	s.CachedTokens = res.CachedTokens
	s.CachedSource = string(res.CachedSource)
	s.CompletionTokens = res.CompletionTokens
	s.PrefillNs, s.LoadNs = int64(res.Prefill), int64(res.Load)
	s.CostUSD = res.CostUSD
	u := res.Usage
	if u == nil {
		return
	}
	s.CacheWriteTokens, s.CacheWrite5mTokens, s.CacheWrite1hTokens = u.CacheWrite, u.CacheWrite5m, u.CacheWrite1h
	if u.ReasoningGenerated != nil {
		s.ReasoningTokensGenerated = *u.ReasoningGenerated
	}
	if len(u.Fields) > 0 {
		b, _ := json.Marshal(u.Fields) // map keys sorted
		s.UsageFields = string(b)
	}
	if s.CostUSD == nil && price != nil {
		if usd, ok := price(u); ok {
			s.CostUSD = &usd
		}
	}
}

// SetAttribution copies an attribution of the request's cache use ([cachesim.Attributor]) into
// its row: expected cached tokens, the first divergence and its segment, reasoning tokens sent,
// the re-read tokens by segment kind and the context overflow mark; an unknown one marks the
// row expected_unknown and copies nothing else. It returns the attribution's warnings.
func SetAttribution(s *metrics.Sample, a cachesim.Attribution) []string {
	if a.Unknown {
		s.ExpectedUnknown = true
		return nil
	}
	s.ExpectedUnknown = false
	s.ExpectedCachedTokens = a.ExpectedCachedTokens
	s.DivergenceToken, s.DivergenceSegment = a.DivergenceToken, a.DivergenceSegment
	s.ReasoningTokensSent = a.ReasoningTokensSent
	s.RereadSystemTokens, s.RereadToolsTokens = a.Reread.System, a.Reread.Tools
	s.RereadMessageTokens, s.RereadToolResultTokens = a.Reread.Message, a.Reread.ToolResult
	s.RereadReasoningTokens, s.RereadNoteTokens, s.RereadOtherTokens = a.Reread.Reasoning, a.Reread.Note, a.Reread.Other
	s.ContextOverflow = a.ContextOverflow
	return a.Warnings
}
