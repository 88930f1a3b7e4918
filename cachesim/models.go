package cachesim

import (
	"fmt"
	"slices"
	"sort"
)

// Model is a pure, deterministic model of a server's prefix cache over token ids. One request is
// one Lookup (how many leading prompt tokens the server reuses) followed by one Store (what the
// server's cache holds afterwards). A Model is not safe for concurrent use.
//
// Sources: /work/shared/reference/backends.md §1 llama.cpp, §3 vLLM, §5 OpenAI, §6 Anthropic.
type Model interface {
	// Name is the name NewModel knows the model by.
	Name() string
	// Lookup returns the number of leading tokens of prompt the cache supplies (the cached
	// tokens the server would report). It does not change the cache.
	Lookup(prompt []int32) int
	// Store records what the server holds after the request: the prompt and the tokens it
	// generated. Each model keeps what its server keeps (see NewModel). Store takes no
	// ownership: the model copies what it keeps.
	Store(prompt, generated []int32)
	// Reset empties the cache.
	Reset()
}

// Options configures a model. Zero values mean the defaults.
type Options struct {
	// MinTokens is the Anthropic model's minimum cacheable prefix (default
	// AnthropicMinTokens; AnthropicHaikuMinTokens for haiku-class models). Other models ignore it.
	MinTokens int `json:"min_tokens,omitempty"`
}

// Model names, as NewModel knows them.
const (
	ModelIdeal     = "ideal"
	ModelLlamaCpp  = "llamacpp"
	ModelVLLM      = "vllm"
	ModelOpenAI    = "openai"
	ModelAnthropic = "anthropic"
)

// ModelNames lists the models NewModel builds, in a fixed order.
var ModelNames = []string{ModelIdeal, ModelLlamaCpp, ModelVLLM, ModelOpenAI, ModelAnthropic}

// Constants of the models.
const (
	// VLLMBlockSize is vLLM's default KV block size (--block-size 16).
	VLLMBlockSize = 16
	// OpenAIMinTokens is the shortest prefix OpenAI caches; OpenAIStep the granularity above it.
	OpenAIMinTokens = 1024
	OpenAIStep      = 128
	// AnthropicMaxBreakpoints is the most cache_control breakpoints a request may carry.
	AnthropicMaxBreakpoints = 4
	// AnthropicLookback is how many block boundaries, the breakpoint's own included, are
	// checked for an earlier cache entry.
	AnthropicLookback = 20
	// AnthropicMinTokens is the default minimum cacheable prefix; AnthropicHaikuMinTokens the
	// haiku-class one.
	AnthropicMinTokens      = 1024
	AnthropicHaikuMinTokens = 2048
)

// NewModel returns the cache model called name:
//
//   - "ideal": the longest common prefix with anything ever stored (prompt + generated of every
//     request since the last Reset).
//   - "llamacpp": llama-server with one slot (backends.md §1.1, §1.2): the longest common prefix
//     with the last stored sequence (prompt + generated), at most len(prompt)−1, because the
//     server always evaluates at least one prompt token ("cache_n": 236, "prompt_n": 1).
//   - "vllm": automatic prefix caching (§3): 16-token blocks, hash-chained, so a block matches only
//     when it and every block before it are equal; only whole blocks are cached (a stored
//     sequence of length L holds ⌊L/16⌋ blocks); any stored sequence (prompt + generated) can
//     supply them; the hit is at most len(prompt)−1 rounded down to a block (vLLM recomputes the
//     last prompt token).
//   - "openai": automatic caching (§5): nothing below 1,024 tokens; above, the longest common
//     prefix with any earlier prompt rounded down to 1,024 + a multiple of 128 (a 2,006-token
//     prompt reports 1,920). Only prompts are stored, not generated tokens.
//   - "anthropic": explicit breakpoints (§6); see [Anthropic].
func NewModel(name string, o Options) (Model, error) {
	switch name {
	case ModelIdeal:
		return &Ideal{}, nil
	case ModelLlamaCpp:
		return &LlamaCpp{}, nil
	case ModelVLLM:
		return &VLLM{}, nil
	case ModelOpenAI:
		return &OpenAI{}, nil
	case ModelAnthropic:
		if o.MinTokens < 0 {
			return nil, fmt.Errorf("cachesim: anthropic min_tokens %d < 0", o.MinTokens)
		}
		m := o.MinTokens
		if m == 0 {
			m = AnthropicMinTokens
		}
		return &Anthropic{MinTokens: m}, nil
	default:
		return nil, fmt.Errorf("cachesim: unknown cache model %q (known: ideal, llamacpp, vllm, openai, anthropic)", name)
	}
}

