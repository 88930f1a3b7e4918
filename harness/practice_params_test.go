package harness_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"lab/arms"
	"lab/chat"
	"lab/harness"
	"lab/metrics"
	"lab/scenario"
)

// userArm reads one arm from a YAML body as a user's file would hold it.
func userArm(t *testing.T, body string) arms.Arm {
	t.Helper()
	list, err := arms.Parse("test.yaml", []byte("arms:\n  - name: a\n    description: d\n    practices:\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return list[0]
}

// firstTouch checks request i of a run as a practice's first touch: the sim's cached tokens
// equal the lab's expected ones and wantCached (the bytes before the practice's first changed
// byte, tinytokenizer.Bytes counting a byte a token), the re-read is the rest of the prompt, and
// it diverged at segment.
func firstTouch(t *testing.T, samples []metrics.Sample, i int, segment string, wantCached int) {
	t.Helper()
	s := samples[i]
	if s.DivergenceSegment != segment {
		t.Errorf("request %d diverged at %q; want %q", i, s.DivergenceSegment, segment)
	}
	if s.CachedTokens == nil || s.ExpectedCachedTokens == nil || s.RereadTokens == nil {
		t.Fatalf("request %d: cached %v, expected %v, re-read %v; want all known", i, s.CachedTokens, s.ExpectedCachedTokens, s.RereadTokens)
	}
	if *s.CachedTokens != int64(wantCached) || *s.ExpectedCachedTokens != int64(wantCached) {
		t.Errorf("request %d: cached %d, expected %d; want %d", i, *s.CachedTokens, *s.ExpectedCachedTokens, wantCached)
	}
	if want := s.PromptTokens - int64(wantCached); *s.RereadTokens != want {
		t.Errorf("request %d: re-read %d; want %d (the prompt from the practice's change on)", i, *s.RereadTokens, want)
	}
}

// commonPrefix is the length of the longest common prefix of a and b, in bytes.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func toolNames(req *chat.Request) []string {
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// A minute clock in the first user message that advances 20 s a request first changes at the
// third request (23:50:20, 23:50:40, 23:51:00): the re-read starts at its last digit.
func TestClockPracticeBreaksAtItsLine(t *testing.T) {
	samples, be := runTiny(t, userArm(t, "      - clock: {granularity: minute, place: first_user, per_request: 20s}\n"))
	for i, want := range []string{"Current time: 2026-11-05 23:50", "Current time: 2026-11-05 23:50", "Current time: 2026-11-05 23:51"} {
		if got := be.requests[i].Messages[1].Content; !strings.Contains(got, "built?\n\n"+want+"\n\n<session-note>") {
			t.Fatalf("request %d message 1 %q; want %q before the session note", i, got, want)
		}
	}
	if s := samples[1].DivergenceSegment; strings.HasPrefix(s, "clock") {
		t.Errorf("request 1 diverged at %q, though its clock line did not change", s)
	}
	s := samples[2]
	if s.DivergenceSegment != "clock in message 1" {
		t.Fatalf("request 2 diverged at %q; want clock in message 1", s.DivergenceSegment)
	}
	line := "Current time: 2026-11-05 23:51"
	want := int64(strings.Index(be.rendered[2], line) + len(line) - 1)
	if s.ExpectedCachedTokens == nil || *s.ExpectedCachedTokens != want || *s.CachedTokens != want {
		t.Errorf("request 2 expected %v cached %v; want %d (the bytes before the clock's last digit)", s.ExpectedCachedTokens, s.CachedTokens, want)
	}
	if reread := s.PromptTokens - want; reread != int64(len(be.rendered[2]))-want {
		t.Errorf("re-read %d", reread)
	}
}

// A step counter at the end of the system prompt changes on every request: each re-reads from
// the counter in the system prompt on.
func TestCounterPracticeBreaksEveryRequest(t *testing.T) {
	samples, be := runTiny(t, userArm(t, "      - counter: {kind: step}\n"))
	for i, s := range samples[1:] {
		if s.DivergenceSegment != "counter in system" {
			t.Fatalf("request %d diverged at %q; want counter in system", i+1, s.DivergenceSegment)
		}
	}
	if got := be.requests[3].Messages[0].Content; !strings.HasSuffix(got, "\n\nStep 4") {
		t.Errorf("request 3's system prompt ends %q", got[max(len(got)-20, 0):])
	}
	line := "Step 2"
	if want := int64(strings.Index(be.rendered[1], line) + len("Step ")); *samples[1].ExpectedCachedTokens != want {
		t.Errorf("request 1 expected %d; want %d", *samples[1].ExpectedCachedTokens, want)
	}
}

// Tools shuffled once per session keep one order in the session, not the harness's; shuffled
// per request, a request whose order changed diverges in the tool list.
func TestToolOrderPractice(t *testing.T) {
	_, spec := runTiny(t, arm(t, "spec"))
	_, once := runTiny(t, userArm(t, "      - tool_order: {order: session}\n"))
	fixed, shuffled := toolNames(spec.requests[0]), toolNames(once.requests[0])
	if slices.Equal(fixed, shuffled) || !slices.Equal(slices.Sorted(slices.Values(fixed)), slices.Sorted(slices.Values(shuffled))) {
		t.Fatalf("session order %v; want a permutation of %v", shuffled, fixed)
	}
	for i, r := range once.requests {
		if !slices.Equal(toolNames(r), shuffled) {
			t.Fatalf("request %d order %v; want the session's %v", i, toolNames(r), shuffled)
		}
	}
	samples, every := runTiny(t, userArm(t, "      - tool_order: {order: request}\n"))
	changed := 0
	for i := 1; i < len(samples); i++ {
		now, before := toolNames(every.requests[i]), toolNames(every.requests[i-1])
		if slices.Equal(now, before) {
			continue
		}
		if changed == 0 {
			// The first reordered request re-reads from the first tool whose name differs
			// (past the letters the two names share), the system text before it kept.
			k := 0
			for now[k] == before[k] {
				k++
			}
			at := strings.Index(every.rendered[i], `"name": "`+now[k]+`"`) + len(`"name": "`) + commonPrefix(now[k], before[k])
			firstTouch(t, samples, i, "tools", at)
			if *samples[i].RereadToolsTokens == 0 || *samples[i].RereadSystemTokens != 0 {
				t.Errorf("request %d: re-read %d in tools, %d in system; want tools only, nothing of the system text", i, *samples[i].RereadToolsTokens, *samples[i].RereadSystemTokens)
			}
		}
		changed++
		if samples[i].DivergenceSegment != "tools" {
			t.Errorf("request %d: order changed, diverged at %q; want tools", i, samples[i].DivergenceSegment)
		}
	}
	if changed == 0 {
		t.Error("the order never changed from request to request")
	}
}

// A reminder after the latest user message moves with it: the first request of turn 2 diverges
// where the reminder stood (insert in message 2), and every request carries it once.
func TestInsertPractice(t *testing.T) {
	samples, be := runTiny(t, userArm(t, "      - insert: {text: keep the todo list}\n"))
	reminder := "<system-reminder>\nkeep the todo list\n</system-reminder>"
	for i, r := range be.requests {
		n := 0
		for _, m := range r.Messages {
			if m.Content == reminder {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("request %d carries the reminder %d times", i, n)
		}
	}
	if got := be.requests[4].Messages[len(be.requests[4].Messages)-1].Content; got != reminder {
		t.Errorf("turn 2's first request ends with %q; want the reminder", got)
	}
	if s := samples[1].DivergenceSegment; strings.HasSuffix(s, " 2") {
		t.Errorf("request 1 diverged at %q, inside turn 1 where the reminder stays put", s)
	}
	// Turn 2's first request re-reads from where the reminder stood in the cache (message 2,
	// right after its role header): the message there now is turn 1's first reply, and the
	// reminder the cache no longer matches names the divergence.
	at := strings.Index(be.rendered[3], "<|im_start|>user\n"+reminder) + len("<|im_start|>")
	firstTouch(t, samples, 4, "insert in message 2", at)
}

// A window that the session outgrows drops whole oldest messages after the first user message:
// the first request that drops diverges right after that message, and every later request
// keeps the person's first message.
func TestWindowPractice(t *testing.T) {
	_, full := runTiny(t, arm(t, "spec"))
	sys := harness.EstimateTokens(full.requests[0].Messages[0].Content)
	samples, be := runTiny(t, userArm(t, fmt.Sprintf("      - window: {max_tokens: %d, target_tokens: %d}\n", sys+300, sys+200)))
	dropped := -1
	for i, r := range be.requests {
		if len(r.Messages) < len(full.requests[i].Messages) {
			dropped = i
			break
		}
	}
	if dropped < 0 {
		t.Fatal("the window never dropped a message")
	}
	for _, r := range be.requests[dropped:] {
		if r.Messages[1].Content != full.requests[0].Messages[1].Content {
			t.Fatalf("the person's first message is gone: %q", r.Messages[1].Content)
		}
	}
	s := samples[dropped]
	if s.DivergenceSegment != "window in message 2" && s.DivergenceSegment != "window in reasoning 2" && s.DivergenceSegment != "window in tool result 2" {
		t.Errorf("request %d (the first that drops) diverged at %q; want the window's cut at message 2, right after the first user message", dropped, s.DivergenceSegment)
	}
	_, after, _ := strings.Cut(be.rendered[dropped], full.requests[0].Messages[1].Content)
	if want := int64(len(be.rendered[dropped]) - len(after)); *s.ExpectedCachedTokens < want {
		t.Errorf("request %d expected %d cached; want at least the %d bytes through the first user message", dropped, *s.ExpectedCachedTokens, want)
	}
}

// A tool list that changes every 3 requests diverges in the tool list at requests 3 and 6 and
// nowhere else in the tools: the description carries the time of each change.
func TestToolListChurnPractice(t *testing.T) {
	samples, be := runTiny(t, userArm(t, "      - tool_list_churn: {every: 3, change: describe, tool: read}\n"))
	for i, s := range samples {
		changed := i == 3 || i == 6
		if (s.DivergenceSegment == "tools") != changed {
			t.Errorf("request %d diverged at %q (a change: %v)", i, s.DivergenceSegment, changed)
		}
	}
	desc := func(r *chat.Request) string {
		for _, tl := range r.Tools {
			if tl.Name == "read" {
				return tl.Description
			}
		}
		return ""
	}
	if d := desc(be.requests[3]); !strings.HasSuffix(d, " Updated 2026-11-05T23:50:00+01:00.") {
		t.Errorf("request 3's read description ends %q", d[max(len(d)-40, 0):])
	}
	// Request 3 re-reads from the rewritten description's timestamp on.
	firstTouch(t, samples, 3, "tools", strings.Index(be.rendered[3], " Updated 2026-11-05T23:50:00+01:00."))
	_, add := runTiny(t, userArm(t, "      - tool_list_churn: {every: 2, change: add}\n"))
	if n0, n4 := len(add.requests[0].Tools), len(add.requests[4].Tools); n4 != n0+2 {
		t.Errorf("add: %d tools at request 0, %d at request 4; want 2 more", n0, n4)
	}
}

// The scenario's clock_per_request and the clock practice's per_request add up before every
// request, and a "+DURATION" clock step moves on from where they brought the clock.
func TestClockPerRequest(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	sc.PerRequest = 10 * time.Second
	_, be := replay(t, sc, userArm(t, "      - clock: {granularity: second, place: latest_user, per_request: 5s}\n"))
	for i, want := range map[int]string{0: "23:50:15", 3: "23:51:00", 4: "00:05:15"} {
		found := false
		for _, m := range be.requests[i].Messages {
			if m.Role == chat.RoleUser && strings.Contains(m.Content, "Current time: ") {
				found = found || strings.Contains(m.Content, want)
			}
		}
		if !found {
			t.Errorf("request %d: no clock line at %s", i, want)
		}
	}
}

// A prune past its threshold replaces the oldest unprotected result in place: the first request
// that prunes re-reads from the replaced result's text on, named by the practice; keep_last
// does the same with its own text.
func TestPruneAndKeepLastPractices(t *testing.T) {
	for _, tc := range []struct {
		body, segment, text string
	}{
		{"      - prune: {threshold_tokens: 20, protect_tokens: 10, minimum_tokens: 1}\n", "prune in tool result 3", "[Old tool result content cleared]"},
		{"      - keep_last: {results: 1}\n", "keep_last in tool result 3", "[Older observation elided]"},
	} {
		samples, be := runTiny(t, userArm(t, tc.body))
		for i := range 2 {
			if strings.Contains(be.rendered[i], tc.text) {
				t.Fatalf("%s: request %d already replaced a result", tc.segment, i)
			}
		}
		// The re-read starts at the replacement, past any bytes it shares with the result it
		// replaced (request 1's message 3).
		at := strings.Index(be.rendered[2], "<tool_response>\n"+tc.text) + len("<tool_response>\n") + commonPrefix(tc.text, be.requests[1].Messages[3].Content)
		firstTouch(t, samples, 2, tc.segment, at)
		if *samples[2].RereadToolResultTokens == 0 {
			t.Errorf("%s: nothing re-read in tool results", tc.segment)
		}
	}
}

// Reasoning never sent back re-reads each step's previous reply from where its reasoning stood
// in the cache; kept for the last 2 messages only, the first reply to leave them re-reads from
// there (request 2, message 2).
func TestReasoningPractice(t *testing.T) {
	// The cache holds the reply as generated, "<think>\n…" after the role header; the prompt
	// sends it as a bare tool call (the two share "<t").
	reply := "<|im_start|>assistant\n"
	from := func(rendered string) int {
		at := strings.Index(rendered, reply+"<tool_call>") + len(reply)
		return at + commonPrefix(rendered[at:], "<think>\n")
	}
	samples, be := runTiny(t, userArm(t, "      - reasoning: {keep: never}\n"))
	if strings.Contains(be.rendered[1], "I should look at the") {
		t.Fatal("keep never: request 1 sends the first reply's reasoning back")
	}
	firstTouch(t, samples, 1, "message 2", from(be.rendered[1]))
	samples, be = runTiny(t, userArm(t, "      - reasoning: {keep: last_messages, messages: 2}\n"))
	if *samples[1].CachedTokens <= int64(len(be.rendered[0])) {
		t.Errorf("last 2 messages: request 1 cached %d of the first request's %d bytes; want past them, into the reply", *samples[1].CachedTokens, len(be.rendered[0]))
	}
	firstTouch(t, samples, 2, "reasoning 2", from(be.rendered[2]))
}

// A counter at the latest user message goes into the person's message, not into the reminder an
// insert put after it; a clock at the first user message skips a reminder inserted before it.
func TestLinesGoToThePersonsMessage(t *testing.T) {
	_, be := runTiny(t, userArm(t, "      - counter: {kind: step, place: latest_user}\n      - insert: {text: one}\n"))
	for i, r := range be.requests {
		var person, one = -1, -1
		for j, m := range r.Messages {
			switch {
			case strings.Contains(m.Content, "<system-reminder>\none\n"):
				one = j
				if strings.Contains(m.Content, "Step ") {
					t.Errorf("request %d: the counter is in the reminder: %q", i, m.Content)
				}
			case m.Role == chat.RoleUser && strings.Contains(m.Content, fmt.Sprintf("Step %d", i+1)):
				person = j
			}
		}
		if person < 0 || one != person+1 {
			t.Fatalf("request %d: the person's message with the counter at %d, the reminder at %d; want it right after", i, person, one)
		}
	}
	_, be = runTiny(t, userArm(t, "      - clock: {place: first_user}\n      - insert: {text: early, at: \"0\"}\n"))
	if m := be.requests[0].Messages[1]; !strings.Contains(m.Content, "early") || strings.Contains(m.Content, "Current") {
		t.Errorf("message 1 %q; want the reminder alone", m.Content)
	}
	if m := be.requests[0].Messages[2]; !strings.Contains(m.Content, "Current") {
		t.Errorf("message 2 %q; want the person's first message with the clock", m.Content)
	}
}

// The clock moves on before every request the same way scripted and live, and a line updated per
// turn shows the clock of the turn's first request, as a line updated per request does there.
func TestClockPerRequestLiveAndPerTurn(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	a := userArm(t, "      - clock: {granularity: second, place: system_end, per_request: 1m}\n")
	sandbox := t.TempDir()
	sb, lb := newRecorder(t), newRecorder(t)
	if _, err := session(t, sc, a, harness.Driver{}, sb, sandbox); err != nil {
		t.Fatal(err)
	}
	if _, err := session(t, sc, a, harness.Driver{Mode: harness.DriverLive, MaxTokens: 1 << 30, MaxSteps: 1000}, lb, sandbox); err != nil {
		t.Fatal(err)
	}
	if len(sb.requests) != len(lb.requests) {
		t.Fatalf("%d scripted requests, %d live", len(sb.requests), len(lb.requests))
	}
	for i := range sb.requests {
		if s, l := sb.requests[i].Messages[0].Content, lb.requests[i].Messages[0].Content; s != l {
			t.Errorf("request %d: system prompt scripted …%q, live …%q", i, s[max(len(s)-30, 0):], l[max(len(l)-30, 0):])
		}
	}
	if s := sb.requests[0].Messages[0].Content; !strings.HasSuffix(s, "23:51:00") {
		t.Errorf("request 0's clock …%q; want 23:51:00, a minute after the scenario's start", s[max(len(s)-30, 0):])
	}
	_, turn := runTiny(t, userArm(t, "      - clock: {granularity: second, place: system_end, per_request: 1m, update: turn}\n"))
	for i, want := range map[int]string{0: "23:51:00", 3: "23:51:00"} {
		if s := turn.requests[i].Messages[0].Content; !strings.HasSuffix(s, want) {
			t.Errorf("update turn: request %d's clock …%q; want %s, the turn's first request's", i, s[max(len(s)-30, 0):], want)
		}
	}
}

// The per-request steps that carry the clock past midnight mark the request they come before
// with the midnight event, as a clock step does: 5 minutes a request from 23:50 is midnight at
// request 1, and the clock step to 00:05 (passed already) is no second midnight.
func TestClockPerRequestMidnightEvent(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	sc.PerRequest = 5 * time.Minute
	samples, _ := replay(t, sc, arm(t, "spec"))
	var got []string
	for _, s := range samples {
		if s.ScenarioEvent != "" {
			got = append(got, fmt.Sprintf("%d: %s", s.RequestIndex, s.ScenarioEvent))
		}
	}
	if want := []string{"1: midnight"}; !slices.Equal(got, want) {
		t.Errorf("scenario events %q, want %q", got, want)
	}
}

// Steps before a session's first request are where it starts, no event: a mode step and a clock
// step past midnight there leave request 0 without one; the same steps later mark the request
// after them.
func TestNoScenarioEventBeforeFirstRequest(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	first := []scenario.Step{{Mode: new("plan")}, {Clock: new("+30m")}}
	sc.Steps = append(append(first, sc.Steps...), sc.Steps[len(sc.Steps)-1])
	sc.Steps = slices.Insert(sc.Steps, len(sc.Steps)-1, scenario.Step{Mode: new("auto")})
	samples, _ := replay(t, sc, arm(t, "spec"))
	var got []string
	for _, s := range samples {
		if s.ScenarioEvent != "" {
			got = append(got, fmt.Sprintf("%d: %s", s.RequestIndex, s.ScenarioEvent))
		}
	}
	last := samples[len(samples)-1].RequestIndex
	if want := []string{fmt.Sprintf("%d: mode auto", last)}; !slices.Equal(got, want) {
		t.Errorf("scenario events %q, want %q", got, want)
	}
}
