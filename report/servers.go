package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"lab/metrics"
	"lab/stats"
)

// ServerComparison sets two setups of a report side by side as two servers measuring one thing:
// the runs differ in the server (backend, server version, server settings such as the chat
// template, the context size, flash attention, cache reuse) and match in what is measured
// (model file, driver, how each session found the cache, scenario contents, arms). [AnalyzeRuns]
// makes one per setup after the first, against the first (the base). Token counts are in tokens
// of each server's own tokenizer.
type ServerComparison struct {
	// Base and Other are the setups' labels ([SetupInfo].Label); BaseServer and OtherServer
	// name their servers for people: "ollama 0.17.4".
	Base        string `json:"base"`
	Other       string `json:"other"`
	BaseServer  string `json:"base_server"`
	OtherServer string `json:"other_server"`
	// Refused names what the two setups measured differently ("model file: A sha256:…, B
	// sha256:…", "no arm in common"): when it is not empty they are not two servers measuring
	// one thing, and the comparison holds no figure (Arms, Requests and Causes are empty).
	Refused []string `json:"refused,omitempty"`
	// Differs names every part of the setups and every manifest setting (bookkeeping such as
	// run flags left out, [ServerBookkeeping]) whose value differs, with both values:
	// "backend: A ollama, B llamacpp", "cache_reuse: A not set, B 256".
	Differs []string `json:"differs,omitempty"`
	// Notes are what the reader must know beside the figures: scenarios or arms only one setup
	// ran (left out), repetitions that differ in number, a model named differently by the two
	// servers.
	Notes []string `json:"notes,omitempty"`
	// Arms holds, per scenario×arm both setups ran (scenarios by name, arms in
	// [metrics.SortArms] order), each setup's figures.
	Arms []ServerArm `json:"arms,omitempty"`
	// Requests are the requests both servers answered (matched by scenario, arm, repetition in
	// order and request index) whose re-read tokens differ by more than [MismatchTolerance] of
	// the larger prompt, in that order.
	Requests []RequestDiff `json:"requests,omitempty"`
	// Causes sums Requests per cause ([RequestDiff].Cause), most re-read tokens apart first.
	Causes []DiffCause `json:"causes,omitempty"`
	// Rendering says what the rows record of each server's rendering of the prompt.
	Rendering string `json:"rendering"`
}

// ServerBookkeeping are the manifest settings that are not conditions of a measurement and
// [ServerComparison].Differs leaves out: the flags a run was started with (each condition they
// set is recorded as a setting of its own), when it was resumed, the proxy's listen address and
// the server log it read.
var ServerBookkeeping = []string{"lab_run_flags", "run_flags", "resumed_at", "listen", "server_log"}

// Label names the comparison where a figure belongs to it ([Figure].Setup): "A vs B".
func (c *ServerComparison) Label() string { return c.Base + " vs " + c.Other }

// ServerArm is one scenario×arm of a [ServerComparison]: each setup's figures.
type ServerArm struct {
	Scenario string        `json:"scenario"`
	Arm      string        `json:"arm"`
	Base     ServerFigures `json:"base"`
	Other    ServerFigures `json:"other"`
}

// ServerFigures are one setup's figures of one scenario×arm: the means over its repetitions of
// the per-repetition totals, as [ArmStats] has them, and the time to first token.
type ServerFigures struct {
	Repetitions    int            `json:"repetitions"`
	Requests       stats.Estimate `json:"requests"`
	CachedShare    stats.Estimate `json:"cached_share"`
	RereadTokens   stats.Estimate `json:"reread_tokens"`
	PrefillSeconds stats.Estimate `json:"prefill_seconds"`
	// PrefillComparable is false when a run of the setup failed the prefill check
	// ([PrefillCheck]): its prefill seconds draw no conclusion and are not shown.
	PrefillComparable bool           `json:"prefill_comparable"`
	Efficiency        stats.Estimate `json:"efficiency"`
	// TTFTSeconds is the mean time to first token per request in seconds, over the requests
	// that have one (TTFTKnown of them, pooled over the repetitions); nil when none has.
	TTFTSeconds *float64 `json:"ttft_seconds"`
	TTFTKnown   int      `json:"ttft_known"`
}

