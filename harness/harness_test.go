package harness_test

import (
	"context"
	"encoding/json"
	"lab/arms"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/model/renderers"
	"golang.org/x/tools/txtar"

	lab "lab"
	"lab/backend/ollama"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
	"lab/scenarios"
	"lab/tools"
)

// renderBackend renders with Ollama's own qwen3.5 renderer and leaves as cache text the
// rendered prompt plus the reply as Qwen3 writes it: the real server's behaviour, without the
// server. Every byte is a token (tinytokenizer.Bytes), and the cached figure is what an ideal cache
// would reuse, so the harness's arithmetic is checked exactly.
type renderBackend struct {
	conv     *ollama.Client
	prev     string
	requests []*chat.Request
	rendered []string
}

func (b *renderBackend) Send(_ context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.requests = append(b.requests, req)
	creq, err := b.conv.ChatRequest(req)
	if err != nil {
		return nil, err
	}
	rendered, err := renderers.RenderWithRenderer("qwen3.5", creq.Messages, creq.Tools, creq.Think)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(rendered) && n < len(b.prev) && rendered[n] == b.prev[n] {
		n++
	}
	cached := int64(min(n, len(rendered)-1))
	cache := rendered + ollama.Qwen3Output(reply)
	b.prev = cache
	b.rendered = append(b.rendered, rendered)
	return &chat.Result{PromptTokens: int64(len(rendered)), CachedTokens: &cached, CachedSource: chat.SourceSimulation, Rendered: rendered, CacheText: cache}, nil
}

func runTiny(t *testing.T, arm arms.Arm) ([]metrics.Sample, *renderBackend) {
	t.Helper()
	sc := load(t, "testdata/tiny.yaml")
	return replay(t, sc, arm)
}

// replay runs a scenario through the harness with a new renderBackend and
// tinytokenizer.Bytes, as the run's first session ([replayOn]).
func replay(t *testing.T, sc *scenario.Scenario, arm arms.Arm) ([]metrics.Sample, *renderBackend) {
	t.Helper()
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	be := &renderBackend{conv: conv}
	return replayOn(t, be, sc, arm, 0), be
}

func arm(t *testing.T, name string) arms.Arm {
	arms, err := arms.Select(arms.Builtin(), name)
	if err != nil {
		t.Fatal(err)
	}
	return arms[0]
}

func TestMidnightSpecKeepsTheSystemPrompt(t *testing.T) {
	samples, be := runTiny(t, arm(t, "spec"))
	if len(samples) != 7 {
		t.Fatalf("%d samples; want one per assistant step, 7", len(samples))
	}
	// Request 4 is the first after midnight (turn 2, step 1).
	s := samples[4]
	if s.Turn != 2 || s.Step != 1 {
		t.Fatalf("sample 4 is turn %d step %d; want turn 2 step 1", s.Turn, s.Step)
	}
	sys := be.requests[4].Messages[0].Content
	if sys != be.requests[0].Messages[0].Content || strings.Contains(sys, "2026") {
		t.Fatalf("spec's system prompt changed or carries a date:\n%s", sys)
	}
	// The divergence is after the system prompt and tools: in the previous turn (the template
	// drops its reasoning at the new user message), never in system or tools.
	if s.DivergenceSegment != "reasoning 2" {
		t.Fatalf("spec diverged in %q; want reasoning 2, the first assistant message of turn 1, whose reasoning is no longer sent (§8) nor rendered", s.DivergenceSegment)
	}
	if *s.ExpectedCachedTokens < int64(len(sys)) {
		t.Fatalf("spec expected cached %d < system prompt %d bytes", *s.ExpectedCachedTokens, len(sys))
	}
	// The date travels in a note on the user message of each day.
	first := be.requests[0].Messages[1].Content
	after := be.requests[4].Messages[len(be.requests[4].Messages)-1].Content
	if !strings.Contains(first, "<session-note>\nToday's date is Thursday, 2026-11-05.\n</session-note>") ||
		!strings.Contains(after, "Today's date is Friday, 2026-11-06.") {
		t.Fatalf("date notes missing:\nfirst: %q\nafter midnight: %q", first, after)
	}
	// Within a turn, with text before the calls absent, the renderer's missing </think> costs
	// only the last reply: requests 1-3 reuse almost everything they sent before.
	for i := 1; i < 4; i++ {
		if float64(*samples[i].ExpectedCachedTokens) < 0.8*float64(samples[i-1].PromptTokens) {
			t.Errorf("request %d expected cached %d of previous prompt %d", i, *samples[i].ExpectedCachedTokens, samples[i-1].PromptTokens)
		}
	}
}

