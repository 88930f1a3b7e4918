package metrics_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"lab/metrics"
)

// oldSample is a row as the lab wrote it before its figures were nullable: every count and time
// a required column, error "" on success, expected_unknown rows with zeros for the figures, and
// reread_tokens estimated as prompt − expected when cached tokens were unknown.
type oldSample struct {
	RunID                 string `parquet:"run_id"`
	PromptTokens          int64  `parquet:"prompt_tokens"`
	CachedTokens          *int64 `parquet:"cached_tokens,optional"`
	ExpectedCachedTokens  int64  `parquet:"expected_cached_tokens"`
	RereadTokens          int64  `parquet:"reread_tokens"`
	RereadMessageTokens   int64  `parquet:"reread_message_tokens"`
	ReasoningTokensSent   int64  `parquet:"reasoning_tokens_sent"`
	CompletionTokens      int64  `parquet:"completion_tokens"`
	LoadNs                int64  `parquet:"load_ns"`
	PrefillNs             int64  `parquet:"prefill_ns"`
	Error                 string `parquet:"error"`
	ExpectedUnknown       bool   `parquet:"expected_unknown"`
	RereadReasoningTokens int64  `parquet:"reread_reasoning_tokens"`
}

// nullable reads a file's columns back as pointers, to see which values are null.
type nullable struct {
	Error          *string `parquet:"error,optional"`
	CachedSource   *string `parquet:"cached_source,optional"`
	PromptTokens   *int64  `parquet:"prompt_tokens,optional"`
	Completion     *int64  `parquet:"completion_tokens,optional"`
	LoadNs         *int64  `parquet:"load_ns,optional"`
	TTFTNs         *int64  `parquet:"ttft_ns,optional"`
	Expected       *int64  `parquet:"expected_cached_tokens,optional"`
	Reread         *int64  `parquet:"reread_tokens,optional"`
	RereadMessage  *int64  `parquet:"reread_message_tokens,optional"`
	Unattributed   *int64  `parquet:"reread_unattributed_tokens,optional"`
	ReasoningSent  *int64  `parquet:"reasoning_tokens_sent,optional"`
	ReasoningGen   *int64  `parquet:"reasoning_tokens_generated,optional"`
	ExpectedUnkown bool    `parquet:"expected_unknown"`
}

// What was not measured is written as null: error on a request that succeeded, the figures a
// failed request never got, and 0 only where it was measured (a load time of 0).
func TestUnmeasuredIsNull(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), metrics.SamplesFile)
	ok := metrics.Sample{RunID: "r", PromptTokens: 120, CachedTokens: new(int64(100)), CachedSource: metrics.CachedSourceServerLog, RereadTokens: new(int64(20)),
		ExpectedCachedTokens: new(int64(0)), CompletionTokens: new(int64(0)), LoadNs: new(int64(0)), TTFTNs: 5,
		RereadMessageTokens: new(int64(20)), RereadUnattributedTokens: new(int64(0)), ReasoningTokensSent: new(int64(0))}
	failed := metrics.Sample{RunID: "r", Error: "HTTP 500: boom", ExpectedUnknown: true}
	writeParquet(t, path, []metrics.Sample{ok, failed})

	got, err := parquet.ReadFile[nullable](path)
	if err != nil {
		t.Fatal(err)
	}
	g := got[0]
	if g.Error != nil {
		t.Errorf("error of a request that succeeded = %q; want null", *g.Error)
	}
	if f := got[1]; f.CachedSource != nil {
		t.Errorf("cached_source of a row without cached tokens = %q; want null", *f.CachedSource)
	}
	for name, p := range map[string]*int64{"prompt_tokens": g.PromptTokens, "completion_tokens": g.Completion, "load_ns": g.LoadNs,
		"expected_cached_tokens": g.Expected, "reread_tokens": g.Reread, "reread_message_tokens": g.RereadMessage,
		"reread_unattributed_tokens": g.Unattributed, "reasoning_tokens_sent": g.ReasoningSent, "ttft_ns": g.TTFTNs} {
		if p == nil {
			t.Errorf("measured row: %s is null; want its value", name)
		}
	}
	if g.Completion != nil && *g.Completion != 0 || g.LoadNs != nil && *g.LoadNs != 0 {
		t.Errorf("measured 0s: completion %v, load %v; want 0, 0", g.Completion, g.LoadNs)
	}
	f := got[1]
	if f.Error == nil || *f.Error != "HTTP 500: boom" {
		t.Errorf("error of the failed request = %v; want its message", f.Error)
	}
	for name, p := range map[string]*int64{"prompt_tokens": f.PromptTokens, "completion_tokens": f.Completion, "load_ns": f.LoadNs,
		"expected_cached_tokens": f.Expected, "reread_tokens": f.Reread, "reread_message_tokens": f.RereadMessage,
		"reread_unattributed_tokens": f.Unattributed, "reasoning_tokens_sent": f.ReasoningSent,
		"reasoning_tokens_generated": f.ReasoningGen, "ttft_ns": f.TTFTNs} {
		if p != nil {
			t.Errorf("failed row: %s = %d; want null", name, *p)
		}
	}
	// And the lab reads them back as it wrote them.
	rows, err := metrics.ReadParquet(path)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Error != "" || rows[0].CachedSource != metrics.CachedSourceServerLog || rows[1].CachedSource != "" || rows[1].Error != failed.Error || rows[1].RereadTokens != nil || *rows[0].RereadTokens != 20 {
		t.Errorf("read back: %+v", rows)
	}
}

