package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"lab/capture"
	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
	"lab/tokenizer"
)

// startProxyCmd runs `lab proxy` in the background and returns its address and a function that
// stops it (as Ctrl-C does) and returns its exit code and output.
func startProxyCmd(t *testing.T, o *proxyOptions) (addr string, stop func() (error, string, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	o.ready = func(a string) { ready <- a }
	var out, errb bytes.Buffer
	s := &streams{out: &out, err: &errb, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() { done <- runProxy(ctx, s, o) }()
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("lab proxy stopped: %v\n%s", err, errb.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("lab proxy did not start")
	}
	return addr, func() (error, string, string) {
		cancel()
		err := <-done
		return err, out.String(), errb.String()
	}
}

// The done-when in miniature: lab run --backend openai through lab proxy against a fake
// OpenAI upstream. The proxy's rows carry the same prompt, cached, completion and cache-write
// figures per request as the run's own rows; lab report and lab check --run read the capture
// folder as a run folder.
func TestProxyCapturesALabRun(t *testing.T) {
	f := &fakeOpenAI{}
	up := httptest.NewServer(f)
	defer up.Close()
	results := t.TempDir()
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, ResultsDir: results, RunID: "cap", Label: "lab-harness"})
	code, stdout, stderr := runLab(t, "run", "--backend", "openai", "--base-url", "http://"+addr+"/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--repeat", "2", "--results", results, "--run-id", "run", "--quiet")
	if code != 0 {
		t.Fatalf("lab run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	err, pout, perr := stop()
	if err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, perr)
	}
	capDir := metrics.RunDir(results, "cap")
	if !strings.Contains(pout, capDir) {
		t.Errorf("lab proxy's stdout does not name its folder %s: %s", capDir, pout)
	}
	_, runRows, err := metrics.ReadRun(runFolder(t, results, "run"))
	if err != nil {
		t.Fatal(err)
	}
	man, capRows, err := metrics.ReadRun(capDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(capRows) != len(runRows) || len(runRows) == 0 {
		t.Fatalf("the capture has %d rows, the run %d", len(capRows), len(runRows))
	}
	if !man.Complete || man.Backend != "proxy:openai-chat" || man.Arms[0] != "lab-harness" {
		t.Errorf("capture manifest: complete %v backend %q arms %v", man.Complete, man.Backend, man.Arms)
	}
	if got := strings.Count(perr, " request "); got != len(runRows) {
		t.Errorf("lab proxy printed %d request lines; want %d", got, len(runRows))
	}
	conversations := map[string]bool{}
	for i := range runRows {
		r, c := runRows[i], capRows[i]
		conversations[c.Scenario] = true
		if c.PromptTokens != r.PromptTokens || !eq(c.CachedTokens, r.CachedTokens) || !eq(c.CompletionTokens, r.CompletionTokens) ||
			!eq(c.CacheWriteTokens, r.CacheWriteTokens) || c.CachedSource != r.CachedSource || !eq(c.RereadTokens, r.RereadTokens) {
			t.Errorf("request %d (rep %d #%d): capture prompt %d cached %v completion %v write %v; run %d %v %v %v",
				i, r.Repetition, r.RequestIndex, c.PromptTokens, deref(c.CachedTokens), deref(c.CompletionTokens), deref(c.CacheWriteTokens),
				r.PromptTokens, deref(r.CachedTokens), deref(r.CompletionTokens), deref(r.CacheWriteTokens))
		}
		if c.Turn != r.Turn || c.Step != r.Step || c.RequestIndex != r.RequestIndex {
			t.Errorf("request %d: capture request %d turn %d step %d, run request %d turn %d step %d", i, c.RequestIndex, c.Turn, c.Step, r.RequestIndex, r.Turn, r.Step)
		}
	}
	// Each repetition starts with its own nonce in the system prompt: a conversation of its own.
	if len(conversations) != 2 {
		t.Errorf("the capture found %d conversations in two sessions", len(conversations))
	}

	code, stdout, stderr = runLab(t, "report", capDir)
	if code != 0 {
		t.Fatalf("lab report on the capture: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(capDir, "report.md")); err != nil {
		t.Errorf("lab report wrote no report.md: %v", err)
	}
	check := filepath.Join(t.TempDir(), "check.yaml")
	os.WriteFile(check, []byte("expect:\n  - scenario: \"*\"\n    arm: lab-harness\n    min_cached_share: 0\n    from_request: 0\n"), 0o644)
	if code, stdout, stderr = runLab(t, "check", check, "--run", capDir); code != 0 {
		t.Errorf("lab check --run on the capture: exit %d\n%s\n%s", code, stdout, stderr)
	}
	os.WriteFile(check, []byte("expect:\n  - scenario: \"*\"\n    arm: lab-harness\n    min_cached_share: 1\n    from_request: 0\n"), 0o644)
	if code, _, _ = runLab(t, "check", check, "--run", capDir); code != exitFailed {
		t.Errorf("lab check --run with an expectation the capture fails: exit %d; want %d", code, exitFailed)
	}
}

// runFolder returns the run's folder in either results layout.
func runFolder(t *testing.T, results, id string) string {
	t.Helper()
	if d := metrics.RunDir(results, id); metrics.IsRunDir(d) {
		return d
	}
	return filepath.Join(results, id)
}

func eq(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// lab proxy refuses a listen address off loopback and bad flags, before it listens.
func TestProxyFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--listen", "0.0.0.0:8081", "--upstream", "http://127.0.0.1:9"}, "not a loopback address"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:9"}, "--listen and --upstream are required"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--render", "ollama"}, "needs --gguf"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--render", "vllm"}, "want ollama or llamacpp"},
		{[]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--server-log", "/nonexistent/server.log"}, "--server-log"},
	} {
		code, _, stderr := runLab(t, tc.args...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, exitBadInput, tc.want)
		}
	}
}

// fakeOllama serves what lab run's ollama backend asks of Ollama v0.17.4, with one real prefix
// cache slot: it renders with Ollama's own qwen3.5 renderer, tokenizes with the served model's
// tokenizer, reuses the longest common token prefix with what the slot held (at most the prompt
// less one token, as the runner evaluates the last one) and writes the runner's `loading cache
// slot` line for every request that takes the slot (chat requests and raw cache fills) to its
// log, as OLLAMA_DEBUG=1 does. keep_alive 0 empties the slot.
type fakeOllama struct {
	tok     *tokenizer.Tokenizer
	logPath string

	mu   sync.Mutex
	slot []int32
}

func (f *fakeOllama) take(t *testing.T, text string) int {
	ids, err := f.tok.Encode(text)
	if err != nil {
		t.Error(err)
		return 0
	}
	common := 0
	for common < len(ids) && common < len(f.slot) && ids[common] == f.slot[common] {
		common++
	}
	used := min(common, max(len(ids)-1, 0))
	f.slot = ids
	lf, err := os.OpenFile(f.logPath, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Error(err)
		return len(ids)
	}
	fmt.Fprintf(lf, "time=x level=DEBUG source=cache.go:140 msg=\"loading cache slot\" id=0 cache=%d prompt=%d used=%d remaining=%d\n", len(f.slot), len(ids), used, len(ids)-used)
	lf.Close()
	return len(ids)
}

func (f *fakeOllama) handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.URL.Path {
		case "/api/version":
			io.WriteString(w, `{"version":"0.17.4"}`)
		case "/api/show":
			io.WriteString(w, `{"modelfile":""}`)
		case "/api/ps":
			io.WriteString(w, `{"models":[]}`)
		case "/api/generate":
			var g api.GenerateRequest
			json.NewDecoder(r.Body).Decode(&g)
			if g.Prompt == "" { // load or unload: keep_alive 0 drops the cache
				f.slot = nil
				io.WriteString(w, `{"done":true}`)
				return
			}
			n := f.take(t, g.Prompt)
			fmt.Fprintf(w, `{"response":"x","done":true,"prompt_eval_count":%d,"eval_count":1}`, n)
		case "/api/chat":
			var c api.ChatRequest
			json.NewDecoder(r.Body).Decode(&c)
			text, err := renderers.RenderWithRenderer("qwen3.5", c.Messages, c.Tools, c.Think)
			if err != nil {
				http.Error(w, `{"error":"render: `+err.Error()+`"}`, http.StatusBadRequest)
				return
			}
			if c.DebugRenderOnly {
				json.NewEncoder(w).Encode(map[string]any{"model": c.Model, "done": true, "_debug_info": map[string]any{"rendered_template": text}})
				return
			}
			n := f.take(t, text)
			fmt.Fprintf(w, "{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"prompt_eval_count\":%d,\"prompt_eval_duration\":1000,\"eval_count\":1}\n", n)
		default:
			http.NotFound(w, r)
		}
	})
}

