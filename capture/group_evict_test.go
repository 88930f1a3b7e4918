package capture

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/chat"
	"lab/metrics"
)

// heldKeys counts the message keys the grouper holds: its live conversations' last requests'.
func heldKeys(g *grouper) int {
	n := 0
	for _, c := range g.live {
		n += len(c.last)
	}
	return n
}

// What the grouper holds is bounded: past maxLiveConversations one-request conversations (a
// title request each), it holds that many and no more, and the message keys of those only,
// while one long session that gets a request every 10 stays one conversation throughout;
// every conversation keeps its name and count for the manifest.
func TestGrouperHoldsABoundedNumberOfConversations(t *testing.T) {
	var g grouper
	session := []chat.Message{sys("You are a coding agent."), user("fix the build")}
	var main *conversation
	const singles = 3 * maxLiveConversations
	for i := range singles {
		if i%10 == 0 {
			req := &chat.Request{Messages: session}
			c, created := g.assign("", "", req)
			if main == nil {
				main = c
			} else if created || c != main {
				t.Fatalf("request %d of the session: conversation %s (new %v); want %s", i, c.name, created, main.name)
			}
			if g.lost != "" {
				t.Fatalf("request %d of the session: %q; no dropped conversation could take it", i, g.lost)
			}
			g.update(c, req, &chat.Reply{Content: fmt.Sprintf("step %d", i)}, false)
			session = append(session, chat.Message{Role: chat.RoleAssistant, Content: fmt.Sprintf("step %d", i)}, user(fmt.Sprintf("go on %d", i)))
		}
		req := &chat.Request{Messages: []chat.Message{sys("Generate a title."), user(fmt.Sprintf("title %d", i))}}
		c, created := g.assign("", "", req)
		if !created {
			t.Fatalf("title %d joined %s", i, c.name)
		}
		g.update(c, req, &chat.Reply{Content: "a title"}, false)
		if len(g.live) > maxLiveConversations {
			t.Fatalf("after %d titles: %d conversations held; want at most %d", i+1, len(g.live), maxLiveConversations)
		}
	}
	if len(g.live) != maxLiveConversations {
		t.Errorf("%d conversations held; want %d", len(g.live), maxLiveConversations)
	}
	if want := 1 + singles; len(g.records) != want {
		t.Errorf("%d conversations named; want %d", len(g.records), want)
	}
	// The held titles' keys (system, user, reply: 3 each) and the session's last request and reply.
	if got, want := heldKeys(&g), 3*(maxLiveConversations-1)+len(session)-1; got != want {
		t.Errorf("%d message keys held; want %d", got, want)
	}
	if main.convState == nil || main.requests != (singles+9)/10 {
		t.Errorf("the session: held %v, %d requests; want held, %d", main.convState != nil, main.requests, (singles+9)/10)
	}
}

// A conversation idle for idleRequests requests is dropped: its next request is grouped without
// it (here with the latest conversation, a history under the same system prompt), and lost
// names the one it may continue; a request of a conversation that was never dropped has lost
// empty.
func TestGrouperDropsAnIdleConversation(t *testing.T) {
	g := grouper{idle: 5}
	first := &chat.Request{Messages: []chat.Message{user("fix the build")}}
	a, _ := g.assign("", "", first)
	g.update(a, first, &chat.Reply{Content: "done"}, false)
	for i := range 5 {
		req := &chat.Request{Messages: []chat.Message{user(fmt.Sprintf("other %d", i))}}
		c, _ := g.assign("", "", req)
		if g.lost != "" {
			t.Fatalf("other %d: lost %q", i, g.lost)
		}
		g.update(c, req, &chat.Reply{Content: "ok"}, false)
	}
	if a.convState != nil {
		t.Fatalf("%s held after 5 requests of others; want it dropped", a.name)
	}
	next := &chat.Request{Messages: []chat.Message{user("fix the build"), {Role: chat.RoleAssistant, Content: "done"}, user("and the tests")}}
	if c, _ := g.assign("", "", next); c == a {
		t.Errorf("the dropped conversation's next request joined it")
	}
	if !strings.Contains(g.lost, a.name) {
		t.Errorf("lost = %q; want it to name %s", g.lost, a.name)
	}
}

// Through the proxy, the row of a request whose conversation was dropped says so in its
// warnings, and names it; the rows before it carry no such warning. The manifest's session
// records still count the dropped conversations, one of them failed at its last request.
func TestProxyRowSaysItsConversationWasDropped(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); bytes.Contains(b, []byte("other 1")) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	}))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "run_id=cap")
	p, err := New(Options{Upstream: up.URL, Dir: dir, RunID: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	p.rec.groups.idle = 2
	srv := httptest.NewServer(p)
	bodies := []string{
		`{"model":"m","messages":[{"role":"user","content":"fix the build"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"other 1"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"other 2"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"fix the build"},{"role":"assistant","content":"ok"},{"role":"user","content":"and the tests"}]}`,
	}
	for i, b := range bodies {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(b)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for p.Samples() < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	srv.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	man, rows, err := metrics.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows; want 4", len(rows))
	}
	// conversation-0001 and conversation-0002 were dropped once idle for 2 requests, the
	// second's only request failed; the fourth request went on the latest conversation (a
	// history under its system prompt).
	var got []string
	for _, rec := range man.Sessions {
		got = append(got, fmt.Sprintf("%s %d %v %q", rec.Scenario, rec.Requests, rec.Complete, rec.Error))
	}
	want := []string{`conversation-0001 1 true ""`, `conversation-0002 1 false "its last request failed"`, `conversation-0003 2 true ""`}
	if !slices.Equal(got, want) || !slices.Equal(man.Scenarios, []string{"conversation-0001", "conversation-0002", "conversation-0003"}) {
		t.Errorf("manifest sessions %q, scenarios %q; want %q", got, man.Scenarios, want)
	}
	for i, r := range rows[:3] {
		if strings.Contains(r.Warnings, "no longer holds") {
			t.Errorf("row %d warns %q", i, r.Warnings)
		}
	}
	if r := rows[3]; r.Scenario == "conversation-0001" || !strings.Contains(r.Warnings, "may continue conversation-0001, whose messages the proxy no longer holds") {
		t.Errorf("the dropped conversation's next row: %s, warnings %q; want another conversation, warning it may continue conversation-0001", r.Scenario, r.Warnings)
	}
}
