package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"lab/gguf"
	"lab/localserver"
	"lab/metrics"
)

// Through lab proxy in front of the lab's Ollama (a server of the test's own), a request of each of its OpenAI- and
// Anthropic-compatible APIs (Chat Completions, Responses, Messages, each a first request and
// its continuation) gets its cached tokens from the server log's used= and its expected cached
// tokens from Ollama's own rendering of the request as Ollama converts it; from the second
// request on, the slot model and the server agree. Skipped with -short.
func TestProxyCompatibleEndpointsOnTheRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs lab server start's Ollama; skipped with -short")
	}
	cache, err := localserver.DefaultCacheDir(os.Getenv)
	if err != nil {
		t.Skip(err)
	}
	// A server of the test's own, as lab run starts one when lab server start's is not running:
	// the shared one may be busy with another lab process for longer than the test waits.
	ctx := context.Background()
	prep, err := localserver.Prepare(ctx, setup(cache, false, gguf.DefaultModelOptions(), localserver.DefaultModelName, io.Discard))
	if err != nil {
		t.Fatalf("the local server: %v", err)
	}
	srv, err := localserver.Start(ctx, localserver.StartOptions{Binary: prep.Binary, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("the local server: %v", err)
	}
	t.Cleanup(func() { srv.Stop() })
	if err := srv.CreateModel(ctx, prep.ModelName, prep.GGUF); err != nil {
		t.Fatalf("the local server: %v", err)
	}
	opts := &proxyOptions{Listen: "127.0.0.1:0", Upstream: srv.URL, ServerLog: srv.LogPath, GGUF: prep.GGUF,
		ResultsDir: t.TempDir(), RunID: "v1", Label: "compatible", Render: "ollama", CacheDir: cache}
	results := opts.ResultsDir
	addr, stop := startProxyCmd(t, opts)
	m := localserver.DefaultModelName
	sys := "You are a coding agent working in a small Go repository."
	bodies := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"` + m + `","max_tokens":8,"messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"List the files."}]}`},
		{"/v1/chat/completions", `{"model":"` + m + `","max_tokens":8,"messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"List the files."},{"role":"assistant","content":"ok"},{"role":"user","content":"Now read main.go."}]}`},
		{"/v1/responses", `{"model":"` + m + `","max_output_tokens":8,"instructions":"` + sys + `","input":[{"role":"user","content":[{"type":"input_text","text":"List the files."}]}]}`},
		{"/v1/responses", `{"model":"` + m + `","max_output_tokens":8,"instructions":"` + sys + `","input":[{"role":"user","content":[{"type":"input_text","text":"List the files."}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},{"role":"user","content":[{"type":"input_text","text":"Now read main.go."}]}]}`},
		{"/v1/messages", `{"model":"` + m + `","max_tokens":8,"system":"` + sys + `","messages":[{"role":"user","content":"List the files."}]}`},
		{"/v1/messages", `{"model":"` + m + `","max_tokens":8,"stream":true,"system":"` + sys + `","messages":[{"role":"user","content":"List the files."},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":"Now read main.go."}]}`},
	}
	for _, b := range bodies {
		resp, err := http.Post("http://"+addr+b.path, "application/json", strings.NewReader(b.body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", b.path, resp.StatusCode, bytes.TrimSpace(out))
		}
	}
	if err, _, perr := stop(); err != nil {
		t.Fatalf("lab proxy: %v\n%s", err, perr)
	}
	_, rows, err := metrics.ReadRun(metrics.RunDir(results, "v1"))
	if err != nil || len(rows) != len(bodies) {
		t.Fatalf("%d rows, %v; want %d", len(rows), err, len(bodies))
	}
	for i, s := range rows {
		t.Logf("%s: prompt %d cached %v (%s) expected %v segment %q", s.Backend, s.PromptTokens, deref(s.CachedTokens), s.CachedSource, deref(s.ExpectedCachedTokens), s.DivergenceSegment)
		if s.Error != "" || s.CachedTokens == nil || s.CachedSource != metrics.CachedSourceServerLog || s.ExpectedUnknown || s.ExpectedCachedTokens == nil {
			t.Errorf("row %d (%s): error %q cached %v (%q) expected %v (unknown %v); want cached from the server log and expected known (warnings %q)",
				i, s.Backend, s.Error, deref(s.CachedTokens), s.CachedSource, deref(s.ExpectedCachedTokens), s.ExpectedUnknown, s.Warnings)
			continue
		}
		// The first row's slot held whatever the server served before the proxy started.
		if i > 0 && *s.CachedTokens != *s.ExpectedCachedTokens {
			t.Errorf("row %d (%s): cached %d, expected %d; want them equal", i, s.Backend, *s.CachedTokens, *s.ExpectedCachedTokens)
		}
	}
}
