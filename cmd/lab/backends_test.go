package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/backend/llamacpp"
	"lab/cachesim"
	"lab/internal/fakellama"
	"lab/localserver"
	"lab/metrics"
)

// fakeOpenAI is an OpenAI-compatible server on loopback with OpenAI's prompt cache rule: the
// longest common prefix with the previous request, in "tokens" of 4 bytes of the messages'
// JSON, reused only from 1,024 tokens on and in steps of 128.
type fakeOpenAI struct {
	mu      sync.Mutex
	prev    []byte
	systems []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages json.RawMessage `json:"messages"`
		Stream   bool            `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var msgs []struct{ Role, Content string }
	json.Unmarshal(req.Messages, &msgs)
	f.mu.Lock()
	n := 0
	for n < len(req.Messages) && n < len(f.prev) && req.Messages[n] == f.prev[n] {
		n++
	}
	f.prev = req.Messages
	if len(msgs) > 0 {
		f.systems = append(f.systems, msgs[0].Content)
	}
	f.mu.Unlock()
	prompt, cached := len(req.Messages)/4, n/4
	if cached < 1024 {
		cached = 0
	} else {
		cached -= cached % 128
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":null}]}\n\n")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1,\"total_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":%d}}}\n\n", prompt, prompt+1, cached)
	fmt.Fprintf(w, "data: [DONE]\n\n")
}

// lab run --backend openai --base-url URL works against any OpenAI-compatible server and writes
// the same Parquet columns, with the cached tokens from usage, each session started cold by its
// own nonce and verified by its first request.
func TestRunAgainstAnOpenAICompatibleServer(t *testing.T) {
	f := &fakeOpenAI{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	results := t.TempDir()
	code, stdout, stderr := runLab(t, "run", "--backend", "openai", "--base-url", srv.URL+"/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--repeat", "2", "--results", results, "--run-id", "oa", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "oa"))
	if err != nil {
		t.Fatal(err)
	}
	if man.Backend != "openai" || man.CacheState != metrics.CacheColdVerified || !man.Complete || man.Settings["profile"] != "generic" {
		t.Errorf("manifest: backend %q, cache_state %q, complete %v, settings %v", man.Backend, man.CacheState, man.Complete, man.Settings)
	}
	reused := 0
	for _, s := range samples {
		if s.CachedTokens == nil || s.CachedSource != metrics.CachedSourceResponse || s.PromptTokens == 0 {
			t.Fatalf("request %d: cached %v from %q, prompt %d", s.RequestIndex, s.CachedTokens, s.CachedSource, s.PromptTokens)
		}
		if s.RequestIndex == 0 && *s.CachedTokens != 0 {
			t.Errorf("repetition %d starts with %d cached tokens: the nonce did not make it cold", s.Repetition, *s.CachedTokens)
		}
		if *s.CachedTokens > 0 {
			reused++
		}
		if !s.ExpectedUnknown {
			t.Errorf("request %d: expected_unknown false, but a cloud API shows no rendering", s.RequestIndex)
		}
		if !strings.Contains(s.UsageFields, "prompt_tokens_details.cached_tokens") {
			t.Errorf("request %d: usage_fields %q", s.RequestIndex, s.UsageFields)
		}
		if s.RereadTokens == nil || *s.RereadTokens != s.PromptTokens-*s.CachedTokens {
			t.Errorf("request %d: reread %v, prompt %d, cached %d", s.RequestIndex, s.RereadTokens, s.PromptTokens, *s.CachedTokens)
		}
	}
	if reused < len(samples)/2 {
		t.Errorf("only %d of %d requests reused the cache", reused, len(samples))
	}
	// The nonce is the session's: first in every system prompt, different for the repetitions.
	first, last := f.systems[0], f.systems[len(f.systems)-1]
	if !strings.HasPrefix(first, "lab-run: ") || !strings.HasPrefix(last, "lab-run: ") || first[:26] == last[:26] {
		t.Errorf("system prompts start %q and %q; want a nonce per session", first[:30], last[:30])
	}
}

// An API key from the environment appears in no result file, no output line and no error, even
// when the server echoes it back.
func TestAPIKeyIsNeverWritten(t *testing.T) {
	const key = "sk-lab-test-SECRET-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (header %q)","type":"invalid_request_error"}}`, key, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	results := t.TempDir()
	code, stdout, stderr := runLab(t, "run", "--backend", "openai", "--profile", "openai", "--base-url", srv.URL+"/v1",
		"--model", "gpt-x", "--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "key")
	if code != 1 {
		t.Errorf("exit %d, want 1 (the server refused)", code)
	}
	if !strings.Contains(stderr, "401") {
		t.Errorf("stderr does not name the refusal: %s", stderr)
	}
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.Contains(text, "SECRET") {
			t.Errorf("%s holds the key: %s", name, text)
		}
	}
	filepath.WalkDir(results, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), "SECRET") {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
}

