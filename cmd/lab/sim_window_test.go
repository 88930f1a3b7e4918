package main

import (
	"strings"
	"testing"

	"lab/metrics"
)

// simRows runs lab run --backend sim with args and returns its rows by arm, in request order.
func simRows(t *testing.T, args ...string) (map[string][]metrics.Sample, *metrics.Manifest) {
	t.Helper()
	needTokenizer(t)
	results := t.TempDir()
	args = append([]string{"run", "--backend", "sim", "--scenario", "midnight", "--results", results, "--run-id", "w", "--quiet"}, args...)
	if code, out, errOut := runLab(t, args...); code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "w"))
	if err != nil {
		t.Fatal(err)
	}
	byArm := map[string][]metrics.Sample{}
	for _, s := range samples {
		byArm[s.Arm] = append(byArm[s.Arm], s)
	}
	return byArm, man
}

// --num-ctx reaches the sim: midnight passes a 16,384-token window. Every prompt the runner
// processes fits the window, and a request after one whose prompt and reply overflowed it finds
// only the first num_keep (4) tokens of its KV cache, as Ollama's runner leaves it, and the
// expected cached tokens, counted against what the runner kept, say the same. Before, the sim
// ignored the window, and the expectation assumed the cache held the whole prompt and reply.
func TestRunSimHonoursNumCtx(t *testing.T) {
	rows, man := simRows(t, "--arm", "spec", "--num-ctx", "16384")
	if man.NumCtx != 16384 {
		t.Errorf("manifest num_ctx %d", man.NumCtx)
	}
	overflows, after := 0, 0
	spec := rows["spec"]
	for i, s := range spec {
		if s.PromptTokens > 16384 {
			t.Errorf("request %d: %d prompt tokens, more than the window", s.RequestIndex, s.PromptTokens)
		}
		if !s.ContextOverflow || i+1 == len(spec) {
			continue
		}
		overflows++
		next := spec[i+1]
		if *next.CachedTokens > 4 || *next.ExpectedCachedTokens != *next.CachedTokens {
			t.Errorf("request %d after an overflow: cached %d, expected %d; want 4 cached, as expected", next.RequestIndex, *next.CachedTokens, *next.ExpectedCachedTokens)
		}
		after++
	}
	if overflows == 0 || after == 0 {
		t.Fatalf("no overflowing request in midnight at num_ctx 16384 (%d rows)", len(spec))
	}
}

// The anthropic cache model uses each arm's breakpoints: at a new user turn (the earlier turn's
// reasoning is dropped, so the previous request's entry no longer matches and the turn's first
// entry is more than 20 blocks back) spec reads the system prompt's entry its system breakpoint
// wrote, date-in-system-prompt (a last-message breakpoint only) reads nothing. With
// --cache-breakpoints last-message both arms place the same marker, and spec reads nothing there
// either.
func TestRunSimAnthropicBreakpoints(t *testing.T) {
	rows, _ := simRows(t, "--arm", "spec,date-in-system-prompt", "--cache-model", "anthropic")
	spec, dated := rows["spec"], rows["date-in-system-prompt"]
	if len(spec) != len(dated) || len(spec) == 0 {
		t.Fatalf("%d and %d rows", len(spec), len(dated))
	}
	var turns []int // requests where both arms read only the system prompt's entry, or nothing
	for i := range spec {
		if strings.HasPrefix(spec[i].DivergenceSegment, "reasoning") && *spec[i].CachedTokens < *spec[i].ExpectedCachedTokens/2 {
			turns = append(turns, i)
			if c := *spec[i].CachedTokens; c == 0 || c > 3000 {
				t.Errorf("spec request %d: cached %d; want the system turn (tools and system prompt, about 2,000 tokens)", i, c)
			}
			if c := *dated[i].CachedTokens; c != 0 {
				t.Errorf("date-in-system-prompt request %d: cached %d; want 0 (no system breakpoint)", i, c)
			}
		}
	}
	if len(turns) == 0 {
		t.Fatal("no new turn beyond the lookback in midnight")
	}
	rows, man := simRows(t, "--arm", "spec", "--cache-model", "anthropic", "--cache-breakpoints", "last-message")
	if man.Settings["cache_breakpoints"] != "last-message" || man.NumCtx != 0 {
		t.Errorf("settings %v, num_ctx %d", man.Settings, man.NumCtx)
	}
	for _, i := range turns {
		if c := *rows["spec"][i].CachedTokens; c != 0 {
			t.Errorf("spec with --cache-breakpoints last-message, request %d: cached %d; want 0", i, c)
		}
	}
}

// Each cache model sees the prompt in its provider's order, through lab run: at midnight
// date-in-system-prompt rewrites its system prompt. On the anthropic model (tools, then system,
// then messages) with a breakpoint after the tools, that request reads the tools from the cache
// and re-reads no tool token, and the attribution names the divergence "system"; on the default
// llamacpp model (Qwen3's order: the system prompt, then the tools) it re-reads the tools too.
func TestRunSimProviderOrder(t *testing.T) {
	at := func(rows []metrics.Sample) metrics.Sample {
		t.Helper()
		for _, r := range rows {
			if r.DivergenceSegment == "system" {
				return r
			}
		}
		t.Fatal("no request diverges in the system prompt")
		return metrics.Sample{}
	}
	rows, _ := simRows(t, "--arm", "date-in-system-prompt", "--cache-model", "anthropic", "--cache-breakpoints", "tools,system,last-message")
	a := at(rows["date-in-system-prompt"])
	// The cold first request re-reads the tools, named in their place (first).
	if first := rows["date-in-system-prompt"][0]; *first.CachedTokens != 0 || *first.RereadToolsTokens == 0 || *first.RereadSystemTokens == 0 {
		t.Errorf("anthropic, request 0: cached %d, re-read tools %d, system %d", *first.CachedTokens, *first.RereadToolsTokens, *first.RereadSystemTokens)
	}
	if *a.CachedTokens == 0 || *a.CachedTokens != *a.ExpectedCachedTokens || *a.RereadToolsTokens != 0 || *a.RereadSystemTokens == 0 {
		t.Errorf("anthropic, request %d: cached %d, expected %d, re-read tools %d, system %d; want the tools cached, the system prompt re-read",
			a.RequestIndex, *a.CachedTokens, *a.ExpectedCachedTokens, *a.RereadToolsTokens, *a.RereadSystemTokens)
	}
	rows, _ = simRows(t, "--arm", "date-in-system-prompt")
	l := at(rows["date-in-system-prompt"])
	if l.RequestIndex != a.RequestIndex || *l.RereadToolsTokens == 0 || *l.RereadSystemTokens == 0 {
		t.Errorf("llamacpp, request %d (anthropic's %d): re-read tools %d, system %d; want both re-read",
			l.RequestIndex, a.RequestIndex, *l.RereadToolsTokens, *l.RereadSystemTokens)
	}
}
