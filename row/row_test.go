package row_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"lab/cachesim"
	"lab/chat"
	"lab/metrics"
	"lab/row"
)

// n returns a pointer to v.
func n(v int64) *int64 { return &v }

// same fails the test unless got and want are the same row, column by column (their JSON, in
// which a null figure is null and a 0 is 0).
func same(t *testing.T, name string, got, want *metrics.Sample) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", name, g, w)
	}
}

// base is the row every case starts from: an identity and nothing measured.
func base() *metrics.Sample {
	return row.New(row.Identity{RunID: "r", Scenario: "sc", Arm: "spec", Repetition: 2, Backend: "ollama", Model: "m",
		ServerVersion: "0.17.4", RequestIndex: 3, Turn: 2, Step: 4, Kind: metrics.KindStep,
		StartedAt: time.Date(2026, 12, 1, 1, 2, 3, 4, time.FixedZone("CET", 3600))})
}

// New copies the identity, stores the start in UTC and leaves every figure null, with
// expected_unknown true until an attribution says otherwise.
func TestNew(t *testing.T) {
	same(t, "new", base(), &metrics.Sample{RunID: "r", Scenario: "sc", Arm: "spec", Repetition: 2, Backend: "ollama", Model: "m",
		ServerVersion: "0.17.4", RequestIndex: 3, Turn: 2, Step: 4, Kind: metrics.KindStep,
		StartedAt: time.Date(2026, 12, 1, 0, 2, 3, 4, time.UTC), ExpectedUnknown: true})
	if loc := base().StartedAt.Location(); loc != time.UTC {
		t.Errorf("started_at in %v; want UTC", loc)
	}
	s := base()
	row.Place(s, "conversation 2", 7, 3, 1)
	if s.Scenario != "conversation 2" || s.RequestIndex != 7 || s.Turn != 3 || s.Step != 1 {
		t.Errorf("Place: %q %d %d %d; want conversation 2, 7, 3, 1", s.Scenario, s.RequestIndex, s.Turn, s.Step)
	}
}

