// Package cachesim holds pure, deterministic models of a server's prefix cache and the
// attribution of a cache miss to the part of the request that caused it. No I/O, no clock.
//
// A server reuses what it read for the previous request only as far as the new request matches
// from the first token (spec 3.2.0 §10). [CommonPrefix] is that ideal longest-common-prefix
// cache, and [ChunkReuse] llama-server's reuse of chunks of its cache after that prefix
// (--cache-reuse); [Segments] and [SegmentAt] name the part of a rendered prompt (system prompt, tool list,
// message N, reasoning N, note) where two prompts first differ, as a [Segment]: a kind and a
// message index, whose String is the results' divergence_segment text.
//
// [Attributor] puts these together for one conversation, request after request: given each
// request, the prompt as the server rendered it and the served model's [Tokenizer], it returns
// the expected cached tokens, the first divergence and its segment, and the re-read tokens by
// kind of segment ([Attribution]), the per-request figures `lab run` records. [Parts] names a
// request's pieces for it.
package cachesim

import (
	"strings"
	"unsafe"
)

// CommonPrefix returns the number of leading elements a and b share. Of token ids ([]int32)
// it is what an ideal prefix cache holding a could reuse of b; it serves any other sequence
// compared from its start too (lines, message digests).
func CommonPrefix[E comparable](a, b []E) int {
	if x, ok := any(a).([]int32); ok {
		// Token ids, the hot case: compared as bytes, block by block (commonPrefixBlocks).
		y := any(b).([]int32)
		n := min(len(x), len(y))
		if n == 0 {
			return 0
		}
		xs := unsafe.String((*byte)(unsafe.Pointer(&x[0])), 4*n)
		ys := unsafe.String((*byte)(unsafe.Pointer(&y[0])), 4*n)
		return commonPrefixBlocks(xs, ys) / 4
	}
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// CommonPrefixBytes returns the length in bytes of the longest common prefix of a and b.
func CommonPrefixBytes(a, b string) int {
	n := min(len(a), len(b))
	return commonPrefixBlocks(a[:n], b[:n])
}

// commonPrefixBlocks returns the length of the common prefix of a and b, of the same length,
// comparing blocks of growing size with the runtime's vectorised string equality (a byte loop
// reads about one byte a cycle), then the block that differs in words of 8 bytes and bytes. A
// session's prompts are compared whole on every request, so this is a hot loop.
func commonPrefixBlocks(a, b string) int {
	i, blk := 0, 64
	for i+blk <= len(a) {
		if a[i:i+blk] != b[i:i+blk] {
			if blk == 64 {
				break
			}
			blk = 64 // the difference lies in this block: look at it in small blocks
			continue
		}
		i += blk
		blk = min(blk*2, 1<<14)
	}
	for ; i+8 <= len(a) && a[i:i+8] == b[i:i+8]; i += 8 {
	}
	for ; i < len(a) && a[i] == b[i]; i++ {
	}
	return i
}

// Part is one piece of a request in the order a chat template renders it, named by its
// [Segment] ("system", "tools", "message N", "reasoning N", "note" as the results schema writes
// divergence segments).
type Part struct {
	Name Segment
	// Text is the piece as the request carries it; Segments looks for its start in the rendered
	// prompt.
	Text string
}

// ByteSpan is the byte span [Start, End) of a rendered prompt that belongs to a named part,
// including the template's framing before the part's own text.
type ByteSpan struct {
	Name       Segment
	Start, End int
}

// anchorLen is how many bytes of a part's text are searched for in the rendered prompt.
const anchorLen = 48

// Segments locates parts, in order, in a rendered prompt: each part's segment runs from the end
// of the previous part's text to the end of its own, so the framing a template writes before a
// message (such as "<|im_start|>assistant\n") belongs to that message. A part whose text cannot be
// found (a template that rewrites it) is skipped and its bytes fall to the next part found. The
// bytes after the last part (the generation prompt) form a segment of kind [GenerationPrompt].
func Segments(rendered string, parts []Part) []ByteSpan {
	var out []ByteSpan
	cursor := 0
	for _, p := range parts {
		text := strings.TrimSpace(p.Text)
		if text == "" {
			continue
		}
		anchor := text
		if len(anchor) > anchorLen {
			anchor = anchor[:anchorLen]
		}
		i := strings.Index(rendered[cursor:], anchor)
		if i < 0 {
			continue
		}
		start := cursor + i
		end := start + len(anchor)
		// The whole text when the template kept it verbatim; else as far as the anchor.
		if strings.HasPrefix(rendered[start:], text) {
			end = start + len(text)
		}
		out = append(out, ByteSpan{Name: p.Name, Start: cursor, End: end})
		cursor = end
	}
	if cursor < len(rendered) {
		out = append(out, ByteSpan{Name: Segment{Kind: GenerationPrompt}, Start: cursor, End: len(rendered)})
	}
	return out
}

// SegmentAt returns the segment holding byte offset off, or no segment (the zero Segment) when
// none does.
func SegmentAt(segs []ByteSpan, off int) Segment {
	for _, s := range segs {
		if off >= s.Start && off < s.End {
			return s.Name
		}
	}
	return Segment{}
}
