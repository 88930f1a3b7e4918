package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"lab/cachesim"
	"lab/metrics"
)

// TemplateEffect is what the chat template did to the KV cache in one scenario of one setup
// ("what the template does"): per arm, the re-read tokens where the template decides them — the
// steps inside a turn, the first request after a new user message, compaction — with the
// segments the prompt first diverged in there and an excerpt of each (what the cache held, the
// generated reply included, against what the template rendered), and the spec's §8 sentence on
// templates checked. Token counts are in the setup's server's tokens.
type TemplateEffect struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// Family is the model family of the setup's runs (their family setting, gguf.Family
	// names); without the setting "qwen3" when the runs' renderer is Ollama's qwen3.5 or the
	// model's name says Qwen3 or QwQ (the lab's Qwen3 model, or a user's: qwen3:8b), else ""
	// (unknown).
	Family string `json:"family,omitempty"`
	// Template says what rendered the prompts: the runs' chat_template setting, or the
	// renderer's name; "" when the runs do not say.
	Template string `json:"template,omitempty"`
	// Renderer is the runs' renderer setting (an Ollama built-in renderer's name, "qwen3.5",
	// "glm-4.7"), "" when they record none.
	Renderer string `json:"renderer,omitempty"`
	// Arms are the scenario's arms in [metrics.SortArms] order.
	Arms []TemplateArm `json:"arms"`
	// Section8 checks the spec's sentence (§8: "The common templates ... drop it there
	// themselves, so what the server reads of the history is the same bytes either way and
	// nothing is re-read") on this setup; nil when the scenario lacks the spec or the
	// reasoning-never arm, or a new user message whose re-read tokens both arms know.
	Section8 *TemplateCheck `json:"section8,omitempty"`
}

// TemplateArm is one arm's [TemplateEffect].
type TemplateArm struct {
	Arm string `json:"arm"`
	// WithinTurn is the steps inside a turn (step > 1), NewUserMessage the first request after a
	// new user message (step 1 of turn > 1), Compaction the compaction requests and the first
	// request after each.
	WithinTurn     TemplatePart `json:"within_turn"`
	NewUserMessage TemplatePart `json:"new_user_message"`
	Compaction     TemplatePart `json:"compaction"`
}

// TemplatePart is the re-read tokens of one part of an arm's requests ([TemplateArm]), over
// every repetition.
type TemplatePart struct {
	// Requests counts the part's requests; Unknown those whose re-read tokens are unknown (left
	// out of Reread, never counted as 0).
	Requests int `json:"requests"`
	Unknown  int `json:"unknown,omitempty"`
	// Reread is the part's re-read tokens per request whose count is known, the mean; nil when
	// none is.
	Reread *float64 `json:"reread_per_request"`
	// DivergenceUnknown counts the requests of known re-read tokens whose first divergence the
	// lab could not compute (expected_cached_tokens null: a backend that shows no rendering, a
	// warm session's first request); they are in no Divergences.
	DivergenceUnknown int `json:"divergence_unknown,omitempty"`
	// Divergences are where those requests first diverged from the KV cache, by the kind of
	// segment, most re-read tokens first.
	Divergences []TemplateDivergence `json:"divergences,omitempty"`
}

// TemplateDivergence is the requests of a [TemplatePart] that first diverged in one kind of
// segment.
type TemplateDivergence struct {
	// Segment is the kind: "reasoning", "message", "tool result", "system", "tools", "note",
	// "generation prompt", or a practice's segment ("clock in system").
	Segment string `json:"segment"`
	// Rule names the template's history rule the divergences show, read from each request's
	// excerpt ([RuleSummary], [RuleReasoningDropped], "</think> left out"); "" when the
	// excerpts show none the lab names. The requests of one segment kind are split by rule.
	Rule string `json:"rule,omitempty"`
	// Requests counts them; Reread sums their re-read tokens (known ones).
	Requests int   `json:"requests"`
	Reread   int64 `json:"reread_tokens"`
	// Example is the excerpt of the one that re-read the most among those with an excerpt
	// (divergence_excerpt), at Turn and Step of repetition Repetition; nil when none has one.
	Example    *cachesim.Excerpt `json:"example,omitempty"`
	Turn       int32             `json:"turn,omitempty"`
	Step       int32             `json:"step,omitempty"`
	Repetition int32             `json:"repetition,omitempty"`
}

