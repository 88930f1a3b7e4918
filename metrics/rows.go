package metrics

import (
	"iter"
	"slices"
	"time"
)

// Rows is a compact, append-only table of samples for readers that aggregate many rows (lab
// report, lab compare): per row it holds only the columns a report's tables and charts read, in
// 160 bytes (a [Sample] with its nullable figures takes about 650) and without a heap object
// per nullable figure.
//
// Held per row: the labels shared by the rows of one session (run id, scenario, arm, backend,
// model, server version, kind, driver: one pointer to an interned set), the repetition, request
// index, turn and step, started_at (Unix nanoseconds, UTC), prompt and prefill (never 0 when
// measured: 0 is unknown, as in [Sample]), the nullable figures cached, expected cached, reread,
// the eight reread_*_tokens of the split, reasoning tokens sent, completion, reasoning tokens
// generated, load time and cost (a bit set says which are known: a null stays null), the
// divergence token, segment and excerpt, scenario event, cached source, end reason and error (interned), the time to first
// token (to the microsecond: a row read back has it in whole microseconds; one of 2³¹ µs or more,
// about 36 minutes, is not held), and the flags context overflow, repeated call and expected
// unknown. Not held: warnings, usage fields, cache writes, total time, request bytes and retries;
// a row read back ([Rows.Load], [Rows.At]) has them empty.
//
// The zero Rows is empty and ready to use. A Rows is not safe for concurrent writes; reads
// (Load, At, All and the accessors) may run concurrently once no row is added.
type Rows struct {
	rows []compactRow
	tab  *rowTables
}

// rowTables are the interned strings of a [Rows], shared by the Rows that [Rows.Select] makes.
type rowTables struct {
	labels map[rowLabels]*rowLabels
	strs   []string
	ids    map[string]uint32
	// wide holds the figures of the rows with a token count beyond int32 (compactRow.wide).
	wide []wideRow
}

// wideRow is the figures of a row with a token count that does not fit in an int32, in full.
type wideRow struct {
	prompt int64
	vals   [nValues]int64
	div    int64 // 1 + the divergence token; 0 when it is null
}

// rowLabels are the string columns shared by the rows of one session.
type rowLabels struct {
	RunID, Scenario, Arm, Backend, Model, ServerVersion, Kind, Driver string
}

// The nullable figures of a compact row, the bits of compactRow.known.
const (
	nCached     = 0
	nExpected   = 1
	nReread     = 2
	nSplit      = 3 // 3 … 10: the re-read split in the order of [Sample.RereadSplit]
	nSent       = 11
	nCompletion = 12
	nGenerated  = 13
	nLoad       = 14
	nValues     = 15 // the count of nullable int64 figures; the cost is bit nValues
)

// The flags of a compact row.
const (
	fOverflow = 1 << iota
	fRepeated
	fExpectedUnknown
)

// compactRow is one row of a [Rows]: 160 bytes. Token counts are int32 (a prompt of more than
// 2³¹ − 1 tokens is no real request); a row with one beyond that range keeps them all in
// rowTables.wide instead, so that no figure is ever cut. Times and the cost stay 64-bit.
type compactRow struct {
	lab                  *rowLabels
	started              int64 // Unix nanoseconds; 0 for the zero time
	prefill, load        int64
	cost                 float64
	vals                 [nValues]int32 // the token figures (not the load time, bit nLoad), when wide is 0
	prompt               int32          // when wide is 0
	rep, req, turn, step int32
	div                  int32  // 1 + the divergence token, when wide is 0; 0 when it is null
	ttftUs               int32  // the time to first token in microseconds; 0 when unknown
	seg, src, end, err   uint32 // ids in rowTables.strs; 0 is ""
	excerpt              uint32 // the divergence excerpt's id in rowTables.strs
	event                uint32 // the scenario event's id in rowTables.strs
	wide                 uint32 // 1 + the index of the row's figures in rowTables.wide; 0 when they fit here
	known                uint16
	flags                uint8
}

// fits32 reports whether v is an int32.
func fits32(v int64) bool { return v == int64(int32(v)) }

// RowsOf returns the samples as a [Rows].
func RowsOf(samples []Sample) *Rows {
	r := &Rows{}
	r.Grow(len(samples))
	for i := range samples {
		r.Append(&samples[i])
	}
	return r
}

func (r *Rows) tables() *rowTables {
	if r.tab == nil {
		r.tab = &rowTables{labels: map[rowLabels]*rowLabels{}, strs: []string{""}, ids: map[string]uint32{"": 0}}
	}
	return r.tab
}

func (t *rowTables) id(s string) uint32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	id := uint32(len(t.strs))
	t.strs = append(t.strs, s)
	t.ids[s] = id
	return id
}

func (t *rowTables) label(l rowLabels) *rowLabels {
	if p, ok := t.labels[l]; ok {
		return p
	}
	p := &l
	t.labels[l] = p
	return p
}

// Len returns the number of rows.
func (r *Rows) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rows)
}