// SetResult pins the whole row for each kind of answer: a figure the server gave is copied, one
// it did not give stays null, and reread_tokens is prompt − cached.
func TestSetResult(t *testing.T) {
	price := func(u *chat.Usage) (float64, bool) { return 0.25, u.Prompt != nil }
	for _, tc := range []struct {
		name  string
		res   chat.Result
		price func(*chat.Usage) (float64, bool)
		want  func(*metrics.Sample)
	}{
		{"ollama: no usage, counts from the done message, load reported", chat.Result{PromptTokens: 100, CachedTokens: n(40),
			CachedSource: chat.SourceServerLog, CompletionTokens: 7, Prefill: 5 * time.Millisecond, LoadReported: true, Load: 2 * time.Millisecond},
			price, func(s *metrics.Sample) {
				s.PromptTokens, s.CachedTokens, s.CachedSource, s.CompletionTokens = 100, n(40), "server_log", n(7)
				s.PrefillNs, s.LoadNs, s.RereadTokens = 5e6, n(2e6), n(60)
			}},
		{"no usage, load not reported, a completion of 0", chat.Result{PromptTokens: 100, CachedTokens: n(0), CachedSource: chat.SourceServerLog},
			nil, func(s *metrics.Sample) {
				s.PromptTokens, s.CachedTokens, s.CachedSource, s.CompletionTokens, s.RereadTokens = 100, n(0), "server_log", n(0), n(100)
			}},
		{"usage with every figure, priced", chat.Result{PromptTokens: 100, CachedTokens: n(80), CachedSource: chat.SourceResponse, CompletionTokens: 9,
			Usage: &chat.Usage{Prompt: n(100), CachedRead: n(80), CacheWrite: n(10), CacheWrite5m: n(6), CacheWrite1h: n(4), Generated: n(9),
				ReasoningGenerated: n(3), Fields: map[chat.UsageField]string{chat.UsagePrompt: "usage.prompt_tokens", chat.UsageCachedRead: "usage.prompt_tokens_details.cached_tokens"}}},
			price, func(s *metrics.Sample) {
				s.PromptTokens, s.CachedTokens, s.CachedSource, s.CompletionTokens, s.RereadTokens = 100, n(80), "response", n(9), n(20)
				s.CacheWriteTokens, s.CacheWrite5mTokens, s.CacheWrite1hTokens, s.ReasoningTokensGenerated = n(10), n(6), n(4), n(3)
				s.UsageFields = `{"CachedRead":"usage.prompt_tokens_details.cached_tokens","Prompt":"usage.prompt_tokens"}`
				s.CostUSD = new(0.25)
			}},
		{"usage without counts: completion unknown though the result says 0", chat.Result{PromptTokens: 100, CachedTokens: n(40),
			CachedSource: chat.SourceResponse, Usage: &chat.Usage{Prompt: n(100)}},
			nil, func(s *metrics.Sample) {
				s.PromptTokens, s.CachedTokens, s.CachedSource, s.RereadTokens = 100, n(40), "response", n(60)
			}},
		{"the backend's own cost wins over the table", chat.Result{PromptTokens: 10, CostUSD: new(1.5), Usage: &chat.Usage{Prompt: n(10)}},
			price, func(s *metrics.Sample) { s.PromptTokens, s.CostUSD = 10, new(1.5) }},
		{"a price table that does not know the model", chat.Result{PromptTokens: 10, Usage: &chat.Usage{}},
			price, func(s *metrics.Sample) { s.PromptTokens = 10 }},
		{"cached unknown: its source goes too, re-read unknown", chat.Result{PromptTokens: 100, CompletionTokens: 5, CachedSource: chat.SourceResponse},
			nil, func(s *metrics.Sample) { s.PromptTokens, s.CompletionTokens = 100, n(5) }},
		{"no answer: every figure null", chat.Result{}, price, func(*metrics.Sample) {}},
	} {
		// A row that held other figures: SetResult writes every column it owns.
		got := base()
		got.CachedSource, got.LoadNs, got.CompletionTokens, got.RereadTokens = "stale", n(1), n(1), n(1)
		row.SetResult(got, &tc.res, tc.price)
		want := base()
		tc.want(want)
		same(t, tc.name, got, want)
	}
}

// The re-read rule: reread_tokens = prompt_tokens − cached_tokens as the server counted them; a
// measured 0 cached gives the whole prompt, and an unknown figure gives null, never an estimate.
func TestSetReread(t *testing.T) {
	for _, tc := range []struct {
		prompt int64
		cached *int64
		want   *int64
	}{
		{100, n(40), n(60)},
		{100, n(0), n(100)},
		{100, n(100), n(0)},
		{100, nil, nil},
		{0, n(40), nil},
	} {
		s := base()
		s.PromptTokens, s.CachedTokens, s.ExpectedCachedTokens, s.RereadTokens = tc.prompt, tc.cached, n(90), n(-1)
		row.SetReread(s)
		if (s.RereadTokens == nil) != (tc.want == nil) || (tc.want != nil && *s.RereadTokens != *tc.want) {
			t.Errorf("prompt %d cached %v: reread %v; want %v", tc.prompt, tc.cached, show(s.RereadTokens), show(tc.want))
		}
	}
}

