package capture_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/backend/llamacpp"
	"lab/capture"
	"lab/chat"
	"lab/internal/fakellama"
	"lab/metrics"
)

// llamaCapture runs the lab's own llama.cpp client through a proxy with --render llamacpp in
// front of a fake llama-server that closes its connections after a streamed answer, holding
// each stream's end hold after its data: [DONE]: a session of two requests, the slot erase
// (the run's Reset), and the first request again. It returns the capture's rows.
func llamaCapture(t *testing.T, hold time.Duration) []metrics.Sample {
	t.Helper()
	up := fakellama.Start(t)
	up.HoldAfterDone = hold
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap",
		Attribution: capture.Attribution{Render: capture.RenderLlamaCpp, Tokenizer: byteTok{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	c, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "You are a coding agent."}, {Role: chat.RoleUser, Content: "fix it"}}}
	reply := &chat.Reply{Content: "done"}
	second := &chat.Request{Messages: append(append([]chat.Message(nil), first.Messages...),
		chat.Message{Role: chat.RoleAssistant, Content: "done"}, chat.Message{Role: chat.RoleUser, Content: "more"})}
	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*chat.Request{first, second} {
		if _, err := c.Send(ctx, req, reply); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, first, reply); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows; want 3 (the cache fills and slot erases make none)", len(rows))
	}
	return rows
}

// In front of llama-server, every row of the lab's own traffic is whole and attributed: a
// client that stops reading at data: [DONE] before the stream's end reached the proxy did not
// disconnect early; the proxy's own renderings never reuse a connection the server closes; the
// cache fill leaves the slot model holding the reply, and the slot erase empties it, so expected
// cached tokens equal the server's cached tokens on every request.
func TestProxyInFrontOfLlamaServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold time.Duration
	}{{"stream ends with data: [DONE]", 0}, {"client gone before the stream's end", 300 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			rows := llamaCapture(t, tc.hold)
			for i, s := range rows {
				if s.Error != "" || s.ExpectedUnknown || s.CachedTokens == nil || !eqPtr(s.ExpectedCachedTokens, s.CachedTokens) {
					t.Errorf("request %d: error %q, expected_unknown %v, cached %s, expected %s; want no error and expected = cached (warnings %q)",
						i, s.Error, s.ExpectedUnknown, show(s.CachedTokens), show(s.ExpectedCachedTokens), s.Warnings)
				}
			}
			// The second request reads the first's prompt and reply from the cache; the third
			// follows the slot erase and reads nothing.
			if val(rows[1].CachedTokens) <= 0 || val(rows[2].CachedTokens) != 0 {
				t.Errorf("cached %s, %s; want the cache filled by the reply, then erased", show(rows[1].CachedTokens), show(rows[2].CachedTokens))
			}
			if strings.Contains(strings.Join([]string{rows[0].Warnings, rows[1].Warnings, rows[2].Warnings}, " "), "EOF") {
				t.Errorf("warnings mention EOF: a rendering lost to a closed connection")
			}
		})
	}
}

// A client that sends its next request (the lab's cache fill) as soon as it read a stream's
// data: [DONE], while the proxy still waits for the stream's end, has the fill answered first;
// the slot model takes the requests in the order they came all the same, so the measured request
// is attributed against the slot as it was before its fill.
func TestProxySlotModelTakesRequestsInArrivalOrder(t *testing.T) {
	up := fakellama.Start(t)
	up.HoldAfterDone = time.Second
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap",
		Attribution: capture.Attribution{Render: capture.RenderLlamaCpp, Tokenizer: byteTok{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	body := `{"messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it"}],"stream":true,"max_tokens":1}`
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before data: [DONE]: %v", err)
		}
		if strings.HasPrefix(line, "data: [DONE]") {
			break
		}
	}
	fill, _ := json.Marshal(map[string]any{"prompt": fakellama.Qwen3Template([]byte(body)) + "done<|im_end|>", "n_predict": 0})
	if code, _ := post(t, srv.URL, "/completion", string(fill), nil); code != http.StatusOK {
		t.Fatalf("the cache fill: HTTP %d", code)
	}
	resp.Body.Close()
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v; want 1", len(rows), err)
	}
	if s := rows[0]; s.Error != "" || val(s.CachedTokens) != 0 || val(s.ExpectedCachedTokens) != 0 {
		t.Errorf("error %q, cached %s, expected %s; want a cold request expected cold (warnings %q)", s.Error, show(s.CachedTokens), show(s.ExpectedCachedTokens), s.Warnings)
	}
}
