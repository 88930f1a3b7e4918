package report

import (
	"cmp"
	"slices"
	"strings"

	"lab/metrics"
	"lab/stats"
)

// ReasoningClaim is the spec's reasoning claim (§8: "sent its calls without [its reasoning], it
// reasons its way to them again, step after step. Measured on a local model: a step re-read
// about a fifth fewer tokens with its reasoning sent back") checked on one scenario's sessions
// of one driver, [metrics.SpecArm] against [ReasoningNeverArm], where the data can check it.
//
// The re-read tokens are split where the chat template decides them: the steps inside a turn
// (step 2 on), where spec sends the turn's reasoning back and reasoning-never does not, and the
// first request after a new user message (step 1 of turn 2 on), where the template decides what
// the earlier turns carry. A scripted session sends the same conversation in both arms, so it
// shows the cache effect of sending reasoning back only; the behaviour the claim is about (the
// model reasons its way to its calls again) is judged only on live sessions of a model
// ([ReasoningClaim].Behaviour).
type ReasoningClaim struct {
	Scenario string `json:"scenario"`
	// Driver is who decided the steps: [metrics.DriverScripted] (also for runs made before the
	// column existed) or [metrics.DriverLive].
	Driver string `json:"driver"`
	// Pairs is the number of repetitions both arms ran whose re-read tokens are all known (those
	// of Spec, Never and Saved); each part counts its own pairs (its Spec.N).
	Pairs int `json:"pairs"`
	// Template is the chat template the sessions were rendered with, where the run says.
	Template Template `json:"template"`
	// WithinTurn is the steps inside a turn (step > 1), NewUserMessage the first request after
	// a new user message (step 1 of turn > 1); the first request of a session, which no arm can
	// have cached, and compaction and wrap-up requests are in neither.
	WithinTurn     ReasoningPart `json:"within_turn"`
	NewUserMessage ReasoningPart `json:"new_user_message"`
	// Spec and Never are the mean re-read tokens per repetition of the two arms over every
	// request; Saved is 1 − mean(spec) / mean(never) (nil when never re-read nothing), SavedCI 1
	// minus the ends of Fieller's interval of the ratio (nil with fewer than 2 pairs or an
	// unbounded interval). The whole session mixes the two parts above, whose causes differ:
	// the report shows the parts.
	Spec    stats.Estimate  `json:"spec_reread_tokens"`
	Never   stats.Estimate  `json:"never_reread_tokens"`
	Saved   *float64        `json:"saved"`
	SavedCI *stats.Interval `json:"saved_ci,omitempty"`
	// Behaviour is the verdict on the behaviour claim, from live sessions of a model; nil for
	// scripted sessions and for the sim's live driver, whose scripted model decides nothing.
	Behaviour *ReasoningBehaviour `json:"behaviour,omitempty"`
}

// ReasoningPart is the re-read tokens of one part of the sessions ([ReasoningClaim]) of the two
// arms, per repetition. A repetition with a request in the part whose re-read tokens are unknown
// has an unknown figure for the part and is left out of its pairs (and a repetition with one
// anywhere, of [ReasoningClaim]'s whole-session figures): never summed as if it re-read 0.
type ReasoningPart struct {
	// SpecRequests and NeverRequests count the part's requests of each arm, over every
	// repetition (their re-read tokens known or not); both 0 when the scenario has no such
	// request (one turn: no new user message).
	SpecRequests  int `json:"spec_requests"`
	NeverRequests int `json:"never_requests"`
	// Spec and Never are the means over the paired repetitions of the part's re-read tokens.
	Spec  stats.Estimate `json:"spec_reread_tokens"`
	Never stats.Estimate `json:"never_reread_tokens"`
	// Diff is the mean paired difference reasoning-never − spec per repetition, in tokens, with
	// its t interval: positive when sending reasoning back saved re-reading.
	Diff stats.Estimate `json:"never_minus_spec"`
	// Saved is 1 − mean(spec) / mean(never); nil when never re-read nothing here. SavedCI is 1
	// minus the ends of Fieller's interval of the ratio; nil with fewer than 2 pairs or an
	// unbounded interval.
	Saved   *float64        `json:"saved"`
	SavedCI *stats.Interval `json:"saved_ci,omitempty"`
	// Rule is the chat template's rule that causes what this part shows ([Template]); "" when
	// the template, or this rule of it, is unknown.
	Rule string `json:"rule,omitempty"`
}