// RequestSide is one server's measurement of a request of a [RequestDiff].
type RequestSide struct {
	// PromptTokens is 0 when unknown; the pointers are nil when the row's figure is null.
	PromptTokens         int64  `json:"prompt_tokens"`
	CachedTokens         *int64 `json:"cached_tokens"`
	ExpectedCachedTokens *int64 `json:"expected_cached_tokens"`
	RereadTokens         *int64 `json:"reread_tokens"`
	// DivergenceToken and DivergenceSegment are where the prompt first differed from what the
	// server's cache held after the previous request, as the lab computes it from that server's
	// rendering ([metrics.Sample]): a token position and a segment ("reasoning 19").
	DivergenceToken   *int64 `json:"divergence_token"`
	DivergenceSegment string `json:"divergence_segment"`
	// AtPreviousPrompt is true when the divergence lies at the end of the session's previous
	// prompt (DivergenceToken equals its prompt tokens): the previous reply, as this prompt
	// renders it, differs from its first token from the reply the cache holds after that prompt.
	AtPreviousPrompt bool `json:"at_previous_prompt,omitempty"`
	// Verdict compares cached with expected cached tokens (the lab's model of this server's
	// rendering and cache): "as expected" (within [MismatchTolerance]), "more than expected",
	// "more than expected: the whole prompt was cached" (cached ≥ prompt − 1: a server re-reads
	// at least the last token), "less than expected", or "expected unknown".
	Verdict string `json:"verdict"`
}

// RequestDiff is one request whose re-read tokens differ between the two servers.
type RequestDiff struct {
	Scenario string `json:"scenario"`
	Arm      string `json:"arm"`
	// Repetition is the repetition's place among its setup's repetitions of the scenario×arm
	// (1-based; runs by id, then repetition): the two setups' repetitions are paired in order.
	Repetition   int   `json:"repetition"`
	RequestIndex int32 `json:"request_index"`
	// Turn and Step are the base row's ([metrics.Sample]): step 1 of a turn after the first is
	// a new user message, a later step a request inside a turn.
	Turn  int32       `json:"turn"`
	Step  int32       `json:"step"`
	Base  RequestSide `json:"base"`
	Other RequestSide `json:"other"`
	// RereadDiff is the other server's re-read tokens minus the base's.
	RereadDiff int64 `json:"reread_diff"`
	// Cause names where each server's cache diverged and whether that is what the lab expected
	// of it: "A: in reasoning, as expected; B: in tool result, more than expected".
	Cause string `json:"cause"`
}

// DiffCause sums the [RequestDiff]s of one cause.
type DiffCause struct {
	Cause    string `json:"cause"`
	Requests int    `json:"requests"`
	// BaseReread and OtherReread are the two servers' re-read tokens over those requests.
	BaseReread  int64 `json:"base_reread"`
	OtherReread int64 `json:"other_reread"`
	// Why says what the verdicts mean, in words.
	Why string `json:"why"`
}

// renderingNotRecorded is [ServerComparison].Rendering: the rows hold no rendering.
const renderingNotRecorded = "The rows record, per request, where each server's cache diverged (token position and prompt segment) " +
	"and what the lab expected of it, but no rendering of the prompt: this report cannot show each server's rendering of the " +
	"history at the divergence, only where it was. lab run --save-requests keeps the request bodies sent (requests-*.jsonl in " +
	"the run folder): the chat messages before the server renders them, the same history for both servers, not their renderings."

// serverSide is one setup as [compareServers] reads it.
type serverSide struct {
	an   *Analysis
	runs []*metrics.Manifest
	rows *metrics.Rows // the complete sessions' rows, scenarios renamed as an's
}

