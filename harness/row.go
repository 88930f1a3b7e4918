package harness

import (
	"encoding/json"
	"maps"
	"strings"

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
// same text), cost_usd (res.CostUSD, else price(usage) when price is set and knows the model),
// and reread_tokens ([SetReread]). A figure the server did not give stays null: completion
// tokens come from res.Usage.Generated when the backend has a Usage, else from the answer's
// final message (known when it gave a prompt count); the load time only where the server
// reports one (res.LoadReported). The times the client measures itself (time to first token,
// total, request bytes) are the caller's.
func SetResult(s *metrics.Sample, res *chat.Result, price func(*chat.Usage) (float64, bool)) {
	s.PromptTokens = res.PromptTokens
	s.CachedTokens = res.CachedTokens
	s.CachedSource = string(res.CachedSource)
	if s.CachedTokens == nil {
		s.CachedSource = ""
	}
	s.CompletionTokens = nil
	switch {
	case res.Usage != nil:
		s.CompletionTokens = clone(res.Usage.Generated)
	case res.PromptTokens > 0:
		s.CompletionTokens = new(res.CompletionTokens)
	}
	s.PrefillNs = int64(res.Prefill)
	s.LoadNs = nil
	if res.LoadReported {
		s.LoadNs = new(int64(res.Load))
	}
	s.CostUSD = res.CostUSD
	SetReread(s)
	u := res.Usage
	if u == nil {
		return
	}
	s.CacheWriteTokens, s.CacheWrite5mTokens, s.CacheWrite1hTokens = u.CacheWrite, u.CacheWrite5m, u.CacheWrite1h
	s.ReasoningTokensGenerated = clone(u.ReasoningGenerated)
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

// DropConstantCached removes from res a cached count that the server fills with a constant, so
// it is not a measurement (Ollama's OpenAI- and Anthropic-compatible endpoints answer 0 cached
// tokens whatever the KV cache reused): CachedTokens and Usage.CachedRead become nil, and the
// uncached count derived from it goes too (Usage.Fields loses both). why says what the constant
// is; the returned warning names it, ok is false when res carried no cached count.
func DropConstantCached(res *chat.Result, why string) (warning string, ok bool) {
	if res == nil || (res.CachedTokens == nil && (res.Usage == nil || res.Usage.CachedRead == nil)) {
		return "", false
	}
	res.CachedTokens, res.CachedSource = nil, ""
	if u := res.Usage; u != nil && u.CachedRead != nil {
		cp := *u
		cp.Fields = maps.Clone(u.Fields)
		wire := cp.Fields["CachedRead"]
		cp.CachedRead = nil
		delete(cp.Fields, "CachedRead")
		if cp.Uncached != nil && wire != "" && strings.Contains(cp.Fields["Uncached"], wire) {
			cp.Uncached = nil
			delete(cp.Fields, "Uncached")
		}
		res.Usage = &cp
	}
	return why + ": that figure is not used (cached tokens come from the server log, else are unknown)", true
}

// clone returns a copy of *p, or nil.
func clone(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return new(*p)
}

// SetReread sets the row's reread_tokens from its prompt and cached tokens, as the server counted
// them: prompt_tokens − cached_tokens, or nil when either is unknown (cached_tokens nil, no
// prompt count); never an estimate from the expected cached tokens. Call it again after changing
// the cached tokens; [SetAttribution] splits the figure by segment.
func SetReread(s *metrics.Sample) {
	s.RereadTokens = nil
	if s.CachedTokens != nil && s.PromptTokens > 0 {
		s.RereadTokens = new(s.PromptTokens - *s.CachedTokens)
	}
}

// SetAttribution copies an attribution of the request's cache use ([cachesim.Attributor]) into
// its row: expected cached tokens, the first divergence and its segment, reasoning tokens sent,
// the context overflow mark, and the split of the measured re-read tokens by segment kind (the
// range [cached_tokens, prompt_tokens) by token position, [cachesim.Attribution.Split]), which
// adds up to reread_tokens exactly; the split is null when reread_tokens is (or is negative).
// Call it after [SetResult] and any later change of the cached tokens. An unknown attribution
// marks the row expected_unknown and leaves those figures null. It returns the attribution's
// warnings.
func SetAttribution(s *metrics.Sample, a cachesim.Attribution) []string {
	s.ExpectedCachedTokens, s.ReasoningTokensSent = nil, nil
	s.DivergenceToken, s.DivergenceSegment = nil, ""
	for _, p := range s.RereadSplit() {
		*p = nil
	}
	if a.Unknown {
		s.ExpectedUnknown = true
		return nil
	}
	s.ExpectedUnknown = false
	s.ExpectedCachedTokens = new(a.ExpectedCachedTokens)
	s.DivergenceToken, s.DivergenceSegment = a.DivergenceToken, a.DivergenceSegment
	s.ReasoningTokensSent = new(a.ReasoningTokensSent)
	s.ContextOverflow = a.ContextOverflow
	if s.RereadTokens == nil || *s.RereadTokens < 0 {
		return a.Warnings
	}
	r := a.Split(*s.CachedTokens, s.PromptTokens)
	s.RereadSystemTokens, s.RereadToolsTokens = new(r.System), new(r.Tools)
	s.RereadMessageTokens, s.RereadToolResultTokens = new(r.Message), new(r.ToolResult)
	s.RereadReasoningTokens, s.RereadNoteTokens = new(r.Reasoning), new(r.Note)
	s.RereadOtherTokens, s.RereadUnattributedTokens = new(r.Other), new(r.Unattributed)
	return a.Warnings
}