// Template is the chat template that turned the sessions' messages into the prompt, as far as
// the run's data names it, with the rules of it that decide what sending reasoning back
// re-reads.
type Template struct {
	// Name names it, for example "Ollama's qwen3.5 renderer"; "" when unknown, and "several"
	// when the runs of the claim name different ones.
	Name string `json:"name,omitempty"`
	// Source says where the name comes from: the run's renderer setting, or the model's name
	// (its family in quirks.json `reasoning-fields`).
	Source string `json:"source,omitempty"`
	// WithinTurn and NewUserMessage are its rules for the two parts of [ReasoningClaim]; "" when
	// unknown.
	WithinTurn     string `json:"within_turn,omitempty"`
	NewUserMessage string `json:"new_user_message,omitempty"`
}

// The rules of the chat templates the lab knows, for [Template].
const (
	// ruleQwen35WithinTurn is Ollama's qwen3.5 renderer inside a turn (model/renderers,
	// Qwen3VLRenderer of Ollama v0.17.4: an assistant message after the last user message with
	// reasoning and no text renders "<think>\n" + reasoning and then its tool calls).
	ruleQwen35WithinTurn = "Ollama's qwen3.5 renderer writes no </think> before a tool call without text: " +
		"the spec arm's prompt differs from what the model wrote (what the KV cache holds) right after the step's reasoning, " +
		"and the reasoning-never arm's at its start, so both re-read the step's tool calls and the saving inside a turn is about 0. " +
		"(A template that writes the reasoning back as the model wrote it keeps the spec arm's whole step cached; reasoning-never then re-reads its calls.)"
	// ruleQwen3NewUserMessage is the Qwen3 chat format at a new user message (its template
	// renders reasoning only for the assistant messages after the last user query).
	ruleQwen3NewUserMessage = "The Qwen3 format drops earlier turns' reasoning at a new user message: " +
		"the spec arm's prompt then lacks the reasoning it sent during the previous turn, so it differs from the KV cache from that turn's first reasoning on " +
		"and re-reads the previous turn's steps, while reasoning-never, which never sent it, re-reads only from the previous turn's last reply. " +
		"The saving here is 0 or negative by construction."
)

// qwen3Family are the lowercase substrings of a model name of the qwen3 family, as quirks.json
// `reasoning-fields` `families` lists them.
var qwen3Family = []string{"qwen3", "qwq"}

// templateOf names the chat template of a run from its manifest (m, may be nil) and its rows'
// model (the manifest's when the row names none): the renderer setting a run records (the sim
// renders with Ollama's renderer), else the model's family by its name.
func templateOf(m *metrics.Manifest, model string) Template {
	if model == "" && m != nil {
		model = m.Model
	}
	if m != nil {
		switch r := m.Settings["renderer"]; r {
		case "":
		case "qwen3.5":
			return Template{Name: "Ollama's qwen3.5 renderer", Source: "the run's renderer setting",
				WithinTurn: ruleQwen35WithinTurn, NewUserMessage: ruleQwen3NewUserMessage}
		default:
			return Template{Name: "Ollama's " + r + " renderer", Source: "the run's renderer setting"}
		}
		if t := m.Settings["chat_template"]; t != "" {
			return Template{Name: t, Source: "the run's chat_template setting"}
		}
	}
	lower := strings.ToLower(model)
	if slices.ContainsFunc(qwen3Family, func(f string) bool { return strings.Contains(lower, f) }) {
		return Template{Name: "the Qwen3 chat format", Source: "the model's name, " + model + " (the qwen3 family of quirks.json)",
			NewUserMessage: ruleQwen3NewUserMessage}
	}
	return Template{}
}