// compareServers sets other beside base as servers ([ServerComparison]).
func compareServers(base, other serverSide) ServerComparison {
	bi, oi := base.an.Setup, other.an.Setup
	c := ServerComparison{Base: bi.Label, Other: oi.Label, Rendering: renderingNotRecorded,
		BaseServer: serverName(bi.Setup), OtherServer: serverName(oi.Setup)}
	lab := func(v string) string { return orNotSet(v) }
	bs, os := bi.Setup, oi.Setup
	// What is measured: the model, the driver and its settings, the cache at the start.
	switch {
	case bs.ModelDigest != "" && os.ModelDigest != "":
		if bs.ModelDigest != os.ModelDigest {
			c.Refused = append(c.Refused, fmt.Sprintf("model file: %s %s, %s %s", c.Base, bs.ModelDigest, c.Other, os.ModelDigest))
		} else if bs.Model != os.Model {
			c.Notes = append(c.Notes, fmt.Sprintf("the servers name the model differently (%s %s, %s %s): one file, %s",
				c.Base, orDash(bs.Model), c.Other, orDash(os.Model), bs.ModelDigest))
		}
	case bs.Model != os.Model:
		c.Refused = append(c.Refused, fmt.Sprintf("model: %s %s, %s %s (a model file digest is not recorded by both to tell whether they are one file)",
			c.Base, orDash(bs.Model), c.Other, orDash(os.Model)))
	default:
		c.Notes = append(c.Notes, fmt.Sprintf("the model file's digest is not recorded by both setups: one model is assumed from its name, %s", orDash(bs.Model)))
	}
	if bs.CacheStart != os.CacheStart {
		c.Refused = append(c.Refused, fmt.Sprintf("cache start: %s %s, %s %s", c.Base, orDash(bs.CacheStart), c.Other, orDash(os.CacheStart)))
	}
	for _, k := range measuredSettings {
		if bs.Settings[k] != os.Settings[k] {
			c.Refused = append(c.Refused, fmt.Sprintf("%s: %s %s, %s %s", k, c.Base, lab(bs.Settings[k]), c.Other, lab(os.Settings[k])))
		}
	}
	// What the servers differ in: every other part of the setup, every other setting.
	bp, op := bs.Parts(), os.Parts()
	for i := range bp {
		name := bp[i].Name
		if name == "model" || name == "model file digest" || name == "cache start" || slices.Contains(measuredSettings, name) {
			continue
		}
		if bp[i].Value != op[i].Value {
			c.Differs = append(c.Differs, fmt.Sprintf("%s: %s %s, %s %s", name, c.Base, bp[i].Shown(), c.Other, op[i].Shown()))
		}
	}
	bset, oset := runSettings(base.runs), runSettings(other.runs)
	keys := slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range bset {
			yield(k, true)
		}
		for k := range oset {
			yield(k, true)
		}
	})))
	for _, k := range keys {
		if slices.Contains(metrics.SetupSettings, k) || slices.Contains(ServerBookkeeping, k) {
			continue
		}
		if bset[k] != oset[k] {
			c.Differs = append(c.Differs, fmt.Sprintf("%s: %s %s, %s %s", k, c.Base, lab(bset[k]), c.Other, lab(oset[k])))
		}
	}
	// The scenario×arm pairs both ran.
	type pair struct{ scenario, arm string }
	var common []pair
	only := func(label string, a, b *Analysis) {
		for _, sc := range a.Scenarios {
			osc := b.scenario(sc.Scenario)
			if osc == nil {
				c.Notes = append(c.Notes, fmt.Sprintf("scenario %s is only in %s (or its content differs): left out", sc.Scenario, label))
				continue
			}
			for _, st := range sc.Arms {
				if osc.Arm(st.Arm) == nil {
					c.Notes = append(c.Notes, fmt.Sprintf("arm %s of scenario %s is only in %s: left out", st.Arm, sc.Scenario, label))
				}
			}
		}
	}
	only(c.Base, base.an, other.an)
	only(c.Other, other.an, base.an)
	// A scenario of one name is one scenario only with one content: inside a setup, contents
	// that differ are already scenarios of their own ([ContentName]); across the two, check.
	sameContent := map[string]bool{}
	for _, sc := range base.an.Scenarios {
		if other.an.scenario(sc.Scenario) == nil {
			continue
		}
		bd, od := contentsOf(base.runs, sc.Scenario), contentsOf(other.runs, sc.Scenario)
		switch {
		case strings.Contains(sc.Scenario, " [content "):
			sameContent[sc.Scenario] = true // its name gives its content
		case bd != od:
			c.Notes = append(c.Notes, fmt.Sprintf("scenario %s has another content in %s (%s) than in %s (%s): left out",
				sc.Scenario, c.Base, orUnknownDigest(bd), c.Other, orUnknownDigest(od)))
		case bd == "":
			c.Notes = append(c.Notes, fmt.Sprintf("scenario %s: neither setup recorded its content, so it is not checked to be the same", sc.Scenario))
			sameContent[sc.Scenario] = true
		default:
			sameContent[sc.Scenario] = true
		}
	}
	for _, sc := range base.an.Scenarios {
		if osc := other.an.scenario(sc.Scenario); osc != nil && sameContent[sc.Scenario] {
			for _, st := range sc.Arms {
				if osc.Arm(st.Arm) != nil {
					common = append(common, pair{sc.Scenario, st.Arm})
				}
			}
		}
	}
	if len(common) == 0 {
		c.Refused = append(c.Refused, "no scenario×arm in common (same scenario name and content, same arm)")
	}
	if len(c.Refused) > 0 {
		return c
	}
	c.Notes = append(c.Notes, fmt.Sprintf("the 1-minute load average of the machine (at the start → at the end of each run): %s %s; %s %s. "+
		"Prefill seconds and time to first token depend on the machine and its load; the token counts do not",
		c.Base, loads(base.runs), c.Other, loads(other.runs)))
	bttft, ottft := ttftOf(base.rows), ttftOf(other.rows)
	bbad, obad := base.an.Claims.prefillNotComparable(), other.an.Claims.prefillNotComparable()
	for _, p := range common {
		bst, ost := base.an.scenario(p.scenario).Arm(p.arm), other.an.scenario(p.scenario).Arm(p.arm)
		if len(bst.Reps) != len(ost.Reps) {
			c.Notes = append(c.Notes, fmt.Sprintf("%s/%s: %s has %d repetitions, %s %d: the means are over each setup's own; requests are paired in the repetitions both have",
				p.scenario, p.arm, c.Base, len(bst.Reps), c.Other, len(ost.Reps)))
		}
		k := pair{p.scenario, p.arm}
		c.Arms = append(c.Arms, ServerArm{Scenario: p.scenario, Arm: p.arm,
			Base:  serverFigures(bst, bttft[ttftKey(k)], bbad),
			Other: serverFigures(ost, ottft[ttftKey(k)], obad)})
	}
	c.Requests = requestDiffs(&c, base.rows, other.rows, func(sc, arm string) bool { return slices.Contains(common, pair{sc, arm}) })
	byCause := map[string]*DiffCause{}
	for _, r := range c.Requests {
		d := byCause[r.Cause]
		if d == nil {
			d = &DiffCause{Cause: r.Cause, Why: causeWhy(r.Base.Verdict, r.Other.Verdict)}
			byCause[r.Cause] = d
		}
		d.Requests++
		d.BaseReread += deref64(r.Base.RereadTokens)
		d.OtherReread += deref64(r.Other.RereadTokens)
	}
	for _, d := range byCause {
		c.Causes = append(c.Causes, *d)
	}
	slices.SortFunc(c.Causes, func(x, y DiffCause) int {
		if d := cmp.Compare(abs64(y.OtherReread-y.BaseReread), abs64(x.OtherReread-x.BaseReread)); d != 0 {
			return d
		}
		return strings.Compare(x.Cause, y.Cause)
	})
	return c
}