// lab server start --llamacpp starts the user's llama-server and leaves it running; status and
// stop find it.
func TestServerStartLlamaCpp(t *testing.T) {
	dir, bin, model := fakellama.Files(t)
	cache := filepath.Join(dir, "cache")
	code, out, errOut := runLab(t, "server", "start", "--cache", cache, "--llamacpp", bin, "--gguf", model)
	if code != 0 || !strings.Contains(out, "llama-server b9999-fake") {
		t.Fatalf("start: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// status and stop default to both servers; --server narrows them.
	if code, out, _ = runLab(t, "server", "status", "--cache", cache); code != 0 || !strings.Contains(out, "running: llama-server b9999-fake: http://127.0.0.1:") || !strings.Contains(out, "n_ctx 65536") {
		t.Errorf("status: exit %d, %q", code, out)
	}
	if code, out, _ = runLab(t, "server", "status", "--cache", cache, "--server", "ollama"); code != 0 || out != "not running\n" {
		t.Errorf("status --server ollama: exit %d, %q", code, out)
	}
	if code, _, errOut = runLab(t, "server", "status", "--cache", cache, "--server", "vllm"); code != 2 || !strings.Contains(errOut, "--server") {
		t.Errorf("status --server vllm: exit %d, %q", code, errOut)
	}
	if code, out, _ = runLab(t, "server", "start", "--cache", cache, "--llamacpp", bin, "--gguf", model); code != 0 || !strings.Contains(out, "already running: llama-server") {
		t.Errorf("second start: exit %d, %q", code, out)
	}
	if code, out, _ = runLab(t, "server", "stop", "--cache", cache, "--server", "llamacpp"); code != 0 || !strings.Contains(out, "stopped llama-server") {
		t.Errorf("stop: exit %d, %q", code, out)
	}
	if code, out, _ = runLab(t, "server", "status", "--cache", cache); code != 0 || strings.Contains(out, "llama-server") {
		t.Errorf("status after stop: exit %d, %q", code, out)
	}
	if code, _, errOut = runLab(t, "server", "start", "--cache", cache, "--llamacpp", bin); code != 2 || !strings.Contains(errOut, "needs --gguf") {
		t.Errorf("--llamacpp without --gguf: exit %d, %q", code, errOut)
	}
}

// The same server, answering /api/version as Ollama does: its cached_tokens is Ollama's constant
// 0, so lab run takes the ollama profile and records the cached tokens as unknown, never 0.
func TestRunOpenAIBackendAgainstOllama(t *testing.T) {
	f := &fakeOpenAI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/version" {
			io.WriteString(w, `{"version":"0.17.4"}`)
			return
		}
		f.ServeHTTP(w, r)
	}))
	defer srv.Close()
	results := t.TempDir()
	code, stdout, stderr := runLab(t, "run", "--backend", "openai", "--base-url", srv.URL+"/v1", "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "oa", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "using --profile ollama") {
		t.Errorf("stderr %q; want the note that the ollama profile is used", stderr)
	}
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "oa"))
	if err != nil {
		t.Fatal(err)
	}
	if man.Settings["profile"] != "ollama" {
		t.Errorf("profile %q; want ollama", man.Settings["profile"])
	}
	for _, s := range samples {
		if s.CachedTokens != nil || s.CachedSource != "" || s.RereadTokens != nil || s.PromptTokens == 0 {
			t.Fatalf("request %d: cached %v (%q), reread %v, prompt %d; want cached and re-read unknown", s.RequestIndex,
				s.CachedTokens, s.CachedSource, s.RereadTokens, s.PromptTokens)
		}
	}
}