// show prints a nullable figure.
func show(p *int64) string {
	if p == nil {
		return "null"
	}
	return strings.TrimSpace(string(must(json.Marshal(*p))))
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// spans is a rendered prompt of 52 tokens by the tokenizer: a segment of each kind.
var spans = []cachesim.TokenSpan{
	{Name: seg("system"), Start: 0, End: 10}, {Name: seg("tools"), Start: 10, End: 20}, {Name: seg("message 0"), Start: 20, End: 30},
	{Name: seg("tool result 1"), Start: 30, End: 40}, {Name: seg("reasoning 2"), Start: 40, End: 45}, {Name: seg("note"), Start: 45, End: 50},
	{Name: seg("generation prompt"), Start: 50, End: 52},
}

// SetAttribution pins the attribution's columns and the split of the measured re-read by token
// position, which adds up to reread_tokens exactly (the server counting 3 tokens more than the
// tokenizer: unattributed).
func TestSetAttribution(t *testing.T) {
	at := cachesim.Attribution{PromptTokens: 52, ExpectedCachedTokens: 30, DivergenceToken: n(30), DivergenceSegment: seg("tool result 1"),
		ReasoningTokensSent: 5, Spans: spans, ContextOverflow: true, Warnings: []string{"w1", cachesim.WarningContextOverflow + ": w2"}}
	measured := func(prompt int64, cached *int64) *metrics.Sample {
		s := base()
		row.SetResult(s, &chat.Result{PromptTokens: prompt, CachedTokens: cached, CachedSource: chat.SourceServerLog, CompletionTokens: 1}, nil)
		return s
	}
	attributed := func(s *metrics.Sample) {
		s.ExpectedUnknown, s.ExpectedCachedTokens, s.DivergenceToken, s.DivergenceSegment = false, n(30), n(30), "tool result 1"
		s.ReasoningTokensSent, s.ContextOverflow = n(5), true
	}
	for _, tc := range []struct {
		name   string
		prompt int64
		cached *int64
		split  []int64 // system, tools, message, tool result, reasoning, note, other, unattributed; nil: null
	}{
		{"cached inside a message", 55, n(25), []int64{0, 0, 5, 10, 5, 5, 2, 3}},
		{"cold", 55, n(0), []int64{10, 10, 10, 10, 5, 5, 2, 3}},
		{"all cached", 55, n(55), []int64{0, 0, 0, 0, 0, 0, 0, 0}},
		{"the server counts fewer tokens", 45, n(15), []int64{0, 5, 10, 10, 5, 0, 0, 0}},
		{"cached unknown: the split is null", 55, nil, nil},
		{"cached over the prompt: the split is null", 55, n(60), nil},
	} {
		got := measured(tc.prompt, tc.cached)
		got.RereadSystemTokens = n(99) // a stale split is cleared
		warnings := row.SetAttribution(got, at)
		want := measured(tc.prompt, tc.cached)
		attributed(want)
		if tc.split != nil {
			ps := want.RereadSplit()
			var sum int64
			for i, v := range tc.split {
				*ps[i] = n(v)
				sum += v
			}
			if sum != *want.RereadTokens {
				t.Fatalf("%s: the case's split adds up to %d; reread is %d", tc.name, sum, *want.RereadTokens)
			}
		}
		same(t, tc.name, got, want)
		if strings.Join(warnings, "|") != strings.Join(at.Warnings, "|") {
			t.Errorf("%s: warnings %q; want the attribution's %q", tc.name, warnings, at.Warnings)
		}
	}

	// An unknown attribution (no rendering) marks the row and clears what an earlier one wrote.
	got := measured(55, n(25))
	row.SetAttribution(got, at)
	if w := row.SetAttribution(got, cachesim.Attribution{Unknown: true, Warnings: []string{"x"}}); w != nil {
		t.Errorf("unknown attribution: warnings %q; want none", w)
	}
	want := measured(55, n(25))
	want.ContextOverflow = true // a mark an attribution set is never taken back
	same(t, "unknown attribution", got, want)
}

// A row without a rendering gets the segment by comparing parts, and no token.
func TestSetPartsDivergence(t *testing.T) {
	s := base()
	row.SetPartsDivergence(s, cachesim.Segment{Kind: cachesim.Message, Index: 3})
	want := base()
	want.DivergenceSegment = "message 3"
	same(t, "parts divergence", s, want)
}

// A cached count from the server log is used only where the answer gave none, and the re-read
// follows it.
func TestSetServerLogCached(t *testing.T) {
	s := base()
	row.SetResult(s, &chat.Result{PromptTokens: 100, CompletionTokens: 1}, nil)
	row.SetServerLogCached(s, 30)
	if show(s.CachedTokens) != "30" || s.CachedSource != "server_log" || show(s.RereadTokens) != "70" {
		t.Errorf("from the log: cached %s (%q), reread %s; want 30 (server_log), 70", show(s.CachedTokens), s.CachedSource, show(s.RereadTokens))
	}
	s = base()
	row.SetResult(s, &chat.Result{PromptTokens: 100, CachedTokens: n(60), CachedSource: chat.SourceResponse, CompletionTokens: 1}, nil)
	row.SetServerLogCached(s, 30)
	if show(s.CachedTokens) != "60" || s.CachedSource != "response" || show(s.RereadTokens) != "40" {
		t.Errorf("the answer's own count: cached %s (%q), reread %s; want 60 (response), 40", show(s.CachedTokens), s.CachedSource, show(s.RereadTokens))
	}
}

// A constant cached count is dropped from the result, with the uncached count derived from it,
// without touching the usage the backend returned (a copy is changed).
func TestDropConstantCached(t *testing.T) {
	u := &chat.Usage{Prompt: n(100), CachedRead: n(0), Uncached: n(100), Generated: n(3), Fields: map[chat.UsageField]string{
		chat.UsagePrompt: "usage.prompt_tokens", chat.UsageCachedRead: "usage.prompt_tokens_details.cached_tokens",
		chat.UsageUncached: "usage.prompt_tokens - usage.prompt_tokens_details.cached_tokens", chat.UsageGenerated: "usage.completion_tokens"}}
	res := &chat.Result{PromptTokens: 100, CachedTokens: n(0), CachedSource: chat.SourceResponse, Usage: u}
	w, ok := row.DropConstantCached(res, "the server is Ollama")
	if !ok || !strings.HasPrefix(w, "the server is Ollama: that figure is not used") {
		t.Errorf("warning %q, %v; want it to start with the reason", w, ok)
	}
	if res.CachedTokens != nil || res.CachedSource != "" || res.Usage.CachedRead != nil || res.Usage.Uncached != nil {
		t.Errorf("after the drop: cached %v (%q), usage cached %v, uncached %v; want all unknown", res.CachedTokens, res.CachedSource, res.Usage.CachedRead, res.Usage.Uncached)
	}
	if got := string(must(json.Marshal(res.Usage.Fields))); got != `{"Generated":"usage.completion_tokens","Prompt":"usage.prompt_tokens"}` {
		t.Errorf("fields after the drop: %s", got)
	}
	if u.CachedRead == nil || len(u.Fields) != 4 {
		t.Errorf("the backend's usage was changed: %+v", u)
	}
	s := base()
	row.SetResult(s, res, nil)
	if s.CachedTokens != nil || s.RereadTokens != nil || s.CachedSource != "" {
		t.Errorf("row after the drop: cached %s, reread %s; want null", show(s.CachedTokens), show(s.RereadTokens))
	}

	// An uncached count that does not come from the dropped field stays.
	res = &chat.Result{PromptTokens: 100, Usage: &chat.Usage{CachedRead: n(0), Uncached: n(100),
		Fields: map[chat.UsageField]string{chat.UsageCachedRead: "usage.input_tokens_details.cached_tokens", chat.UsageUncached: "usage.prompt_cache_miss_tokens"}}}
	if _, ok := row.DropConstantCached(res, "x"); !ok || show(res.Usage.Uncached) != "100" || res.Usage.Fields[chat.UsageUncached] == "" {
		t.Errorf("an independent uncached count: %s, %v; want it kept", show(res.Usage.Uncached), ok)
	}
	if _, ok := row.DropConstantCached(&chat.Result{PromptTokens: 1}, "x"); ok {
		t.Error("a result without a cached count: ok; want false")
	}
	if _, ok := row.DropConstantCached(nil, "x"); ok {
		t.Error("no result: ok; want false")
	}
}

// Ollama's message_start estimate of the prompt is not a count: dropped, the prompt unknown.
func TestDropOllamaEstimate(t *testing.T) {
	res := &chat.Result{PromptTokens: 40, Usage: &chat.Usage{Prompt: n(40), Uncached: n(40), Generated: n(2), Fields: map[chat.UsageField]string{
		chat.UsagePrompt: "message_start.message.usage.input_tokens", chat.UsageUncached: "message_start.message.usage.input_tokens", chat.UsageGenerated: "message_delta.usage.output_tokens"}}}
	w, ok := row.DropOllamaEstimate(res)
	if !ok || !strings.Contains(w, "prompt tokens unknown") {
		t.Errorf("warning %q, %v", w, ok)
	}
	if res.PromptTokens != 0 || res.Usage.Prompt != nil || res.Usage.Uncached != nil || len(res.Usage.Fields) != 1 {
		t.Errorf("after the drop: prompt %d, usage %+v; want the prompt unknown", res.PromptTokens, res.Usage)
	}
	s := base()
	row.SetResult(s, res, nil)
	if s.PromptTokens != 0 || show(s.CompletionTokens) != "2" {
		t.Errorf("row: prompt %d, completion %s; want null, 2", s.PromptTokens, show(s.CompletionTokens))
	}
	res = &chat.Result{PromptTokens: 40, Usage: &chat.Usage{Uncached: n(40), Fields: map[chat.UsageField]string{chat.UsageUncached: "message_delta.usage.input_tokens"}}}
	if _, ok := row.DropOllamaEstimate(res); ok || res.PromptTokens != 40 {
		t.Errorf("a count from message_delta: dropped (%v), prompt %d; want kept", ok, res.PromptTokens)
	}
}

// The client's clock and the warnings column.
func TestSetTimesAndWarnings(t *testing.T) {
	s := base()
	row.SetTimes(s, 3*time.Millisecond, 2*time.Second, 1234)
	row.SetWarnings(s, []string{"a", "b c"})
	want := base()
	want.TTFTNs, want.TotalNs, want.RequestBytes, want.Warnings = 3e6, 2e9, 1234, "a; b c"
	same(t, "times and warnings", s, want)
	row.SetWarnings(s, nil)
	if s.Warnings != "" {
		t.Errorf("no warnings: %q", s.Warnings)
	}
}

// The saved-request line, byte for byte: lab run's without an API, lab proxy's with one, the
// body compacted (with json.Marshal's escapes of <, > and &), and a body that is not JSON saved as a string.
func TestRequestLine(t *testing.T) {
	for _, tc := range []struct {
		line row.RequestLine
		want string
	}{
		{row.RequestLine{Scenario: "midnight", Arm: "spec", Repetition: 1, RequestIndex: 4, Body: json.RawMessage(`{"model": "m",` + "\n" + ` "messages": []}`)},
			`{"scenario":"midnight","arm":"spec","repetition":1,"request_index":4,"body":{"model":"m","messages":[]}}` + "\n"},
		{row.RequestLine{Scenario: "conversation 1", Arm: "proxy", Repetition: 1, RequestIndex: 0, API: "openai-chat", Body: json.RawMessage(`{"a":"<b>"}`)},
			`{"scenario":"conversation 1","arm":"proxy","repetition":1,"request_index":0,"api":"openai-chat","body":{"a":"\u003cb\u003e"}}` + "\n"},
		{row.RequestLine{Scenario: "s", Arm: "a", Repetition: 2, RequestIndex: 1, Body: json.RawMessage("not json\n")},
			`{"scenario":"s","arm":"a","repetition":2,"request_index":1,"body":"not json\n"}` + "\n"},
	} {
		got, err := tc.line.Marshal()
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v:\n got %q, %v\nwant %q", tc.line, got, err, tc.want)
		}
	}
}