// loads gives the 1-minute load averages runs recorded at their start and end: "1.32 → 2.15"
// per run, "unknown" where not recorded.
func loads(runs []*metrics.Manifest) string {
	one := func(l *metrics.LoadAverage) string {
		if l == nil {
			return "unknown"
		}
		return strconv.FormatFloat(l.One, 'f', 2, 64)
	}
	var out []string
	for _, m := range runs {
		if m.Host == nil {
			out = append(out, "unknown")
			continue
		}
		out = append(out, one(m.Host.LoadStart)+" → "+one(m.Host.LoadEnd))
	}
	return strings.Join(out, ", ")
}

// contentsOf returns the contents (digests) runs recorded for scenario, distinct, in order,
// joined by ", "; "" when none recorded it. A scenario a run did not run adds nothing.
func contentsOf(runs []*metrics.Manifest, scenario string) string {
	var ds []string
	for _, m := range runs {
		if !slices.Contains(m.Scenarios, scenario) && m.ScenarioDigests[scenario] == "" {
			continue
		}
		if d := m.ScenarioDigests[scenario]; !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 1 && ds[0] == "" {
		return ""
	}
	return strings.Join(ds, ", ")
}

func orUnknownDigest(d string) string {
	if d == "" {
		return "content unknown"
	}
	return d
}

// measuredSettings are the [metrics.SetupSettings] that say what is measured rather than with
// which server: runs that differ in one are not two servers measuring one thing.
var measuredSettings = []string{"driver", "max_steps", "max_tokens", "turn_timeout", "seed", "temperature"}

// serverName names a setup's server for people: "ollama 0.17.4".
func serverName(s metrics.Setup) string {
	return strings.TrimSpace(orDash(s.Backend) + " " + s.ServerVersion)
}

// runSettings returns the manifest settings of runs: per key its values, joined by " | " where
// the runs disagree (in the order of the runs).
func runSettings(runs []*metrics.Manifest) map[string]string {
	vals := map[string][]string{}
	for _, m := range runs {
		for k, v := range m.Settings {
			if !slices.Contains(vals[k], v) {
				vals[k] = append(vals[k], v)
			}
		}
	}
	out := make(map[string]string, len(vals))
	for k, vs := range vals {
		out[k] = strings.Join(vs, " | ")
	}
	return out
}

func orNotSet(v string) string {
	if v == "" {
		return "not set"
	}
	return v
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// scenario returns the named scenario's stats, or nil.
func (a *Analysis) scenario(name string) *ScenarioStats {
	for i := range a.Scenarios {
		if a.Scenarios[i].Scenario == name {
			return &a.Scenarios[i]
		}
	}
	return nil
}

type ttftKey struct{ scenario, arm string }

type ttftSum struct {
	ns int64
	n  int
}

// ttftOf sums the known times to first token per scenario×arm.
func ttftOf(rows *metrics.Rows) map[ttftKey]ttftSum {
	out := map[ttftKey]ttftSum{}
	for _, s := range rows.All() {
		if s.TTFTNs > 0 {
			k := ttftKey{s.Scenario, s.Arm}
			t := out[k]
			t.ns += s.TTFTNs
			t.n++
			out[k] = t
		}
	}
	return out
}

func serverFigures(st *ArmStats, ttft ttftSum, bad map[string]bool) ServerFigures {
	f := ServerFigures{Repetitions: len(st.Reps), Requests: st.Requests, CachedShare: st.CachedShare, RereadTokens: st.RereadTokens,
		PrefillSeconds: st.PrefillSeconds, PrefillComparable: !anyRunIn(st.Reps, bad), Efficiency: st.Efficiency, TTFTKnown: ttft.n}
	if ttft.n > 0 {
		f.TTFTSeconds = new(float64(ttft.ns) / float64(ttft.n) / 1e9)
	}
	return f
}

// reqKey pairs the requests of two setups.
type reqKey struct {
	scenario, arm string
	rep           int
	req           int32
}

// requestIndex maps each request of rows whose scenario×arm keep accepts to its row, the
// repetitions of a scenario×arm numbered in [stats.RepKey] order from 1.
func requestIndex(rows *metrics.Rows, keep func(sc, arm string) bool) map[reqKey]int {
	type sa struct{ scenario, arm string }
	reps := map[sa][]stats.RepKey{}
	for i := range rows.Len() {
		k := sa{rows.Scenario(i), rows.Arm(i)}
		if !keep(k.scenario, k.arm) {
			continue
		}
		rk := stats.RepKey{RunID: rows.RunID(i), Repetition: rows.Repetition(i)}
		if !slices.Contains(reps[k], rk) {
			reps[k] = append(reps[k], rk)
		}
	}
	for _, ks := range reps {
		slices.SortFunc(ks, func(a, b stats.RepKey) int { return a.Compare(b) })
	}
	out := map[reqKey]int{}
	for i := range rows.Len() {
		k := sa{rows.Scenario(i), rows.Arm(i)}
		if !keep(k.scenario, k.arm) {
			continue
		}
		rep := slices.Index(reps[k], stats.RepKey{RunID: rows.RunID(i), Repetition: rows.Repetition(i)}) + 1
		out[reqKey{k.scenario, k.arm, rep, rows.RequestIndex(i)}] = i
	}
	return out
}

// requestDiffs pairs the requests of the two setups' rows and returns those whose re-read tokens
// differ by more than [MismatchTolerance] of the larger prompt, in scenario, arm, repetition and
// request order.
func requestDiffs(c *ServerComparison, base, other *metrics.Rows, keep func(sc, arm string) bool) []RequestDiff {
	bi, oi := requestIndex(base, keep), requestIndex(other, keep)
	var out []RequestDiff
	var bb, ob metrics.SampleBuf
	for k, i := range bi {
		j, ok := oi[k]
		if !ok {
			continue
		}
		bs, os := base.Load(i, &bb), other.Load(j, &ob)
		br, bok := metrics.Int64(bs.RereadTokens)
		or, ook := metrics.Int64(os.RereadTokens)
		if !bok || !ook {
			continue
		}
		if float64(abs64(or-br)) <= MismatchTolerance*float64(max(bs.PromptTokens, os.PromptTokens)) {
			continue
		}
		d := RequestDiff{Scenario: k.scenario, Arm: k.arm, Repetition: k.rep, RequestIndex: k.req, Turn: bs.Turn, Step: bs.Step,
			Base: side(bs), Other: side(os), RereadDiff: or - br}
		prev := k
		prev.req--
		if pi, ok := bi[prev]; ok {
			d.Base.AtPreviousPrompt = atPrompt(d.Base.DivergenceToken, base.PromptTokens(pi))
		}
		if pj, ok := oi[prev]; ok {
			d.Other.AtPreviousPrompt = atPrompt(d.Other.DivergenceToken, other.PromptTokens(pj))
		}
		d.Cause = fmt.Sprintf("%s: %s: %s; %s: %s", turnPlace(d.Turn, d.Step), c.Base, sideCause(d.Base), c.Other, sideCause(d.Other))
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y RequestDiff) int {
		return cmp.Or(strings.Compare(x.Scenario, y.Scenario), metrics.CompareArms(x.Arm, y.Arm),
			cmp.Compare(x.Repetition, y.Repetition), cmp.Compare(x.RequestIndex, y.RequestIndex))
	})
	return out
}

// side copies one server's figures of a request (s is a buffer's row).
func side(s *metrics.Sample) RequestSide {
	cp := func(p *int64) *int64 {
		if p == nil {
			return nil
		}
		return new(*p)
	}
	r := RequestSide{PromptTokens: s.PromptTokens, CachedTokens: cp(s.CachedTokens), ExpectedCachedTokens: cp(s.ExpectedCachedTokens),
		RereadTokens: cp(s.RereadTokens), DivergenceToken: cp(s.DivergenceToken), DivergenceSegment: s.DivergenceSegment}
	c, cok := metrics.Int64(s.CachedTokens)
	e, eok := metrics.Int64(s.ExpectedCachedTokens)
	switch {
	case !cok || !eok || s.ExpectedUnknown:
		r.Verdict = "expected unknown"
	case math.Abs(float64(c-e)) <= MismatchTolerance*float64(e):
		r.Verdict = "as expected"
	case c > e && s.PromptTokens > 0 && s.PromptTokens-c <= 1:
		r.Verdict = wholePromptCached
	case c > e:
		r.Verdict = "more than expected"
	default:
		r.Verdict = "less than expected"
	}
	return r
}

// atPrompt says whether a divergence at token div lies at the end of a prompt of n tokens.
func atPrompt(div *int64, n int64) bool { return div != nil && n > 0 && *div == n }

// turnPlace says where a request lies in its session: "first request", "new user message"
// (step 1 of a later turn), "inside a turn".
func turnPlace(turn, step int32) string {
	switch {
	case step <= 1 && turn <= 1:
		return "first request"
	case step <= 1:
		return "new user message"
	}
	return "inside a turn"
}

// sideCause is one server's part of a [RequestDiff].Cause: "diverged in reasoning at the end
// of the previous prompt, as expected".
func sideCause(s RequestSide) string {
	at := ""
	if s.AtPreviousPrompt {
		at = " at the end of the previous prompt (the previous reply, as this prompt renders it, differs from its first token from the reply the cache holds)"
	}
	return divergedIn(s) + at + ", " + s.Verdict
}

// divergedIn names the kind of segment a request's divergence lies in: "diverged in reasoning"
// for "reasoning 19"; with none, "nothing diverged (the prompt extended the cache)" when the
// lab knew what the cache held (a null divergence_token with known expected cached tokens),
// else "no divergence recorded".
func divergedIn(s RequestSide) string {
	kind, _, _ := strings.Cut(s.DivergenceSegment, " ")
	if kind == "" {
		if s.DivergenceToken == nil && s.ExpectedCachedTokens != nil {
			return "nothing diverged (the prompt extended the cache)"
		}
		return "no divergence recorded"
	}
	return "diverged in " + strings.ReplaceAll(kind, "_", " ")
}

// wholePromptCached is the verdict of a request that found more than expected in the cache, and
// all of its prompt but the last token.
const wholePromptCached = "more than expected: the whole prompt was cached"

// causeWhy says in words what two verdicts ([RequestSide].Verdict) mean for a request whose
// re-read tokens differ between the servers.
func causeWhy(base, other string) string {
	switch {
	case base == wholePromptCached || other == wholePromptCached:
		return "a server's cache already held this whole prompt (it re-read only the last token) though the session's previous request " +
			"left less: the prompt reached that server before this measurement (a request sent again after a first attempt, or a " +
			"cache-fill step that sent it), which is no difference of rendering"
	case base == "as expected" && other == "as expected":
		return "each server kept what the lab's model of its own rendering and cache expects: the servers render this history differently " +
			"(each server's own chat template or renderer), and the caches did what each documents"
	case base == "more than expected" || other == "more than expected":
		return "a server reused more than the lab's rendering of that server predicts: the lab renders or tokenizes the history otherwise " +
			"than that server does, so its expected figure for that server is wrong"
	case base == "less than expected" || other == "less than expected":
		return "a server's cache held less than the lab's model of it predicts (an eviction, a reload, a request sent again, or a bug)"
	}
	return "the lab could not compute what a server should have reused"
}