// lab run --backend anthropic at a loopback Ollama (its /v1/messages): the answer's
// cache_read_input_tokens is Ollama's constant, so every row's cached tokens are unknown.
func TestRunAnthropicBackendAgainstOllama(t *testing.T) {
	sse, err := os.ReadFile(filepath.Join("..", "..", "backend", "anthropic", "testdata", "stream_text.sse"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/version":
			io.WriteString(w, `{"version":"0.17.4"}`)
		case "/v1/messages":
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(sse)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("sk-test\n"), 0o600)
	code, stdout, stderr := runLab(t, "run", "--backend", "anthropic", "--base-url", srv.URL, "--model", "claude-x", "--key-file", key,
		"--scenario", "midnight", "--arm", "spec", "--results", dir, "--run-id", "an", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "is Ollama") {
		t.Errorf("stderr %q; want the note that the server is Ollama", stderr)
	}
	_, samples, err := metrics.ReadRun(metrics.RunDir(dir, "an"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("%d rows, %v", len(samples), err)
	}
	for _, s := range samples {
		if s.CachedTokens != nil || s.RereadTokens != nil || strings.Contains(s.UsageFields, "CachedRead") || !strings.Contains(s.Warnings, "not used") {
			t.Fatalf("request %d: cached %v, reread %v, usage_fields %s, warnings %q; want cached unknown", s.RequestIndex,
				s.CachedTokens, s.RereadTokens, s.UsageFields, s.Warnings)
		}
	}
}

// A base URL's password (http://user:secret@host) is written nowhere: not in the manifest's
// server_url, the report, the rows, stdout or stderr.
func TestBaseURLPasswordIsNeverWritten(t *testing.T) {
	const secret = "pa55w0rd-SECRET"
	f := &fakeOpenAI{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://user:"+secret+"@", 1) + "/v1"
	results := t.TempDir()
	code, stdout, stderr := runLab(t, "run", "--backend", "openai", "--base-url", base, "--model", "m",
		"--scenario", "midnight", "--arm", "spec", "--results", results, "--run-id", "pw", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the password: %s", name, text)
		}
	}
	found := 0
	filepath.WalkDir(results, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the password: %s", path, b[max(0, strings.Index(string(b), secret)-120):strings.Index(string(b), secret)])
		}
		found++
		return nil
	})
	if found == 0 {
		t.Fatal("the run wrote no file")
	}
}

// The manifest's context of a llama-server is the slot's as the server reports it, not the flag.
func TestLlamaNumCtx(t *testing.T) {
	for _, c := range []struct {
		p       *llamacpp.Props
		err     error
		started bool
		want    int
	}{
		{&llamacpp.Props{NCtx: 40960}, nil, false, 40960},
		{&llamacpp.Props{NCtx: 40960}, nil, true, 40960},
		{&llamacpp.Props{}, nil, true, 65536},
		{nil, errors.New("no /props"), true, 65536},
		{&llamacpp.Props{}, nil, false, 0},
		{nil, errors.New("no /props"), false, 0},
	} {
		if got := llamaNumCtx(c.p, c.err, c.started, 65536); got != c.want {
			t.Errorf("llamaNumCtx(%+v, %v, started %v) = %d; want %d", c.p, c.err, c.started, got, c.want)
		}
	}
}

