package cachesim

import (
	"strings"
	"testing"
)

// seq returns the ids from, from+1, …, from+n-1.
func seq(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

func cat(parts ...[]int32) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type req struct {
	prompt, generated []int32
	want              int
}

func TestModels(t *testing.T) {
	a := seq(1, 3000)   // a shared prefix
	x := seq(10000, 50) // other tokens
	tests := []struct {
		model string
		reqs  []req
	}{
		{"ideal", []req{{a[:10], a[10:12], 0}, {a[:20], nil, 12}, {x, nil, 0}, {a[:30], nil, 20}}},
		{"ideal", []req{{a[:5], nil, 0}, {a[:5], nil, 5}}},
		{"llamacpp", []req{{a[:10], a[10:12], 0}, {a[:20], nil, 12}, {x, nil, 0}, {a[:30], nil, 0}}},
		{"llamacpp", []req{{a[:5], nil, 0}, {a[:5], nil, 4}, {a[:1], nil, 0}}},
		{"vllm", []req{{a[:40], nil, 0}, {a[:100], nil, 32}, {x, nil, 0}, {a[:200], nil, 96}}},
		{"vllm", []req{{a[:32], nil, 0}, {a[:32], nil, 16}, {a[:33], nil, 32}}},
		{"vllm", []req{{a[:10], a[10:40], 0}, {a[:50], nil, 32}, {a[:15], nil, 0}}},
		{"openai", []req{{a[:1023], nil, 0}, {a[:1100], nil, 0}, {a[:1200], nil, 1024}, {a[:2006], nil, 1152}, {cat(a[:2006], x), nil, 1920}}},
		{"openai", []req{{a[:1500], a[1500:2000], 0}, {a[:2000], nil, 1408}, {cat(x, a), nil, 0}}},
	}
	for i, tc := range tests {
		m, err := NewModel(tc.model, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Name() != tc.model {
			t.Fatalf("Name %q, want %q", m.Name(), tc.model)
		}
		for j, r := range tc.reqs {
			if got := m.Lookup(r.prompt); got != r.want {
				t.Errorf("case %d (%s) request %d: cached %d, want %d", i, tc.model, j+1, got, r.want)
			}
			m.Store(r.prompt, r.generated)
		}
		m.Reset()
		if got := m.Lookup(tc.reqs[0].prompt); got != 0 {
			t.Errorf("case %d (%s): %d cached after Reset", i, tc.model, got)
		}
	}
}

func TestAnthropic(t *testing.T) {
	a := seq(1, 6000)
	x := seq(100000, 500)
	newA := func(min int) *Anthropic {
		m, err := NewModel("anthropic", Options{MinTokens: min})
		if err != nil {
			t.Fatal(err)
		}
		return m.(*Anthropic)
	}
	type areq struct {
		prompt      []int32
		bps, blocks []int
		want        int
	}
	blocks := func(from, to, step int) []int {
		var out []int
		for p := from; p <= to; p += step {
			out = append(out, p)
		}
		return out
	}
	tests := []struct {
		name string
		min  int
		reqs []areq
	}{
		{"automatic chain", 0, []areq{{a[:1100], nil, nil, 0}, {a[:1500], nil, nil, 1100}, {a[:1600], nil, nil, 1500}, {a[:1600], nil, nil, 1600}}},
		{"below minimum", 0, []areq{{a[:1000], nil, nil, 0}, {a[:1500], nil, nil, 0}, {a[:1600], nil, nil, 1500}}},
		{"haiku minimum", AnthropicHaikuMinTokens, []areq{{a[:2000], nil, nil, 0}, {a[:2100], nil, nil, 0}, {a[:2200], nil, nil, 2100}}},
		{"explicit", 0, []areq{{a[:5000], []int{1100, 2500, 4000}, nil, 0}, {cat(a[:3000], x), []int{1100, 3500}, nil, 2500}}},
		{"a different prefix", 0, []areq{{a[:2000], nil, nil, 0}, {cat(x, a[:2000]), nil, nil, 0}}},
		{"lookback 20 reached", 0, []areq{{a[:1100], nil, nil, 0}, {a[:1400], []int{1400}, blocks(1100, 1280, 10), 1100}}},
		{"lookback 20 exceeded", 0, []areq{{a[:1100], nil, nil, 0}, {a[:1400], []int{1400}, blocks(1100, 1300, 10), 0}}},
		{"lookback per breakpoint", 0, []areq{{a[:1100], nil, nil, 0}, {a[:1400], []int{1150, 1400}, blocks(1100, 1300, 10), 1100}}},
	}
	for _, tc := range tests {
		m := newA(tc.min)
		for j, r := range tc.reqs {
			got, err := m.LookupBlocks(r.prompt, r.bps, r.blocks)
			if err != nil {
				t.Fatalf("%s request %d: %v", tc.name, j+1, err)
			}
			if got != r.want {
				t.Errorf("%s request %d: cached %d, want %d", tc.name, j+1, got, r.want)
			}
			m.Store(r.prompt, seq(900000, 10))
		}
	}

	m := newA(0)
	if _, err := m.LookupMarked(a[:100], []int{10, 20, 30, 40, 50}); err == nil || !strings.Contains(err.Error(), "at most 4") {
		t.Errorf("5 breakpoints: err %v", err)
	}
	if _, err := m.LookupMarked(a[:100], []int{101}); err == nil {
		t.Error("breakpoint past the prompt: no error")
	}
}

func TestNewModel(t *testing.T) {
	for _, n := range ModelNames {
		if _, err := NewModel(n, Options{}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := NewModel("sglang", Options{}); err == nil || !strings.Contains(err.Error(), `"sglang"`) {
		t.Errorf("unknown model: err %v", err)
	}
	if _, err := NewModel("anthropic", Options{MinTokens: -1}); err == nil {
		t.Error("negative minimum: no error")
	}
}