// seg is the cachesim.Segment a divergence_segment name stands for.
func seg(name string) cachesim.Segment {
	s, err := cachesim.ParseSegment(name)
	if err != nil {
		panic(err)
	}
	return s
}

// The tokens chunk reuse supplies go to chunk_reused_tokens (null where the attribution does not
// model it), and the reused chunk is no part of the re-read split.
func TestSetAttributionChunkReuse(t *testing.T) {
	s := base()
	row.SetResult(s, &chat.Result{PromptTokens: 50, CachedTokens: n(40), CompletionTokens: 1}, nil)
	at := cachesim.Attribution{PromptTokens: 50, ExpectedCachedTokens: 40, ChunkReusedTokens: n(20),
		ReusedChunks: []cachesim.TokenRange{{Start: 25, End: 45}},
		Spans:        []cachesim.TokenSpan{{Name: seg("system"), Start: 0, End: 30}, {Name: seg("message 1"), Start: 30, End: 50}}}
	row.SetAttribution(s, at)
	if s.ChunkReusedTokens == nil || *s.ChunkReusedTokens != 20 {
		t.Errorf("chunk_reused_tokens = %v; want 20", s.ChunkReusedTokens)
	}
	// Prefix 20, chunk [25, 45): re-read [20, 25) in the system prompt and [45, 50) in the message.
	if *s.RereadSystemTokens != 5 || *s.RereadMessageTokens != 5 {
		t.Errorf("split system %d, message %d; want 5 and 5", *s.RereadSystemTokens, *s.RereadMessageTokens)
	}
	at.ChunkReusedTokens, at.ReusedChunks = nil, nil
	row.SetAttribution(s, at)
	if s.ChunkReusedTokens != nil {
		t.Errorf("chunk_reused_tokens = %d; want null where chunk reuse is not modelled", *s.ChunkReusedTokens)
	}
}