// Two runs on one llama-server take turns: a run given the --base-url of a server another lab
// process is measuring on waits for it (and says so) before it sends anything.
func TestRunLlamaCppWaitsForTheServer(t *testing.T) {
	cache := t.TempDir()
	url := "http://127.0.0.1:1" // nothing listens: once past the lock, the run fails to reach it
	unlock, err := localserver.LockURL(context.Background(), cache, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	const hold = 1500 * time.Millisecond
	go func() { time.Sleep(hold); unlock() }()
	start := time.Now()
	code, _, errOut := runLab(t, "run", "--backend", "llamacpp", "--base-url", url, "--cache", cache, "--scenario", "midnight",
		"--arm", "spec", "--results", t.TempDir(), "--quiet")
	if took := time.Since(start); took < hold {
		t.Errorf("the run ended after %s, before the other run released the server (%s)", took, hold)
	}
	if code == 0 || !strings.Contains(errOut, "waiting for another lab process using the server at "+url) {
		t.Errorf("exit %d, stderr %q; want the waiting line, then a failure to reach the server", code, errOut)
	}
}

// --cache-reuse goes to the llama-server the lab starts: with any other backend, or a running
// server (--base-url), whose own setting the lab cannot change, it is a usage error.
func TestCacheReuseFlagNeedsAStartedLlamaServer(t *testing.T) {
	for _, args := range [][]string{
		{"--backend", "sim"},
		{"--backend", "llamacpp", "--base-url", "http://127.0.0.1:1"},
		{"--backend", "openai", "--base-url", "http://127.0.0.1:1/v1", "--model", "m"},
	} {
		args = append([]string{"run", "--scenario", "midnight", "--arm", "spec", "--results", t.TempDir(), "--cache-reuse", "256"}, args...)
		code, _, errOut := runLab(t, args...)
		if code != 2 || !strings.Contains(errOut, "--cache-reuse is given to the llama-server the lab starts") {
			t.Errorf("lab %s: exit %d, %q; want 2 and the --cache-reuse usage error", strings.Join(args, " "), code, errOut)
		}
	}
}

// --parallel runs sessions on llama-server's slots: with another backend, or a count below 1,
// it is a usage error.
func TestParallelFlagIsForLlamaServer(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "sim", "--parallel", "2"}, "--parallel runs sessions on llama-server's slots"},
		{[]string{"--backend", "openai", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--parallel", "2"}, "--parallel runs sessions on llama-server's slots"},
		{[]string{"--backend", "llamacpp", "--base-url", "http://127.0.0.1:1", "--parallel", "-1"}, "--parallel -1: want 1 or more"},
		// One host cache shared by sessions at once is not modelled.
		{[]string{"--backend", "llamacpp", "--parallel", "2", "--cache-ram", "64"}, "--cache-ram with --parallel"},
		{[]string{"--backend", "llamacpp", "--base-url", "http://127.0.0.1:1", "--cache-ram", "64"}, "--cache-ram is given to the llama-server the lab starts"},
	} {
		args := append([]string{"run", "--scenario", "midnight", "--arm", "spec", "--results", t.TempDir()}, tc.args...)
		code, _, errOut := runLab(t, args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("lab %s: exit %d, %q; want 2 and %q", strings.Join(args, " "), code, errOut, tc.want)
		}
	}
}

// --cache-reuse and --cache-ram are taken by any llama-server the lab starts, the lab's own
// (without --llamacpp) as well as a --llamacpp binary (checkRemote): their help says so, not
// "with --llamacpp".
func TestLlamaServerFlagsHelpNamesTheBackend(t *testing.T) {
	root := newRootCmd(&streams{out: io.Discard, err: io.Discard, getenv: func(string) string { return "" }})
	run, _, err := root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cache-reuse", "cache-ram"} {
		u := run.Flags().Lookup(name).Usage
		if strings.HasPrefix(u, "with --llamacpp") || !strings.HasPrefix(u, "with --backend llamacpp") {
			t.Errorf("--%s's help %q: want it to start \"with --backend llamacpp\" (the lab's own llama-server takes it too)", name, u)
		}
	}
}

// The run's configuration carries what the backend's factory found: the host-memory prompt cache
// of a llama-server started with --cache-ram, its --cache-reuse, and the sim's render order and
// fresh cache, so that the expected cached tokens model them.
func TestRunConfigCarriesTheBackendsCacheModel(t *testing.T) {
	reuse := 256
	b := &runBackend{hostCache: &cachesim.HostCache{}, cacheReuse: &reuse, order: cachesim.ToolsThenSystem, freshCache: true, settings: map[string]string{}}
	cfg, err := runConfig(&streams{out: io.Discard, err: io.Discard, getenv: func(string) string { return "" }}, &runOptions{}, checkedRun{}, b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HostCache != b.hostCache || cfg.CacheReuse != b.cacheReuse || cfg.RenderOrder != cachesim.ToolsThenSystem || !cfg.FreshCache {
		t.Errorf("host cache %p (want %p), cache reuse %v, order %v, fresh %v", cfg.HostCache, b.hostCache, cfg.CacheReuse, cfg.RenderOrder, cfg.FreshCache)
	}
}

// --warm on the sim is refused for the cache models that keep every prompt they saw: the
// expected cached tokens, which follow the last request's cache, would not bound what they reuse
// across sessions. llamacpp and anthropic run.
func TestWarmRefusesCacheModelsThatKeepEveryPrompt(t *testing.T) {
	for _, model := range []string{cachesim.ModelVLLM, cachesim.ModelOpenAI, cachesim.ModelIdeal} {
		args := []string{"run", "--backend", "sim", "--warm", "--cache-model", model, "--scenario", "midnight", "--arm", "spec", "--results", t.TempDir()}
		code, _, errOut := runLab(t, args...)
		if code != exitBadInput || !strings.Contains(errOut, "--warm with --cache-model "+model) {
			t.Errorf("lab %s: exit %d, %q; want 2 naming --warm and the model", strings.Join(args, " "), code, errOut)
		}
	}
}