// Grow makes room for n more rows (n ≤ 0 or above 2³¹: no change), growing as append does, so
// that the rows of many runs read one after another are copied a bounded number of times, not
// once per run.
func (r *Rows) Grow(n int) {
	if n <= 0 || n > 1<<31 {
		return
	}
	r.rows = slices.Grow(r.rows, n)
}

// Truncate drops every row from the n-th on (0-based).
func (r *Rows) Truncate(n int) { r.rows = r.rows[:n] }

// Append adds the held columns of s (see [Rows]) as the last row. Strings are copied into the
// table's interned set: s may be reused after the call.
func (r *Rows) Append(s *Sample) {
	t := r.tables()
	c := compactRow{
		lab: t.label(rowLabels{RunID: s.RunID, Scenario: s.Scenario, Arm: s.Arm, Backend: s.Backend, Model: s.Model,
			ServerVersion: s.ServerVersion, Kind: s.Kind, Driver: s.Driver}),
		prefill: s.PrefillNs,
		rep:     s.Repetition, req: s.RequestIndex, turn: s.Turn, step: s.Step,
		seg: t.id(s.DivergenceSegment), src: t.id(s.CachedSource), end: t.id(s.EndReason), err: t.id(s.Error),
		excerpt: t.id(s.DivergenceExcerpt), event: t.id(s.ScenarioEvent),
	}
	if !s.StartedAt.IsZero() {
		c.started = s.StartedAt.UnixNano()
	}
	if us := s.TTFTNs / 1e3; s.TTFTNs > 0 && fits32(us) {
		c.ttftUs = int32(us)
	}
	var full wideRow
	wide := !fits32(s.PromptTokens)
	full.prompt, c.prompt = s.PromptTokens, int32(s.PromptTokens)
	if d := s.DivergenceToken; d != nil {
		full.div, c.div = *d+1, int32(*d+1)
		wide = wide || !fits32(*d+1)
	}
	for i, p := range s.nullables() {
		switch {
		case p == nil:
			continue
		case i == nLoad:
			c.load = *p
		default:
			full.vals[i], c.vals[i] = *p, int32(*p)
			wide = wide || !fits32(*p)
		}
		c.known |= 1 << i
	}
	if wide {
		t.wide = append(t.wide, full)
		c.wide = uint32(len(t.wide))
		c.vals, c.prompt, c.div = [nValues]int32{}, 0, 0
	}
	if s.CostUSD != nil {
		c.cost = *s.CostUSD
		c.known |= 1 << nValues
	}
	if s.ContextOverflow {
		c.flags |= fOverflow
	}
	if s.RepeatedCall {
		c.flags |= fRepeated
	}
	if s.ExpectedUnknown {
		c.flags |= fExpectedUnknown
	}
	r.rows = append(r.rows, c)
}

// nullables returns the int64 figures a compact row holds, in the order of its bits.
func (s *Sample) nullables() [nValues]*int64 {
	return [nValues]*int64{s.CachedTokens, s.ExpectedCachedTokens, s.RereadTokens,
		s.RereadSystemTokens, s.RereadToolsTokens, s.RereadMessageTokens, s.RereadToolResultTokens,
		s.RereadReasoningTokens, s.RereadNoteTokens, s.RereadOtherTokens, s.RereadUnattributedTokens,
		s.ReasoningTokensSent, s.CompletionTokens, s.ReasoningTokensGenerated, s.LoadNs}
}

// SampleBuf is the room one row read back from a [Rows] takes: the [Sample] and the values its
// pointer fields point at. Its zero value is ready; one buffer holds one row at a time.
type SampleBuf struct {
	s    Sample
	vals [nValues]int64
	cost float64
	div  int64
}

// Load reads row i back into b and returns b's Sample, whose pointer fields point into b: it is
// valid until the next Load into b (copy a field's value, not the pointer, to keep it). The
// columns [Rows] does not hold are empty. It panics when i is out of range.
func (r *Rows) Load(i int, b *SampleBuf) *Sample {
	c := &r.rows[i]
	strs := r.tab.strs
	if c.wide != 0 {
		b.vals, b.div = r.tab.wide[c.wide-1].vals, r.tab.wide[c.wide-1].div
	} else {
		for k, v := range c.vals {
			b.vals[k] = int64(v)
		}
		b.div = int64(c.div)
	}
	b.vals[nLoad] = c.load
	b.cost = c.cost
	s := &b.s
	*s = Sample{RunID: c.lab.RunID, Scenario: c.lab.Scenario, Arm: c.lab.Arm, Backend: c.lab.Backend, Model: c.lab.Model,
		ServerVersion: c.lab.ServerVersion, Kind: c.lab.Kind, Driver: c.lab.Driver,
		Repetition: c.rep, RequestIndex: c.req, Turn: c.turn, Step: c.step,
		PromptTokens: r.PromptTokens(i), PrefillNs: c.prefill, TTFTNs: int64(c.ttftUs) * 1e3,
		DivergenceSegment: strs[c.seg], DivergenceExcerpt: strs[c.excerpt], ScenarioEvent: strs[c.event], CachedSource: strs[c.src], EndReason: strs[c.end], Error: strs[c.err],
		ContextOverflow: c.flags&fOverflow != 0, RepeatedCall: c.flags&fRepeated != 0, ExpectedUnknown: c.flags&fExpectedUnknown != 0,
	}
	if c.started != 0 {
		s.StartedAt = time.Unix(0, c.started).UTC()
	}
	ptrs := [nValues]**int64{&s.CachedTokens, &s.ExpectedCachedTokens, &s.RereadTokens,
		&s.RereadSystemTokens, &s.RereadToolsTokens, &s.RereadMessageTokens, &s.RereadToolResultTokens,
		&s.RereadReasoningTokens, &s.RereadNoteTokens, &s.RereadOtherTokens, &s.RereadUnattributedTokens,
		&s.ReasoningTokensSent, &s.CompletionTokens, &s.ReasoningTokensGenerated, &s.LoadNs}
	for k, p := range ptrs {
		if c.known&(1<<k) != 0 {
			*p = &b.vals[k]
		}
	}
	if c.known&(1<<nValues) != 0 {
		s.CostUSD = &b.cost
	}
	if b.div != 0 {
		b.div--
		s.DivergenceToken = &b.div
	}
	return s
}

