package localserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"lab/gguf"
	"lab/localserver/supervise"
	"lab/tokenizer"
)

// liveEnabled reports whether live tests may build things and call the network (the Go module
// proxy, the npm registry): LAB_LIVE=1.
func liveEnabled() bool { return os.Getenv("LAB_LIVE") == "1" }

// TestBuildPrepare runs the build up to the go build command: a fresh module requiring Ollama
// and malgo, miniaudio copied in, and `go build -n` (which plans the build without compiling)
// succeeding with the exact flags BuildOllama uses. It needs the Go module proxy or a warm
// module cache, so it runs only with LAB_LIVE=1.
func TestBuildPrepare(t *testing.T) {
	if !liveEnabled() {
		t.Skip("set LAB_LIVE=1 to run (uses the Go module proxy)")
	}
	if err := checkPrerequisites(realHost()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := filepath.Join(t.TempDir(), "work")
	if err := prepareBuildDir(ctx, work, OllamaVersion, testLog{t}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"include/miniaudio/miniaudio.h", "include/miniaudio/miniaudio.c", "go.sum"} {
		if !isFile(filepath.Join(work, f)) {
			t.Errorf("%s missing after prepare", f)
		}
	}
	gomod, _ := os.ReadFile(filepath.Join(work, "go.mod"))
	for _, want := range []string{"github.com/ollama/ollama " + OllamaVersion, "github.com/gen2brain/malgo " + MalgoVersion} {
		if !strings.Contains(string(gomod), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	cmd := buildCommand(ctx, work, OllamaVersion, true, filepath.Join(work, "ollama"))
	env := strings.Join(cmd.Env, "\n")
	for _, want := range []string{"CGO_ENABLED=1", "CGO_CPPFLAGS=-I" + filepath.Join(work, "include"), "CGO_CFLAGS=" + nativeFlags, "CGO_CXXFLAGS=" + nativeFlags, "GOWORK=off"} {
		if !strings.Contains(env, want) {
			t.Errorf("build env lacks %q", want)
		}
	}
	if !strings.Contains(strings.Join(cmd.Args, " "), "-trimpath -ldflags=-X=github.com/ollama/ollama/version.Version=0.17.4") {
		t.Errorf("build args = %q", cmd.Args)
	}
	cmd.Args = append(cmd.Args[:2], append([]string{"-n"}, cmd.Args[2:]...)...)
	start := time.Now()
	out, err := runLogged(cmd)
	if err != nil {
		t.Fatalf("go build -n: %v\n%s", err, supervise.Tail(out, 30))
	}
	t.Logf("go build -n planned the build in %s (%d bytes of plan)", time.Since(start).Round(time.Millisecond), len(out))
}

// slotRE matches the runner's debug line about the cache slot a request uses.
var slotRE = regexp.MustCompile(`loading cache slot.* cache=(\d+) prompt=(\d+) used=(\d+)`)

// slotLine is one "loading cache slot" log line's numbers.
type slotLine struct{ cache, prompt, used int }

// lastSlot returns the last cache-slot line the log got after offset.
func lastSlot(t *testing.T, path string, offset int64) (slotLine, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := slotRE.FindAllSubmatch(b[offset:], -1)
	if len(m) == 0 {
		return slotLine{}, false
	}
	last := m[len(m)-1]
	n := func(i int) int { v, _ := strconv.Atoi(string(last[i])); return v }
	return slotLine{n(1), n(2), n(3)}, true
}

// logSize returns the current size of the file at path.
func logSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestLive prepares the real thing (building ollama when LAB_LIVE=1, else only if its binary is
// already in the cache), starts a server, registers the model, and checks that the server's
// prompt_eval_count equals the Tokenizer's count of the rendered prompt and that a repeated
// request reuses all but one token of the cache.
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real ollama server; not under -short")
	}
	cache := testCacheDir(t)
	bo := DefaultBuildOptions(cache)
	bo.Log = testLog{t}
	bin, err := BinaryPath(bo)
	if err != nil {
		t.Skip(err)
	}
	if !isFile(bin) && !liveEnabled() {
		t.Skipf("no cached ollama binary at %s; set LAB_LIVE=1 to build it (8-10 min)", bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	p, err := Prepare(ctx, Setup{CacheDir: cache, Build: bo, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p.GGUF)
	t.Logf("binary %s, model %s (%d bytes)", p.Binary, p.GGUF, fi.Size())

	dir := t.TempDir()
	s, err := Start(ctx, StartOptions{Binary: p.Binary, Dir: dir, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			s.Stop()
		}
	})
	t.Logf("server %s version %q pid %d", s.URL, s.Version, s.PID)

	a, err := Attach(ctx, dir)
	if err != nil || a.PID != s.PID || a.URL != s.URL {
		t.Fatalf("Attach = %+v, %v; want pid %d at %s", a, err, s.PID, s.URL)
	}
	if _, err := Start(ctx, StartOptions{Binary: p.Binary, Dir: dir}); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Start = %v; want ErrAlreadyRunning", err)
	}

	t0 := time.Now()
	if err := s.CreateModel(ctx, p.ModelName, p.GGUF); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	if err := s.CreateModel(ctx, p.ModelName, p.GGUF); err != nil {
		t.Fatal(err)
	}
	t.Logf("CreateModel: %s the first time, %s when up to date", t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))

	tk, err := tokenizer.Load(p.GGUF)
	if err != nil {
		t.Fatal(err)
	}
	c := s.client()
	msgs := []api.Message{
		{Role: "system", Content: "You are a careful coding agent."},
		{Role: "user", Content: "Hello! How many tokens does this prompt have? ünïcödé, 日本語, 12345."},
	}
	stream := false
	var rendered string
	err = c.Chat(ctx, &api.ChatRequest{Model: p.ModelName, Messages: msgs, Stream: &stream, DebugRenderOnly: true},
		func(r api.ChatResponse) error {
			if r.DebugInfo != nil {
				rendered = r.DebugInfo.RenderedTemplate
			}
			return nil
		})
	if err != nil || rendered == "" {
		t.Fatalf("render-only chat: %v (rendered %q)", err, rendered)
	}
	ids, err := tk.Encode(rendered)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered prompt (%d tokens): %q", len(ids), rendered)

	chat := func(name string, msgs []api.Message, opts map[string]any) (api.ChatResponse, slotLine) {
		t.Helper()
		off := logSize(t, s.LogPath)
		var last api.ChatResponse
		err := c.Chat(ctx, &api.ChatRequest{Model: p.ModelName, Messages: msgs, Stream: &stream, Options: opts},
			func(r api.ChatResponse) error { last = r; return nil })
		if err != nil {
			t.Fatalf("%s: chat: %v", name, err)
		}
		var sl slotLine
		var ok bool
		for range 20 { // the log line may land a moment after the answer
			if sl, ok = lastSlot(t, s.LogPath, off); ok {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !ok {
			t.Fatalf("%s: no 'loading cache slot' line in %s", name, s.LogPath)
		}
		t.Logf("%s: prompt_eval_count %d, prompt_eval_duration %s, load_duration %s, eval_count %d; log cache=%d prompt=%d used=%d",
			name, last.PromptEvalCount, last.PromptEvalDuration, last.LoadDuration, last.EvalCount, sl.cache, sl.prompt, sl.used)
		return last, sl
	}
	opts := map[string]any{"num_predict": 1, "temperature": 0}
	r1, sl1 := chat("first", msgs, opts)
	if r1.PromptEvalCount != len(ids) || sl1.prompt != len(ids) {
		t.Errorf("first: prompt_eval_count %d, log prompt=%d; tokenizer counts %d", r1.PromptEvalCount, sl1.prompt, len(ids))
	}
	r2, sl2 := chat("again", msgs, opts)
	if r2.PromptEvalCount != len(ids) || sl2.used != len(ids)-1 {
		t.Errorf("again: prompt_eval_count %d, used=%d; want %d and %d", r2.PromptEvalCount, sl2.used, len(ids), len(ids)-1)
	}

	if n, _ := strconv.Atoi(os.Getenv("LAB_LIVE_PREFILL")); n > 0 {
		// Prefill of a long prompt: LAB_LIVE_PREFILL=<approximate tokens>.
		var sb strings.Builder
		for i := 0; sb.Len() < n*4; i++ {
			fmt.Fprintf(&sb, "Line %d of a long file: the quick brown fox jumps over the lazy dog.\n", i)
		}
		long := []api.Message{{Role: "user", Content: sb.String()}}
		numCtx := 8192
		for numCtx < n*5/4 {
			numCtx *= 2
		}
		if v, _ := strconv.Atoi(os.Getenv("LAB_LIVE_NUMCTX")); v > 0 {
			numCtx = v
		}
		bigOpts := map[string]any{"num_predict": 1, "temperature": 0, "num_ctx": numCtx}
		chat(fmt.Sprintf("warm-up, loads model with num_ctx %d", numCtx), []api.Message{{Role: "user", Content: "warm up"}}, bigOpts)
		r, sl := chat("long", long, bigOpts)
		chat("long again", long, bigOpts)
		var want string
		c.Chat(ctx, &api.ChatRequest{Model: p.ModelName, Messages: long, Stream: &stream, DebugRenderOnly: true},
			func(r api.ChatResponse) error { want = r.DebugInfo.RenderedTemplate; return nil })
		ids, _ := tk.Encode(want)
		if r.PromptEvalCount != len(ids) || sl.prompt != len(ids) {
			t.Errorf("long: prompt_eval_count %d; tokenizer counts %d", r.PromptEvalCount, len(ids))
		}
	}

	// A float16 model loads and counts the same.
	mo := gguf.DefaultModelOptions()
	mo.F16 = true
	f16 := filepath.Join(t.TempDir(), "lab-f16.gguf")
	if err := gguf.WriteModel(f16, p.TokenizerDir, mo); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(f16); err == nil {
		t.Logf("f16 model: %d bytes", fi.Size())
	}
	if err := s.CreateModel(ctx, "lab-f16", f16); err != nil {
		t.Fatal(err)
	}
	var r3 api.ChatResponse
	err = c.Chat(ctx, &api.ChatRequest{Model: "lab-f16", Messages: msgs, Stream: &stream, Options: opts},
		func(r api.ChatResponse) error { r3 = r; return nil })
	if err != nil || r3.PromptEvalCount != len(ids) {
		t.Errorf("f16 model: chat %v, prompt_eval_count %d; want %d", err, r3.PromptEvalCount, len(ids))
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := os.Stat(statePath(dir)); !os.IsNotExist(err) {
		t.Errorf("server.json still there after Stop: %v", err)
	}
	if _, err := Attach(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach after Stop = %v; want ErrNotRunning", err)
	}
	if !s.proc.Exited() {
		t.Errorf("pid %d alive after Stop", s.PID)
	}

	// A server started by a process that then exits keeps running (lab server start).
	dir2 := t.TempDir()
	helper := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperStart$")
	helper.Env = append(os.Environ(), "LAB_HELPER_START="+dir2, "LAB_HELPER_BINARY="+p.Binary)
	if out, err := helper.CombinedOutput(); err != nil {
		t.Fatalf("helper process: %v\n%s", err, out)
	}
	s2, err := Attach(ctx, dir2)
	if err != nil {
		t.Fatalf("Attach to the server a finished process started: %v", err)
	}
	if err := s2.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := Attach(ctx, dir2); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Attach after stopping the detached server = %v; want ErrNotRunning", err)
	}
}

// TestHelperStart starts a server and returns without stopping it; TestLive runs it in a child
// process to check that the server outlives the process that started it.
func TestHelperStart(t *testing.T) {
	dir := os.Getenv("LAB_HELPER_START")
	if dir == "" {
		t.Skip("helper for TestLive")
	}
	if _, err := Start(context.Background(), StartOptions{Binary: os.Getenv("LAB_HELPER_BINARY"), Dir: dir}); err != nil {
		t.Fatal(err)
	}
}
