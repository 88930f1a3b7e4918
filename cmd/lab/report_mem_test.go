package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	labmetrics "lab/metrics"
)

// writeSyntheticRun writes a run folder of the part layout into dir holding rows synthetic rows
// written through the metrics sink: 3 scenarios × 4 arms × 3 repetitions, each session a run of
// requests with growing prompts, a cache lost every 16th request (a divergence segment), a
// prefill time that differs a little from repetition to repetition (as a server's does), a
// warning on every 5th row, an error on every 97th and the usage fields every backend writes, so
// that the string columns are as varied as a real run's. It returns the run folder.
func writeSyntheticRun(tb testing.TB, dir string, rows int) string {
	return writeSyntheticRunOf(tb, dir, "synthetic", rows, 1)
}

// writeSyntheticRunOf is [writeSyntheticRun] of the run id, split into shards parts (lab run
// --shard i/n: session k of the matrix in part k mod shards + 1, each part with its manifest;
// 1: one part, 1/1).
func writeSyntheticRunOf(tb testing.TB, dir, id string, rows, shards int) string {
	tb.Helper()
	run := labmetrics.RunDir(dir, id)
	if err := os.MkdirAll(run, 0o755); err != nil {
		tb.Fatal(err)
	}
	scenarios := []string{"midnight", "big-tool-output", "reasoning-reread"}
	arms := []string{labmetrics.SpecArm, "date-in-system-prompt", "no-stubs", "plain"}
	const reps = 3
	sessions := len(scenarios) * len(arms) * reps
	per := (rows + sessions - 1) / sessions
	shardOf := func(i int) labmetrics.Shard {
		if shards == 1 {
			return labmetrics.Shard{}
		}
		return labmetrics.Shard{Index: i, Count: shards}
	}
	sinks := make([]*labmetrics.ParquetSink, shards)
	for i := range sinks {
		sink, err := labmetrics.CreatePart(run, shardOf(i+1), labmetrics.FileMeta{RunID: id})
		if err != nil {
			tb.Fatal(err)
		}
		sinks[i] = sink
	}
	start := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	records := make([][]labmetrics.SessionRecord, shards)
	samples := make([]int, shards)
	n, k := 0, 0
	for _, sc := range scenarios {
		for _, arm := range arms {
			for rep := int32(1); rep <= reps && n < rows; rep++ {
				part := k % shards
				k++
				rec := labmetrics.SessionRecord{Scenario: sc, Arm: arm, Repetition: int(rep), Complete: true}
				for i := int32(0); i < int32(per) && n < rows; i++ {
					prompt := int64(2000 + 37*i)
					cached, seg := prompt-40, ""
					var div *int64
					if i%16 == 0 {
						cached, seg = 0, "system"
						if i > 0 {
							seg = "message " + strconv.Itoa(int(i))
						}
						div = new(int64(i))
					}
					reread := prompt - cached
					jitter := int64((int(i)*7919+int(rep)*104729)%5000) * 1000 // up to 5 ms, per repetition
					s := &labmetrics.Sample{
						RunID: id, Scenario: sc, Arm: arm, Repetition: rep, RequestIndex: i, Turn: 1 + i/8, Step: 1 + i%8,
						Backend: "ollama", Model: "qwen3-synthetic:latest", ServerVersion: "0.17.4", Kind: labmetrics.KindStep,
						Driver: labmetrics.DriverScripted, StartedAt: start.Add(time.Duration(n) * time.Second),
						PromptTokens: prompt, CachedTokens: new(cached), CachedSource: labmetrics.CachedSourceServerLog,
						ExpectedCachedTokens: new(cached), DivergenceToken: div, DivergenceSegment: seg,
						RereadTokens: new(reread), RereadSystemTokens: new(int64(0)), RereadToolsTokens: new(int64(0)),
						RereadMessageTokens: new(reread - 10), RereadToolResultTokens: new(int64(0)), RereadReasoningTokens: new(int64(0)),
						RereadNoteTokens: new(int64(0)), RereadOtherTokens: new(int64(10)), RereadUnattributedTokens: new(int64(0)),
						ReasoningTokensSent: new(int64(0)), CompletionTokens: new(int64(64)), LoadNs: new(int64(0)),
						TTFTNs: 40_000_000 + reread*1000 + jitter, PrefillNs: reread*1000 + jitter, TotalNs: 90_000_000 + reread*1000 + jitter,
						RequestBytes: 8000 + 150*int64(i),
						UsageFields:  `{"Completion":"eval_count","Prompt":"prompt_eval_count"}`,
					}
					if n%5 == 0 {
						s.Warnings = fmt.Sprintf("the lab's tokenizer counts %d tokens fewer than the server; server log line %d not matched", n%7, n)
					}
					if n%97 == 0 && n > 0 {
						s.Error = fmt.Sprintf("request %d: read answer: unexpected EOF after %d bytes", i, 100+n%1000)
					}
					if err := sinks[part].Write(s); err != nil {
						tb.Fatal(err)
					}
					rec.Requests++
					samples[part]++
					n++
				}
				records[part] = append(records[part], rec)
			}
		}
	}
	for i, sink := range sinks {
		if err := sink.Close(); err != nil {
			tb.Fatal(err)
		}
		m := &labmetrics.Manifest{RunID: id, Scenarios: scenarios, Arms: arms, Repetitions: reps, Backend: "ollama",
			Model: "qwen3-synthetic:latest", ServerVersion: "0.17.4", Complete: true, Samples: samples[i], Sessions: records[i],
			StartedAt: start, EndedAt: start.Add(time.Duration(n) * time.Second)}
		if shards > 1 {
			m.Shard = new(shardOf(i + 1))
		}
		if err := labmetrics.WriteManifest(filepath.Join(run, labmetrics.PartManifestFile(shardOf(i+1))), m); err != nil {
			tb.Fatal(err)
		}
	}
	return run
}