// The done-when, without a real server: lab run's ollama backend (render, measure, cache
// fill) through lab proxy --render ollama --server-log, against a fake Ollama with a real prefix
// cache slot, Ollama's renderer and the model's tokenizer. Every request's row in the capture
// carries the run's own figures: prompt, cached (from the server log, each row its own line, the
// cache fills' lines consumed in order), expected cached, the divergence and its segment, the
// re-read split, reasoning sent, completion, turn and step. (The same comparison on the real
// server: 48 of 48 rows equal, see capture/doc.go.)
func TestProxyCapturesAnOllamaRunAsTheRunRecordsIt(t *testing.T) {
	needTokenizer(t)
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	tokDir, err := localserver.FetchTokenizer(context.Background(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "synth.gguf")
	if err := gguf.WriteModel(model, tokDir, gguf.ModelOptions{HiddenSize: 8, FeedForward: 8, Layers: 1, HeadDim: 8, F16: true}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "server.log")
	os.WriteFile(logPath, nil, 0o644)
	f := &fakeOllama{tok: tok, logPath: logPath}
	up := httptest.NewServer(f.handler(t))
	defer up.Close()
	results := filepath.Join(dir, "results")
	addr, stop := startProxyCmd(t, &proxyOptions{Listen: "127.0.0.1:0", Upstream: up.URL, ResultsDir: results, RunID: "cap",
		Label: capture.DefaultLabel, Render: capture.RenderOllama, GGUF: model, NumCtx: gguf.DefaultContextLength, ServerLog: logPath})
	code, stdout, stderr := runLab(t, "run", "--server", "http://"+addr, "--server-log", logPath, "--gguf", model,
		"--scenario", "midnight", "--arm", "spec,date-in-system-prompt", "--results", results, "--run-id", "run", "--quiet")
	if code != 0 {
		t.Fatalf("lab run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if err, _, perr := stop(); err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, perr)
	}
	_, runRows, err := metrics.ReadRun(runFolder(t, results, "run"))
	if err != nil {
		t.Fatal(err)
	}
	_, capRows, err := metrics.ReadRun(metrics.RunDir(results, "cap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(capRows) != len(runRows) || len(runRows) < 90 {
		t.Fatalf("the capture has %d rows, the run %d; want the same, two sessions of midnight", len(capRows), len(runRows))
	}
	cols := func(s *metrics.Sample) string {
		return fmt.Sprintf("prompt %d cached %v (%s) expected %v/%v divergence %v %q reread %v [%v %v %v %v %v %v %v %v] reasoning sent %v completion %v turn %d step %d overflow %v error %q",
			s.PromptTokens, deref(s.CachedTokens), s.CachedSource, deref(s.ExpectedCachedTokens), s.ExpectedUnknown, deref(s.DivergenceToken), s.DivergenceSegment,
			deref(s.RereadTokens), deref(s.RereadSystemTokens), deref(s.RereadToolsTokens), deref(s.RereadMessageTokens), deref(s.RereadToolResultTokens),
			deref(s.RereadReasoningTokens), deref(s.RereadNoteTokens), deref(s.RereadOtherTokens), deref(s.RereadUnattributedTokens),
			deref(s.ReasoningTokensSent), deref(s.CompletionTokens), s.Turn, s.Step, s.ContextOverflow, s.Error)
	}
	segments := map[string]bool{}
	for i := range runRows {
		r, c := &runRows[i], &capRows[i]
		if r.CachedTokens == nil || r.CachedSource != metrics.CachedSourceServerLog {
			t.Fatalf("run request %d: cached %v (%q); want a count from the server log", i, deref(r.CachedTokens), r.CachedSource)
		}
		if got, want := cols(c), cols(r); got != want {
			t.Errorf("request %d (%s #%d):\ncapture %s\nrun     %s", i, r.Arm, r.RequestIndex, got, want)
		}
		segments[r.DivergenceSegment] = true
	}
	// The comparison covers the cases that matter: the midnight system prompt, and reasoning
	// dropped at a new turn.
	if !segments["system"] || !segments["reasoning 2"] {
		t.Errorf("divergence segments %v; want system and reasoning 2 among them", segments)
	}
}

// The proxy knows lab server start's server by its address, whichever loopback name it is given.
func TestSameHost(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.1:46005", "127.0.0.1:46005", true},
		{"127.0.0.1:46005", "localhost:46005", true},
		{"127.0.0.1:46005", "127.0.0.1:46006", false},
		{"127.0.0.1:46005", "127.0.0.2:46005", false},
		{"127.0.0.1", "127.0.0.1", false},
	} {
		if got := sameHost(tc.a, tc.b); got != tc.want {
			t.Errorf("sameHost(%q, %q) = %v; want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
