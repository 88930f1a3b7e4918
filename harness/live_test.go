package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"lab/arms"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/ollama/ollama/api"

	"lab/backend/ollama"
	"lab/backend/sim"
	"lab/cachesim"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
	"lab/scenarios"
	"lab/tools"
)

// recorder is the sim backend with every request it was sent kept, and the scripted model's
// script passed on (the harness finds harness.Scripter through it).
type recorder struct {
	*sim.Backend
	requests []*chat.Request
	// replies are the scripted model's replies to the live requests, in order.
	replies []*chat.Reply
}

func (r *recorder) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	r.requests = append(r.requests, req)
	res, err := r.Backend.Send(ctx, req, reply)
	if err == nil && res.Reply != nil {
		r.replies = append(r.replies, res.Reply)
	}
	return res, err
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	b, err := sim.New(sim.Options{Model: &cachesim.Ideal{}, Tokenizer: tinytokenizer.Bytes{}})
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{Backend: b}
}

func loop(t *testing.T) *hygiene.Config {
	t.Helper()
	l := loopConfig(t)
	return l
}

// session runs one session of sc with arm and driver d against be, in sandbox.
func session(t *testing.T, sc *scenario.Scenario, a arms.Arm, d harness.Driver, be harness.Backend, sandbox string) ([]metrics.Sample, error) {
	t.Helper()
	sink := &metrics.MemorySink{}
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: a, Repetition: 1, RunID: "t", Loop: loop(t), Backend: be,
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: sandbox, Driver: d,
		Retry: harness.RetryPolicy{Attempts: 1},
	})
	return sink.Samples(), err
}

// The live loop driven by the scripted model (the sim answering each request with the
// scenario's next step) must send exactly the scripted driver's requests and measure the same
// figures: the loop adds nothing, drops nothing and keeps every event in its place.
func TestLiveScriptedModelSendsTheScriptedRequests(t *testing.T) {
	type run struct {
		sc  *scenario.Scenario
		arm string
	}
	var runs []run
	for _, f := range []string{"tiny", "compact", "events", "bash", "live-repeat"} {
		for _, a := range []string{"spec", "reasoning-never", "date-in-system-prompt", "compaction-separate-request"} {
			runs = append(runs, run{load(t, "testdata/"+f+".yaml"), a})
		}
	}
	for _, name := range scenarios.Names() {
		if testing.Short() && name != "midnight" && name != "long-compaction" {
			continue
		}
		sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", "scenarios/"+name+"/scenario.yaml")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run{sc, "spec"})
	}
	live := harness.Driver{Mode: harness.DriverLive, MaxTokens: 1 << 30, MaxSteps: 1000}
	for _, rn := range runs {
		t.Run(rn.sc.Name+"/"+rn.arm, func(t *testing.T) {
			t.Parallel()
			sandbox := t.TempDir() // the same absolute paths for both drivers
			sb := newRecorder(t)
			scripted, err := session(t, rn.sc, arm(t, rn.arm), harness.Driver{}, sb, sandbox)
			if err != nil {
				t.Fatal(err)
			}
			lb := newRecorder(t)
			got, err := session(t, rn.sc, arm(t, rn.arm), live, lb, sandbox)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(sb.requests, lb.requests, cmpopts.IgnoreFields(chat.Request{}, "Generate"), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("live requests differ from the scripted ones (-scripted +live):\n%s", diff)
			}
			for _, r := range lb.requests {
				if r.Generate != live.MaxTokens {
					t.Fatalf("a live request has Generate %d; want %d", r.Generate, live.MaxTokens)
				}
			}
			// The bodies differ only in the options (num_predict, temperature), hence request_bytes.
			ignore := cmpopts.IgnoreFields(metrics.Sample{}, "StartedAt", "Driver", "EndReason", "ReasoningTokensGenerated", "RequestBytes")
			if diff := cmp.Diff(scripted, got, ignore); diff != "" {
				t.Fatalf("live samples differ from the scripted ones (-scripted +live):\n%s", diff)
			}
			// Every turn ends where the scenario's does: its last step request carries the reason.
			for i, s := range got {
				if s.Driver != metrics.DriverLive || scripted[i].Driver != metrics.DriverScripted || scripted[i].EndReason != "" {
					t.Fatalf("sample %d: driver %q (scripted %q, end %q); want live, scripted and no end reason", i, s.Driver, scripted[i].Driver, scripted[i].EndReason)
				}
				// A turn goes on past a step only when the step made calls: the turn's last step
				// ends it "answered", or "no_call" when it was the turn's only step.
				sameTurn := func(n metrics.Sample) bool { return n.Turn == s.Turn && n.Kind == metrics.KindStep }
				want := ""
				if s.Kind == metrics.KindStep && !slices.ContainsFunc(got[i+1:], sameTurn) {
					want = metrics.EndAnswered
					if !slices.ContainsFunc(got[:i], sameTurn) {
						want = metrics.EndNoCall
					}
				}
				if s.EndReason != want {
					t.Errorf("sample %d (turn %d step %d, %s): end_reason %q; want %q", i, s.Turn, s.Step, s.Kind, s.EndReason, want)
				}
			}
		})
	}
}

