package cachesim

// TokenRange is the token positions [Start, End) of a prompt.
type TokenRange struct {
	Start, End int64
}

// Len is the number of positions in r.
func (r TokenRange) Len() int64 { return max(r.End-r.Start, 0) }

// ChunkReuse is llama-server's chunk reuse after the common prefix (`--cache-reuse N`, the
// request's `n_cache_reuse`), as tools/server/server-context.cpp does it in update_slots when a
// slot starts a prompt (llama.cpp b11669, "reuse chunks from the cached prompt by shifting their
// KV cache in the new position"): with n_past the common prefix of the slot's tokens (cache) and
// the prompt, a cache head head_c and a prompt head head_p both start at n_past; while both are
// inside their sequences, n_match counts the tokens cache[head_c+i] == prompt[head_p+i] from
// there; when n_match ≥ minChunk the chunk's KV cells are shifted from [head_c, head_c+n_match)
// to [head_p, head_p+n_match) (llama_memory_seq_rm, llama_memory_seq_add), n_past grows by
// n_match and both heads move past it; otherwise only head_c moves on by one. The cells between
// reused chunks are dropped, and so is everything after the last chunk: the server reads the
// prompt again from n_past on, the gaps included (the tokens after a gap shift down to meet it).
//
// It returns the cached tokens that result (n_past, before the server's rule that leaves one
// prompt token to evaluate) and the reused chunks as ranges of prompt positions, in order; the
// prefix is not among them. minChunk ≤ 0 is reuse switched off (the server's default, 0): the
// common prefix alone. The server skips the search where its memory cannot shift (a recurrent or
// hybrid model, multimodal prompts; "cache reuse is not supported"), which a caller models with
// minChunk 0.
func ChunkReuse(cache, prompt []int32, minChunk int) (nPast int, chunks []TokenRange) {
	nPast = CommonPrefix(cache, prompt)
	if minChunk <= 0 {
		return nPast, nil
	}
	headC, headP := nPast, nPast
	for headC < len(cache) && headP < len(prompt) {
		n := 0
		for headC+n < len(cache) && headP+n < len(prompt) && cache[headC+n] == prompt[headP+n] {
			n++
		}
		if n >= minChunk {
			chunks = append(chunks, TokenRange{Start: int64(headP), End: int64(headP + n)})
			nPast += n
			headC += n
			headP += n
		} else {
			headC++
		}
	}
	return nPast, chunks
}

// rereadRanges returns the prompt positions [0, prompt) a server re-read when it reported cached
// tokens of which the reused chunks supply reused: the positions after the prefix of cached −
// reused tokens, less the chunks. With no chunks it is [cached, prompt).
func rereadRanges(cached, prompt int64, chunks []TokenRange) []TokenRange {
	var reused int64
	for _, c := range chunks {
		reused += c.Len()
	}
	from := min(max(cached-reused, 0), prompt)
	var out []TokenRange
	for _, c := range chunks {
		lo, hi := max(c.Start, from), min(c.End, prompt)
		if hi <= lo {
			continue
		}
		if lo > from {
			out = append(out, TokenRange{Start: from, End: lo})
		}
		from = hi
	}
	if from < prompt {
		out = append(out, TokenRange{Start: from, End: prompt})
	}
	return out
}