// ReasoningBehaviour is the verdict on the behaviour claim from live sessions: reasoning-never
// against spec, paired by repetition.
type ReasoningBehaviour struct {
	// ReasoningGenerated is the mean paired difference reasoning-never − spec of the reasoning
	// tokens generated per session, with its t interval.
	ReasoningGenerated stats.Estimate `json:"reasoning_generated_diff"`
	// Verdict is [VerdictHolds] when reasoning-never generated more reasoning than spec and
	// re-read more inside its turns ([ReasoningPart].Diff), both intervals above 0;
	// [VerdictDoesNotHold] when either interval lies below 0; [VerdictUndecided] when an
	// interval includes 0; [VerdictNoInterval] with fewer than 2 pairs.
	Verdict string `json:"verdict"`
}

// The values of [ReasoningBehaviour].Verdict.
const (
	VerdictHolds       = "holds"
	VerdictDoesNotHold = "does not hold"
	VerdictUndecided   = "undecided"
	VerdictNoInterval  = "no interval"
)

// reasoningPartOf says which part of a [ReasoningClaim] a request is in: 1 inside a turn, 2 the
// first request after a new user message, 0 neither.
func reasoningPartOf(s *metrics.Sample) int {
	switch {
	case s.Kind != metrics.KindStep:
		return 0
	case s.Step > 1:
		return 1
	case s.Step == 1 && s.Turn > 1:
		return 2
	}
	return 0
}

func driverOf(s *metrics.Sample) string {
	if s.Driver == "" {
		return metrics.DriverScripted
	}
	return s.Driver
}

func reasoningClaims(rows *metrics.Rows, live []LiveRow, runs []*metrics.Manifest) []ReasoningClaim {
	type group struct{ scenario, driver string }
	type arm struct {
		// per repetition: the whole session and the two parts
		part     [3]map[stats.RepKey]float64
		requests [3]int
		// unknown holds, per part, the repetitions with a request there whose re-read tokens
		// are unknown: their figure for the part is unknown, not the sum of the others.
		unknown [3]map[stats.RepKey]bool
	}
	arms := map[group]map[string]*arm{}
	templates := map[group][]Template{}
	sim := map[group]bool{}
	// A run's manifest and the template of its rows' model, found once per run and model, not
	// once per row.
	type runModel struct{ run, model string }
	type runFacts struct {
		m *metrics.Manifest
		t Template
	}
	facts := map[runModel]runFacts{}
	for _, s := range rows.All() {
		if s.Arm != metrics.SpecArm && s.Arm != ReasoningNeverArm {
			continue
		}
		g := group{s.Scenario, driverOf(s)}
		if arms[g] == nil {
			arms[g] = map[string]*arm{}
		}
		a := arms[g][s.Arm]
		if a == nil {
			a = &arm{}
			for j := range a.part {
				a.part[j], a.unknown[j] = map[stats.RepKey]float64{}, map[stats.RepKey]bool{}
			}
			arms[g][s.Arm] = a
		}
		rk := stats.RepKey{RunID: s.RunID, Repetition: s.Repetition}
		// Every repetition has each part, 0 when it has no request there.
		for j := range a.part {
			a.part[j][rk] += 0
		}
		// A row that names no template (no renderer setting, no model name) names no other one.
		rm := runModel{s.RunID, s.Model}
		f, ok := facts[rm]
		if !ok {
			f.m = manifestOf(runs, s.RunID)
			f.t = templateOf(f.m, s.Model)
			facts[rm] = f
		}
		m := f.m
		if t := f.t; t != (Template{}) && !slices.Contains(templates[g], t) {
			templates[g] = append(templates[g], t)
		}
		// A sim run, by its manifest or else its rows: its live driver's model decides nothing.
		sim[g] = sim[g] || s.Backend == "sim" || m != nil && m.Backend == "sim"
		r, ok := rereadOf(s)
		p := reasoningPartOf(s)
		if p > 0 {
			a.requests[p]++
		}
		if !ok {
			a.unknown[0][rk] = true
			if p > 0 {
				a.unknown[p][rk] = true
			}
			continue
		}
		a.part[0][rk] += float64(r)
		if p > 0 {
			a.part[p][rk] += float64(r)
		}
	}
	for _, as := range arms {
		for _, a := range as {
			for j := range a.part {
				for rk := range a.unknown[j] {
					delete(a.part[j], rk) // left out of the pairs
				}
			}
		}
	}
	var out []ReasoningClaim
	for g, as := range arms {
		spec, never := as[metrics.SpecArm], as[ReasoningNeverArm]
		if spec == nil || never == nil {
			continue
		}
		rc := ReasoningClaim{Scenario: g.scenario, Driver: g.driver}
		switch ts := templates[g]; len(ts) {
		case 0:
		case 1:
			rc.Template = ts[0]
		default:
			rc.Template = Template{Name: "several"}
		}
		b, n, keys := stats.Pair(never.part[0], spec.part[0])
		rc.Pairs = len(keys)
		rc.Never, rc.Spec = stats.MeanCI(b), stats.MeanCI(n)
		rc.Saved, rc.SavedCI = saved(b, n)
		for p, dst := range []*ReasoningPart{1: &rc.WithinTurn, 2: &rc.NewUserMessage} {
			if dst == nil {
				continue
			}
			dst.SpecRequests, dst.NeverRequests = spec.requests[p], never.requests[p]
			if dst.SpecRequests+dst.NeverRequests == 0 {
				continue
			}
			b, n, _ := stats.Pair(never.part[p], spec.part[p])
			dst.Never, dst.Spec = stats.MeanCI(b), stats.MeanCI(n)
			dst.Diff, _ = stats.PairedDiff(n, b) // never − spec; Pair's slices have one length
			dst.Saved, dst.SavedCI = saved(b, n)
		}
		rc.WithinTurn.Rule, rc.NewUserMessage.Rule = rc.Template.WithinTurn, rc.Template.NewUserMessage
		if g.driver == metrics.DriverLive && !sim[g] {
			rc.Behaviour = behaviour(g.scenario, live, rc.WithinTurn.Diff)
		}
		out = append(out, rc)
	}
	slices.SortFunc(out, func(a, b ReasoningClaim) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Driver, b.Driver))
	})
	return out
}

