package report_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"lab/metrics"
	"lab/report"
)

// serverReq is one request of a server fixture: prompt, cached and expected cached tokens, the
// divergence token and segment, the time to first token in ms.
type serverReq struct {
	prompt, cached, expected, div int64
	seg                           string
	ttftMs                        int64
}

// serverRun returns the manifest and samples of one run of midnight (arms spec and
// date-in-system-prompt, one repetition, the same requests in each arm) on a server.
func serverRun(id, backend, version, model, digest string, settings map[string]string, reqs []serverReq) (*metrics.Manifest, []metrics.Sample) {
	m := testManifest()
	m.RunID, m.Backend, m.ServerVersion, m.Model, m.ModelDigest = id, backend, version, model, digest
	m.Scenarios = []string{"midnight"}
	m.ScenarioDigests = map[string]string{"midnight": "sha256:cc"}
	m.Settings = map[string]string{"driver": "scripted", "lab_run_flags": `{"run-id":"` + id + `"}`}
	for k, v := range settings {
		m.Settings[k] = v
	}
	var out []metrics.Sample
	for _, arm := range []string{metrics.SpecArm, report.CliffArm} {
		for i, q := range reqs {
			out = append(out, metrics.Sample{RunID: id, Scenario: "midnight", Arm: arm, Repetition: 1, RequestIndex: int32(i), Turn: 1, Step: int32(i + 1),
				Backend: backend, Model: model, ServerVersion: version, PromptTokens: q.prompt, CachedTokens: new(q.cached),
				ExpectedCachedTokens: new(q.expected), RereadTokens: new(q.prompt - q.cached), DivergenceToken: new(q.div),
				DivergenceSegment: q.seg, PrefillNs: (q.prompt - q.cached) * 1e6, TTFTNs: q.ttftMs * 1e6})
		}
	}
	m.Samples = len(out)
	return m, out
}

// twoServers returns an Ollama run and a llama-server run of one model file. Request 0 reads
// alike on both; at request 1 each server's cache diverges where the lab expects it to, in
// another segment (their renderings differ), on llama-server at the end of the previous prompt;
// at request 2 the llama-server's cache holds the whole prompt, more than expected.
func twoServers(edit func(m *metrics.Manifest)) ([]*metrics.Manifest, []metrics.Sample) {
	ma, sa := serverRun("ol", "ollama", "0.17.4", "lab-qwen3-synth", "sha256:aa", map[string]string{"ollama_flash_attention": "0"}, []serverReq{
		{1000, 0, 0, 0, "system", 400},
		{2000, 1900, 1900, 1900, "message 2", 100},
		{3000, 2500, 2500, 2500, "reasoning 3", 200},
	})
	mb, sb := serverRun("ll", "llamacpp", "b11669", "synth.gguf", "sha256:aa", map[string]string{"cache_reuse": "256"}, []serverReq{
		{1000, 0, 0, 0, "system", 200},
		{1990, 1000, 1000, 1000, "reasoning 2", 50},
		{2990, 2989, 2490, 2490, "reasoning 3", 50},
	})
	mb.Host = &metrics.Host{LoadStart: &metrics.LoadAverage{One: 0.5}, LoadEnd: &metrics.LoadAverage{One: 3}}
	if edit != nil {
		edit(mb)
	}
	return []*metrics.Manifest{ma, mb}, append(sa, sb...)
}

