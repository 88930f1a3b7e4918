package cachesim

import (
	"slices"
	"testing"
)

// The runner's rules (runner/ollamarunner runner.go NewSequence, cache.go ShiftCacheSlot) on a
// window of 20 tokens with num_keep 4: a truncation keeps the first 4 and the last 16; a context
// shift of a full window drops (20−4)/2 = 8 after the first 4.
func TestWindow(t *testing.T) {
	w := NewWindow(20)
	x := seq(0, 30)
	if got, want := w.Truncate(x), cat(x[:4], x[14:]); !slices.Equal(got, want) {
		t.Errorf("Truncate(30 tokens) = %v; want %v", got, want)
	}
	if got := w.Truncate(x[:20]); !slices.Equal(got, x[:20]) {
		t.Errorf("Truncate(20 tokens) = %v; want it unchanged", got)
	}
	for _, tc := range []struct {
		name         string
		prompt, gen  []int32
		wantP, wantG []int32
		shifted      bool
	}{
		{"fits", x[:10], x[10:19], x[:10], x[10:19], false},
		// 20 tokens fill the window: the sampled token's shift drops positions 4..11.
		{"fills the window", x[:10], x[10:20], cat(x[:4], nil), x[12:20], true},
		// 30 tokens: truncated to x[:4]+x[14:30], then shifted: x[:4]+x[22:30].
		{"passes the window", x[:15], x[15:30], x[:4], x[22:30], true},
		{"passes, prompt kept in part", x[:24], x[24:30], cat(x[:4], x[22:24]), x[24:30], true},
		{"a prompt shorter than num_keep", x[:2], x[2:30], x[:2], cat(x[2:4], x[22:30]), true},
		{"no reply", x[:30], nil, cat(x[:4], x[22:30]), nil, true},
	} {
		p, g, shifted := w.Hold(tc.prompt, tc.gen)
		if !slices.Equal(p, tc.wantP) || !slices.Equal(g, tc.wantG) || shifted != tc.shifted {
			t.Errorf("%s: Hold = %v + %v (%v); want %v + %v (%v)", tc.name, p, g, shifted, tc.wantP, tc.wantG, tc.shifted)
		}
	}
	if p, g, shifted := (Window{}).Hold(x, x); len(p) != 30 || len(g) != 30 || shifted {
		t.Error("no window: Hold changed its input")
	}
}

// Under LookupTurns a boundary weighs as many blocks as it stands for: an entry 20 blocks back
// is found, one 21 blocks back is not, and only the given breakpoints are looked up and written.
func TestAnthropicLookupTurns(t *testing.T) {
	a := seq(1, 6000)
	m := &Anthropic{MinTokens: AnthropicMinTokens}
	if n, err := m.LookupTurns(a[:1100], []int{1100}, nil); n != 0 || err != nil {
		t.Fatalf("first request: %d, %v", n, err)
	}
	m.Store(a[:1100], nil)
	// Boundaries after 1100: 1200 weighs 10 blocks, 1300 weighs 9: from the breakpoint at 1300
	// (block 1) back to 1200 is block 10, to 1100 block 20: found.
	if n, _ := m.LookupTurns(a[:1300], []int{1300}, []Boundary{{1100, 1}, {1200, 10}, {1300, 9}}); n != 1100 {
		t.Errorf("20 blocks back: cached %d, want 1100", n)
	}
	m.pending = nil
	// 1300 weighs 10: 1100 is block 21, past the lookback.
	if n, _ := m.LookupTurns(a[:1300], []int{1300}, []Boundary{{1100, 1}, {1200, 10}, {1300, 10}}); n != 0 {
		t.Errorf("21 blocks back: cached %d, want 0", n)
	}
	// No breakpoint: nothing cached, nothing written.
	if n, _ := m.LookupTurns(a[:1100], nil, nil); n != 0 {
		t.Errorf("no breakpoint: cached %d", n)
	}
	m.Store(a[:2000], nil)
	if n, _ := m.LookupTurns(a[:2000], []int{2000}, []Boundary{{1100, 1}}); n != 1100 {
		t.Errorf("after a request without breakpoints: cached %d, want 1100 (nothing written at 2000)", n)
	}
	if _, err := m.LookupTurns(a[:100], []int{50}, []Boundary{{101, 1}}); err == nil {
		t.Error("a boundary past the prompt: no error")
	}
}