func TestPromptCutWarning(t *testing.T) {
	if w := row.PromptCutWarning(0, 0, 0, 0); w != "" {
		t.Fatalf("no cut: %q; want none", w)
	}
	w := row.PromptCutWarning(3, 4096, 5210, 4096)
	for _, part := range []string{"before the last 3", "from 5210 to 4096 tokens", "window of 4096 (num_ctx)"} {
		if !strings.Contains(w, part) {
			t.Errorf("warning %q lacks %q", w, part)
		}
	}
	if w := row.PromptCutWarning(0, 4096, 5000, 4096); strings.Contains(w, "messages") {
		t.Errorf("a runner-only cut names dropped messages: %q", w)
	}
}

func TestDroppedMessages(t *testing.T) {
	req := &chat.Request{Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a coding agent."},
		{Role: chat.RoleSystem, Content: "  Developer instructions: be brief.\n"},
		{Role: chat.RoleUser, Content: "fix the bug"},
		{Role: chat.RoleAssistant, Reasoning: "old thoughts", ToolCalls: []chat.ToolCall{{Name: "read"}}},
	}}
	// The qwen3.5 renderer's output without the developer message (a system message here).
	rendered := "<|im_start|>system\nYou are a coding agent.<|im_end|>\n<|im_start|>user\nfix the bug<|im_end|>\n<|im_start|>assistant\n"
	got := row.DroppedMessages(req, rendered)
	if len(got) != 1 || !strings.Contains(got[0], "message 1 (system") {
		t.Fatalf("DroppedMessages = %q; want one warning naming message 1", got)
	}
	if got := row.DroppedMessages(req, rendered+"Developer instructions: be brief."); len(got) != 0 {
		t.Fatalf("every text rendered: %q; want none", got)
	}
	if got := row.DroppedMessages(req, ""); got != nil {
		t.Fatalf("no rendering: %q; want none", got)
	}
	// An Anthropic system prompt of two blocks: the lab's decoder joins them with a newline,
	// Ollama's conversion with nothing. It was rendered; a message none of whose lines were is
	// still named.
	blocks := &chat.Request{Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "x-billing-header: v=1;\nYou are a coding agent.\nUse the tools.\nBe brief."},
		{Role: chat.RoleUser, Content: "line one of a reminder\nline two of a reminder"},
	}}
	joined := "<|im_start|>system\nx-billing-header: v=1;You are a coding agent.\nUse the tools.\nBe brief.<|im_end|>\n"
	if got := row.DroppedMessages(blocks, joined); len(got) != 1 || !strings.Contains(got[0], "message 1 (user") {
		t.Fatalf("blocks joined by the server: %q; want only message 1 named", got)
	}
}