// heapPeak samples the live heap (runtime/metrics /memory/classes/heap/objects:bytes) every
// millisecond until stop is called, and returns the highest value seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return max(peak, read())
	}
}

// BenchmarkReportMemory measures what lab report holds per row: a synthetic run of N rows
// (writeSyntheticRun) read and reported as lab report writes it (report.md, report.html and the
// charts), reporting the peak live heap above the heap before, in bytes per row (peak-heap-B/row),
// and the bytes allocated per row (alloc-B/row). With LAB_BIN naming a lab binary (go build -o
// bin/lab ./cmd/lab) it also runs `lab report DIR` as a child process and reports its peak RSS
// per row (peak-rss-B/row).
//
//	go test -run '^$' -bench BenchmarkReportMemory -benchtime 1x ./cmd/lab/
func BenchmarkReportMemory(b *testing.B) {
	for _, rows := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			run := writeSyntheticRun(b, b.TempDir(), rows)
			var peakSum, allocSum float64
			b.ResetTimer()
			for range b.N {
				out := b.TempDir()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				stop := heapPeak()
				mans, samples, lost, err := loadRuns([]string{run}, io.Discard)
				if err != nil || lost != nil {
					b.Fatal(err, lost)
				}
				if _, err := writeReportFiles(out, mans, samples, true); err != nil {
					b.Fatal(err)
				}
				peak := stop()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(samples)
				peakSum += float64(peak) - float64(before.HeapAlloc)
				allocSum += float64(after.TotalAlloc - before.TotalAlloc)
			}
			b.StopTimer()
			b.ReportMetric(peakSum/float64(b.N)/float64(rows), "peak-heap-B/row")
			b.ReportMetric(allocSum/float64(b.N)/float64(rows), "alloc-B/row")
			if bin := os.Getenv("LAB_BIN"); bin != "" {
				cmd := exec.Command(bin, "report", "--png", "--out", b.TempDir(), run)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s report: %v\n%s", bin, err, out)
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				b.ReportMetric(float64(ru.Maxrss)*1024/float64(rows), "peak-rss-B/row")
			}
		})
	}
}

// The charts of each scenario draw its rows, in the rows' order, whether they lie together or
// are spread among another scenario's.
func TestRowsByScenario(t *testing.T) {
	rows := labmetrics.RowsOf([]labmetrics.Sample{
		{Scenario: "a", RequestIndex: 0}, {Scenario: "a", RequestIndex: 1},
		{Scenario: "b", RequestIndex: 0}, {Scenario: "c", RequestIndex: 0}, {Scenario: "b", RequestIndex: 1},
	})
	by := rowsByScenario(rows)
	for sc, want := range map[string][]int32{"a": {0, 1}, "b": {0, 1}, "c": {0}} {
		r := by[sc]
		var got []int32
		for i := range r.Len() {
			if r.Scenario(i) != sc {
				t.Errorf("scenario %s: row %d is of scenario %s", sc, i, r.Scenario(i))
			}
			got = append(got, r.RequestIndex(i))
		}
		if !slices.Equal(got, want) {
			t.Errorf("scenario %s: requests %v; want %v", sc, got, want)
		}
	}
}

// What lab report holds per row once a run is read: the live heap after loadRuns of a synthetic
// run, per row. A []metrics.Sample costs about 650 bytes a row (a Sample, its nullable figures'
// heap objects, its warnings); the compact rows hold at most 200.
func TestLoadRunsHoldsCompactRows(t *testing.T) {
	const n = 20_000
	run := writeSyntheticRun(t, t.TempDir(), n)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // and what sync.Pools kept through the first
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	_, rows, lost, err := loadRuns([]string{run}, io.Discard)
	if err != nil || lost != nil {
		t.Fatal(err, lost)
	}
	perRow := (float64(heap()) - float64(before)) / n
	runtime.KeepAlive(rows)
	t.Logf("loadRuns holds %.0f B per row", perRow)
	if perRow > 200 {
		t.Errorf("loadRuns holds %.0f B per row; want at most 200", perRow)
	}
}