// saved returns 1 − mean(spec) / mean(never) over paired repetitions, and 1 minus the ends of
// Fieller's interval of the ratio; nil when never's mean is 0, or the interval unbounded.
func saved(never, spec []float64) (*float64, *stats.Interval) {
	r, err := stats.RatioOfMeans(never, spec)
	if err != nil {
		return nil, nil
	}
	var v *float64
	if f := finite(r.Value); f != nil {
		v = new(1 - *f)
	}
	var ci *stats.Interval
	if r.CI != nil {
		ci = &stats.Interval{Lo: 1 - r.CI.Hi, Hi: 1 - r.CI.Lo}
	}
	return v, ci
}

// behaviour judges the behaviour claim on one scenario's live sessions: the reasoning-never
// row's paired difference to spec in reasoning generated ([LiveTable]), and reread, the paired
// difference reasoning-never − spec of the re-read tokens inside a turn.
func behaviour(scenario string, live []LiveRow, reread stats.Estimate) *ReasoningBehaviour {
	b := &ReasoningBehaviour{Verdict: VerdictNoInterval}
	for _, r := range live {
		if r.Scenario != scenario || r.Arm != ReasoningNeverArm {
			continue
		}
		for _, m := range r.Metrics {
			if m.Name == liveReasoningGenerated && m.VsSpec != nil {
				b.ReasoningGenerated = *m.VsSpec // arm − spec
			}
		}
	}
	g := b.ReasoningGenerated.CI
	switch {
	case g == nil || reread.CI == nil:
	case g.Hi < 0 || reread.CI.Hi < 0:
		b.Verdict = VerdictDoesNotHold
	case g.Lo > 0 && reread.CI.Lo > 0:
		b.Verdict = VerdictHolds
	default:
		b.Verdict = VerdictUndecided
	}
	return b
}
