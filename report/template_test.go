package report_test

import (
	"bytes"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// The template table splits each arm's re-read tokens where the template decides them, names
// the kinds of segment the prompts diverged in with the excerpt of the request that re-read the
// most, and checks §8's sentence from spec against reasoning-never.
func TestTemplateEffects(t *testing.T) {
	t.Parallel()
	row := func(arm string, idx, turn, step int32, kind string, reread int64, seg, excerpt string) metrics.Sample {
		return metrics.Sample{RunID: "r", Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: idx, Turn: turn, Step: step, Kind: kind,
			Backend: "llamacpp", ServerVersion: "b1", Model: "m", PromptTokens: 1000, CachedTokens: new(1000 - reread),
			ExpectedCachedTokens: new(1000 - reread), RereadTokens: new(reread), DivergenceSegment: seg, DivergenceExcerpt: excerpt}
	}
	ex := `{"before":"<|im_start|>assistant\n","cached":"<think>\nplan</think>","prompt":"<tool_call>"}`
	var samples []metrics.Sample
	for _, arm := range []string{metrics.SpecArm, report.ReasoningNeverArm} {
		newUser := int64(100)
		if arm == metrics.SpecArm {
			newUser = 700
		}
		samples = append(samples,
			row(arm, 0, 1, 1, metrics.KindStep, 1000, "", ""),
			row(arm, 1, 1, 2, metrics.KindStep, 40, "message 2", ex),
			row(arm, 2, 1, 3, metrics.KindStep, 60, "message 4", ex),
			row(arm, 3, 2, 1, metrics.KindStep, newUser, "reasoning 2", ""),
			row(arm, 4, 2, 2, metrics.KindCompaction, 900, "system", ""),
			row(arm, 5, 2, 3, metrics.KindStep, 800, "message 1", ""),
		)
	}
	runs := []*metrics.Manifest{{RunID: "r", Backend: "llamacpp", ServerVersion: "b1", Complete: true,
		Settings: map[string]string{"family": "deepseek-v3", "chat_template": "the GGUF's"}}}
	a := report.AnalyzeRuns(runs, samples)
	if len(a.Templates) != 1 {
		t.Fatalf("templates %+v; want one scenario", a.Templates)
	}
	e := a.Templates[0]
	if e.Family != "deepseek-v3" || e.Template != "the GGUF's" || len(e.Arms) != 2 || e.Arms[0].Arm != metrics.SpecArm {
		t.Fatalf("effect %+v", e)
	}
	spec := e.Arms[0]
	if w := spec.WithinTurn; w.Requests != 2 || w.Reread == nil || *w.Reread != 50 || len(w.Divergences) != 1 ||
		w.Divergences[0].Segment != "message" || w.Divergences[0].Rule != report.RuleReasoningDropped || w.Divergences[0].Requests != 2 || w.Divergences[0].Reread != 100 ||
		w.Divergences[0].Example == nil || w.Divergences[0].Step != 3 || w.Divergences[0].Example.Prompt != "<tool_call>" {
		t.Errorf("inside a turn %+v", w)
	}
	if n := spec.NewUserMessage; n.Requests != 1 || *n.Reread != 700 || n.Divergences[0].Segment != "reasoning" || n.Divergences[0].Example != nil {
		t.Errorf("new user message %+v", n)
	}
	// The compaction request and the first after it.
	if c := spec.Compaction; c.Requests != 2 || *c.Reread != 850 {
		t.Errorf("compaction %+v", c)
	}
	// The request after the compaction starts from the summary; the compaction request itself
	// diverged in the system prompt, no rule the lab names.
	rules := map[string]string{}
	for _, d := range spec.Compaction.Divergences {
		rules[d.Segment] = d.Rule
	}
	if len(rules) != 2 || rules["message"] != report.RuleSummary || rules["system"] != "" {
		t.Errorf("compaction divergences %+v; want message (%s) and system (no rule)", spec.Compaction.Divergences, report.RuleSummary)
	}
	c := e.Section8
	if c == nil || c.Verdict != report.VerdictDoesNotHold || c.Spec != 700 || c.Never != 100 || !strings.Contains(c.Why, "diverging first in reasoning") {
		t.Fatalf("§8 %+v", c)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## What the template does",
		"| llamacpp b1 | deepseek-v3 | s | spec | 50 (2) | 700 (1) | 850 (2) |",
		"llamacpp b1, deepseek-v3, s: §8 does not hold — at 1 new user message spec re-read 700 tokens per request, reasoning-never 100",
		"spec, inside a turn: diverged in message (reasoning dropped) on 2 requests, 100 re-read tokens; at turn 1 step 3: after \"&lt;|im_start|&gt;assistant\\\\n\" the cache held \"&lt;think&gt;\\\\nplan&lt;/think&gt;\", the template rendered \"&lt;tool_call&gt;\"",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	// Spec re-reading no more than reasoning-never at new user messages holds.
	for i := range samples {
		if samples[i].Arm == metrics.SpecArm && samples[i].RequestIndex == 3 {
			samples[i].RereadTokens, samples[i].CachedTokens = new(int64(101)), new(int64(899))
		}
	}
	if c := report.AnalyzeRuns(runs, samples).Templates[0].Section8; c == nil || c.Verdict != report.VerdictHolds {
		t.Errorf("§8 %+v; want holds", c)
	}
}

// A setup's renderer setting names the renderer beside the family in the table: two renderers
// on one family's model are two rows of setups, told apart.
func TestTemplateEffectsNameTheRenderer(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	var runs []*metrics.Manifest
	for i, renderer := range []string{"glm-4.7", "lfm2"} {
		run := "r-" + renderer
		for _, arm := range []string{metrics.SpecArm, report.ReasoningNeverArm} {
			for j, ts := range [][2]int32{{1, 1}, {1, 2}, {2, 1}} {
				samples = append(samples, metrics.Sample{RunID: run, Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: int32(j), Turn: ts[0], Step: ts[1],
					Kind: metrics.KindStep, Backend: "ollama", ServerVersion: "0.17.4", Model: "lab-qwen3-" + renderer + "-synth", PromptTokens: 1000,
					CachedTokens: new(int64(900 - 100*i)), ExpectedCachedTokens: new(int64(900 - 100*i)), RereadTokens: new(int64(100 + 100*i))})
			}
		}
		runs = append(runs, &metrics.Manifest{RunID: run, Backend: "ollama", ServerVersion: "0.17.4", Model: "lab-qwen3-" + renderer + "-synth", Complete: true,
			Settings: map[string]string{"family": "qwen3", "chat_template": "Ollama's built-in " + renderer + " renderer", "renderer": renderer}})
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: report.AnalyzeRuns(runs, samples)}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| A: ollama 0.17.4 | qwen3, glm-4.7 renderer | s | spec | 100 (1) | 100 (1) | — |",
		"| B: ollama 0.17.4 | qwen3, lfm2 renderer | s | reasoning-never | 200 (1) | 200 (1) | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// An excerpt's text shows an ellipsis where it was cut (the excerpt's cut flags) and nowhere
// else, whatever its length: shared text from the prompt's very start is whole, and a text cut
// at a character boundary may be shorter than the limits.
func TestTemplateExcerptEllipsis(t *testing.T) {
	t.Parallel()
	before := strings.Repeat("x", 38) // all the prompt held before the difference
	long := strings.Repeat("y", 58)   // the rest of the cache, whole
	rest := strings.Repeat("z", 30)   // a cut text, short of the limit
	row := func(arm string, idx, step int32, excerpt string) metrics.Sample {
		return metrics.Sample{RunID: "r", Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: idx, Turn: 1, Step: step, Kind: metrics.KindStep,
			Backend: "llamacpp", ServerVersion: "b1", Model: "m", PromptTokens: 100, CachedTokens: new(int64(90)),
			ExpectedCachedTokens: new(int64(90)), RereadTokens: new(int64(10)), DivergenceSegment: "message 2", DivergenceExcerpt: excerpt}
	}
	samples := []metrics.Sample{
		row(metrics.SpecArm, 0, 1, ""),
		row(metrics.SpecArm, 1, 2, `{"before":"`+before+`","cached":"`+long+`","prompt":"b"}`),
		row(report.ReasoningNeverArm, 0, 1, ""),
		row(report.ReasoningNeverArm, 1, 2, `{"before":"`+rest+`","cached":"`+rest+`","prompt":"`+rest+`","before_cut":true,"cached_cut":true,"prompt_cut":true}`),
	}
	runs := []*metrics.Manifest{{RunID: "r", Backend: "llamacpp", ServerVersion: "b1", Complete: true,
		Settings: map[string]string{"family": "llama3.2", "chat_template": "the GGUF's"}}}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: report.AnalyzeRuns(runs, samples)}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		`after "` + before + `" the cache held "` + long + `", the template rendered "b"`,
		`after …"` + rest + `" the cache held "` + rest + `"…, the template rendered "` + rest + `"…`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// Requests whose divergence the lab could not compute (no expected cached tokens, as from a
// cloud API) are not said to have diverged nowhere; a probe, outside the conversation, is no
// request after a compaction; §8's line gives each arm's count of known requests.
func TestTemplateEffectsUnknowns(t *testing.T) {
	t.Parallel()
	row := func(arm string, idx, turn, step int32, kind string, reread *int64) metrics.Sample {
		s := metrics.Sample{RunID: "r", Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: idx, Turn: turn, Step: step, Kind: kind,
			Backend: "openai", ServerVersion: "api", Model: "m", PromptTokens: 1000, RereadTokens: reread, ExpectedUnknown: true}
		if reread != nil {
			s.CachedTokens = new(1000 - *reread)
		}
		return s
	}
	samples := []metrics.Sample{
		row(metrics.SpecArm, 0, 1, 1, metrics.KindStep, new(int64(1000))),
		row(metrics.SpecArm, 1, 2, 1, metrics.KindStep, new(int64(500))),
		row(metrics.SpecArm, 2, 3, 1, metrics.KindStep, new(int64(500))),
		row(metrics.SpecArm, 3, 3, 2, metrics.KindCompaction, new(int64(900))),
		row(metrics.SpecArm, 4, 3, 3, metrics.KindProbe, new(int64(7))),
		row(metrics.SpecArm, 5, 3, 3, metrics.KindStep, new(int64(300))),
		row(report.ReasoningNeverArm, 0, 1, 1, metrics.KindStep, new(int64(1000))),
		row(report.ReasoningNeverArm, 1, 2, 1, metrics.KindStep, nil),
		row(report.ReasoningNeverArm, 2, 3, 1, metrics.KindStep, new(int64(100))),
	}
	runs := []*metrics.Manifest{{RunID: "r", Backend: "openai", ServerVersion: "api", Complete: true}}
	a := report.AnalyzeRuns(runs, samples)
	e := a.Templates[0]
	// The compaction request and the step after it; the probe between them is neither.
	if c := e.Arms[0].Compaction; c.Requests != 2 || c.Reread == nil || *c.Reread != 600 || c.DivergenceUnknown != 2 || len(c.Divergences) != 0 {
		t.Errorf("compaction %+v", c)
	}
	if c := e.Section8; c == nil || c.Requests != 2 || c.NeverRequests != 1 || c.Spec != 500 || c.Never != 100 {
		t.Fatalf("§8 %+v", c)
	}
	var b bytes.Buffer
	if err := report.Markdown(&b, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"at 2 new user messages spec re-read 500 tokens per request, reasoning-never 100 (at 1);",
		"where these requests diverged from what the KV cache held is not known",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "no request of these parts diverged") {
		t.Errorf("report.md says requests of unknown divergence did not diverge:\n%s", md)
	}
}
