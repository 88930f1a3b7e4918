package cachesim

// OllamaNumKeep is Ollama's default num_keep (api.DefaultOptions in v0.17.4), the option the lab
// never sets: the number of tokens at the start of a sequence that a truncation or a context
// shift keeps. The runner logs it as `keep=4` ("truncating input prompt limit=40960 prompt=40970
// keep=4").
const OllamaNumKeep = 4

// Window is the context window of an Ollama v0.17.4 runner slot (runner/ollamarunner), in tokens.
// The zero value is unlimited: every method then returns its input unchanged.
//
// What the runner does with a sequence longer than the window, which empties the slot's KV cache
// for the next request but its first NumKeep tokens:
//
//   - Truncation (runner.go NewSequence): a prompt of L > NumCtx tokens is cut to NumCtx by keeping
//     its first k = min(NumKeep, NumCtx−1) tokens and dropping the L − NumCtx tokens after them
//     (`truncating input prompt limit=NumCtx prompt=L keep=k new=NumCtx`).
//   - Context shift (cache.go ShiftCacheSlot, runner.go forwardBatch): before an input is
//     processed, when the slot's tokens plus that input would pass NumCtx, the slot drops
//     max((NumCtx−k)/2, 1) tokens after its first k and keeps the rest. The token sampled after
//     the prompt is such an input even when generation stops there (num_predict 1, the lab's
//     measuring request and its generation emulation): the runner queues it for the next batch,
//     with the shift, while it computes the prompt's last batch. So a prompt that fills the window
//     exactly is shifted once, and the sampled token itself is never stored.
//
// A slot built from text is the same whatever the slot held before (reuse changes the prefill
// cost, not what is held), so [Window.Hold] needs only the sequence.
type Window struct {
	// NumCtx is the window (Ollama num_ctx, per slot: OLLAMA_NUM_PARALLEL is 1); 0 is unlimited.
	NumCtx int
	// NumKeep is num_keep; a Window built by [NewWindow] has OllamaNumKeep.
	NumKeep int
}

// NewWindow returns the window of a runner started with num_ctx numCtx (0: unlimited) and
// Ollama's default num_keep.
func NewWindow(numCtx int) Window { return Window{NumCtx: numCtx, NumKeep: OllamaNumKeep} }

// keep is the runner's effective num_keep: at least one token must be left to discard.
func (w Window) keep() int { return max(min(w.NumKeep, w.NumCtx-1), 0) }

// Truncate returns the prompt the runner processes for a prompt of len(prompt) tokens: prompt
// itself when it fits the window, else its first k tokens followed by its last NumCtx − k (see
// [Window]). The result may share prompt's array.
func (w Window) Truncate(prompt []int32) []int32 {
	if w.NumCtx <= 0 || len(prompt) <= w.NumCtx {
		return prompt
	}
	k := w.keep()
	return concat(prompt[:k], prompt[k+len(prompt)-w.NumCtx:])
}

// Discard is the number of tokens a context shift drops after the first k, for a full window.
func (w Window) Discard() int { return max((w.NumCtx-w.keep())/2, 1) }

// Hold returns what the slot holds after the runner processed prompt followed by generated as
// one sequence with num_predict 1 (the generation emulation's raw /api/generate request, whose
// prompt is the rendered prompt and the reply): the sequence truncated to the window and, when
// it then fills the window exactly, shifted once. The result is split back into the part that
// came from prompt and the part that came from generated, for the cache models that keep only
// prompts. shifted reports whether anything was dropped. Inputs that fit are returned as they are.
func (w Window) Hold(prompt, generated []int32) (p, g []int32, shifted bool) {
	n := len(prompt) + len(generated)
	if w.NumCtx <= 0 || n < w.NumCtx {
		return prompt, generated, false
	}
	k := w.keep()
	// The kept positions of prompt ++ generated: [0, k) and [from, n).
	from := k + max(n-w.NumCtx, 0) // after the truncation: NumCtx tokens
	from += w.Discard()            // the shift of a full window
	from = min(from, n)
	p = concat(prompt[:min(k, len(prompt))], prompt[min(max(from, k), len(prompt)):])
	if k > len(prompt) {
		g = concat(generated[:k-len(prompt)], generated[min(from-len(prompt), len(generated)):])
	} else {
		g = concat(nil, generated[min(max(from-len(prompt), 0), len(generated)):])
	}
	return p, g, true
}
