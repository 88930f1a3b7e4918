package capture_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"lab/capture"
	"lab/metrics"
)

// The proxy groups an agent's requests by the session header it sends (opencode's
// x-session-affinity), or by the user's own (Options.SessionHeader) first; a title request
// with its own system prompt and a sub-agent's request (a parent session's header) are
// conversations of their own, with side_request true and a warning saying how the lab knew.
func TestProxyMarksSideRequests(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	body := func(system string, msgs ...string) string {
		m := `{"role":"system","content":"` + system + `"}`
		for i, x := range msgs {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			m += `,{"role":"` + role + `","content":"` + x + `"}`
		}
		return `{"model":"m","messages":[` + m + `]}`
	}
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := capture.New(capture.Options{Upstream: up.URL, Dir: dir, RunID: "cap", SessionHeader: "X-My-Run"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	for i, r := range []struct {
		body    string
		headers map[string]string
	}{
		{body("You are opencode.", "fix the bug"), map[string]string{"X-Session-Affinity": "ses_1"}},
		{body("Write a short title.", "fix the bug"), map[string]string{"X-Session-Affinity": "ses_1"}},
		{body("You are opencode.", "fix the bug", "ok", "test it"), map[string]string{"X-Session-Affinity": "ses_1"}},
		{body("You are an explorer.", "find the tests"), map[string]string{"X-Session-Affinity": "ses_2", "X-Parent-Session-Id": "ses_1"}},
		// The user's own header comes first: two runs that share opencode's header are two
		// conversations.
		{body("You are opencode.", "fix the bug"), map[string]string{"X-Session-Affinity": "ses_1", "X-My-Run": "r2"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range r.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: HTTP %d", i, resp.StatusCode)
		}
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"conversation-0001/0/false", "conversation-0002/0/true", "conversation-0001/1/false", "conversation-0003/0/true", "conversation-0004/0/false"}
	var got []string
	for _, s := range rows {
		got = append(got, fmt.Sprintf("%s/%d/%v", s.Scenario, s.RequestIndex, s.SideRequest))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("rows %v; want %v", got, want)
	}
	for _, c := range []struct {
		row  int
		want string
	}{{1, "side request: a system prompt of its own beside conversation-0001's"}, {3, "side request: header X-Parent-Session-Id"}} {
		if !strings.Contains(rows[c.row].Warnings, c.want) {
			t.Errorf("row %d warnings %q; want %q", c.row, rows[c.row].Warnings, c.want)
		}
	}
}
