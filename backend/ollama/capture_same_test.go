package ollama

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/chat"
)

// ollamaAnswer is an /api/chat stream: thinking, text, then the done line with its figures.
var ollamaAnswer = []string{
	`{"model":"m","message":{"role":"assistant","content":"","thinking":"plan"},"done":false}`,
	`{"model":"m","message":{"role":"assistant","content":"ok"},"done":false}`,
	`{"model":"m","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":100,"prompt_eval_duration":5000000,"eval_count":3,"eval_duration":1000,"load_duration":7}`,
}

// lab run reads an /api/chat answer with the proxy's accumulator: the same reply, figures and
// usage (each count's wire field), so a run's row and a proxy's row of one answer agree.
func TestSendReadsAsTheProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		if strings.Contains(readAll(r), "_debug_render_only") {
			w.Write([]byte(`{"model":"m","done":true,"_debug_info":{"rendered_template":"RENDERED"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Write([]byte(strings.Join(ollamaAnswer, "\n") + "\n"))
	}))
	defer srv.Close()
	c, err := New(srv.URL, "m")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}, Generate: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ca Capture
	for _, l := range ollamaAnswer {
		if _, err := ca.Line([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff(ca.Reply(), res.Reply); d != "" {
		t.Errorf("lab run's reply differs from the proxy's (-proxy +run):\n%s", d)
	}
	want := ca.Result()
	if res.PromptTokens != want.PromptTokens || res.CompletionTokens != want.CompletionTokens || res.Prefill != want.Prefill || res.Load != want.Load {
		t.Errorf("run prompt %d completion %d prefill %v load %v; the proxy's %d, %d, %v, %v", res.PromptTokens, res.CompletionTokens, res.Prefill, res.Load, want.PromptTokens, want.CompletionTokens, want.Prefill, want.Load)
	}
	if d := cmp.Diff(want.Usage, res.Usage); d != "" || res.Usage == nil {
		t.Errorf("lab run's usage differs from the proxy's (-proxy +run):\n%s", d)
	}
}

func readAll(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