func TestLiveRepeatedCallsAndEndReasons(t *testing.T) {
	sc := load(t, "testdata/live-repeat.yaml")
	for _, d := range []harness.Driver{{}, {Mode: harness.DriverLive}} {
		samples, err := session(t, sc, arm(t, "spec"), d, newRecorder(t), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var repeated []bool
		var ends []string
		for _, s := range samples {
			repeated = append(repeated, s.RepeatedCall)
			ends = append(ends, s.EndReason)
		}
		// Step 3 reads main.go with the arguments of step 1 in another order.
		if want := []bool{false, false, true, false, false}; !slices.Equal(repeated, want) {
			t.Errorf("%q driver: repeated_call = %v; want %v", d.Mode, repeated, want)
		}
		want := []string{"", "", "", "", ""}
		if d.Live() {
			want = []string{"", "", "", metrics.EndAnswered, metrics.EndNoCall}
		}
		if !slices.Equal(ends, want) {
			t.Errorf("%q driver: end_reason = %q; want %q", d.Mode, ends, want)
		}
	}
}

func TestLiveStepLimitEndsTheTurn(t *testing.T) {
	sc := load(t, "testdata/live-repeat.yaml")
	be := newRecorder(t)
	samples, err := session(t, sc, arm(t, "spec"), harness.Driver{Mode: harness.DriverLive, MaxSteps: 2}, be, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range samples {
		got = append(got, fmt.Sprintf("%d.%d %s", s.Turn, s.Step, s.EndReason))
	}
	if want := []string{"1.1 ", "1.2 max_steps", "2.1 no_call"}; !slices.Equal(got, want) {
		t.Fatalf("turn.step end_reason = %q; want %q", got, want)
	}
	// The step that reached the limit had its call run: the next turn's request carries the
	// list's result, then the user's message. The scripted model is back on the script.
	last := be.requests[2].Messages
	if n := len(last); last[n-2].Role != chat.RoleTool || last[n-2].ToolName != "list" || !strings.HasPrefix(last[n-1].Content, "Thanks.") {
		t.Fatalf("the next turn's request ends with %+v, %+v; want the list result, then the user's message", last[n-2], last[n-1])
	}
	if len(samples) != 3 {
		t.Fatalf("%d samples; want 3", len(samples))
	}
}

// model is a fake live model: reply(i, req) answers the i-th request (0-based).
type model struct {
	reply func(i int, ctx context.Context, req *chat.Request) (*chat.Result, error)
	n     int
	seeds []int64
}

func (m *model) Send(ctx context.Context, req *chat.Request, _ *chat.Reply) (*chat.Result, error) {
	i := m.n
	m.n++
	return m.reply(i, ctx, req)
}

func (m *model) SetSeed(s int64) { m.seeds = append(m.seeds, s) }

func answer(r chat.Reply, completion int64) *chat.Result {
	return &chat.Result{PromptTokens: 10, CompletionTokens: completion, Reply: &r}
}

func TestLiveTokenLimitTimeoutAndSeed(t *testing.T) {
	sc := load(t, "testdata/live-repeat.yaml")
	read := chat.ToolCall{Name: "read", Arguments: json.RawMessage(`{"path":"main.go"}`)}
	m := &model{reply: func(i int, ctx context.Context, req *chat.Request) (*chat.Result, error) {
		switch i {
		case 0: // turn 1: a call, then noise cut at the token limit
			return answer(chat.Reply{Reasoning: "think", ToolCalls: []chat.ToolCall{read}}, 5), nil
		case 1:
			return answer(chat.Reply{Reasoning: strings.Repeat("noise ", 20)}, int64(req.Generate)), nil
		case 2: // turn 2: the turn's time runs out while the model generates
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, errors.New("no more requests expected")
	}}
	sink := &metrics.MemorySink{}
	var warnings []string
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 3, RunID: "t", Loop: loop(t), Backend: m,
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
		Driver: harness.Driver{Mode: harness.DriverLive, MaxTokens: 64, TurnTimeout: 50 * time.Millisecond, Seed: 40},
		Retry:  harness.RetryPolicy{Attempts: 1},
		Warn:   func(err error) { warnings = append(warnings, err.Error()) },
	})
	if err != nil {
		t.Fatalf("RunSession: %v; a timeout ends the turn, not the session", err)
	}
	s := sink.Samples()
	var got []string
	for _, x := range s {
		got = append(got, x.EndReason)
	}
	if want := []string{"", metrics.EndMaxTokens, metrics.EndTimeout}; !slices.Equal(got, want) {
		t.Fatalf("end_reason = %q; want %q", got, want)
	}
	if val(s[1].ReasoningTokensGenerated) != int64(len(strings.Repeat("noise ", 20))) || val(s[0].ReasoningTokensGenerated) != 5 {
		t.Errorf("reasoning tokens generated = %d, %d; want 5 and 120 (the byte tokenizer's count)", val(s[0].ReasoningTokensGenerated), val(s[1].ReasoningTokensGenerated))
	}
	if s[2].Error == "" || len(warnings) != 1 || !strings.Contains(warnings[0], "time limit") {
		t.Errorf("timed-out request: error %q, warnings %q; want the error and one warning", s[2].Error, warnings)
	}
	if !slices.Equal(m.seeds, []int64{42}) {
		t.Errorf("seeds = %v; want [42] (seed 40, repetition 3)", m.seeds)
	}
}

// fakeOllama is an httptest Ollama v0.17.4 server: it renders (a fixed text), and answers each
// real /api/chat request with the next of replies, streamed in chunks. It records the options
// of each real request.
type fakeOllama struct {
	mu      sync.Mutex
	replies []func(opts map[string]any) []api.ChatResponse
	options []map[string]any
}

func (f *fakeOllama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/chat":
		var req api.ChatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if req.DebugRenderOnly {
			json.NewEncoder(w).Encode(api.ChatResponse{DebugInfo: &api.DebugInfo{RenderedTemplate: fmt.Sprintf("<|im_start|>%d messages<|im_end|>\n<|im_start|>assistant\n<think>\n", len(req.Messages))}})
			return
		}
		f.mu.Lock()
		i := len(f.options)
		f.options = append(f.options, req.Options)
		f.mu.Unlock()
		if i >= len(f.replies) {
			http.Error(w, `{"error":"no more replies"}`, 500)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, c := range f.replies[i](req.Options) {
			json.NewEncoder(w).Encode(c)
		}
	case "/api/generate", "/api/ps":
		json.NewEncoder(w).Encode(map[string]any{"models": []any{}, "done": true})
	default:
		http.NotFound(w, r)
	}
}

// noise streams what the synthetic model writes: random tokens, all of them reasoning (the
// generation prompt opens <think> and the noise never closes it), until num_predict.
func noise(opts map[string]any) []api.ChatResponse {
	n := int(opts["num_predict"].(float64))
	var out []api.ChatResponse
	for i := range n {
		out = append(out, api.ChatResponse{Message: api.Message{Role: "assistant", Thinking: fmt.Sprintf(" zq%dx", i*7919%113)}})
	}
	done := api.ChatResponse{Done: true, DoneReason: "length", Message: api.Message{Role: "assistant"}}
	done.PromptEvalCount, done.EvalCount = 40, n
	return append(out, done)
}

// Against Ollama serving the synthetic model (random weights: it writes noise and never calls a
// tool) every turn ends cleanly at the token limit, with the reason recorded; a model that calls
// a tool has it run, its reasoning and call parsed from the stream.
func TestLiveAgainstAFakeOllama(t *testing.T) {
	call := func(map[string]any) []api.ChatResponse {
		args := api.NewToolCallFunctionArguments()
		args.Set("path", "main.go")
		done := api.ChatResponse{Done: true, DoneReason: "stop", Message: api.Message{Role: "assistant"}}
		done.PromptEvalCount, done.EvalCount = 40, 12
		return []api.ChatResponse{
			{Message: api.Message{Role: "assistant", Thinking: "Read "}},
			{Message: api.Message{Role: "assistant", Thinking: "main.go."}},
			{Message: api.Message{Role: "assistant", ToolCalls: []api.ToolCall{{ID: "call_x9", Function: api.ToolCallFunction{Name: "read", Arguments: args}}}}},
			done,
		}
	}
	fake := &fakeOllama{replies: []func(map[string]any) []api.ChatResponse{call, noise, noise}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	client, err := ollama.New(srv.URL, "synthetic", ollama.WithTemperature(0.7))
	if err != nil {
		t.Fatal(err)
	}
	sc := load(t, "testdata/live-repeat.yaml")
	sink := &metrics.MemorySink{}
	err = harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 2, RunID: "t", Loop: loop(t), Backend: client,
		BackendName: "ollama", Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
		Driver: harness.Driver{Mode: harness.DriverLive, MaxTokens: 16, Seed: 7},
		Retry:  harness.RetryPolicy{Attempts: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := sink.Samples()
	var got []string
	for _, x := range s {
		got = append(got, fmt.Sprintf("%d.%d %s %d", x.Turn, x.Step, x.EndReason, val(x.CompletionTokens)))
	}
	if want := []string{"1.1  12", "1.2 max_tokens 16", "2.1 max_tokens 16"}; !slices.Equal(got, want) {
		t.Fatalf("turn.step end_reason completion = %q; want %q", got, want)
	}
	if val(s[0].ReasoningTokensGenerated) != int64(len("Read main.go.")) || val(s[1].ReasoningTokensGenerated) == 0 {
		t.Errorf("reasoning tokens generated = %d, %d; want %d and the noise's", val(s[0].ReasoningTokensGenerated), val(s[1].ReasoningTokensGenerated), len("Read main.go."))
	}
	for i, o := range fake.options {
		if o["num_predict"] != 16.0 || o["temperature"] != 0.7 || o["seed"] != 8.0 {
			t.Errorf("request %d options %v; want num_predict 16, temperature 0.7, seed 8 (7, repetition 2)", i, o)
		}
	}
	if len(fake.options) != 3 {
		t.Fatalf("%d generations; want 3 (no generation emulation in live mode)", len(fake.options))
	}
}

func TestLiveShellRunsForRealAndScriptedAnswersItsOutput(t *testing.T) {
	sc := load(t, "testdata/live-shell.yaml")
	if sc.Shell == nil || sc.Shell.Limit != 20*time.Second {
		t.Fatalf("shell = %+v, want a 20s limit", sc.Shell)
	}
	result := func(d harness.Driver) (bash, glob string, root string) {
		sandbox := t.TempDir()
		be := newRecorder(t)
		if _, err := session(t, sc, arm(t, "spec"), d, be, sandbox); err != nil {
			t.Fatal(err)
		}
		last := be.requests[len(be.requests)-1]
		for _, m := range last.Messages {
			switch m.ToolName {
			case "bash":
				bash = m.Content
			case "glob":
				glob = m.Content
			}
		}
		if !slices.ContainsFunc(last.Tools, func(tl chat.Tool) bool { return tl.Name == "bash" }) {
			t.Errorf("%q driver: bash is not in the tool list", d.Mode)
		}
		return bash, glob, filepath.Join(sandbox, "demo")
	}
	bash, glob, root := result(harness.Driver{})
	if want := "[#0001]\nscripted"; bash != want {
		t.Errorf("scripted bash = %q, want %q", bash, want)
	}
	if want := "[#0002]\n" + filepath.Join(root, "main.go"); glob != want {
		t.Errorf("scripted glob = %q, want %q", glob, want)
	}
	bash, _, _ = result(harness.Driver{Mode: harness.DriverLive})
	if strings.Contains(bash, "network namespace") {
		t.Skipf("this machine refuses a network namespace: %s", bash)
	}
	if want := "[#0001]\n2\nREADME.md\nmain.go\n(exit status 2)"; bash != want {
		t.Errorf("live bash = %q, want %q", bash, want)
	}
}

// TestLiveTurnCutBeforeACompaction cuts every turn of long-compaction after 2 steps, before its
// mid-turn compaction: the scripted model must still answer the compaction with its summary and
// each later turn with that turn's own first step (the group the cut turn never asked for, the
// steps after the compaction, is skipped).
func TestLiveTurnCutBeforeACompaction(t *testing.T) {
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "long-compaction/scenario.yaml", "scenarios/long-compaction/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	be := newRecorder(t)
	var warnings []string
	sink := &metrics.MemorySink{}
	err = harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop(t), Backend: be,
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(),
		Driver: harness.Driver{Mode: harness.DriverLive, MaxSteps: 2, MaxTokens: 1 << 30},
		Retry:  harness.RetryPolicy{Attempts: 1},
		Warn:   func(err error) { warnings = append(warnings, err.Error()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %q", warnings)
	}
	// What each turn's first step and each compaction should be answered with, in order.
	var want []string
	first := false
	for _, st := range sc.Steps {
		switch {
		case st.User != nil:
			first = true
		case st.Compact != nil:
			want = append(want, "summary: "+st.Compact.Summary)
		case st.Assistant != nil && first:
			want = append(want, "step: "+st.Assistant.Reasoning)
			first = false
		}
	}
	var got []string
	samples := sink.Samples()
	if len(samples) != len(be.replies) {
		t.Fatalf("%d samples, %d replies", len(samples), len(be.replies))
	}
	for i, s := range samples {
		switch {
		case s.Kind == metrics.KindCompaction:
			got = append(got, "summary: "+be.replies[i].Content)
		case s.Step == 1:
			got = append(got, "step: "+be.replies[i].Reasoning)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first replies and summaries (-scripted +live):\n%s", diff)
	}
	ends := 0
	for _, s := range samples {
		if s.EndReason == metrics.EndMaxSteps {
			ends++
		}
	}
	if ends == 0 {
		t.Errorf("no turn ended max_steps: the test cuts nothing")
	}
}

// TestLiveCutTurnsKeepTheirReplies cuts every turn of every embedded scenario at 1 to 4 steps:
// the scripted model must answer the k-th step of each turn with that turn's k-th scripted step,
// each compaction with its summary, and no compaction may fail for want of a summary.
func TestLiveCutTurnsKeepTheirReplies(t *testing.T) {
	var all []*scenario.Scenario
	for _, name := range scenarios.Names() {
		sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", "scenarios/"+name+"/scenario.yaml")
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sc)
	}
	for _, f := range []string{"tiny", "compact", "events", "bash", "live-repeat"} {
		all = append(all, load(t, "testdata/"+f+".yaml"))
	}
	arms := []string{"spec", "compaction-separate-request"}
	if testing.Short() {
		arms = arms[:1]
	}
	for _, sc := range all {
		for _, an := range arms {
			for n := 1; n <= 4; n++ {
				t.Run(fmt.Sprintf("%s/%s/max-steps-%d", sc.Name, an, n), func(t *testing.T) {
					t.Parallel()
					sandbox := t.TempDir()
					root := filepath.Join(sandbox, sc.Project)
					if sc.Project == "" {
						root = sandbox
					}
					// The scripted steps of each turn, and the compaction summaries, in order.
					var turns [][]chat.Reply
					var summaries []string
					for _, st := range sc.Steps {
						switch {
						case st.User != nil:
							turns = append(turns, nil)
						case st.Compact != nil:
							summaries = append(summaries, st.Compact.Summary)
						case st.Assistant != nil:
							rep := chat.Reply{Reasoning: st.Assistant.Reasoning, Content: st.Assistant.Text}
							for _, c := range st.Assistant.Calls {
								rep.ToolCalls = append(rep.ToolCalls, chat.ToolCall{Name: c.Tool, Arguments: json.RawMessage(strings.ReplaceAll(string(c.Args), tools.RootPlaceholder, root))})
							}
							turns[len(turns)-1] = append(turns[len(turns)-1], rep)
						}
					}
					be := newRecorder(t)
					var warnings []string
					sink := &metrics.MemorySink{}
					err := harness.RunSession(context.Background(), harness.SessionConfig{
						Scenario: sc, Arm: arm(t, an), Repetition: 1, RunID: "t", Loop: loop(t), Backend: be,
						Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: sandbox,
						Driver: harness.Driver{Mode: harness.DriverLive, MaxSteps: n, MaxTokens: 1 << 30},
						Retry:  harness.RetryPolicy{Attempts: 1},
						Warn:   func(err error) { warnings = append(warnings, err.Error()) },
					})
					if err != nil {
						t.Fatal(err)
					}
					if len(warnings) > 0 {
						t.Errorf("warnings: %q", warnings)
					}
					samples := sink.Samples()
					if len(samples) != len(be.replies) {
						t.Fatalf("%d samples, %d replies", len(samples), len(be.replies))
					}
					stepOf := map[int32]int{}
					compactions := 0
					for i, s := range samples {
						got := *be.replies[i]
						got.ToolCalls = slices.Clone(got.ToolCalls)
						for j := range got.ToolCalls {
							got.ToolCalls[j].ID = ""
						}
						var want chat.Reply
						switch s.Kind {
						case metrics.KindCompaction:
							if compactions < len(summaries) {
								want.Content = summaries[compactions]
							}
							compactions++
							if got.Content != want.Content {
								t.Errorf("request %d (compaction %d): summary %q; want %q", i, compactions, got.Content, want.Content)
							}
							continue
						case metrics.KindStep:
							k := stepOf[s.Turn]
							stepOf[s.Turn]++
							if tt := int(s.Turn) - 1; tt >= 0 && tt < len(turns) && k < len(turns[tt]) {
								want = turns[tt][k]
							}
						default:
							continue
						}
						want.Thinking, got.Thinking = nil, nil
						if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
							t.Errorf("request %d (turn %d, live step %d): reply (-scripted +live):\n%s", i, s.Turn, stepOf[s.Turn], diff)
						}
					}
					if compactions > len(summaries) {
						t.Errorf("%d compactions; the scenario has %d", compactions, len(summaries))
					}
				})
			}
		}
	}
}

// The live shell's HOME is outside the project (Workspace.ShellHome), not the project root:
// what a command keeps under ~ (a build cache, say) stays out of the project, where list, glob
// and grep would show it; and the next session starts with an empty home.
func TestLiveShellHomeIsOutsideTheProject(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- main.go --\npackage main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := `name: live-home
description: The shell's home.
project: demo
workspace: w.txtar
clock: "2026-11-05T10:00:00+01:00"
shell:
  timeout: 20s
commands:
  - command: "mkdir -p ~/.cache/go-build && touch ~/.cache/go-build/x && echo $HOME"
    output: "scripted\n"
steps:
  - user: Where is home?
  - assistant:
      calls:
        - bash: {command: "mkdir -p ~/.cache/go-build && touch ~/.cache/go-build/x && echo $HOME"}
  - assistant:
      calls:
        - list: {}
  - assistant:
      text: Done.
`
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := load(t, filepath.Join(dir, "s.yaml"))
	sandbox := t.TempDir()
	// What an earlier session kept at home is gone.
	if err := os.MkdirAll(filepath.Join(sandbox, ".home", ".cache", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	be := newRecorder(t)
	if _, err := session(t, sc, arm(t, "spec"), harness.Driver{Mode: harness.DriverLive}, be, sandbox); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sandbox, ".home", ".cache", "old")); err == nil {
		t.Errorf("the shell's home kept an earlier session's files")
	}
	var out, list string
	for _, m := range be.requests[len(be.requests)-1].Messages {
		switch m.ToolName {
		case "bash":
			out = m.Content
		case "list":
			list = m.Content
		}
	}
	if strings.Contains(out, "network namespace") {
		t.Skipf("this machine refuses a network namespace: %s", out)
	}
	root := filepath.Join(sandbox, "demo")
	if want := "[#0001]\n" + filepath.Join(sandbox, ".home"); out != want {
		t.Errorf("bash = %q; want %q (the shell's home)", out, want)
	}
	if want := "[#0002]\n" + filepath.Join(root, "main.go"); list != want {
		t.Errorf("list = %q; want %q (nothing the command kept under ~)", list, want)
	}
}
