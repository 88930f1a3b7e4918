package harness_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"lab/chat"
	"lab/harness"
	"lab/metrics"
)

// slotBackend is one slot of a server with several (llama-server -np N): a cache of its own
// (renderBackend's), first answering only when every slot has a request (a barrier, which
// sessions run one at a time never pass), and slow by delay per request.
type slotBackend struct {
	*faultBackend
	delay   time.Duration
	barrier *barrier
	once    sync.Once
}

func (b *slotBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	var err error
	b.once.Do(func() { err = b.barrier.wait() })
	if err != nil {
		return &chat.Result{}, err
	}
	time.Sleep(b.delay)
	return b.faultBackend.Send(ctx, req, reply)
}

type barrier struct {
	mu   sync.Mutex
	n    int
	open chan struct{}
}

func (b *barrier) wait() error {
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("the other slot's session never sent a request: the sessions did not run at once")
	}
}

// With two slot backends two sessions run at once, each on its own slot, each slot's cache
// modelled on its own (cached = expected on every row), and the rows are written in the
// matrix's order although the second slot's sessions end first; they equal the rows of the
// same matrix run one session at a time.
func TestRunMatrixSlotsRunSessionsAtOnce(t *testing.T) {
	t.Parallel()
	seq := tinyRunConfig(t, t.TempDir(), 2, metrics.Shard{}, newFault(nil))
	// The sandbox's path is in the prompts: a wave's sessions each have a slot folder of their own.
	seq.SandboxDir = filepath.Join(seq.SandboxDir, "slot00")
	want := &memOutput{}
	if _, err := harness.RunMatrix(context.Background(), seq, "r", nil, want); err != nil {
		t.Fatal(err)
	}

	b := &barrier{n: 2, open: make(chan struct{})}
	slots := []*slotBackend{
		{faultBackend: newFault(nil), delay: 5 * time.Millisecond, barrier: b},
		{faultBackend: newFault(nil), barrier: b},
	}
	cfg := tinyRunConfig(t, t.TempDir(), 2, metrics.Shard{}, slots[0])
	cfg.SlotBackends = []harness.Backend{slots[0], slots[1]}
	var mu sync.Mutex
	progress := 0
	cfg.Progress = func(done, total int, _ *metrics.Sample) { mu.Lock(); progress = done; mu.Unlock() }
	got := &memOutput{}
	if _, err := harness.RunMatrix(context.Background(), cfg, "r", nil, got); err != nil {
		t.Fatal(err)
	}
	if progress != 28 {
		t.Errorf("progress ended at %d; want 28", progress)
	}
	for k, s := range slots {
		// Each slot served one arm's two sessions: 2 × 7 requests.
		if s.calls != 14 {
			t.Errorf("slot %d: %d requests; want 14", k, s.calls)
		}
	}
	ws, gs := want.Samples(), got.Samples()
	if len(gs) != len(ws) {
		t.Fatalf("%d rows; want %d", len(gs), len(ws))
	}
	for i := range ws {
		w, g := ws[i], gs[i]
		id := func(s metrics.Sample) string {
			return fmt.Sprintf("%s/%d/%d prompt %d cached %v expected %d", s.Arm, s.Repetition, s.RequestIndex, s.PromptTokens, deref(s.CachedTokens), deref(s.ExpectedCachedTokens))
		}
		if id(g) != id(w) {
			t.Errorf("row %d: %s; want %s (one session at a time)", i, id(g), id(w))
		}
		if g.CachedTokens == nil || g.ExpectedCachedTokens == nil || *g.CachedTokens != *g.ExpectedCachedTokens {
			t.Errorf("row %d: cached %v, expected %d; want equal (each slot modelled on its own)", i, deref(g.CachedTokens), deref(g.ExpectedCachedTokens))
		}
	}
	var order []string
	for _, rec := range got.ended {
		order = append(order, fmt.Sprintf("%s/%d", rec.Arm, rec.Repetition))
	}
	if fmt.Sprint(order) != "[spec/1 date-in-system-prompt/1 spec/2 date-in-system-prompt/2]" {
		t.Errorf("sessions ended in the order %v; want the matrix's", order)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
