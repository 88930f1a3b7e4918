package harness_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"lab/arms"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
)

// newSim is the sim backend with the llama.cpp cache model (one slot, the longest common
// prefix) and tinytokenizer.Bytes: hermetic, every byte a token.
func newSim(t *testing.T) *sim.Backend {
	t.Helper()
	model, err := cachesim.NewModel(cachesim.ModelLlamaCpp, cachesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	be, err := sim.New(sim.Options{Model: model, Tokenizer: tinytokenizer.Bytes{}})
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// warmRunConfig is tiny × one arm × two repetitions on be, one session at a time.
func warmRunConfig(t *testing.T, a arms.Arm, be harness.Backend, warm bool) harness.RunConfig {
	t.Helper()
	return harness.RunConfig{
		Scenarios: []*scenario.Scenario{load(t, "testdata/tiny.yaml")}, Arms: []arms.Arm{a}, Repeat: 2,
		RunID: "w", Loop: loopConfig(t), Backend: be, Tokenizer: tinytokenizer.Bytes{}, SandboxDir: t.TempDir(),
		Warm: warm, FreshCache: true,
	}
}

// firstRequests returns each repetition's request 0, by repetition.
func firstRequests(t *testing.T, samples []metrics.Sample) map[int32]metrics.Sample {
	t.Helper()
	out := map[int32]metrics.Sample{}
	for _, s := range samples {
		if s.RequestIndex == 0 {
			out[s.Repetition] = s
		}
	}
	if len(out) != 2 {
		t.Fatalf("%d sessions' first requests; want 2", len(out))
	}
	return out
}

// With --warm the sessions run one after another share one expected-cache model: on the sim,
// which keeps its cache between them, session 2's first request finds session 1's prefix up
// to where the first request differs between the sessions (the tool order, shuffled per
// session; the date line, which session 1 left past midnight), and the lab expects exactly
// that, diverging in that segment. Without --warm the sim is reset and both start cold.
func TestWarmSessionsShareTheCache(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		arm     arms.Arm
		segment string
	}{
		{"tool order", userArm(t, "      - tool_order: {order: session}\n"), "tools"},
		{"date line", arm(t, "date-in-system-prompt"), "system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, warm := range []bool{true, false} {
				be := newSim(t)
				out := &memOutput{}
				state, err := harness.RunMatrix(context.Background(), warmRunConfig(t, tc.arm, be, warm), "w", nil, out)
				if err != nil {
					t.Fatal(err)
				}
				first := firstRequests(t, out.Samples())
				s1, s2 := first[1], first[2]
				if s1.CachedTokens == nil || *s1.CachedTokens != 0 || s1.ExpectedCachedTokens == nil || *s1.ExpectedCachedTokens != 0 {
					t.Errorf("warm %v: session 1's request 0: cached %v expected %v; want 0 and 0 (a new sim is empty)", warm, deref(s1.CachedTokens), deref(s1.ExpectedCachedTokens))
				}
				if !warm {
					if state != metrics.CacheColdVerified {
						t.Errorf("cold: cache_state %q", state)
					}
					if s2.CachedTokens == nil || *s2.CachedTokens != 0 || s2.ExpectedCachedTokens == nil || *s2.ExpectedCachedTokens != 0 || s2.DivergenceSegment != "" {
						t.Errorf("cold: session 2's request 0: cached %v expected %v divergence %q; want 0, 0, none (reset)",
							deref(s2.CachedTokens), deref(s2.ExpectedCachedTokens), s2.DivergenceSegment)
					}
					continue
				}
				if state != metrics.CacheWarm {
					t.Errorf("warm: cache_state %q", state)
				}
				if s2.CachedTokens == nil || *s2.CachedTokens <= 0 {
					t.Fatalf("warm: session 2's request 0: cached %v; want > 0 (session 1's prefix)", deref(s2.CachedTokens))
				}
				if s2.ExpectedCachedTokens == nil || *s2.ExpectedCachedTokens != *s2.CachedTokens {
					t.Errorf("warm: session 2's request 0: expected %v; want the sim's cached %d", deref(s2.ExpectedCachedTokens), *s2.CachedTokens)
				}
				if s2.DivergenceSegment != tc.segment || s2.DivergenceToken == nil || *s2.DivergenceToken != *s2.CachedTokens {
					t.Errorf("warm: session 2's request 0 diverges at %q token %v; want %q at token %d", s2.DivergenceSegment, deref(s2.DivergenceToken), tc.segment, *s2.CachedTokens)
				}
				if *s2.CachedTokens >= s2.PromptTokens-1 {
					t.Errorf("warm: session 2's request 0 cached %d of %d prompt tokens; want a divergence before its end", *s2.CachedTokens, s2.PromptTokens)
				}
				t.Logf("warm: session 2's request 0: %d of %d prompt tokens cached, diverging at %q", *s2.CachedTokens, s2.PromptTokens, s2.DivergenceSegment)
				// Every later request is modelled as always: expected = the sim's cached.
				for _, s := range out.Samples() {
					if s.ExpectedCachedTokens == nil || s.CachedTokens == nil || *s.ExpectedCachedTokens != *s.CachedTokens {
						t.Errorf("warm: %d/%d: cached %v expected %v; want equal", s.Repetition, s.RequestIndex, deref(s.CachedTokens), deref(s.ExpectedCachedTokens))
					}
				}
			}
		})
	}
}

