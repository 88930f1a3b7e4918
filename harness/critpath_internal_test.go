package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	lab "lab"
	"lab/arms"
	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/chat"
	"lab/hygiene"
	"lab/localserver"
	"lab/metrics"
	"lab/scenario"
)

// This file benchmarks the client's critical path: from the moment a scripted assistant step is
// decided to the request's bytes being ready to send ([runner.decided], then the backend's
// encoding), for a short session and a long one, against the prefill time of the real
// llama-server on the short one's prompt. The expected-cache work ([runner.expect]) runs beside
// the request and is left out.

// critSession is a synthetic coding session of about tokens tokens as the Qwen3 tokenizer counts
// its rendered prompt (at least its smallest: the system prompt, the tool list, the person's
// message and one step, about 3.8k), in the lab's scenario format: a workspace of Go files of 60
// lines, turns of eight steps, each step with reasoning and one call (a read of the next file,
// every third step a grep as well, every fifth a bash command with its scripted output; about
// 2,100 tokens a step with its results), and a text answer ending each turn. The step before the
// decided one reads one file alone in every session, so the new messages a step finds are the
// same whatever the session's length; the decided step (a grep) is the last but one, and an
// answer ends the session.
func critSession(tb testing.TB, tokens int) *scenario.Scenario {
	tb.Helper()
	const fileLines = 60
	steps := max(1, (tokens-3800)/2100)
	var ws, sc strings.Builder
	ws.WriteString("A synthetic Go project for the critical-path benchmark.\n")
	for f := range steps {
		fmt.Fprintf(&ws, "-- pkg/part%03d/part.go --\npackage part%03d\n\n", f, f)
		for l := range fileLines - 2 {
			fmt.Fprintf(&ws, "\t// line %d of part %d: the store keeps link %d under lock %d\n", l, f, l*f, l%7)
		}
	}
	sc.WriteString("name: critpath\ndescription: synthetic\nproject: critpath\nworkspace: workspace.txtar\n")
	sc.WriteString("clock: \"2026-11-05T22:05:00+01:00\"\ncommands:\n  - command: go test ./...\n    output: |\n")
	for l := range 40 {
		fmt.Fprintf(&sc, "      ok  \texample.com/critpath/pkg/part%03d\t0.%03ds\n", l, l)
	}
	sc.WriteString("    exit: 0\nsteps:\n")
	reasoning := strings.Repeat("The person wants the storage path understood before any change, so I read the next part and check where it takes the lock. ", 3)
	for s := range steps {
		if s%8 == 0 {
			if s > 0 {
				sc.WriteString("  - assistant:\n      text: |\n        " + strings.Repeat("The parts read so far keep every link under one lock. ", 6) + "\n")
			}
			fmt.Fprintf(&sc, "  - user: |\n      Turn %d: read the next parts and tell me where the lock is taken and released.\n", s/8+1)
		}
		fmt.Fprintf(&sc, "  - assistant:\n      reasoning: |\n        Step %d. %s\n      calls:\n        - read: {path: pkg/part%03d/part.go}\n", s, reasoning, s)
		if s == steps-1 {
			continue // the step before the one decided reads one file alone, in every session
		}
		if s%3 == 2 {
			fmt.Fprintf(&sc, "        - grep: {pattern: 'lock %d', path: pkg/part%03d}\n", s%7, s-1)
		}
		if s%5 == 4 {
			sc.WriteString("        - bash: {command: go test ./...}\n")
		}
	}
	sc.WriteString("  - assistant:\n      reasoning: |\n        Last step. " + reasoning + "\n      calls:\n        - grep: {pattern: 'lock 3', path: pkg}\n")
	sc.WriteString("  - assistant:\n      text: The lock is taken in every part.\n")
	fsys := fstest.MapFS{"scenario.yaml": {Data: []byte(sc.String())}, "workspace.txtar": {Data: []byte(ws.String())}}
	s, err := scenario.LoadScenarioFS(fsys, "scenario.yaml", "critpath/scenario.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// nopBackend answers every request at once with no figures: it only lets a session run.
type nopBackend struct{}

func (nopBackend) Send(context.Context, *chat.Request, *chat.Reply) (*chat.Result, error) {
	return &chat.Result{}, nil
}

// critRunner is a session of sc with the arm, run up to its last step (an assistant step, which
// it returns): the state in which that step is decided. fresh is where the messages the previous
// request did not carry start in the history.
type critRunner struct {
	r     *runner
	last  *scenario.AssistantStep
	fresh int
	// orig are the history's messages from fresh on, as the session left them.
	orig []chat.Message
}

func newCritRunner(tb testing.TB, sc *scenario.Scenario, arm arms.Arm) *critRunner {
	tb.Helper()
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := newRunner(SessionConfig{Scenario: sc, Arm: arm, Repetition: 1, RunID: "bench", Loop: loop,
		Backend: nopBackend{}, BackendName: "bench", Sink: &metrics.MemorySink{}, SandboxDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.ws.Remove() })
	ctx := context.Background()
	last := len(sc.Steps) - 2 // the last step with calls; the session's answer follows it
	fresh := 0
	for _, st := range sc.Steps[:last] {
		if st.Assistant != nil {
			fresh = len(r.history)
		}
		if err := r.event(ctx, st); err != nil {
			tb.Fatal(err)
		}
	}
	return &critRunner{r: r, last: sc.Steps[last].Assistant, fresh: fresh, orig: slices.Clone(r.history[fresh:])}
}

// renew sets the session back to its previous request, sent (the history without the messages
// that came after it; the request built and encoded, untimed), then appends fresh copies of
// those messages (new strings, as a new step's answers are): the state in which the next step
// is decided, with nothing of its new messages seen by any encoder.
func (c *critRunner) renew(encode func(*chat.Request) (int, error)) error {
	c.r.history = c.r.history[:c.fresh]
	if _, err := c.step(encode); err != nil {
		return err
	}
	for _, m := range c.orig {
		m.Content = strings.Clone(m.Content)
		m.Reasoning = strings.Clone(m.Reasoning)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = slices.Clone(m.ToolCalls[j].Arguments)
		}
		c.r.history = append(c.r.history, m)
	}
	return nil
}

// step is the critical path of the session's last step: the request built and encoded to bytes
// ready to send; it returns their length.
func (c *critRunner) step(encode func(*chat.Request) (int, error)) (int, error) {
	req, _, _ := c.r.decided(c.last)
	return encode(req)
}

// encoders are the backends' request encodings: llama-server's /v1/chat/completions body as
// [llamacpp.Client.Measure] sends it (in pieces, [llamacpp.Client.RequestBody]) and Ollama's
// two /api/chat bodies, the rendering's and the measured request's, as [ollama.Client.Measure]
// sends them (in pieces, [ollama.Client.RequestBodies]; the length is the measured one's).
func encoders(tb testing.TB) map[string]func(*chat.Request) (int, error) {
	lc, err := llamacpp.New(llamacpp.Options{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		tb.Fatal(err)
	}
	oc, err := ollama.New("http://127.0.0.1:1", "lab-synth")
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]func(*chat.Request) (int, error){
		"llamacpp": func(req *chat.Request) (int, error) {
			body, err := lc.RequestBody(req)
			return body.Len(), err
		},
		"ollama": func(req *chat.Request) (int, error) {
			body, _, err := oc.RequestBodies(req)
			return body.Len(), err
		},
	}
}

// BenchmarkCriticalPath times the client's critical path of one step ([critRunner.step]) in a
// session of about 1k tokens and one of about 100k (critSession, the spec arm; the short one is
// the lab's smallest step: its system prompt and tool list alone are about 1.7k tokens), alternated
// in each iteration so both are measured under the same load, with each backend's encoding
// (sub-benchmarks llamacpp, ollama). Each iteration's step finds new messages since the previous
// request (critRunner.renew), as a real step does. It reports the median ns per step of each
// session (ns/step-1k, ns/step-100k; their means as mean-ns/step-*), the ratio of the medians
// (ratio-100k/1k, the target: at most 1.5), the request sizes (bytes-1k, bytes-100k) and, with
// the lab's llama-server in the cache (lab server prepare --server llamacpp), the prefill time of
// the 1k session's prompt on it, cold (the median of 5, prefill-ns, from the server's
// timings.prompt_ms) and each critical path as a share of it (share-1k-%, share-100k-%; the
// target: under 1 %). Without the server (or with -short) those three are not reported and the
// log says why. The log states each figure against its target.
func BenchmarkCriticalPath(b *testing.B) {
	spec, err := arms.Select(arms.Builtin(), "spec")
	if err != nil {
		b.Fatal(err)
	}
	small, large := critSession(b, 1_000), critSession(b, 100_000)
	prefill, promptTokens, longTokens, why := coldPrefill(b, small, large, spec[0])
	for _, name := range []string{"llamacpp", "ollama"} {
		b.Run(name, func(b *testing.B) {
			// A client for each session, as each session is sent through one client at a time.
			encS, encL := encoders(b)[name], encoders(b)[name]
			s, l := newCritRunner(b, small, spec[0]), newCritRunner(b, large, spec[0])
			var ts, tl []time.Duration
			var bs, bl int
			for b.Loop() {
				if err := s.renew(encS); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				n, err := s.step(encS)
				ts = append(ts, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				bs = n
				if err := l.renew(encL); err != nil {
					b.Fatal(err)
				}
				t0 = time.Now()
				n, err = l.step(encL)
				tl = append(tl, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				bl = n
			}
			ns, nl := median(ts), median(tl)
			b.ReportMetric(ns, "ns/step-1k")
			b.ReportMetric(nl, "ns/step-100k")
			b.ReportMetric(nl/ns, "ratio-100k/1k")
			b.ReportMetric(mean(ts), "mean-ns/step-1k")
			b.ReportMetric(mean(tl), "mean-ns/step-100k")
			b.ReportMetric(float64(bs), "bytes-1k")
			b.ReportMetric(float64(bl), "bytes-100k")
			b.Logf("%s: critical path of a step %.1f µs (1k session, %d bytes) and %.1f µs (100k session, %d bytes), medians of %d: ratio %.2f (target at most 1.5: %s)",
				name, ns/1e3, bs, nl/1e3, bl, len(ts), nl/ns, verdict(nl/ns <= 1.5))
			if prefill <= 0 {
				b.Log("no prefill figure: " + why)
				return
			}
			pf := float64(prefill.Nanoseconds())
			b.ReportMetric(pf, "prefill-ns")
			b.ReportMetric(100*ns/pf, "share-1k-%")
			b.ReportMetric(100*nl/pf, "share-100k-%")
			b.ReportMetric(float64(promptTokens), "prompt-tokens-1k")
			b.ReportMetric(float64(longTokens), "prompt-tokens-100k")
			b.Logf("%s: cold prefill of the 1k session's prompt (%d tokens; the 100k session's: %d) %.1f ms: the critical path is %.4f %% of it (1k) and %.4f %% (100k) (target under 1 %%: %s)",
				name, promptTokens, longTokens, pf/1e6, 100*ns/pf, 100*nl/pf, verdict(100*nl/pf < 1 && 100*ns/pf < 1))
		})
	}
}

// coldPrefill starts the lab's llama-server (from the cache, on the synthetic Qwen3 model) and
// returns the median prefill time (timings.prompt_ms) of five cold sends of the request of sc's
// decided step (its slot erased before each) and its prompt tokens as the server counted them,
// and the tokens of long's decided request as the server renders and counts it (not sent); 0 and
// the reason when the server is not in the cache, with -short, or when it fails.
func coldPrefill(b *testing.B, sc, long *scenario.Scenario, arm arms.Arm) (prefill time.Duration, tokens, longTokens int64, why string) {
	if testing.Short() {
		return 0, 0, 0, "-short: the real llama-server is not started"
	}
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	lp, ok := localserver.CachedLlamaServer(cache)
	if !ok {
		return 0, 0, 0, fmt.Sprintf("llama-server %s is not in the cache %s (lab server prepare --server llamacpp fetches it)", localserver.LlamaCppVersion, cache)
	}
	models, _ := filepath.Glob(filepath.Join(cache, "models", localserver.DefaultModelName+"-*.gguf"))
	if len(models) == 0 {
		return 0, 0, 0, "no synthetic Qwen3 model in the cache " + cache + " (lab server prepare)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	prep, err := localserver.PrepareModel(ctx, localserver.Setup{CacheDir: cache})
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	srv, err := localserver.StartLlamaServer(ctx, localserver.LlamaStartOptions{Binary: lp.Binary, Model: prep.GGUF, Dir: b.TempDir(), CtxSize: 8192})
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	defer srv.Stop()
	c, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL})
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	cr := newCritRunner(b, sc, arm)
	req, _, _ := cr.r.decided(cr.last)
	var times []time.Duration
	for range 5 {
		if err := c.Reset(ctx); err != nil {
			return 0, 0, 0, err.Error()
		}
		res, err := c.Measure(ctx, req, nil)
		if err != nil {
			return 0, 0, 0, err.Error()
		}
		if res.CachedTokens != nil && *res.CachedTokens != 0 {
			return 0, 0, 0, fmt.Sprintf("the prompt was not cold: %d cached tokens", *res.CachedTokens)
		}
		times = append(times, res.Prefill)
		tokens = res.PromptTokens
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	lr := newCritRunner(b, long, arm)
	lreq, _, _ := lr.r.decided(lr.last)
	lbody, err := c.ChatBody(lreq)
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	rendered, err := c.Render(ctx, lbody)
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	ids, err := c.Tokenizer().Encode(rendered)
	if err != nil {
		return 0, 0, 0, err.Error()
	}
	return times[len(times)/2], tokens, int64(len(ids)), ""
}

// median is the middle of ds in nanoseconds (the mean of the two middle ones for an even count).
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2].Nanoseconds())
	}
	return float64(s[n/2-1].Nanoseconds()+s[n/2].Nanoseconds()) / 2
}

// mean is the mean of ds in nanoseconds.
func mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Nanoseconds()) / float64(len(ds))
}

// verdict says whether a target was met, in the benchmarks' log lines.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