// At returns row i as a Sample of its own (its pointer fields allocated), for a caller that
// keeps a few rows. It panics when i is out of range.
func (r *Rows) At(i int) Sample {
	var b SampleBuf
	s := *r.Load(i, &b)
	for _, p := range s.nullablePtrs() {
		if *p != nil {
			*p = new(**p)
		}
	}
	if s.CostUSD != nil {
		s.CostUSD = new(*s.CostUSD)
	}
	if s.DivergenceToken != nil {
		s.DivergenceToken = new(*s.DivergenceToken)
	}
	return s
}

func (s *Sample) nullablePtrs() []**int64 {
	return append(s.RereadSplit(), &s.CachedTokens, &s.ExpectedCachedTokens, &s.RereadTokens,
		&s.ReasoningTokensSent, &s.CompletionTokens, &s.ReasoningTokensGenerated, &s.LoadNs)
}

// All yields each row's index and the row read back into one buffer ([Rows.Load]: the *Sample
// is valid only until the next iteration).
func (r *Rows) All() iter.Seq2[int, *Sample] {
	return func(yield func(int, *Sample) bool) {
		var b SampleBuf
		for i := range r.Len() {
			if !yield(i, r.Load(i, &b)) {
				return
			}
		}
	}
}

// Samples returns every row as a Sample of its own ([Rows.At]).
func (r *Rows) Samples() []Sample {
	out := make([]Sample, r.Len())
	for i := range out {
		out[i] = r.At(i)
	}
	return out
}

// RunID, Scenario, Arm, Repetition, RequestIndex, PromptTokens and StartedAtUnixNano (0 for the
// zero time) return those columns of row i without reading the row back. They panic when i is
// out of range.
func (r *Rows) RunID(i int) string       { return r.rows[i].lab.RunID }
func (r *Rows) Scenario(i int) string    { return r.rows[i].lab.Scenario }
func (r *Rows) Arm(i int) string         { return r.rows[i].lab.Arm }
func (r *Rows) Repetition(i int) int32   { return r.rows[i].rep }
func (r *Rows) RequestIndex(i int) int32 { return r.rows[i].req }
func (r *Rows) PromptTokens(i int) int64 {
	if c := &r.rows[i]; c.wide != 0 {
		return r.tab.wide[c.wide-1].prompt
	}
	return int64(r.rows[i].prompt)
}
func (r *Rows) StartedAtUnixNano(i int) int64 { return r.rows[i].started }

// ScenarioEvent returns row i's scenario event ([Sample].ScenarioEvent; "" for none).
func (r *Rows) ScenarioEvent(i int) string { return r.tab.strs[r.rows[i].event] }

// SetScenario renames the scenario of row i (the labels of other rows are not changed).
func (r *Rows) SetScenario(i int, name string) {
	l := *r.rows[i].lab
	l.Scenario = name
	r.rows[i].lab = r.tables().label(l)
}

// SetArm renames row i's arm (a report's name for an arm defined more than once among the runs
// it pools).
func (r *Rows) SetArm(i int, name string) {
	l := *r.rows[i].lab
	l.Arm = name
	r.rows[i].lab = r.tables().label(l)
}

// Select returns the rows whose index keep reports true, in order, as a new Rows sharing r's
// interned strings (rows added to either later are interned into both tables).
func (r *Rows) Select(keep func(i int) bool) *Rows {
	out := &Rows{tab: r.tab}
	for i := range r.Len() {
		if keep(i) {
			out.rows = append(out.rows, r.rows[i])
		}
	}
	return out
}

// Slice returns rows [from, to) as a Rows sharing r's rows and interned strings (read them, do
// not append to either).
func (r *Rows) Slice(from, to int) *Rows {
	return &Rows{rows: r.rows[from:to:to], tab: r.tab}
}
