package ollama

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/chat"
)

// An HTTP 200 that is not Ollama's answer fails the request with an error naming it: an HTML
// page (at the rendering or at the measured request), an empty body and a stream with no line
// (cut answers, which the harness retries).
func TestNotTheAPIsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body string
		render            bool // the rendering request gets the odd answer, else the measured one
		want              string
	}{
		{"HTML at the rendering", "text/html; charset=utf-8", "<!DOCTYPE html><title>Sign in</title>", true, `HTTP 200 with a text/html body, not the API's answer: "<!DOCTYPE html>`},
		{"HTML at the request", "text/html", "<html>proxy error</html>", false, `HTTP 200 with a text/html body, not the API's answer: "<html>`},
		{"empty 200", "application/x-ndjson", "", false, "stream cut: HTTP 200 with an empty body"},
		{"zero lines", "application/x-ndjson", "\n\n", false, "stream cut: HTTP 200 with an empty body"},
		{"plain text", "text/plain", "Ollama is running", false, `HTTP 200 with a text/plain body, not the API's answer: "Ollama is running"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tc.render && renderOnly(w, r) {
					return
				}
				w.Header().Set("Content-Type", tc.ctype)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL)
			_, err := c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, &chat.Reply{Content: "ok"})
			var ae *chat.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 200 || !strings.HasPrefix(ae.Body, tc.want) || ae.URL != srv.URL {
				t.Fatalf("error %v; want an APIError with HTTP 200 and a body starting %q", err, tc.want)
			}
		})
	}
}

// A stream cut inside its done line is a cut stream ("stream cut: no done message", which the
// harness retries), not an error whose text is the line's fragment; a line cut in the middle of
// a long answer too, read in small pieces.
func TestStreamCutInsideALine(t *testing.T) {
	first := `{"model":"m","message":{"role":"assistant","content":"o"},"done":false}` + "\n"
	for name, body := range map[string]string{
		"inside the done line": first + `{"model":"m","message":{"role":"assistant","content":""},"done":tr`,
		"long, inside a line":  strings.Repeat(first, 2000) + `{"model":"m","message":{"role":"ass`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if renderOnly(w, r) {
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				io.WriteString(w, body)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL)
			_, err := c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, &chat.Reply{Content: "ok"})
			var ae *chat.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 200 || ae.Body != "stream cut: no done message" {
				t.Fatalf("error %v; want stream cut: no done message", err)
			}
		})
	}
}

// The proxy's reader: an answer without its done line, or with no line, is not whole.
func TestCaptureEnd(t *testing.T) {
	var c Capture
	if err := c.End(); err == nil || !strings.Contains(err.Error(), "stream cut: no events") {
		t.Errorf("no line: %v", err)
	}
	if _, err := c.Line([]byte(`{"message":{"role":"assistant","content":"x"},"done":false}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.End(); err == nil || !strings.Contains(err.Error(), "stream cut: no done message") {
		t.Errorf("no done line: %v", err)
	}
	if _, err := c.Line([]byte(`{"done":true,"prompt_eval_count":5}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.End(); err != nil {
		t.Errorf("whole: %v", err)
	}
}

// An unstreamed answer (one JSON document, application/json) has no time to first token: its
// first byte comes after the whole generation. TTFT stays 0 (null in the row), with a warning;
// a stream's is measured.
func TestUnstreamedAnswerHasNoTTFT(t *testing.T) {
	const done = `{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"prompt_eval_count":12,"eval_count":1,"prompt_eval_duration":1000}`
	for _, tc := range []struct {
		ctype, body string
		ttft        bool
	}{
		{"application/json", done, false},
		{"application/x-ndjson", `{"model":"m","message":{"role":"assistant","content":"ok"},"done":false}` + "\n" + done + "\n", true},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if renderOnly(w, r) {
				return
			}
			w.Header().Set("Content-Type", tc.ctype)
			io.WriteString(w, tc.body)
		}))
		c := newClient(t, srv.URL)
		res, err := c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, nil)
		srv.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.ctype, err)
		}
		if (res.TTFT > 0) != tc.ttft || res.Total <= 0 || res.PromptTokens != 12 {
			t.Errorf("%s: TTFT %v Total %v prompt %d; want a time to first token only for the stream", tc.ctype, res.TTFT, res.Total, res.PromptTokens)
		}
		if w := strings.Join(res.Warnings, "; "); !tc.ttft && !strings.Contains(w, "time to first token unknown") {
			t.Errorf("%s: warnings %q; want one saying the time to first token is unknown", tc.ctype, w)
		}
	}
}

// A done message without prompt_eval_count (older servers leave it out for a fully cached
// prompt) gives no prompt count: unknown (0, null in the row) with a warning, in lab run's Send
// and in lab proxy's Capture alike, and the server log's line is not matched against a 0.
func TestNoPromptEvalCountIsUnknown(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logPath, nil, 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if renderOnly(w, r) {
			return
		}
		f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o644)
		fmt.Fprintf(f, "time=x level=DEBUG msg=\"loading cache slot\" id=0 cache=100 prompt=100 used=100 remaining=0\n")
		f.Close()
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, `{"model":"m","message":{"role":"assistant","content":"ok"},"done":false}`+"\n"+
			`{"model":"m","message":{"role":"assistant","content":""},"done":true,"eval_count":1}`+"\n")
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, WithServerLog(logPath))
	res, err := c.Send(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.PromptTokens != 0 || res.CachedTokens != nil || !slices.Contains(res.Warnings, noPromptCount) {
		t.Errorf("Send: prompt %d, cached %v, warnings %q; want 0 (unknown), nil, and the warning %q", res.PromptTokens, res.CachedTokens, res.Warnings, noPromptCount)
	}

	var cp Capture
	if _, err := cp.Line([]byte(`{"message":{"role":"assistant","content":""},"done":true,"eval_count":3}`)); err != nil {
		t.Fatal(err)
	}
	r := cp.Result()
	if r.PromptTokens != 0 || r.Usage == nil || r.Usage.Prompt != nil || r.Usage.Fields[chat.UsagePrompt] != "" || !slices.Contains(r.Warnings, noPromptCount) {
		t.Errorf("Capture: prompt %d, usage %+v, warnings %q; want 0, no Usage.Prompt, the warning", r.PromptTokens, r.Usage, r.Warnings)
	}
	if r.Usage != nil && (r.Usage.Generated == nil || *r.Usage.Generated != 3) {
		t.Errorf("Capture: generated %v; want 3 (eval_count is still read)", r.Usage.Generated)
	}

	var whole Capture
	whole.Line([]byte(`{"message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":7,"eval_count":3}`))
	if r := whole.Result(); r.PromptTokens != 7 || r.Usage.Prompt == nil || *r.Usage.Prompt != 7 || len(r.Warnings) != 0 {
		t.Errorf("Capture with a count: prompt %d, warnings %q; want 7 and none", r.PromptTokens, r.Warnings)
	}
}
