package cachesim

import "slices"

// prefixEntries is a set of token prefixes a cache wrote (Anthropic's entries at breakpoints),
// kept as their lengths and two 64-bit polynomial hashes of their tokens, so that finding the
// longest one that starts a prompt costs one pass over the prompt, however many were written.
type prefixEntries struct {
	ends []int // distinct entry lengths, ascending
	keys map[prefixKey]bool
}

// prefixKey identifies a prefix: its length and its two hashes.
type prefixKey struct {
	n      int
	h1, h2 uint64
}

// The multipliers of the two hashes (odd, so that every token shifts both).
const (
	hashMul1 = 0x9e3779b97f4a7c15
	hashMul2 = 0xc2b2ae3d27d4eb4f
)

// prefixKeys returns the keys of t[:n] for each n of ends that is at most len(t) (ends
// ascending), in one pass.
func prefixKeys(t []int32, ends []int) []prefixKey {
	var out []prefixKey
	var h1, h2 uint64
	i := 0
	for _, n := range ends {
		if n > len(t) {
			break
		}
		for ; i < n; i++ {
			v := uint64(uint32(t[i])) + 1
			h1, h2 = h1*hashMul1+v, h2*hashMul2+v
		}
		out = append(out, prefixKey{n: n, h1: h1, h2: h2})
	}
	return out
}

// longest returns the length of the longest entry that is a prefix of prompt, 0 when none is.
func (e *prefixEntries) longest(prompt []int32) int {
	best := 0
	for _, k := range prefixKeys(prompt, e.ends) {
		if e.keys[k] {
			best = k.n
		}
	}
	return best
}

// write adds the prefixes prompt[:p] for each p of at (positions outside 1..len(prompt) are
// left out).
func (e *prefixEntries) write(prompt []int32, at []int) {
	var ends []int
	for _, p := range at {
		if p >= 1 && p <= len(prompt) {
			ends = append(ends, p)
		}
	}
	slices.Sort(ends)
	ends = slices.Compact(ends)
	if e.keys == nil {
		e.keys = map[prefixKey]bool{}
	}
	for _, k := range prefixKeys(prompt, ends) {
		e.keys[k] = true
		if i, found := slices.BinarySearch(e.ends, k.n); !found {
			e.ends = slices.Insert(e.ends, i, k.n)
		}
	}
}