// TemplateCheck is the verdict on the spec's §8 sentence on templates for one setup and
// scenario: at the first request after a new user message, the spec arm (which sent the
// previous turn's reasoning back during that turn) and the reasoning-never arm (which never did)
// should re-read the same.
type TemplateCheck struct {
	// Requests counts the spec arm's new-user-message requests whose re-read tokens are known,
	// NeverRequests the reasoning-never arm's.
	Requests      int `json:"requests"`
	NeverRequests int `json:"never_requests"`
	// Spec and Never are those requests' mean re-read tokens per request.
	Spec  float64 `json:"spec_reread_per_request"`
	Never float64 `json:"never_reread_per_request"`
	// Verdict is [VerdictHolds] when the spec arm re-read at most [TemplateCheckTolerance]
	// tokens per request more than reasoning-never, else [VerdictDoesNotHold].
	Verdict string `json:"verdict"`
	// Why says, when the sentence does not hold, where the spec arm's prompt diverged.
	Why string `json:"why,omitempty"`
}

// TemplateCheckTolerance is how many more tokens per new user message the spec arm may re-read
// than reasoning-never for [TemplateCheck] to hold: the last token a server always evaluates,
// and a token that merges across the end of what both cached.
const TemplateCheckTolerance = 2

// templatePartOf says which part of a [TemplateArm] a request is in: 1 inside a turn, 2 the
// first request after a new user message, 3 compaction (the request that summarises, and the
// first after it), 0 none.
func templatePartOf(s *metrics.Sample, afterCompaction bool) int {
	if s.Kind == metrics.KindCompaction || afterCompaction {
		return 3
	}
	return reasoningPartOf(s)
}

// segmentKind is a divergence segment without its message index: "reasoning 5" → "reasoning".
func segmentKind(seg string) string {
	i := strings.LastIndexByte(seg, ' ')
	if i < 0 {
		return seg
	}
	if strings.Trim(seg[i+1:], "0123456789") == "" {
		return seg[:i]
	}
	return seg
}

// templateEffects returns the [TemplateEffect] of each scenario of rows (one setup's), in
// scenario order; runs are the setup's manifests (family and template settings).
func templateEffects(rows *metrics.Rows, runs []*metrics.Manifest) []TemplateEffect {
	type armKey struct{ scenario, arm string }
	type divKey struct {
		armKey
		part       int
		kind, rule string
	}
	type partAcc struct {
		requests, unknown, divUnknown int
		sum                           int64
	}
	type divAcc struct {
		TemplateDivergence
		best int64
	}
	parts := map[armKey]*[4]partAcc{}
	divs := map[divKey]*divAcc{}
	var order []divKey
	// The compaction part holds the first request after a compaction too: where the summary
	// starts the history afresh.
	type session struct {
		armKey
		run string
		rep int32
	}
	compacted := map[session]bool{}
	idx := make([]int, 0, rows.Len())
	for i := range rows.Len() {
		idx = append(idx, i)
	}
	// Within each session in request order (a session's rows may be in any order).
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rows.RequestIndex(a), rows.RequestIndex(b)) })
	var buf metrics.SampleBuf
	for _, i := range idx {
		s := rows.Load(i, &buf)
		if s.Kind == metrics.KindProbe {
			continue // outside the conversation: neither a part nor the request after a compaction
		}
		k := armKey{s.Scenario, s.Arm}
		ss := session{k, s.RunID, s.Repetition}
		afterCompaction := compacted[ss] && s.Kind != metrics.KindCompaction
		part := templatePartOf(s, compacted[ss])
		compacted[ss] = s.Kind == metrics.KindCompaction
		if part == 0 {
			continue
		}
		p := parts[k]
		if p == nil {
			p = &[4]partAcc{}
			parts[k] = p
		}
		acc := &p[part]
		acc.requests++
		v, ok := rereadOf(s)
		if !ok {
			acc.unknown++
			continue
		}
		acc.sum += v
		if s.ExpectedCachedTokens == nil {
			acc.divUnknown++
			continue
		}
		if s.DivergenceSegment == "" {
			continue
		}
		var ex *cachesim.Excerpt
		if s.DivergenceExcerpt != "" {
			var e cachesim.Excerpt
			if json.Unmarshal([]byte(s.DivergenceExcerpt), &e) == nil {
				ex = &e
			}
		}
		kind := segmentKind(s.DivergenceSegment)
		dk := divKey{k, part, kind, historyRule(kind, afterCompaction, ex)}
		d := divs[dk]
		if d == nil {
			d = &divAcc{TemplateDivergence: TemplateDivergence{Segment: dk.kind, Rule: dk.rule}, best: -1}
			divs[dk] = d
			order = append(order, dk)
		}
		d.Requests++
		d.Reread += v
		if ex != nil && v > d.best {
			d.best, d.Example = v, ex
			d.Turn, d.Step, d.Repetition = s.Turn, s.Step, s.Repetition
		}
	}
	family, template := templateSetting(runs, rows)
	renderer := ""
	for _, m := range runs {
		if r := m.Settings["renderer"]; r != "" {
			renderer = r
		}
	}
	scenarios := map[string][]string{}
	for k := range parts {
		scenarios[k.scenario] = append(scenarios[k.scenario], k.arm)
	}
	var out []TemplateEffect
	for _, sc := range slices.Sorted(maps.Keys(scenarios)) {
		e := TemplateEffect{Scenario: sc, Family: family, Template: template, Renderer: renderer}
		arms := scenarios[sc]
		metrics.SortArms(arms)
		for _, arm := range arms {
			k := armKey{sc, arm}
			ta := TemplateArm{Arm: arm}
			for part, dst := range map[int]*TemplatePart{1: &ta.WithinTurn, 2: &ta.NewUserMessage, 3: &ta.Compaction} {
				acc := parts[k][part]
				dst.Requests, dst.Unknown, dst.DivergenceUnknown = acc.requests, acc.unknown, acc.divUnknown
				if n := acc.requests - acc.unknown; n > 0 {
					dst.Reread = new(float64(acc.sum) / float64(n))
				}
				for _, dk := range order {
					if dk.armKey == k && dk.part == part {
						dst.Divergences = append(dst.Divergences, divs[dk].TemplateDivergence)
					}
				}
				slices.SortStableFunc(dst.Divergences, func(a, b TemplateDivergence) int { return cmp.Compare(b.Reread, a.Reread) })
			}
			e.Arms = append(e.Arms, ta)
		}
		e.Section8 = section8(&e)
		out = append(out, e)
	}
	return out
}

