package sim_test

import (
	"context"
	"strings"
	"testing"

	"lab/backend/ollama"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/internal/tinytokenizer"
)

// newWindowSim is a sim with the llama.cpp slot model (one slot, as Ollama's runner with
// OLLAMA_NUM_PARALLEL=1) and a context window of numCtx tokens; tinytokenizer.Bytes makes every
// byte a token, so the figures below are byte counts of the rendered texts.
func newWindowSim(t *testing.T, numCtx int) *sim.Backend {
	t.Helper()
	m, _ := cachesim.NewModel(cachesim.ModelLlamaCpp, cachesim.Options{})
	b, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, NumCtx: numCtx})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A reply that takes the cache text past num_ctx: Ollama's runner truncates the generation
// emulation's raw prompt and then shifts its slot, and the next request finds only the first
// num_keep tokens of its KV cache. Without the window the sim reported the whole shared prefix.
func TestWindowTruncatesAndShiftsTheCacheText(t *testing.T) {
	ctx := context.Background()
	sys := chat.Message{Role: chat.RoleSystem, Content: "You are a coding agent."}
	user1 := chat.Message{Role: chat.RoleUser, Content: "Say hi."}
	// A long reasoning: the Qwen3 format drops it from the history at the next user message,
	// so request 2's prompt stays inside the window while request 1's cache text does not.
	reply := &chat.Reply{Reasoning: strings.Repeat("I think. ", 40), Content: "Hi."}
	req1 := &chat.Request{Messages: []chat.Message{sys, user1}, Think: true}
	req2 := &chat.Request{Think: true, Messages: []chat.Message{sys, user1,
		{Role: chat.RoleAssistant, Reasoning: reply.Reasoning, Content: reply.Content}, {Role: chat.RoleUser, Content: "Again."}}}

	cacheText := render(t, req1) + ollama.Qwen3Output(reply)
	L := len(cacheText)
	N := L - 100 // the window: request 1's prompt fits, its cache text (prompt and reply) does not
	rendered2 := render(t, req2)
	if len(render(t, req1)) >= N || len(rendered2) > N {
		t.Fatalf("set-up: prompts %d and %d tokens, cache text %d, window %d", len(render(t, req1)), len(rendered2), L, N)
	}

	b := newWindowSim(t, N)
	r1, err := b.Send(ctx, req1, reply)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Send(ctx, req2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The runner's rule (runner/ollamarunner runner.go NewSequence, cache.go ShiftCacheSlot) with
	// num_keep k = 4:
	//   - the emulation sends the L-token cache text; L > N, so it is truncated to
	//     T = text[:4] + text[4+L−N:] (N tokens: keep 4, drop the L−N after them);
	//   - T fills the window, so queuing the token sampled after it shifts the slot: it drops
	//     D = (N−4)/2 tokens after the first 4, and holds text[:4] + text[4+(L−N)+D:];
	//   - request 2's cached tokens are its longest common prefix with that slot (at most its
	//     length − 1): the first 4 tokens, and no more unless the tail happens to match.
	k, D := 4, (N-4)/2
	slot := cacheText[:k] + cacheText[k+(L-N)+D:]
	want := min(lcp(rendered2, slot), len(rendered2)-1)
	if r1.PromptTokens != int64(len(r1.Rendered)) || *r1.CachedTokens != 0 {
		t.Errorf("request 1: prompt %d (want %d), cached %d (want 0)", r1.PromptTokens, len(r1.Rendered), *r1.CachedTokens)
	}
	if r2.PromptTokens != int64(len(rendered2)) || r2.Rendered != rendered2 {
		t.Errorf("request 2: prompt %d tokens, want %d (it fits: nothing is truncated)", r2.PromptTokens, len(rendered2))
	}
	if *r2.CachedTokens != int64(want) {
		t.Errorf("request 2: cached %d, want %d (the slot's first %d tokens; the prompts share %d)", *r2.CachedTokens, want, k, lcp(rendered2, cacheText))
	}
	if want > 8 || lcp(rendered2, cacheText) < 100 {
		t.Fatalf("set-up: the slot shares %d tokens with request 2, the untruncated cache text %d", want, lcp(rendered2, cacheText))
	}
}

// Ollama's server drops the oldest messages (keeping the system prompt) until the rendered
// prompt fits num_ctx (server/prompt.go chatPrompt), and renders only those: the sim's Rendered is
// that prompt, as `_debug_render_only` returns it.
func TestWindowDropsTheOldestMessages(t *testing.T) {
	sys := chat.Message{Role: chat.RoleSystem, Content: "You are a coding agent."}
	user1 := chat.Message{Role: chat.RoleUser, Content: "Read every file. " + strings.Repeat("Please. ", 30)}
	asst1 := chat.Message{Role: chat.RoleAssistant, Content: "Done."}
	user2 := chat.Message{Role: chat.RoleUser, Content: "Thanks."}
	req := &chat.Request{Messages: []chat.Message{sys, user1, asst1, user2}, Think: true}
	full := render(t, req)
	// chatPrompt tries i = 0, 1, 2, …: the system messages among the first i, then messages i…
	// i = 0 and 1 keep every message (full, too long); i = 2 drops user1: system, asst1, user2.
	kept := render(t, &chat.Request{Messages: []chat.Message{sys, asst1, user2}, Think: true})
	N := len(kept) // fits exactly (≤ num_ctx)
	if len(full) <= N {
		t.Fatalf("set-up: the whole prompt (%d) fits %d", len(full), N)
	}
	b := newWindowSim(t, N)
	r, err := b.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rendered != kept || r.PromptTokens != int64(len(kept)) {
		t.Errorf("rendered %d tokens:\n%s\nwant the system prompt and the last two messages (%d tokens):\n%s", r.PromptTokens, r.Rendered, len(kept), kept)
	}
	// One token less: i = 3 keeps only the system prompt and user2.
	b = newWindowSim(t, N-1)
	r, err = b.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := render(t, &chat.Request{Messages: []chat.Message{sys, user2}, Think: true}); r.Rendered != want {
		t.Errorf("window %d: rendered\n%s\nwant\n%s", N-1, r.Rendered, want)
	}
}

// A last message longer than the window: the server keeps it (it always keeps the last
// message), the runner truncates the prompt to num_ctx tokens, and prompt_eval_count says so.
func TestWindowTruncatesALongPrompt(t *testing.T) {
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "s"}, {Role: chat.RoleUser, Content: strings.Repeat("abcdefg ", 40)}}, Think: true}
	p := render(t, req)
	P, N := len(p), 200
	b := newWindowSim(t, N)
	r1, err := b.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Send(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Request 1: the runner processes input = p[:4] + p[4+P−N:] (N tokens), nothing cached; the
	// slot, full, is shifted: p[:4] + p[4+(P−N)+D:], D = (N−4)/2. Request 2 (the same request)
	// reuses the common prefix of its input and that slot.
	input := p[:4] + p[4+P-N:]
	slot := p[:4] + p[4+(P-N)+(N-4)/2:]
	want := min(lcp(input, slot), N-1)
	if r1.PromptTokens != int64(N) || *r1.CachedTokens != 0 || r1.Rendered != p {
		t.Errorf("request 1: prompt %d tokens (want %d), cached %d", r1.PromptTokens, N, *r1.CachedTokens)
	}
	if r2.PromptTokens != int64(N) || *r2.CachedTokens != int64(want) {
		t.Errorf("request 2: prompt %d tokens, cached %d; want %d and %d (without the window: %d)", r2.PromptTokens, *r2.CachedTokens, N, want, P-1)
	}
}

func TestWindowRefusedForCloudModels(t *testing.T) {
	for _, name := range []string{cachesim.ModelOpenAI, cachesim.ModelAnthropic} {
		m, _ := cachesim.NewModel(name, cachesim.Options{})
		if _, err := sim.New(sim.Options{Model: m, Tokenizer: tinytokenizer.Bytes{}, NumCtx: 8192}); err == nil || !strings.Contains(err.Error(), "num_ctx") {
			t.Errorf("%s with num_ctx: err %v", name, err)
		}
	}
}