func TestMidnightDateArmDivergesInTheSystemPrompt(t *testing.T) {
	samples, be := runTiny(t, arm(t, "date-in-system-prompt"))
	s := samples[4]
	if s.DivergenceSegment != "system" {
		t.Fatalf("date arm diverged in %q; want system", s.DivergenceSegment)
	}
	if share := float64(*s.ExpectedCachedTokens) / float64(s.PromptTokens); share > 0.10 {
		t.Fatalf("date arm reuses %.0f%% after midnight; want under 10%%", 100*share)
	}
	if !strings.Contains(be.requests[4].Messages[0].Content, "Today's date: Friday, 2026-11-06.") {
		t.Fatal("date arm's system prompt has no date")
	}
	// Before midnight the date arm caches as well as spec.
	if samples[2].DivergenceSegment == "system" {
		t.Fatal("date arm diverged in the system prompt before midnight")
	}
}

func TestToolResultsAreRealAndHygienic(t *testing.T) {
	_, be := runTiny(t, arm(t, "spec"))
	last := be.requests[len(be.requests)-1].Messages
	var results []string
	for _, m := range last {
		if m.Role == chat.RoleTool {
			results = append(results, m.Content)
		}
	}
	want := []string{
		"[#0001]\n/",
		"[#0002 main.go lines 1-11 of 11 sha ",
		"[#0003 main.go lines 2-3 of 11 sha ",
		"[#0004 main.go sha ",
		"[#0005 main.go lines 1-11 of 11 sha ",
		"[#0006]\n",
	}
	if len(results) != len(want) {
		t.Fatalf("%d tool results; want %d: %q", len(results), len(want), results)
	}
	for i, w := range want {
		if !strings.HasPrefix(results[i], w) {
			t.Errorf("result %d = %q; want prefix %q", i, results[i], w)
		}
	}
	if lines := strings.Split(results[0], "\n"); len(lines) != 3 || !strings.HasSuffix(lines[1], "/demo/README.md") || !strings.HasSuffix(lines[2], "/demo/main.go") {
		t.Errorf("list = %q; want both files by absolute path (§1)", results[0])
	}
	if !strings.HasSuffix(results[2], "Unchanged since #0002, which already shows lines 1-11.") {
		t.Errorf("re-read = %q; want a stub", results[2])
	}
	if !strings.Contains(results[3], "\n-\treturn \"Hi, \" + name\n+\treturn \"Hello, \" + name") {
		t.Errorf("edit answer = %q; want the diff", results[3])
	}
	if !strings.Contains(results[4], "6: \treturn \"Hello, \" + name") {
		t.Errorf("read after edit = %q; want the new content in full", results[4])
	}
	// grep names the absolute path (spec §1).
	if !strings.Contains(results[5], string(filepath.Separator)+filepath.Join("demo", "main.go")+":6:") {
		t.Errorf("grep = %q; want the absolute path", results[5])
	}
}

const base = "name: x\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: hi\n"

// Every embedded scenario loads and replays through the harness with Ollama's own renderer:
// every tool call succeeds (edits apply), and the session grows as its description says.
func TestEmbeddedScenariosReplay(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", "scenarios/"+name+"/scenario.yaml")
			if err != nil {
				t.Fatal(err)
			}
			samples, be := replay(t, sc, arm(t, "spec"))
			last := be.requests[len(be.requests)-1]
			var errs []string
			for _, m := range last.Messages {
				if m.Role == chat.RoleTool && isToolError(m.Content) {
					errs = append(errs, m.Content[:min(len(m.Content), 300)])
				}
			}
			if len(errs) != sc.ExpectedErrors {
				t.Errorf("%d tool calls answered an error, the scenario expects %d (expected_errors):\n%s", len(errs), sc.ExpectedErrors, strings.Join(errs, "\n"))
			}
			for _, a := range []string{"spec", "compaction-separate-request"} {
				cfg := harness.RunConfig{Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, a)}}
				if n, _ := replay(t, sc, arm(t, a)); cfg.Requests() != len(n) {
					t.Errorf("%s: RunConfig.Requests() = %d, the session sent %d", a, cfg.Requests(), len(n))
				}
			}
			t.Logf("%s: %d requests, last prompt %d bytes", name, len(samples), samples[len(samples)-1].PromptTokens)
		})
	}
}