// Two runs that differ in the server and match in what is measured are set side by side: per
// server × arm the requests, cached share, re-read tokens, prefill, efficiency and time to
// first token; the requests whose re-read tokens differ, with where each server's cache
// diverged and a cause; every setting that differs, a new one included.
func TestServersSideBySide(t *testing.T) {
	t.Parallel()
	runs, samples := twoServers(nil)
	a := report.AnalyzeRuns(runs, samples)
	if len(a.Servers) != 1 {
		t.Fatalf("%d server comparisons; want 1", len(a.Servers))
	}
	c := a.Servers[0]
	if len(c.Refused) > 0 {
		t.Fatalf("refused: %v", c.Refused)
	}
	if c.Base != "A" || c.Other != "B" || c.BaseServer != "ollama 0.17.4" || c.OtherServer != "llamacpp b11669" {
		t.Errorf("servers %s %q, %s %q", c.Base, c.BaseServer, c.Other, c.OtherServer)
	}
	differs := strings.Join(c.Differs, "; ")
	for _, want := range []string{"backend: A ollama, B llamacpp", "server version: A 0.17.4, B b11669",
		"ollama_flash_attention: A 0, B not set", "cache_reuse: A not set, B 256"} {
		if !strings.Contains(differs, want) {
			t.Errorf("differs %q lacks %q", differs, want)
		}
	}
	if strings.Contains(differs, "lab_run_flags") || strings.Contains(differs, "model") {
		t.Errorf("differs %q names bookkeeping or the model (one file)", differs)
	}
	if notes := strings.Join(c.Notes, "; "); !strings.Contains(notes, "load average of the machine (at the start → at the end of each run): A unknown; B 0.50 → 3.00") {
		t.Errorf("notes %q lack the machine's load per server", notes)
	}
	if len(c.Arms) != 2 || c.Arms[0].Arm != metrics.SpecArm || c.Arms[1].Arm != report.CliffArm {
		t.Fatalf("arms %+v; want spec and %s", c.Arms, report.CliffArm)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s %v; want %v", what, got, want)
		}
	}
	A, B := c.Arms[0].Base, c.Arms[0].Other
	near("A requests", A.Requests.Mean, 3)
	near("A re-read", A.RereadTokens.Mean, 1000+100+500)
	near("B re-read", B.RereadTokens.Mean, 1000+990+1)
	near("A cached share", A.CachedShare.Mean, 4400.0/6000)
	near("B cached share", B.CachedShare.Mean, 3989.0/5980)
	near("A efficiency", A.Efficiency.Mean, 1)
	near("B efficiency", B.Efficiency.Mean, 3989.0/3490)
	near("A prefill", A.PrefillSeconds.Mean, 1.6)
	if A.TTFTSeconds == nil || B.TTFTSeconds == nil || A.TTFTKnown != 3 {
		t.Fatalf("time to first token %v (%d known), %v", A.TTFTSeconds, A.TTFTKnown, B.TTFTSeconds)
	}
	near("A ttft", *A.TTFTSeconds, 0.7/3)
	near("B ttft", *B.TTFTSeconds, 0.3/3)

	// Requests 1 and 2 of each arm differ; request 0 does not.
	if len(c.Requests) != 4 {
		t.Fatalf("%d differing requests; want 4: %+v", len(c.Requests), c.Requests)
	}
	r1, r2 := c.Requests[0], c.Requests[1]
	if r1.Arm != metrics.SpecArm || r1.RequestIndex != 1 || r1.RereadDiff != 890 || *r1.Base.DivergenceToken != 1900 ||
		r1.Base.DivergenceSegment != "message 2" || r1.Other.DivergenceSegment != "reasoning 2" ||
		r1.Base.AtPreviousPrompt || !r1.Other.AtPreviousPrompt ||
		r1.Base.Verdict != "as expected" || r1.Other.Verdict != "as expected" {
		t.Errorf("request 1: %+v", r1)
	}
	if r2.RequestIndex != 2 || r2.RereadDiff != -499 || r2.Other.Verdict != "more than expected: the whole prompt was cached" {
		t.Errorf("request 2: %+v", r2)
	}
	if len(c.Causes) != 2 {
		t.Fatalf("causes %+v; want 2", c.Causes)
	}
	// Most re-read tokens apart first: request 1 (890 apart per arm) before request 2 (499).
	if k := c.Causes[1]; k.Requests != 2 || k.BaseReread != 1000 || k.OtherReread != 2 ||
		k.Cause != "inside a turn: A: diverged in reasoning, as expected; B: diverged in reasoning, more than expected: the whole prompt was cached" {
		t.Errorf("second cause %+v", k)
	}
	if k := c.Causes[0]; k.Requests != 2 || k.BaseReread != 200 || k.OtherReread != 1980 || !strings.Contains(k.Why, "render this history differently") ||
		k.Cause != "inside a turn: A: diverged in message, as expected; B: diverged in reasoning at the end of the previous prompt "+
			"(the previous reply, as this prompt renders it, differs from its first token from the reply the cache holds), as expected" {
		t.Errorf("first cause %+v", k)
	}

	var md bytes.Buffer
	if err := report.Markdown(&md, &report.Report{Runs: runs, Analysis: a}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Servers side by side: A (ollama 0.17.4) and B (llamacpp b11669)",
		"| midnight | spec | A (ollama 0.17.4) | 1 | 3 | 73.3% | 1,600 | 1.60 | 100.0% | 0.23 |",
		"| midnight | spec | B (llamacpp b11669) | 1 | 3 | 66.7% | 1,991 | 1.99 | 114.3% | 0.10 |",
		"### Where they differ, why",
		"| midnight | spec | 1 | 1 | 100 | token 1,900 (message 2) | 1,900 / 1,900 (as expected) | 990 | token 1,000 (reasoning 2) | 1,000 / 1,000 (as expected) | +890 |",
		"no rendering of the prompt",
		"the servers name the model differently",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// Runs that differ in what is measured (the model file, the driver, or no scenario×arm in
// common) are not set side by side as servers: the comparison says why and holds no figure;
// each setup keeps its own section.
func TestServersUnlikeRunsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		edit       func(m *metrics.Manifest)
		samples    func([]metrics.Sample)
	}{
		{name: "model file", want: "model file: A sha256:aa, B sha256:bb", edit: func(m *metrics.Manifest) { m.ModelDigest = "sha256:bb" }},
		{name: "model without digest", want: "model: A lab-qwen3-synth, B synth.gguf", edit: func(m *metrics.Manifest) { m.ModelDigest = "" }},
		{name: "driver", want: "driver: A scripted, B live", edit: func(m *metrics.Manifest) { m.Settings["driver"] = "live" }},
		{name: "scenario content", want: "no scenario×arm in common", edit: func(m *metrics.Manifest) { m.ScenarioDigests["midnight"] = "sha256:dd" }},
		{name: "arms", want: "no scenario×arm in common", samples: func(s []metrics.Sample) {
			for i := range s {
				if s[i].RunID == "ll" {
					s[i].Arm = "other-arm-" + s[i].Arm
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, samples := twoServers(tc.edit)
			if tc.samples != nil {
				tc.samples(samples)
			}
			a := report.AnalyzeRuns(runs, samples)
			if len(a.Setups) != 2 || len(a.Servers) != 1 {
				t.Fatalf("%d setups, %d server comparisons; want 2 and 1", len(a.Setups), len(a.Servers))
			}
			c := a.Servers[0]
			if !strings.Contains(strings.Join(c.Refused, "; "), tc.want) || len(c.Arms) != 0 || len(c.Requests) != 0 {
				t.Errorf("refused %q, %d arms, %d requests; want refused naming %q and no figure", c.Refused, len(c.Arms), len(c.Requests), tc.want)
			}
			var md bytes.Buffer
			if err := report.Markdown(&md, &report.Report{Runs: runs, Analysis: a}); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"are not set side by side as servers", tc.want, "## Setup A", "## Setup B"} {
				if !strings.Contains(md.String(), want) {
					t.Errorf("markdown lacks %q", want)
				}
			}
			if strings.Contains(md.String(), "Where they differ, why") {
				t.Errorf("markdown compares refused servers request by request")
			}
		})
	}
}

