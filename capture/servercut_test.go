package capture_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/capture"
	"lab/metrics"
)

// An Ollama upstream that cut a prompt to its window says so in its log only, and one whose chat
// template drops developer messages (qwen3.5) says so nowhere: the proxy's rows warn of both.
func TestProxyWarnsOfServerCutsAndDroppedMessages(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	render := func(body []byte) string {
		var r struct {
			Messages []struct{ Role, Content string }
		}
		json.Unmarshal(body, &r)
		var b strings.Builder
		for _, m := range r.Messages {
			if m.Role == "developer" {
				continue // as Ollama's qwen3.5 renderer does
			}
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
		return b.String() + "<|im_start|>assistant\n"
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		text := render(body)
		if bytes.Contains(body, []byte(`"_debug_render_only":true`)) {
			b, _ := json.Marshal(map[string]any{"_debug_info": map[string]string{"rendered_template": text}})
			w.Write(b)
			return
		}
		prompt := len(text)
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		if bytes.Contains(body, []byte("too long")) {
			fmt.Fprintf(f, "time=x level=WARN source=runner.go:187 msg=\"truncating input prompt\" limit=40 prompt=%d keep=4 new=40\n", prompt)
			prompt = 40
		}
		fmt.Fprintf(f, "time=x level=DEBUG source=cache.go:140 msg=\"loading cache slot\" id=0 cache=0 prompt=%d used=0 remaining=%d\n", prompt, prompt)
		f.Close()
		fmt.Fprintf(w, "{\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"prompt_eval_count\":%d,\"eval_count\":1}\n", prompt)
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=cut")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cut", ServerLog: logPath, LogWait: 200 * time.Millisecond,
		Attribution: capture.Attribution{Render: capture.RenderOllama, Tokenizer: byteTok{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	for _, b := range []string{
		`{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"developer","content":"Be brief."},{"role":"user","content":"fix it"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"You are a coding agent."},{"role":"user","content":"fix it, a prompt too long for the window"}]}`,
	} {
		post(t, srv.URL, "/api/chat", b, nil)
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	byText := map[bool]int{}
	for _, s := range rows {
		cut := strings.Contains(s.Warnings, "cut the prompt")
		dropped := strings.Contains(s.Warnings, "lacks message 1")
		switch {
		case s.PromptTokens == 40:
			if !cut || dropped {
				t.Errorf("the cut request: warnings %q; want the cut named, nothing dropped", s.Warnings)
			}
			if !strings.Contains(s.Warnings, "to 40 tokens") {
				t.Errorf("the cut request: warnings %q; want the kept length", s.Warnings)
			}
		default:
			byText[dropped]++
			if cut {
				t.Errorf("prompt %d: warnings %q; want no cut", s.PromptTokens, s.Warnings)
			}
		}
	}
	if byText[true] != 1 || byText[false] != 1 {
		t.Errorf("rows warning of a dropped message: %d, without: %d; want 1 and 1 (%q, %q, %q)", byText[true], byText[false], rows[0].Warnings, rows[1].Warnings, rows[2].Warnings)
	}
}
