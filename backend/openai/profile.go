package openai

import (
	"fmt"
	"sort"
	"strings"
)

// CachedField says where a server reports the prompt tokens it read from its cache.
type CachedField int

const (
	// CachedDetails: usage.prompt_tokens_details.cached_tokens; a response without it leaves
	// the count unknown (OpenAI sends it on every response, 0 included). An answer with
	// llama-server's `timings` is read by them first: timings.cache_n is the cached tokens,
	// timings.prompt_n the uncached ones (the server's own count of its slot).
	CachedDetails CachedField = iota
	// CachedDetailsOrZero: usage.prompt_tokens_details.cached_tokens, and a response without it
	// means 0. vLLM writes prompt_tokens_details only when the server runs with
	// --enable-prompt-tokens-details and the count is not 0 (`if
	// self.enable_prompt_tokens_details and num_cached_tokens:` in its serving code); SGLang
	// reports it only with --enable-cache-report. Until a response from the server has carried
	// the field (the flag is on), a missing one leaves the count unknown, with a warning; from
	// then on it means 0.
	CachedDetailsOrZero
	// CachedHitMiss: DeepSeek's usage.prompt_cache_hit_tokens and prompt_cache_miss_tokens
	// (hit + miss = prompt_tokens; https://api-docs.deepseek.com/guides/kv_cache).
	CachedHitMiss
	// CachedConstant: the server fills the cached field with a constant, so it is never read and
	// the count stays unknown. Ollama's /v1/chat/completions and /v1/responses answer
	// `cached_tokens: 0` whatever its KV cache reused (v0.17.4); only its debug log says.
	CachedConstant
)

// Profile is what the lab knows about one kind of OpenAI-compatible server: where its usage
// puts the cached tokens, which field carries reasoning back, how the key is found and which
// headers go with every request. Choose one by name with [ProfileByName].
type Profile struct {
	// Name is the profile's name (openai, vllm, sglang, deepseek, openrouter, ollama, generic).
	Name string
	// DefaultBaseURL is the API's address when Options.BaseURL is empty; "" means the base URL
	// must be given (a self-hosted server).
	DefaultBaseURL string
	// KeyEnv is the environment variable the API key is read from when Options.KeyFile is
	// empty; "" means only a key file gives one. A self-hosted profile never reads
	// OPENAI_API_KEY, so a user's OpenAI key is not sent to another server.
	KeyEnv string
	// KeyRequired makes a missing key an error (the cloud APIs).
	KeyRequired bool
	// Cached says where the cached prompt tokens are reported.
	Cached CachedField
	// Reasoning is the assistant message field reasoning goes back in (FieldReasoningContent,
	// FieldReasoning), "" when the API takes none back (OpenAI Chat Completions returns no
	// reasoning text, so there is none to send back).
	Reasoning string
	// ReasoningOnToolCalls writes the reasoning field ("" when empty) on every assistant
	// message with tool calls: DeepSeek's thinking mode refuses a tool-call turn without it.
	ReasoningOnToolCalls bool
	// MaxTokensField is the request field bounding generation: "max_completion_tokens"
	// (OpenAI; its reasoning models refuse max_tokens) or "max_tokens".
	MaxTokensField string
	// PromptCacheKey says the API takes `prompt_cache_key` (OpenAI Chat Completions and
	// Responses); Options.PromptCacheKey is sent only then.
	PromptCacheKey bool
	// Responses says the server serves the Responses API (POST /responses).
	Responses bool
	// Headers are sent with every request (OpenRouter's optional app attribution,
	// https://openrouter.ai/docs/api-reference/overview).
	Headers map[string]string
}

// profiles returns the known profiles by name, built afresh on every call (no package state).
func profiles() map[string]Profile {
	return map[string]Profile{
		"openai": {
			Name: "openai", DefaultBaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY", KeyRequired: true,
			Cached: CachedDetails, MaxTokensField: "max_completion_tokens", PromptCacheKey: true, Responses: true,
		},
		"vllm": {
			// vLLM's server reads its own --api-key from VLLM_API_KEY.
			Name: "vllm", KeyEnv: "VLLM_API_KEY",
			Cached: CachedDetailsOrZero, Reasoning: FieldReasoning, MaxTokensField: "max_tokens", Responses: true,
		},
		"sglang": {
			Name:   "sglang",
			Cached: CachedDetailsOrZero, Reasoning: FieldReasoningContent, MaxTokensField: "max_tokens",
		},
		"deepseek": {
			Name: "deepseek", DefaultBaseURL: "https://api.deepseek.com", KeyEnv: "DEEPSEEK_API_KEY", KeyRequired: true,
			Cached: CachedHitMiss, Reasoning: FieldReasoningContent, ReasoningOnToolCalls: true, MaxTokensField: "max_tokens",
		},
		"openrouter": {
			Name: "openrouter", DefaultBaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", KeyRequired: true,
			Cached: CachedDetails, Reasoning: FieldReasoning, MaxTokensField: "max_tokens",
			Headers: map[string]string{"X-Title": "lab"},
		},
		"ollama": {
			// Ollama's OpenAI-compatible endpoints (http://127.0.0.1:11434/v1); reasoning in
			// "reasoning" both ways.
			Name:   "ollama",
			Cached: CachedConstant, Reasoning: FieldReasoning, MaxTokensField: "max_tokens", Responses: true,
		},
		"generic": {
			Name:   "generic",
			Cached: CachedDetails, Reasoning: FieldReasoningContent, MaxTokensField: "max_tokens", Responses: true,
		},
	}
}

// ProfileNames lists the profiles [ProfileByName] knows, sorted.
func ProfileNames() []string {
	all := profiles()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProfileByName returns the profile called name ("" is generic); an unknown name is an error
// listing the known ones. The returned Profile is a copy the caller may change.
func ProfileByName(name string) (Profile, error) {
	if name == "" {
		name = "generic"
	}
	p, ok := profiles()[name]
	if !ok {
		return Profile{}, fmt.Errorf("openai: unknown profile %q: want one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	return p, nil
}