// section8 checks the spec's §8 sentence on templates from e's spec and reasoning-never arms.
func section8(e *TemplateEffect) *TemplateCheck {
	var spec, never *TemplateArm
	for i := range e.Arms {
		switch e.Arms[i].Arm {
		case metrics.SpecArm:
			spec = &e.Arms[i]
		case ReasoningNeverArm:
			never = &e.Arms[i]
		}
	}
	if spec == nil || never == nil || spec.NewUserMessage.Reread == nil || never.NewUserMessage.Reread == nil {
		return nil
	}
	c := &TemplateCheck{Requests: spec.NewUserMessage.Requests - spec.NewUserMessage.Unknown,
		NeverRequests: never.NewUserMessage.Requests - never.NewUserMessage.Unknown,
		Spec:          *spec.NewUserMessage.Reread, Never: *never.NewUserMessage.Reread, Verdict: VerdictHolds}
	if c.Spec > c.Never+TemplateCheckTolerance {
		c.Verdict = VerdictDoesNotHold
		c.Why = fmt.Sprintf("the spec arm re-read %s more tokens per new user message than reasoning-never", tok(c.Spec-c.Never))
		if d := spec.NewUserMessage.Divergences; len(d) > 0 {
			c.Why += fmt.Sprintf(", its prompt diverging first in %s (%d of %d requests)", d[0].Segment, d[0].Requests, spec.NewUserMessage.Requests)
			if d[0].Segment == "reasoning" {
				c.Why += ": the template drops at a new user message the reasoning the KV cache holds from the turn before"
			}
		}
	}
	return c
}

// templateSetting returns the family and the chat template of a setup's runs (their family and
// chat_template settings, else the renderer's or the model's, [templateOf]).
func templateSetting(runs []*metrics.Manifest, rows *metrics.Rows) (family, template string) {
	for _, m := range runs {
		if f := m.Settings["family"]; f != "" {
			family = f
		}
		if t := m.Settings["chat_template"]; t != "" {
			template = t
		}
	}
	if family != "" && template != "" {
		return family, template
	}
	model := ""
	if rows.Len() > 0 {
		var buf metrics.SampleBuf
		model = rows.Load(0, &buf).Model
	}
	var m *metrics.Manifest
	if len(runs) > 0 {
		m = runs[0]
	}
	t := templateOf(m, model)
	if template == "" {
		template = t.Name
	}
	if family == "" && (t.NewUserMessage == ruleQwen3NewUserMessage) {
		family = "qwen3"
	}
	return family, template
}