// The date is the person's, in the zone the scenario started in, whatever zone a clock step
// names (spec §10.3).
func TestDateInThePersonsZone(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	// 04:00Z on the 6th is 23:00 on the 5th in -05:00: still Thursday for the person.
	os.WriteFile(p, []byte("name: z\nproject: p\nworkspace: w.txtar\nclock: \"2026-11-05T22:00:00-05:00\"\nsteps:\n  - user: a\n  - assistant:\n      text: b\n  - clock: \"2026-11-06T04:00:00Z\"\n  - user: c\n  - assistant:\n      text: d\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a --\nx\n"), 0o644)
	sc := load(t, p)
	_, be := replay(t, sc, arm(t, "spec"))
	if got := be.requests[1].Messages[3].Content; got != "c" {
		t.Fatalf("second user message = %q; want no new date note (still Thursday for the person)", got)
	}
}

func TestListAndGrepEdges(t *testing.T) {
	loop, _ := hygiene.ParseConfig(lab.LoopJSON)
	hs, _ := hygiene.NewSession(loop, hygiene.Spec())
	ws, err := tools.NewWorkspace([]txtar.File{{Name: "a.go", Data: []byte("x\ny\n")}, {Name: "e.txt"}}, t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	if got := ws.Run(hs, "list", []byte(`{"path":"a.go"}`)); !strings.Contains(got, "Error: list ") || !strings.Contains(got, "not a directory") {
		t.Errorf("list of a file = %q; want an error", got)
	}
	if got := ws.Run(hs, "grep", []byte(`{"pattern":"^$"}`)); !strings.HasSuffix(got, "No matches.") {
		t.Errorf("grep ^$ = %q; want no matches (no line past the end)", got)
	}
}

func TestCompactionAsTheNextTurn(t *testing.T) {
	sc := load(t, "testdata/compact.yaml")
	samples, be := replay(t, sc, arm(t, "spec"))
	if len(samples) != 5 || samples[2].Kind != metrics.KindCompaction {
		t.Fatalf("%d samples, sample 2 kind %q; want 5 with the compaction third", len(samples), samples[2].Kind)
	}
	before, comp, after := be.requests[1], be.requests[2], be.requests[3]
	// §7: the same system prompt and tools, every message as it was, then the task message.
	if comp.Messages[0].Content != before.Messages[0].Content || len(comp.Tools) != len(before.Tools) || len(comp.Messages) != len(before.Messages)+2 {
		t.Fatalf("compaction request: %d messages, %d tools; want the previous %d messages, the reply, the task, and the same tools", len(comp.Messages), len(comp.Tools), len(before.Messages))
	}
	task := comp.Messages[len(comp.Messages)-1].Content
	if !strings.HasPrefix(task, "Summarise this session") || strings.Contains(task, "{{") {
		t.Fatalf("task message = %q", task)
	}
	for _, m := range comp.Messages {
		if m.Reasoning != "" {
			t.Fatalf("the compaction request carries reasoning %q; the task message starts a turn (§8)", m.Reasoning)
		}
	}
	// The history starts afresh: the summary, then the files-read table.
	summary := after.Messages[1]
	if !summary.Summary || !strings.HasPrefix(summary.Content, "The person asked where") ||
		!strings.Contains(summary.Content, "\n\n## Files read before this summary\n\nRead a file again for its content; recall shows a result by its id.\n\n| Path | Lines | sha | Result |\n|---|---|---|---|\n| main.go | 1-11 of 11 | ") {
		t.Fatalf("history after compaction starts with %q", summary.Content)
	}
	// The dedupe table was emptied: the range inside the earlier read is read in full, ids go on,
	// and recall still shows #0001.
	var results []string
	for _, m := range be.requests[4].Messages {
		if m.Role == chat.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "[#0002 main.go lines 5-7 of 11 sha ") || !strings.Contains(results[0], "\n5: func greet") {
		t.Fatalf("read after compaction = %q; want a full read #0002", results)
	}
	if !strings.HasPrefix(results[1], "[#0003 recall #0001 lines 1-2 of 11]\n") {
		t.Fatalf("recall after compaction = %q", results[1])
	}

	// §7 off: a separate request with its own system prompt, no tools, the transcript pasted.
	off := arm(t, "spec")
	off.Measures.CompactionNextTurn = false
	_, be = replay(t, sc, off)
	comp = be.requests[2]
	if len(comp.Tools) != 0 || len(comp.Messages) != 2 || comp.Messages[0].Content == be.requests[1].Messages[0].Content ||
		!strings.Contains(comp.Messages[1].Content, "user: Where is the greeting built?") {
		t.Fatalf("separate compaction request: %d tools, %d messages, system %q", len(comp.Tools), len(comp.Messages), comp.Messages[0].Content)
	}
	if strings.Contains(be.requests[3].Messages[1].Content, "## Files read") {
		t.Fatal("§7 off still adds the files-read table")
	}
}

// Every arm replays the midnight scenario, and each ablation changes what it says it changes.
func TestEveryArmReplaysMidnight(t *testing.T) {
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "midnight/scenario.yaml", "scenarios/midnight/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms.Builtin() {
		t.Run(a.Name, func(t *testing.T) {
			_, be := replay(t, sc, a)
			last := be.requests[len(be.requests)-1]
			var all strings.Builder
			reasoning := false
			for _, r := range be.requests {
				for _, m := range r.Messages {
					reasoning = reasoning || m.Reasoning != ""
				}
			}
			for _, m := range last.Messages {
				if m.Role == chat.RoleTool {
					if isToolError(m.Content) {
						t.Errorf("tool %s failed: %.200s", m.ToolName, m.Content)
					}
					all.WriteString(m.Content + "\n")
				}
			}
			text, sys := all.String(), last.Messages[0].Content
			has := func(s string) bool { return strings.Contains(text, s) }
			m := a.Measures
			prune, keep := a.Find("prune"), a.Find("keep_last")
			allTurns := a.Find("reasoning") != nil && a.Find("reasoning").Reasoning.Keep == arms.ReasoningAllTurns
			if prune != nil || keep != nil {
				// Earlier results were rewritten: check what the practice did instead.
				full := 0
				for _, msg := range last.Messages {
					if msg.Role == chat.RoleTool && msg.Content != arms.PrunedText && msg.Content != arms.ElidedText {
						full++
					}
				}
				if keep != nil && full != keep.KeepLast.Results {
					t.Errorf("%d results in full; want the last %d", full, keep.KeepLast.Results)
				}
				if prune != nil && (!has(arms.PrunedText) || full < 4) {
					t.Errorf("prune: %d results in full, pruned text present %v", full, has(arms.PrunedText))
				}
				return
			}
			for _, c := range []struct {
				what string
				got  bool
				want bool
			}{
				{"result ids", strings.Contains(text, "[#0001"), m.ResultIDs},
				{"stubs", has("Unchanged since #"), m.Stubs},
				{"search dedupe", has("Same result as #"), m.SearchDedupe},
				{"diffs", has("\n@@ -"), m.Diffs},
				{"reasoning sent", reasoning, m.ReasoningThisTurn || allTurns},
				{"reasoning of turn 1 in the last request", last.Messages[2].Reasoning != "", allTurns},
				{"relative paths", strings.Contains(sys, "Project: linkstash (paths are relative to its root)"), m.RelativePaths},
				{"no date in the system prompt", !strings.Contains(sys, "Today's date"), m.DateInNote},
			} {
				if c.got != c.want {
					t.Errorf("%s: %v; want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

// A file is identified by its resolved path (§1): a link to a file read before is a stub, a link
// leading outside the project is refused.
func TestSymlinksResolve(t *testing.T) {
	loop, _ := hygiene.ParseConfig(lab.LoopJSON)
	hs, _ := hygiene.NewSession(loop, hygiene.Spec())
	dir := t.TempDir()
	ws, err := tools.NewWorkspace([]txtar.File{{Name: "a.txt", Data: []byte("x\ny\n")}}, dir, "p")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("s\n"), 0o644)
	os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(ws.Root, "out.txt"))
	os.Symlink("a.txt", filepath.Join(ws.Root, "alias.txt"))
	ws.Run(hs, "read", []byte(`{"path":"a.txt"}`))
	if got := ws.Run(hs, "read", []byte(`{"path":"alias.txt"}`)); !strings.HasSuffix(got, "Unchanged since #0001, which already shows lines 1-2.") {
		t.Errorf("read through a link = %q; want a stub naming #0001", got)
	}
	if got := ws.Run(hs, "read", []byte(`{"path":"out.txt"}`)); !strings.Contains(got, "outside the project") {
		t.Errorf("read through a link outside = %q; want a refusal", got)
	}
}

// apply_patch over a CRLF file changes only the patched line and keeps CRLF (§5: the diff of the
// change).
func TestPatchKeepsCRLF(t *testing.T) {
	loop, _ := hygiene.ParseConfig(lab.LoopJSON)
	hs, _ := hygiene.NewSession(loop, hygiene.Spec())
	ws, err := tools.NewWorkspace([]txtar.File{{Name: "a.txt", Data: []byte("a\r\nb\r\nc\r\nd\r\n")}}, t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]string{"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n a\n-b\n+B\n c\n*** End Patch"})
	got := ws.Run(hs, "apply_patch", patch)
	data, _ := os.ReadFile(filepath.Join(ws.Root, "a.txt"))
	if string(data) != "a\r\nB\r\nc\r\nd\r\n" {
		t.Fatalf("file after patch = %q", data)
	}
	if strings.Count(got, "\n-") != 1 || strings.Count(got, "\n+") != 1 {
		t.Fatalf("answer = %q; want a diff of the one changed line", got)
	}
}

func TestEventsDuringASession(t *testing.T) {
	sc := load(t, "testdata/events.yaml")
	_, be := replay(t, sc, arm(t, "spec"))
	first, second := be.requests[0], be.requests[2]
	if len(first.Tools) != 9 || len(second.Tools) != 10 || second.Tools[9].Name != "db_query" {
		t.Fatalf("tools: %d then %d; want the fixed 9, then db_query added when its server connected (§10.4)", len(first.Tools), len(second.Tools))
	}
	if first.Messages[0].Content != second.Messages[0].Content {
		t.Fatal("spec's system prompt changed during the session")
	}
	user := second.Messages[len(second.Messages)-1].Content
	wantNote := "Try the edit, then read main.go and query the db.\n\n<session-note>\n" +
		"The permission mode is now plan: read and search only, and change no file.\nWhen you know what to do, answer with the plan for the person to approve.\n\n" +
		"The person changed the plan:\n1. Rename greet.\n\n" +
		"An MCP server connected:\nUse db_query for SQL.\n</session-note>"
	if user != wantNote {
		t.Fatalf("user message = %q\nwant %q", user, wantNote)
	}
	var results []string
	for _, m := range be.requests[3].Messages {
		if m.Role == chat.RoleTool {
			results = append(results, m.Content)
		}
	}
	if len(results) != 4 || results[1] != "[#0002]\nedit is unavailable now: the permission mode is plan" ||
		!strings.HasPrefix(results[2], "[#0003 main.go lines 1-1 of 1 sha ") || results[3] != "[#0004]\n3 rows" {
		t.Fatalf("results = %q", results)
	}

	// §10.3 and §10.4 off: the system prompt is rebuilt with the values, the list changes.
	off := arm(t, "spec")
	off.Measures.NotesForChanges, off.Measures.FixedToolList = false, false
	_, be = replay(t, sc, off)
	second = be.requests[2]
	sys := second.Messages[0].Content
	if strings.Contains(second.Messages[len(second.Messages)-1].Content, "<session-note>") ||
		!strings.Contains(sys, "The permission mode is now plan") || !strings.Contains(sys, "The current plan:\n1. Rename greet.") || !strings.Contains(sys, "Use db_query for SQL.") {
		t.Fatalf("practice: system prompt %q", sys)
	}
	for _, tl := range second.Tools {
		if tl.Name == "edit" || tl.Name == "write" {
			t.Fatalf("practice: %s still listed in plan mode", tl.Name)
		}
	}
}

func TestBashAndAbsolutePaths(t *testing.T) {
	sc := load(t, "testdata/bash.yaml")
	_, be := replay(t, sc, arm(t, "spec"))
	var results []string
	var args []string
	for _, m := range be.requests[2].Messages {
		switch m.Role {
		case chat.RoleTool:
			results = append(results, m.Content)
		case chat.RoleAssistant:
			for _, tc := range m.ToolCalls {
				args = append(args, string(tc.Arguments))
			}
		}
	}
	if len(results) != 5 {
		t.Fatalf("results = %q", results)
	}
	if results[0] != "[#0001]\n--- FAIL: TestGreet\nFAIL\n(exit status 1)" || results[2] != "[#0003]\nok  \tdemo\t0.01s" || results[3] != "[#0004]\nok  \tdemo\t0.01s" {
		t.Errorf("bash results = %q; want the entries in order, the last repeating, never deduplicated", results[:4])
	}
	// The model's call carries the absolute path; the bracket names it as the call gave it, and a
	// relative re-read is a stub of it (the same resolved file, §1).
	if strings.Contains(args[1], "{{root}}") || !strings.Contains(args[1], `/demo/main.go"`) || !strings.HasPrefix(results[1], "[#0002 /") {
		t.Errorf("absolute read: args %s, result %.60q", args[1], results[1])
	}
	if !strings.HasSuffix(results[4], "Unchanged since #0002, which already shows lines 1-11.") {
		t.Errorf("relative re-read = %q; want a stub of #0002", results[4])
	}
}

// isToolError reports a tool result that is an error answer: "Error: …" as the whole result or
// right after its bracket line (not a word "Error:" inside a file's text).
func isToolError(content string) bool {
	return strings.HasPrefix(content, "Error: ") || strings.Contains(content, "]\nError: ")
}

// The re-read split covers the measured re-read exactly, by kind: on every row the eight
// reread_*_tokens columns add up to reread_tokens = prompt − cached.
func TestRereadAttribution(t *testing.T) {
	for _, name := range []string{"spec", "date-in-system-prompt"} {
		samples, _ := runTiny(t, arm(t, name))
		for _, s := range samples {
			if s.RereadTokens == nil || *s.RereadTokens != s.PromptTokens-*s.CachedTokens {
				t.Fatalf("%s request %d: reread %v; want prompt − cached = %d", name, s.RequestIndex, s.RereadTokens, s.PromptTokens-*s.CachedTokens)
			}
			if sum := splitSum(t, &s); sum != *s.RereadTokens {
				t.Errorf("%s request %d: split adds up to %d; want reread_tokens = %d", name, s.RequestIndex, sum, *s.RereadTokens)
			}
		}
		after := samples[4] // the first request after midnight
		switch name {
		case "spec":
			if *after.RereadSystemTokens != 0 || *after.RereadToolsTokens != 0 || *after.RereadToolResultTokens == 0 || *after.RereadNoteTokens == 0 {
				t.Errorf("spec after midnight: system %d, tools %d, tool results %d, note %d; want only the history and the note re-read",
					*after.RereadSystemTokens, *after.RereadToolsTokens, *after.RereadToolResultTokens, *after.RereadNoteTokens)
			}
		default:
			if *after.RereadSystemTokens == 0 || *after.RereadToolsTokens == 0 {
				t.Errorf("date arm after midnight: system %d, tools %d; want both re-read", *after.RereadSystemTokens, *after.RereadToolsTokens)
			}
		}
	}
}

// splitSum is the sum of a row's re-read split; it fails the test when a part is null.
func splitSum(t *testing.T, s *metrics.Sample) int64 {
	t.Helper()
	var sum int64
	for i, p := range s.RereadSplit() {
		if *p == nil {
			t.Fatalf("request %d: reread_%s_tokens is null", s.RequestIndex, metrics.RereadSplitNames[i])
		}
		sum += **p
	}
	return sum
}

// TestContextOverflowIsMarked: with a context window smaller than the session, exactly the
// requests whose prompt or prompt and reply exceed it are marked, with the warning.
func TestContextOverflowIsMarked(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	all, _ := replay(t, sc, arm(t, "spec"))
	// The window: one byte-token more than the third request's prompt, so its reply (the cache
	// text is longer than the prompt) overflows, and every later, longer request too.
	numCtx := int(all[2].PromptTokens) + 1
	loop := loopConfig(t)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	sink := &metrics.MemorySink{}
	var warned []string
	err := harness.RunSession(context.Background(), harness.SessionConfig{
		Scenario: sc, Arm: arm(t, "spec"), Repetition: 1, RunID: "t", Loop: loop, Backend: &renderBackend{conv: conv},
		Tokenizer: tinytokenizer.Bytes{}, Sink: sink, SandboxDir: t.TempDir(), NumCtx: numCtx,
		Warn: func(err error) { warned = append(warned, err.Error()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	got := sink.Samples()
	if len(got) != len(all) {
		t.Fatalf("%d samples with a window, %d without", len(got), len(all))
	}
	for i, s := range got {
		want := i >= 2
		if s.ContextOverflow != want {
			t.Errorf("request %d (prompt %d, window %d): context_overflow %v, want %v", i, s.PromptTokens, numCtx, s.ContextOverflow, want)
		}
		if want != strings.Contains(s.Warnings, metrics.WarningContextOverflow) {
			t.Errorf("request %d: warnings %q", i, s.Warnings)
		}
		if all[i].ContextOverflow || all[i].Warnings != "" {
			t.Errorf("request %d without a window: overflow %v, warnings %q", i, all[i].ContextOverflow, all[i].Warnings)
		}
	}
	if len(warned) != len(got)-2 {
		t.Errorf("%d warnings passed to Warn, want %d: %q", len(warned), len(got)-2, warned)
	}
}

// usageBackend adds a provider's usage record to renderBackend's figures, and a Reset when
// resets is set.
type usageBackend struct {
	renderBackend
	resets int
	// minCache: a shared prefix shorter than this is not reused (OpenAI reuses nothing below
	// 1,024 tokens), so a nonce early in the prompt starts the cache cold.
	minCache int64
}

func (b *usageBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	res, err := b.renderBackend.Send(ctx, req, reply)
	if err != nil {
		return nil, err
	}
	if *res.CachedTokens < b.minCache {
		*res.CachedTokens = 0
	}
	w5, w1, r := int64(7), int64(3), int64(11)
	w := w5 + w1
	res.Usage = &chat.Usage{CacheWrite: &w, CacheWrite5m: &w5, CacheWrite1h: &w1, ReasoningGenerated: &r,
		Fields: map[chat.UsageField]string{chat.UsageCacheWrite: "usage.cache_creation_input_tokens", chat.UsageReasoningGenerated: "x.reasoning"}}
	return res, nil
}

type resettingBackend struct{ usageBackend }

func (b *resettingBackend) Reset(context.Context) error { b.resets++; b.prev = ""; return nil }

func TestUsagePrefixAndCacheState(t *testing.T) {
	sc := load(t, "testdata/tiny.yaml")
	loop := loopConfig(t)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	for _, tc := range []struct {
		name    string
		backend harness.Backend
		prefix  string
		warm    bool
		want    string
	}{
		{"reset", &resettingBackend{usageBackend{renderBackend: renderBackend{conv: conv}}}, "", false, metrics.CacheColdVerified},
		{"nonce", &usageBackend{renderBackend: renderBackend{conv: conv}, minCache: 200}, "lab-run: 0123\n", false, metrics.CacheColdVerified},
		{"nonce, yet cached", &usageBackend{renderBackend: renderBackend{conv: conv}}, "lab-run: 0123\n", false, metrics.CacheColdFailed},
		{"none", &usageBackend{renderBackend: renderBackend{conv: conv}}, "", false, metrics.CacheUncontrolled},
		{"warm", &resettingBackend{usageBackend{renderBackend: renderBackend{conv: conv}}}, "", true, metrics.CacheWarm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nonce func(string) string
			if tc.prefix != "" {
				nonce = func(session string) string { return tc.prefix + session + "\n" }
			}
			dir, man, err := harness.Run(context.Background(), harness.RunConfig{
				Nonce:     nonce,
				Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, Repeat: 2,
				ResultsDir: t.TempDir(), RunID: "u", Loop: loop, Backend: tc.backend, Tokenizer: tinytokenizer.Bytes{},
				Warm:  tc.warm,
				Price: func(u *chat.Usage) (float64, bool) { return float64(*u.CacheWrite) / 100, true },
			})
			if err != nil {
				t.Fatal(err)
			}
			if man.CacheState != tc.want {
				t.Errorf("cache_state %q, want %q", man.CacheState, tc.want)
			}
			_, samples, err := metrics.ReadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			s := samples[1]
			if s.CacheWriteTokens == nil || *s.CacheWriteTokens != 10 || *s.CacheWrite5mTokens != 7 || *s.CacheWrite1hTokens != 3 ||
				val(s.ReasoningTokensGenerated) != 11 || s.CostUSD == nil || *s.CostUSD != 0.1 ||
				s.UsageFields != `{"CacheWrite":"usage.cache_creation_input_tokens","ReasoningGenerated":"x.reasoning"}` {
				t.Errorf("usage columns: write %v 5m %v 1h %v, reasoning %d, cost %v, fields %s",
					s.CacheWriteTokens, s.CacheWrite5mTokens, s.CacheWrite1hTokens, val(s.ReasoningTokensGenerated), s.CostUSD, s.UsageFields)
			}
			var reqs []*chat.Request
			switch b := tc.backend.(type) {
			case *usageBackend:
				reqs = b.requests
			case *resettingBackend:
				reqs = b.requests
				if want := 2; !tc.warm && b.resets != want {
					t.Errorf("%d resets, want one per session (%d)", b.resets, want)
				}
				if tc.warm && b.resets != 0 {
					t.Errorf("--warm: %d resets", b.resets)
				}
			}
			for i, r := range reqs {
				if got := strings.HasPrefix(r.Messages[0].Content, "lab-run: 0123\n"); got != (tc.prefix != "") {
					t.Fatalf("request %d: system prompt starts %q", i, r.Messages[0].Content[:20])
				}
			}
		})
	}
}

// TestSandboxDoesNotDependOnTheRunID: two runs with run ids of different lengths send the same
// bytes, although answers name the sandbox's absolute path.
func TestSandboxDoesNotDependOnTheRunID(t *testing.T) {
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "midnight/scenario.yaml", "scenarios/midnight/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	loop := loopConfig(t)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	var prompts [][]int64
	results := t.TempDir()
	for _, id := range []string{"a", "a-much-longer-run-id-20261130"} {
		_, _, err := harness.Run(context.Background(), harness.RunConfig{
			Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, ResultsDir: results, RunID: id,
			Loop: loop, Backend: &renderBackend{conv: conv}, Tokenizer: tinytokenizer.Bytes{},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, samples, err := metrics.ReadRun(metrics.RunDir(results, id))
		if err != nil {
			t.Fatal(err)
		}
		var p []int64
		for _, s := range samples {
			p = append(p, s.PromptTokens)
		}
		prompts = append(prompts, p)
	}
	if !slices.Equal(prompts[0], prompts[1]) {
		t.Errorf("prompt sizes differ between run ids:\n%v\n%v", prompts[0], prompts[1])
	}
}

// Each arm places prompt-cache markers where its measures keep the prompt stable: the system
// prompt's end only where it stays the same for the session.
func TestCacheBreakpointsByArm(t *testing.T) {
	for name, want := range map[string][]string{
		"spec":                     {"system", "last-message"},
		"no-stubs":                 {"system", "last-message"},
		"date-in-system-prompt":    {"last-message"},
		"changes-in-system-prompt": {"last-message"},
		"plain":                    {"last-message"},
	} {
		if got := harness.CacheBreakpoints(arm(t, name)); !slices.Equal(got, want) {
			t.Errorf("%s: %v; want %v", name, got, want)
		}
	}
	_, be := runTiny(t, arm(t, "date-in-system-prompt"))
	for i, r := range be.requests {
		if !slices.Equal(r.CacheBreakpoints, []string{"last-message"}) {
			t.Errorf("request %d carries %v", i, r.CacheBreakpoints)
		}
	}
}

// val is *p, or -1 for nil (unknown), so that a test comparing a figure fails on a null.
func val(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
