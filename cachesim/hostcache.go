package cachesim

import "fmt"

// DefaultSlotSimilarity is llama-server's --slot-prompt-similarity default (0.1): the share of a
// new prompt a slot's cached prompt must hold as its prefix for the slot to be chosen by
// similarity.
const DefaultSlotSimilarity = 0.1

// HostCache is llama-server's host-memory prompt cache (--cache-ram MiB; server_prompt_cache in
// tools/server/server-task.cpp, driven by get_available_slot in server-context.cpp, llama.cpp
// b11669): prompts a slot was about to lose, saved in host memory, and restored into a slot when
// a later prompt matches them better than what the slot holds. It is one cache for the server,
// not one per slot. The zero value is an empty cache with the default similarity and no token
// limit. Not safe for concurrent use.
type HostCache struct {
	// Similarity is --slot-prompt-similarity; 0 means [DefaultSlotSimilarity]. (The server's 0,
	// similarity off, is not modelled.)
	Similarity float64
	// LimitTokens, when above 0, is the most tokens the cached prompts may hold together: the
	// oldest are dropped until they fit (server_prompt_cache::update). The server's limit in MiB
	// (--cache-ram) depends on the model's KV cell size and is the caller's to convert; 0 drops
	// none.
	LimitTokens int
	// states are the cached prompts, oldest first.
	states [][]int32
}

// Len is the number of prompts the cache holds.
func (h *HostCache) Len() int { return len(h.states) }

// Launch models what llama-server does with its prompt cache when a completion request starts on
// a slot that holds slot (the slot's tokens) with the prompt prompt, and returns the tokens the
// slot holds when the server then takes the common prefix (slot itself, or the cached prompt it
// restored) and whether it restored one. pinned is a request with `id_slot` (the lab's), or else
// the server chooses among its slots (modelled for a server of one slot).
//
// get_available_slot decides whether to update the cache. A pinned request takes its slot, and
// the cache is updated only when the slot is not empty, its prompt holds more than Similarity of
// the new prompt as common prefix (f_sim = lcp / len(prompt)), and the new prompt keeps less than
// half of the slot's (f_keep = lcp / len(slot) < 0.5: "if we are about to lose a large portion
// of the existing context - save it in the prompt cache"); a slot that is empty, or shares
// Similarity or less, is used as it is, without the cache. An unpinned request that finds no
// slot by similarity takes the least recently used one and always updates the cache. Updating
// saves the slot's prompt (prompt_save, server_prompt_cache::alloc: not when a cached prompt
// already holds it whole; the cached prompts it holds whole are dropped) and then loads
// (server_prompt_cache::load): the cached prompt that beats the slot's own on both f_keep and
// f_sim ("find the most similar cached prompt, that would also preserve the most context"; one
// with f_keep below 0.25 is skipped: "don't trash large prompts"), which leaves the cache and
// replaces the slot's tokens. An empty slot's f_keep is −1: any qualifying prompt beats it.
func (h *HostCache) Launch(slot, prompt []int32, pinned bool) (held []int32, restored bool) {
	if len(prompt) == 0 {
		return slot, false
	}
	thold := h.Similarity
	if thold == 0 {
		thold = DefaultSlotSimilarity
	}
	lcp := CommonPrefix(slot, prompt)
	update := false
	switch fSim := float64(lcp) / float64(len(prompt)); {
	case len(slot) > 0 && fSim > thold:
		// Chosen (or confirmed) by similarity.
		update = float64(lcp)/float64(len(slot)) < 0.5
	case !pinned:
		// No slot by similarity: the least recently used one, and the cache is updated.
		update = true
	}
	if !update {
		return slot, false
	}
	h.save(slot)
	fKeepBest := -1.0
	if len(slot) > 0 {
		fKeepBest = float64(lcp) / float64(len(slot))
	}
	fSimBest := float64(lcp) / float64(len(prompt))
	best := -1
	for i, st := range h.states {
		n := CommonPrefix(st, prompt)
		fKeep := float64(n) / float64(len(st))
		fSim := float64(n) / float64(len(prompt))
		if fKeep < 0.25 {
			continue
		}
		if fKeepBest < fKeep && fSimBest < fSim {
			fKeepBest, fSimBest, best = fKeep, fSim, i
		}
	}
	held = slot
	if best >= 0 {
		held, restored = h.states[best], true
		h.states = append(h.states[:best:best], h.states[best+1:]...)
	}
	h.update()
	return held, restored
}

// save is prompt_save: the slot's prompt joins the cache as its newest entry, unless it is empty
// or a cached prompt holds it whole; the cached prompts it holds whole leave.
func (h *HostCache) save(slot []int32) {
	if len(slot) == 0 {
		return
	}
	for _, st := range h.states {
		if CommonPrefix(st, slot) == len(slot) {
			return
		}
	}
	kept := h.states[:0]
	for _, st := range h.states {
		if CommonPrefix(st, slot) != len(st) {
			kept = append(kept, st)
		}
	}
	h.states = append(kept, append([]int32(nil), slot...))
}

// update drops the oldest cached prompts while they hold more than LimitTokens.
func (h *HostCache) update() {
	if h.LimitTokens <= 0 {
		return
	}
	total := 0
	for _, st := range h.states {
		total += len(st)
	}
	for len(h.states) > 0 && total > h.LimitTokens {
		total -= len(h.states[0])
		h.states = h.states[1:]
	}
}

// RestoreSlot models llama-server's slot restore (POST /slots/{id}?action=restore;
// handle_slots_action in tools/server/server-context.cpp, llama.cpp b11669): the slot's prompt
// becomes the saved tokens (`slot->prompt.tokens = std::move(restored)`), as if it had just
// processed them, so the next request's cached tokens are its common prefix with them. A saved
// prompt longer than the slot's context numCtx (0: unknown, not checked) is refused ("Restored
// prompt does not fit in the slot context") and leaves the slot empty: the error says so and the
// Attributor's cache is then empty.
func (a *Attributor) RestoreSlot(saved []int32, numCtx int) error {
	if numCtx > 0 && len(saved) > numCtx {
		a.cacheText, a.cacheTokens, a.shifted = "", nil, false
		return fmt.Errorf("restore a slot: the saved prompt of %d tokens does not fit in the slot context of %d", len(saved), numCtx)
	}
	a.cacheText, a.cacheTokens, a.shifted = "", append([]int32(nil), saved...), true
	return nil
}