// A model file digest one setup lacks is no refusal when the model's name is the same, but the
// comparison says the file was not checked.
func TestServersDigestUnrecorded(t *testing.T) {
	t.Parallel()
	runs, samples := twoServers(func(m *metrics.Manifest) { m.ModelDigest, m.Model = "", "lab-qwen3-synth" })
	c := report.AnalyzeRuns(runs, samples).Servers[0]
	if len(c.Refused) > 0 || len(c.Arms) != 2 || !strings.Contains(strings.Join(c.Notes, "; "), "digest is not recorded by both setups") {
		t.Errorf("refused %q, %d arms, notes %q; want a comparison noting the unchecked file", c.Refused, len(c.Arms), c.Notes)
	}
}

// The summary's line on two servers says in words how many requests re-read a different number
// of tokens, and gives each server's re-read tokens by its name for the cause that weighs most.
func TestServersLine(t *testing.T) {
	t.Parallel()
	line := func(edit func(*metrics.Manifest), keep func(metrics.Sample) bool) string {
		t.Helper()
		runs, samples := twoServers(edit)
		if keep != nil {
			var kept []metrics.Sample
			for _, s := range samples {
				if keep(s) {
					kept = append(kept, s)
				}
			}
			samples = kept
		}
		var b bytes.Buffer
		if err := report.Terminal(&b, &report.Report{Runs: runs, Analysis: report.AnalyzeRuns(runs, samples)}, report.TerminalOptions{}); err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(b.String(), "\n") {
			if strings.HasPrefix(l, "servers ") {
				return l
			}
		}
		t.Fatalf("no servers line:\n%s", b.String())
		return ""
	}
	const inTurn = "inside a turn: A: diverged in message, as expected; B: diverged in reasoning at the end of the previous prompt " +
		"(the previous reply, as this prompt renders it, differs from its first token from the reply the cache holds), as expected"
	for _, tc := range []struct {
		name string
		edit func(*metrics.Manifest)
		keep func(metrics.Sample) bool
		want string
	}{
		// Requests 1 (A re-read 100, B 990, per arm) and 2 (A 500, B 1) of both arms.
		{"two causes", nil, nil, "servers A (ollama 0.17.4) and B (llamacpp b11669): 4 requests re-read a different number of tokens on each; " +
			"the cause that weighs most covers 2 of them, over which A re-read 200 tokens and B 1,980: " + inTurn},
		{"one cause", nil, func(s metrics.Sample) bool { return s.RequestIndex < 2 },
			"servers A (ollama 0.17.4) and B (llamacpp b11669): 2 requests re-read a different number of tokens on each; " +
				"over all of them A re-read 200 tokens and B 1,980, for one cause: " + inTurn},
		{"one request", nil, func(s metrics.Sample) bool { return s.RequestIndex < 2 && s.Arm == metrics.SpecArm },
			"servers A (ollama 0.17.4) and B (llamacpp b11669): 1 request re-read a different number of tokens on each; " +
				"there A re-read 100 tokens and B 990, for this cause: " + inTurn},
		{"none", nil, func(s metrics.Sample) bool { return s.RequestIndex < 1 },
			"servers A (ollama 0.17.4) and B (llamacpp b11669): every request re-read the same number of tokens on both (within 1.0% of its prompt)"},
		{"refused", func(m *metrics.Manifest) { m.ModelDigest = "sha256:bb" }, nil,
			"servers A (ollama 0.17.4) and B (llamacpp b11669): not compared, they differ in what is measured: model file: A sha256:aa, B sha256:bb"},
	} {
		if got := line(tc.edit, tc.keep); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
