package metrics

import (
	"reflect"
	"runtime"
	"testing"
	"time"
)

// fullSample returns a sample with every column set, each to a value of its own.
func fullSample(i int64) Sample {
	n := func(v int64) *int64 { return new(v + i) }
	return Sample{RunID: "r", Scenario: "midnight", Arm: SpecArm, Repetition: 2, Backend: "ollama", Model: "m",
		ServerVersion: "0.17.4", RequestIndex: int32(i), Turn: 3, Step: 4, Kind: KindStep,
		StartedAt: time.Date(2026, 11, 29, 23, 0, 0, 5, time.UTC), PromptTokens: 1000 + i, CachedTokens: n(900),
		CachedSource: CachedSourceServerLog, CacheWriteTokens: n(7), ExpectedCachedTokens: n(950), DivergenceToken: n(3),
		DivergenceSegment: "message 3", DivergenceExcerpt: `{"before":"a","cached":"b","prompt":"c"}`,
		RereadTokens: n(100), RereadReasoningTokens: n(1), ReasoningTokensSent: n(2),
		CompletionTokens: n(64), ReasoningTokensGenerated: n(5), TTFTNs: 11e3 + i*1e3, PrefillNs: 12 + i, TotalNs: 13, LoadNs: n(14),
		RequestBytes: 15, CostUSD: new(0.25), Error: "boom", RereadSystemTokens: n(20), RereadToolsTokens: n(21),
		RereadMessageTokens: n(22), RereadToolResultTokens: n(23), RereadNoteTokens: n(24), RereadOtherTokens: n(25),
		ContextOverflow: true, Warnings: "w", CacheWrite5mTokens: n(26), CacheWrite1hTokens: n(27), UsageFields: "{}",
		Retries: 1, RetryWaitNs: 28, Driver: DriverLive, EndReason: EndAnswered, RepeatedCall: true, ExpectedUnknown: true,
		RereadUnattributedTokens: n(29)}
}

// held returns s with the columns Rows does not hold emptied.
func held(s Sample) Sample {
	s.CacheWriteTokens, s.CacheWrite5mTokens, s.CacheWrite1hTokens = nil, nil, nil
	s.TotalNs, s.RequestBytes, s.Retries, s.RetryWaitNs = 0, 0, 0, 0
	s.Warnings, s.UsageFields = "", ""
	return s
}

// A row read back from Rows has every held column as it was added, nulls null, and nothing of
// the next row.
func TestRowsRoundTrip(t *testing.T) {
	full := fullSample(1)
	var empty Sample // every nullable figure null
	empty.RunID, empty.Scenario = "r2", "other"
	wide := fullSample(3) // token counts beyond int32, kept whole
	wide.PromptTokens, wide.CachedTokens, wide.RereadOtherTokens, wide.LoadNs = 1<<40, new(int64(1<<35)), new(int64(-1<<33)), new(int64(9e9))
	wide.DivergenceToken = new(int64(1 << 36))
	// The time to first token is held to the microsecond; one of 2³¹ µs or more is not held.
	coarse := fullSample(4)
	coarse.TTFTNs = 1500
	long := fullSample(5)
	long.TTFTNs = 1 << 31 * 1000
	rows := RowsOf([]Sample{full, empty, fullSample(2), wide, coarse, long})
	if rows.Len() != 6 {
		t.Fatalf("Len %d; want 6", rows.Len())
	}
	coarseHeld, longHeld := held(coarse), held(long)
	coarseHeld.TTFTNs, longHeld.TTFTNs = 1000, 0
	if rows.PromptTokens(3) != 1<<40 {
		t.Errorf("PromptTokens of a wide row: %d; want 2^40", rows.PromptTokens(3))
	}
	var b SampleBuf
	for i, want := range []Sample{held(full), empty, held(fullSample(2)), held(wide), coarseHeld, longHeld} {
		if got := rows.Load(i, &b); !reflect.DeepEqual(*got, want) {
			t.Errorf("row %d read back:\n got %+v\nwant %+v", i, *got, want)
		}
		if got := rows.At(i); !reflect.DeepEqual(got, want) {
			t.Errorf("row %d At:\n got %+v\nwant %+v", i, got, want)
		}
	}
	kept := rows.At(0)
	rows.Load(2, &b)
	if *kept.CachedTokens != 901 {
		t.Errorf("a row from At shares its figures with the buffer: cached %d after another Load", *kept.CachedTokens)
	}
	rows.SetScenario(0, "renamed")
	if rows.Scenario(0) != "renamed" || rows.Scenario(2) != "midnight" {
		t.Errorf("SetScenario(0): scenarios %q, %q; want renamed, midnight", rows.Scenario(0), rows.Scenario(2))
	}
	sel := rows.Select(func(i int) bool { return i != 1 })
	if sel.Len() != 5 || sel.RequestIndex(1) != 2 || sel.PromptTokens(2) != 1<<40 {
		t.Errorf("Select: %d rows, second request %d, third prompt %d; want 5 rows, request 2, prompt 2^40", sel.Len(), sel.RequestIndex(1), sel.PromptTokens(2))
	}
}

// What Rows holds per row: a bound on the heap a row costs, far below a []Sample's, so that lab
// report's memory does not grow by a Sample per row.
func TestRowsBytesPerRow(t *testing.T) {
	const n = 20_000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	src := make([]Sample, 64)
	for i := range src {
		src[i] = fullSample(int64(i))
		src[i].Error = ""
	}
	before := heap()
	var rows Rows
	rows.Grow(n)
	for i := range n {
		rows.Append(&src[i%len(src)])
	}
	perRow := float64(heap()-before) / n
	runtime.KeepAlive(&rows)
	before = heap()
	samples := make([]Sample, 0, n)
	for i := range n {
		samples = append(samples, src[i%len(src)])
	}
	full := float64(heap()-before) / n
	runtime.KeepAlive(samples)
	t.Logf("Rows: %.0f B/row; []Sample: %.0f B/row (pointer fields shared)", perRow, full)
	// 160 bytes of compactRow (the divergence excerpt's id took it from 152) and a little for
	// the tables.
	if perRow > 168 {
		t.Errorf("Rows holds %.0f B per row; want at most 168", perRow)
	}
}

// The rows of 100 files read one after another (Grow by each file's count, then its rows) are
// moved to a larger array a bounded number of times, not once per file; so are samples (growRows).
func TestGrowIsAmortized(t *testing.T) {
	t.Parallel()
	var r Rows
	var samples []Sample
	moves, sampleMoves := 0, 0
	s := Sample{RunID: "r", Scenario: "s", Arm: SpecArm, PromptTokens: 10}
	for range 100 {
		before, sbefore := cap(r.rows), cap(samples)
		r.Grow(500)
		samples = growRows(samples, 500)
		if cap(r.rows) != before {
			moves++
		}
		if cap(samples) != sbefore {
			sampleMoves++
		}
		for range 500 {
			r.Append(&s)
			samples = append(samples, s)
		}
	}
	if r.Len() != 50_000 || len(samples) != 50_000 {
		t.Fatalf("%d rows, %d samples; want 50,000", r.Len(), len(samples))
	}
	if moves > 30 || sampleMoves > 30 {
		t.Errorf("the rows moved %d times and the samples %d in 100 files; want at most 30 (growth by a factor)", moves, sampleMoves)
	}
}