// KeepsEveryPrompt reports whether the cache model named keeps every sequence it stored and
// reuses a prefix of any of them (ideal, vllm, openai), rather than one slot (llamacpp) or the
// prefixes its breakpoints wrote (anthropic, which [Attributor.ObserveWrites] follows). An
// [Attributor] follows the last request's cache: across sessions that share a cache (lab run
// --warm) its expected figure would not bound what such a model reuses.
func KeepsEveryPrompt(name string) bool {
	switch name {
	case ModelIdeal, ModelVLLM, ModelOpenAI:
		return true
	}
	return false
}

func concat(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// longestPrefix returns the longest common prefix of prompt with any of seqs.
func longestPrefix(seqs [][]int32, prompt []int32) int {
	best := 0
	for _, s := range seqs {
		best = max(best, CommonPrefix(s, prompt))
		if best == len(prompt) {
			break
		}
	}
	return best
}

// Ideal keeps every sequence stored and reuses the longest common prefix with any of them.
type Ideal struct{ seqs [][]int32 }

func (*Ideal) Name() string                      { return ModelIdeal }
func (m *Ideal) Lookup(prompt []int32) int       { return longestPrefix(m.seqs, prompt) }
func (m *Ideal) Store(prompt, generated []int32) { m.seqs = append(m.seqs, concat(prompt, generated)) }
func (m *Ideal) Reset()                          { m.seqs = nil }

// LlamaCpp is one llama-server slot: it holds the last request's prompt and generated tokens.
type LlamaCpp struct{ slot []int32 }

func (*LlamaCpp) Name() string { return ModelLlamaCpp }
func (m *LlamaCpp) Lookup(prompt []int32) int {
	return max(0, min(CommonPrefix(m.slot, prompt), len(prompt)-1))
}
func (m *LlamaCpp) Store(prompt, generated []int32) {
	// The slot's own array is written again (a session's slot only grows, and copying into it
	// allocates nothing); it is never handed out.
	m.slot = append(append(m.slot[:0], prompt...), generated...)
}
func (m *LlamaCpp) Reset() { m.slot = nil }

// VLLM is vLLM's automatic prefix cache with 16-token hash-chained blocks.
type VLLM struct{ seqs [][]int32 }

func (*VLLM) Name() string { return ModelVLLM }
func (m *VLLM) Lookup(prompt []int32) int {
	best := 0
	for _, s := range m.seqs {
		held := len(s) / VLLMBlockSize * VLLMBlockSize
		best = max(best, min(CommonPrefix(s, prompt), held))
	}
	best = min(best, len(prompt)-1)
	return max(0, best/VLLMBlockSize*VLLMBlockSize)
}
func (m *VLLM) Store(prompt, generated []int32) {
	s := concat(prompt, generated)
	if len(s) >= VLLMBlockSize {
		m.seqs = append(m.seqs, s)
	}
}
func (m *VLLM) Reset() { m.seqs = nil }

// OpenAI is OpenAI's automatic prompt cache: 1,024 tokens at least, then 128-token steps.
type OpenAI struct{ seqs [][]int32 }

func (*OpenAI) Name() string { return ModelOpenAI }
func (m *OpenAI) Lookup(prompt []int32) int {
	n := longestPrefix(m.seqs, prompt)
	if n < OpenAIMinTokens {
		return 0
	}
	return OpenAIMinTokens + (n-OpenAIMinTokens)/OpenAIStep*OpenAIStep
}
func (m *OpenAI) Store(prompt, _ []int32) {
	if len(prompt) >= OpenAIMinTokens {
		m.seqs = append(m.seqs, slices.Clone(prompt))
	}
}
func (m *OpenAI) Reset() { m.seqs = nil }

// Anthropic is the Messages API's explicit prompt cache (backends.md §6), over token positions:
//
//   - A request marks up to four breakpoints, token positions p (0 < p ≤ len(prompt)): the cache
//     entry "prefix up to p" (prompt[:p]). [Anthropic.LookupMarked] takes them; plain Lookup is
//     automatic caching, one breakpoint at the end of the prompt.
//   - Store writes one entry per breakpoint of the request last looked up, prompt[:p], when p ≥
//     MinTokens (below the minimum nothing is cached). Generated tokens are never cached.
//   - Lookup, for each breakpoint b: the candidate positions are the block boundaries ≤ b, nearest
//     first, b itself included, at most AnthropicLookback (20) of them. The boundaries are the
//     request's breakpoints plus the ends of earlier entries that are prefixes of this prompt (in
//     the real API breakpoints sit on content-block ends, so an earlier entry's end is a block
//     boundary of a request that extends it); [Anthropic.LookupBlocks] gives the boundaries
//     explicitly instead. The first candidate p ≥ MinTokens whose prefix was written before is
//     the hit for b. The cached tokens are the largest hit over all breakpoints (0 when none).
//   - [Anthropic.LookupTurns] is the API as a request marks it: only the breakpoints given (none:
//     no caching) and boundaries that each stand for one or more content blocks, which is how the
//     sim backend looks up a rendered chat prompt (its turns are the boundaries).
type Anthropic struct {
	// MinTokens is the minimum cacheable prefix.
	MinTokens int

	entries map[string]int // key(prompt[:p]) → p
	ends    []int          // distinct entry lengths, ascending
	pending []int          // breakpoints of the request last looked up
}

func (*Anthropic) Name() string { return ModelAnthropic }

// key is the exact identity of a prefix (what the hash chain stands for).
func key(t []int32) string {
	b := make([]byte, 4*len(t))
	for i, v := range t {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return string(b)
}

// Lookup is automatic caching: one breakpoint at the end of the prompt.
func (m *Anthropic) Lookup(prompt []int32) int {
	n, _ := m.LookupMarked(prompt, nil)
	return n
}

// LookupMarked looks prompt up with explicit breakpoints (none: one at the end of the prompt)
// and remembers them for the next Store. More than four, or a position outside 1..len(prompt),
// is an error (the API's 400).
func (m *Anthropic) LookupMarked(prompt []int32, breakpoints []int) (int, error) {
	return m.LookupBlocks(prompt, breakpoints, nil)
}

// LookupBlocks is LookupMarked with the request's content-block boundaries (token positions)
// given: the lookback then counts these (plus the breakpoints) instead of earlier entries' ends.
func (m *Anthropic) LookupBlocks(prompt []int32, breakpoints, blocks []int) (int, error) {
	var bounds []Boundary
	if blocks != nil {
		bounds = make([]Boundary, len(blocks))
		for i, b := range blocks {
			bounds[i] = Boundary{Pos: b, Blocks: 1}
		}
	}
	return m.lookup(prompt, breakpoints, bounds, true)
}

// Boundary is the end of a stretch of a request's content blocks, for [Anthropic.LookupTurns]:
// Blocks content blocks end after the previous Boundary and at or before Pos (a token position),
// the last of them at Pos. A chat turn rendered as one stretch of tokens (an assistant message's
// thinking, text and tool calls; consecutive tool results) is one Boundary whose Blocks is the
// number of Messages API blocks it holds: only its end can be a cache entry, but each of its
// blocks counts toward the lookback.
type Boundary struct {
	Pos    int
	Blocks int
}

// LookupTurns looks prompt up with exactly the given breakpoints, as the Messages API does with
// the request's `cache_control` markers (Anthropic prompt caching; backends.md §6): for each
// breakpoint b the candidates are b and the boundaries before it, nearest first, as long as the
// content blocks from b back to the candidate number at most AnthropicLookback (b's own block
// included; bounds weighted by Boundary.Blocks, a breakpoint that is no Boundary counting one);
// the first candidate of at least MinTokens whose prefix an earlier request wrote is b's hit, and
// the cached tokens are the largest hit. Only the breakpoints are remembered for the next Store,
// which writes their entries. No breakpoint means no caching: 0 cached and nothing written (the
// API without `cache_control`). More than four breakpoints, or a position outside
// 1..len(prompt), is an error (the API's 400).
func (m *Anthropic) LookupTurns(prompt []int32, breakpoints []int, bounds []Boundary) (int, error) {
	if bounds == nil {
		bounds = []Boundary{}
	}
	return m.lookup(prompt, breakpoints, bounds, false)
}

// lookup is LookupBlocks (auto: no breakpoints is one at the end) and LookupTurns. nil bounds
// take the ends of earlier entries that are prefixes of prompt as the boundaries.
func (m *Anthropic) lookup(prompt []int32, breakpoints []int, bounds []Boundary, auto bool) (int, error) {
	if len(breakpoints) > AnthropicMaxBreakpoints {
		return 0, fmt.Errorf("cachesim: %d breakpoints; at most %d", len(breakpoints), AnthropicMaxBreakpoints)
	}
	if auto && len(breakpoints) == 0 && len(prompt) > 0 {
		breakpoints = []int{len(prompt)}
	}
	for _, b := range breakpoints {
		if b < 1 || b > len(prompt) {
			return 0, fmt.Errorf("cachesim: position %d outside the prompt (1..%d)", b, len(prompt))
		}
	}
	for _, b := range bounds {
		if b.Pos < 1 || b.Pos > len(prompt) {
			return 0, fmt.Errorf("cachesim: position %d outside the prompt (1..%d)", b.Pos, len(prompt))
		}
	}
	m.pending = append([]int{}, breakpoints...)

	weight := map[int]int{} // position → content blocks ending there or since the boundary before
	for _, b := range breakpoints {
		weight[b] = 1
	}
	if bounds != nil {
		for _, b := range bounds {
			weight[b.Pos] = max(b.Blocks, 1)
		}
	} else {
		for _, e := range m.ends {
			if e <= len(prompt) && m.has(prompt[:e]) {
				weight[e] = 1
			}
		}
	}
	sorted := make([]int, 0, len(weight))
	for b := range weight {
		sorted = append(sorted, b)
	}
	sort.Ints(sorted)

	best := 0
	for _, b := range breakpoints {
		i := sort.SearchInts(sorted, b) // sorted[i] == b
		for blocks := 1; blocks <= AnthropicLookback && i >= 0; i-- {
			p := sorted[i]
			if p < m.MinTokens {
				break
			}
			if m.has(prompt[:p]) {
				best = max(best, p)
				break
			}
			blocks += weight[p]
		}
	}
	return best, nil
}

func (m *Anthropic) has(prefix []int32) bool {
	_, ok := m.entries[key(prefix)]
	return ok
}

// Store writes the entries of the breakpoints given to the last lookup (automatic: the end of
// prompt). generated is not cached.
func (m *Anthropic) Store(prompt, _ []int32) {
	bps := m.pending
	if bps == nil {
		bps = []int{len(prompt)}
	}
	m.pending = nil
	if m.entries == nil {
		m.entries = map[string]int{}
	}
	for _, b := range bps {
		if b < m.MinTokens || b > len(prompt) {
			continue
		}
		m.entries[key(prompt[:b])] = b
		if i, found := slices.BinarySearch(m.ends, b); !found {
			m.ends = slices.Insert(m.ends, i, b)
		}
	}
}

func (m *Anthropic) Reset() { m.entries, m.ends, m.pending = nil, nil, nil }