// A file of the old layout, whose figures were required columns, still reads; the stand-ins the
// old schema wrote (zeros on an expected_unknown row, a re-read estimated from the expected
// cached tokens where the cached ones were unknown) read as unknown. So does its journal.
func TestOldLayoutReadsWithNulls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, metrics.SamplesFile)
	old := []oldSample{
		// Measured: cached known, expected known.
		{RunID: "old", PromptTokens: 1000, CachedTokens: new(int64(900)), ExpectedCachedTokens: 900, RereadTokens: 100, RereadMessageTokens: 98, LoadNs: 0, PrefillNs: 5e6},
		// Cached unknown (Ollama without its log): reread was prompt − expected.
		{RunID: "old", PromptTokens: 1000, ExpectedCachedTokens: 700, RereadTokens: 300, RereadMessageTokens: 290},
		// A cloud API: expected unknown, its figures zeros.
		{RunID: "old", PromptTokens: 1000, CachedTokens: new(int64(512)), RereadTokens: 488, ExpectedUnknown: true},
		// A failed request.
		{RunID: "old", Error: "HTTP 500", ExpectedUnknown: false},
	}
	if err := parquet.WriteFile(path, old); err != nil {
		t.Fatal(err)
	}
	rows, err := metrics.ReadParquet(path)
	if err != nil {
		t.Fatalf("ReadParquet(old layout) = %v", err)
	}
	check := func(src string, rows []metrics.Sample) {
		t.Helper()
		if len(rows) != 4 {
			t.Fatalf("%s: %d rows; want 4", src, len(rows))
		}
		if r := rows[0]; r.RereadTokens == nil || *r.RereadTokens != 100 || r.ExpectedCachedTokens == nil || *r.ExpectedCachedTokens != 900 ||
			r.RereadMessageTokens == nil || *r.RereadMessageTokens != 98 || r.PrefillNs != 5e6 {
			t.Errorf("%s: measured row %+v; want its figures kept", src, r)
		}
		if r := rows[1]; r.RereadTokens != nil || r.RereadMessageTokens != nil || r.ExpectedCachedTokens == nil || *r.ExpectedCachedTokens != 700 {
			t.Errorf("%s: row without cached tokens: reread %v, split %v, expected %v; want nil, nil, 700", src, r.RereadTokens, r.RereadMessageTokens, r.ExpectedCachedTokens)
		}
		if r := rows[2]; r.ExpectedCachedTokens != nil || r.ReasoningTokensSent != nil || r.RereadMessageTokens != nil || r.RereadTokens == nil || *r.RereadTokens != 488 {
			t.Errorf("%s: expected_unknown row: expected %v, sent %v, split %v, reread %v; want nil, nil, nil, 488", src, r.ExpectedCachedTokens, r.ReasoningTokensSent, r.RereadMessageTokens, r.RereadTokens)
		}
		if r := rows[3]; r.Error != "HTTP 500" || r.RereadTokens != nil || r.CompletionTokens != nil || r.PromptTokens != 0 {
			t.Errorf("%s: failed row: %+v; want no figures", src, r)
		}
	}
	check("parquet", rows)

	// The journal of an old run: the same rows as JSON lines, non-null numbers everywhere.
	jpath := filepath.Join(dir, "old.journal.jsonl")
	lines := `{"run_id":"old","started_at":"2026-01-01T00:00:00Z","prompt_tokens":1000,"cached_tokens":900,"expected_cached_tokens":900,"reread_tokens":100,"reread_message_tokens":98,"prefill_ns":5000000,"load_ns":0,"error":"","expected_unknown":false,"reasoning_tokens_sent":0,"completion_tokens":1}
{"run_id":"old","started_at":"2026-01-01T00:00:00Z","prompt_tokens":1000,"cached_tokens":null,"expected_cached_tokens":700,"reread_tokens":300,"reread_message_tokens":290,"error":"","expected_unknown":false}
{"run_id":"old","started_at":"2026-01-01T00:00:00Z","prompt_tokens":1000,"cached_tokens":512,"expected_cached_tokens":0,"reread_tokens":488,"reread_message_tokens":0,"reasoning_tokens_sent":0,"error":"","expected_unknown":true}
{"run_id":"old","started_at":"2026-01-01T00:00:00Z","prompt_tokens":0,"completion_tokens":0,"reread_tokens":0,"error":"HTTP 500","expected_unknown":false}
`
	if err := os.WriteFile(jpath, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	jrows, err := metrics.ReadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	check("journal", jrows)
	if !jrows[0].StartedAt.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("started_at = %v", jrows[0].StartedAt)
	}
}

// The old schema wrote load_ns 0 on every row; only Ollama reports a load time (lab run's
// ollama backend, lab proxy's ollama-chat and ollama-generate rows), so an old row of another
// backend reads its 0 as unknown, while Ollama's 0 (the model was loaded already) stands.
func TestUpgradeLoadTimeOfOtherBackends(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend string
		known   bool
	}{{"ollama", true}, {"proxy:ollama-chat", true}, {"proxy:ollama-generate", true}, {"sim", false}, {"llamacpp", false}, {"anthropic", false}, {"proxy:openai-chat", false}} {
		s := metrics.Sample{Backend: tc.backend, LoadNs: new(int64(0))}
		s.Upgrade()
		if (s.LoadNs != nil) != tc.known {
			t.Errorf("%s: load_ns 0 read as %v; want known %v", tc.backend, s.LoadNs, tc.known)
		}
		s = metrics.Sample{Backend: tc.backend, LoadNs: new(int64(5))}
		if s.Upgrade(); s.LoadNs == nil {
			t.Errorf("%s: a load time of 5 ns read as unknown", tc.backend)
		}
	}
}