// Where the lab cannot know what the server held when a warm session started, its first
// request's expected cached tokens and divergence are null, not 0, with the reason in its
// warnings; its cached count (the server's) and the requests after it are as always: sessions
// at once on slots, a resumed run on a server the lab did not start, the first session on such
// a server.
func TestWarmSessionsUnknownStart(t *testing.T) {
	t.Parallel()
	a := userArm(t, "      - tool_order: {order: session}\n")
	for _, tc := range []struct {
		name   string
		setup  func(cfg *harness.RunConfig)
		done   map[string]bool
		unsure []int32 // the repetitions whose first request is unknown
		reason string
	}{
		{"parallel", func(cfg *harness.RunConfig) {
			cfg.SlotBackends = []harness.Backend{cfg.Backend, newSim(t)}
		}, nil, []int32{1, 2}, "--parallel"},
		{"resumed", func(cfg *harness.RunConfig) {
			cfg.Resume, cfg.FreshCache, cfg.Repeat = true, false, 3
		}, map[string]bool{"tiny/a/1": true}, []int32{2}, "resumed"},
		{"server not the lab's", func(cfg *harness.RunConfig) { cfg.FreshCache = false }, nil, []int32{1}, "before the run's first session"},
		{"resumed on a fresh sim", func(cfg *harness.RunConfig) { cfg.Resume, cfg.Repeat = true, 3 },
			map[string]bool{"tiny/a/1": true}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := warmRunConfig(t, a, newSim(t), true)
			tc.setup(&cfg)
			out := &memOutput{done: tc.done}
			if _, err := harness.RunMatrix(context.Background(), cfg, "w", nil, out); err != nil {
				t.Fatal(err)
			}
			unsure := map[int32]bool{}
			for _, r := range tc.unsure {
				unsure[r] = true
			}
			sessions := map[int32]bool{}
			for _, s := range out.Samples() {
				sessions[s.Repetition] = true
				if s.CachedTokens == nil {
					t.Fatalf("%d/%d: no cached count", s.Repetition, s.RequestIndex)
				}
				if s.RequestIndex == 0 && unsure[s.Repetition] {
					if s.ExpectedCachedTokens != nil || s.DivergenceToken != nil || s.DivergenceSegment != "" || s.ExpectedUnknown {
						t.Errorf("%d/0: expected %v divergence %v %q unknown %v; want null, null, none, false",
							s.Repetition, deref(s.ExpectedCachedTokens), deref(s.DivergenceToken), s.DivergenceSegment, s.ExpectedUnknown)
					}
					if !strings.HasPrefix(s.Warnings, harness.WarningCacheUnknown+": ") || !strings.Contains(s.Warnings, tc.reason) {
						t.Errorf("%d/0: warnings %q; want %q naming %q", s.Repetition, s.Warnings, harness.WarningCacheUnknown, tc.reason)
					}
					if s.RereadToolsTokens == nil || s.ReasoningTokensSent == nil {
						t.Errorf("%d/0: the re-read split or reasoning sent is null; want them (the rendering is known)", s.Repetition)
					}
					continue
				}
				if strings.Contains(s.Warnings, harness.WarningCacheUnknown) {
					t.Errorf("%d/%d: warnings %q", s.Repetition, s.RequestIndex, s.Warnings)
				}
				if s.ExpectedCachedTokens == nil || *s.ExpectedCachedTokens != *s.CachedTokens {
					t.Errorf("%d/%d: cached %d expected %v; want equal", s.Repetition, s.RequestIndex, *s.CachedTokens, deref(s.ExpectedCachedTokens))
				}
			}
			for _, r := range tc.unsure {
				if !sessions[r] {
					t.Errorf("repetition %d did not run", r)
				}
			}
		})
	}
}

// A warm session after one that failed cannot know what the failed request left: its first
// request's expected is null; the session after it, which followed a whole one, is known again.
func TestWarmSessionAfterAFailure(t *testing.T) {
	t.Parallel()
	cfg := warmRunConfig(t, userArm(t, "      - tool_order: {order: session}\n"), nil, true)
	cfg.Repeat = 3
	be := &failingOnce{Backend: newSim(t), at: 10} // session 2's request 2 (tiny has 7)
	cfg.Backend = be
	out := &memOutput{}
	_, err := harness.RunMatrix(context.Background(), cfg, "w", nil, out)
	if err == nil {
		t.Fatal("no error; want the failed session's")
	}
	for _, s := range out.Samples() {
		if s.RequestIndex != 0 {
			continue
		}
		unknown := s.ExpectedCachedTokens == nil
		if want := s.Repetition == 3; unknown != want || strings.Contains(s.Warnings, "the previous session failed") != want {
			t.Errorf("repetition %d: expected %v, warnings %q; want null after the failed session only", s.Repetition, deref(s.ExpectedCachedTokens), s.Warnings)
		}
	}
}

// failingOnce is a backend whose at-th Send (1-based) fails, not retryably, before it reaches
// the server.
type failingOnce struct {
	*sim.Backend
	at, calls int
}

func (b *failingOnce) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.calls++
	if b.calls == b.at {
		return &chat.Result{}, errors.New("the server refused")
	}
	return b.Backend.Send(ctx, req, reply)
}
