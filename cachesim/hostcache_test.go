package cachesim

import "testing"

// Two sessions alternating on one pinned slot, sharing a system prompt of a fifth of their
// prompts: the second saves the first's prompt (f_sim 0.2 > 0.1, f_keep 0.2 < 0.5), and the
// first's next prompt gets it back whole; with low similarity nothing is saved.
func TestHostCacheTwoSessionsAlternatingOnOneSlot(t *testing.T) {
	sys := seq(1, 200)
	a1 := cat(sys, seq(1000, 800))
	b1 := cat(sys, seq(5000, 800))
	a2 := cat(a1, seq(9000, 100))
	var h HostCache
	held, restored := h.Launch(nil, a1, true)
	if len(held) != 0 || restored || h.Len() != 0 {
		t.Fatalf("a cold pinned slot: held %d, restored %v, %d cached; want nothing", len(held), restored, h.Len())
	}
	held, restored = h.Launch(a1, b1, true)
	if CommonPrefix(held, b1) != 200 || restored || h.Len() != 1 {
		t.Fatalf("b1 after a1: prefix %d, restored %v, %d cached; want 200 (the system prompt), none restored, a1 saved", CommonPrefix(held, b1), restored, h.Len())
	}
	held, restored = h.Launch(b1, a2, true)
	if got := CommonPrefix(held, a2); got != len(a1) || !restored {
		t.Fatalf("a2 after b1: prefix %d, restored %v; want %d (a1 restored)", got, restored, len(a1))
	}
	if h.Len() != 1 {
		t.Errorf("%d cached after the restore; want 1 (b1; a1 left the cache)", h.Len())
	}

	// A system prompt of a tenth or less: the slot is reused as it is, a1 is lost.
	short := seq(1, 50)
	a1, b1 = cat(short, seq(1000, 950)), cat(short, seq(5000, 950))
	h = HostCache{}
	h.Launch(a1, b1, true)
	held, restored = h.Launch(b1, cat(a1, seq(9000, 100)), true)
	if restored || CommonPrefix(held, a1) != 50 || h.Len() != 0 {
		t.Errorf("f_sim 0.05: restored %v, %d cached; want nothing saved or restored", restored, h.Len())
	}
}

// A pinned empty slot (a cold start after an erase) is used as it is, the cache untouched; an
// unpinned request takes the least recently used slot and restores a cached prompt into it.
func TestHostCacheEmptySlot(t *testing.T) {
	a := seq(1, 1000)
	h := HostCache{states: [][]int32{a}}
	if held, restored := h.Launch(nil, cat(a, seq(5000, 10)), true); restored || len(held) != 0 || h.Len() != 1 {
		t.Errorf("pinned empty slot: held %d, restored %v; want an empty slot and the cache as it was", len(held), restored)
	}
	if held, restored := h.Launch(nil, cat(a, seq(5000, 10)), false); !restored || len(held) != 1000 || h.Len() != 0 {
		t.Errorf("unpinned empty slot: held %d, restored %v, %d cached; want a restored", len(held), restored, h.Len())
	}
}

// A cached prompt whose common prefix with the new prompt is under a quarter of it is skipped
// ("don't trash large prompts"); a prompt a cached one holds whole is not saved again; the token
// limit drops the oldest.
func TestHostCacheRules(t *testing.T) {
	sys := seq(1, 300)
	long := cat(sys, seq(1000, 1000)) // f_keep against sys+x: 300/1300 < 0.25
	h := HostCache{states: [][]int32{long}}
	slot := cat(sys[:200], seq(7000, 500))
	if _, restored := h.Launch(slot, cat(sys, seq(3000, 300)), true); restored {
		t.Error("restored a cached prompt with f_keep 0.23")
	}
	h = HostCache{states: [][]int32{cat(sys, seq(1000, 100))}}
	h.save(sys)
	if h.Len() != 1 {
		t.Errorf("%d cached after saving a prefix of a cached prompt; want 1", h.Len())
	}
	h.save(cat(sys, seq(1000, 200)))
	if h.Len() != 1 || len(h.states[0]) != 500 {
		t.Errorf("the cached prompt the new one holds whole stayed: %d cached", h.Len())
	}
	h = HostCache{LimitTokens: 1000}
	h.save(seq(1, 600))
	h.save(seq(2000, 600))
	h.update()
	if h.Len() != 1 || h.states[0][0] != 2000 {
		t.Errorf("token limit: %d cached; want the newest only", h.Len())
	}
}
