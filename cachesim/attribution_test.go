package cachesim_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"lab/cachesim"
	"lab/chat"
	"lab/internal/tinytokenizer"
)

// render is a toy ChatML template in the manner of Qwen3's: the tool list after the system
// prompt, reasoning in <think>, tool calls as <tool_call> JSON, then the generation prompt.
func render(req *chat.Request) string {
	var b strings.Builder
	for i, m := range req.Messages {
		b.WriteString("<|im_start|>" + string(m.Role) + "\n")
		switch {
		case i == 0 && m.Role == chat.RoleSystem:
			b.WriteString(m.Content)
			if len(req.Tools) > 0 {
				b.WriteString("\n\n# Tools\n")
				for _, t := range req.Tools {
					b.WriteString(t.Name + ": " + t.Description + "\n")
				}
			}
		case m.Role == chat.RoleAssistant:
			b.WriteString(reply(m))
		case m.Role == chat.RoleTool:
			b.WriteString("<tool_response>\n" + m.Content + "\n</tool_response>")
		default:
			b.WriteString(m.Content)
		}
		b.WriteString("<|im_end|>\n")
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String()
}

// reply is an assistant message as the model writes it (and the toy template renders it).
func reply(m chat.Message) string {
	var b strings.Builder
	if m.Reasoning != "" {
		b.WriteString("<think>\n" + m.Reasoning + "\n</think>\n\n")
	}
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		b.WriteString(`<tool_call>{"name": "` + tc.Name + `", "arguments": ` + string(tc.Arguments) + "}</tool_call>")
	}
	return b.String()
}

// cacheText is what a server's cache holds after req and the model's answer m.
func cacheText(req *chat.Request, m chat.Message) string {
	return render(req) + reply(m) + "<|im_end|>"
}

var (
	tools = []chat.Tool{
		{Name: "read", Description: "Read a file."},
		{Name: "grep", Description: "Search files for a pattern."},
	}
	answer = chat.Message{Role: chat.RoleAssistant, Reasoning: "The test fails in parse; read it.",
		ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: []byte(`{"path":"parse.go"}`)}}}
	result = chat.Message{Role: chat.RoleTool, Content: "package parse\n\nfunc Parse() {}", ToolCallID: "c1", ToolName: "read"}
)

// conversation returns a request: a system prompt, a user message with a session note, and
// then more.
func conversation(system string, more ...chat.Message) *chat.Request {
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: system},
		{Role: chat.RoleUser, Content: "Fix the failing test.\n\n<session-note>\nToday is Monday.\n</session-note>"},
	}
	return &chat.Request{Messages: append(msgs, more...), Tools: tools}
}

// observe calls a.Observe with the rendered prompt, the server's count equal to the tokenizer's.
func observe(t *testing.T, a *cachesim.Attributor, req *chat.Request, cache string) cachesim.Attribution {
	t.Helper()
	rendered := render(req)
	got, err := a.Observe(req, rendered, cache, int64(len(rendered)))
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	return got
}

func TestAttributorFirstRequestRereadsEverything(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	req := conversation("You are a coding agent.")
	got := observe(t, a, req, "")
	n := int64(len(render(req)))
	if got.PromptTokens != n || got.ExpectedCachedTokens != 0 || got.DivergenceToken != nil || got.DivergenceSegment != (cachesim.Segment{}) {
		t.Errorf("first request: prompt %d, expected %d, divergence %v %q; want %d, 0, nil, \"\"",
			got.PromptTokens, got.ExpectedCachedTokens, got.DivergenceToken, got.DivergenceSegment, n)
	}
	if got.Split(got.ExpectedCachedTokens, got.PromptTokens).Total() != n {
		t.Errorf("Reread.Total() = %d; want the whole prompt, %d", got.Split(got.ExpectedCachedTokens, got.PromptTokens).Total(), n)
	}
	// Each segment runs from the end of the previous part's text to the end of its own.
	want := cachesim.Reread{
		System:  int64(len("<|im_start|>system\nYou are a coding agent.")),
		Tools:   int64(len("\n\n# Tools\nread: Read a file.\ngrep: Search files for a pattern.")),
		Message: int64(len("\n<|im_end|>\n<|im_start|>user\nFix the failing test.")),
		Note:    int64(len("\n\n<session-note>\nToday is Monday.\n</session-note>")),
		Other:   int64(len("<|im_end|>\n<|im_start|>assistant\n")),
	}
	if diff := cmp.Diff(want, got.Split(got.ExpectedCachedTokens, got.PromptTokens)); diff != "" {
		t.Errorf("Reread (-want +got):\n%s", diff)
	}
}

func TestAttributorAppendOnlyStep(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	req1 := conversation("You are a coding agent.")
	held := cacheText(req1, answer)
	observe(t, a, req1, held)

	req2 := conversation("You are a coding agent.", answer, result)
	got := observe(t, a, req2, "")
	prompt := int64(len(render(req2)))
	// The cache held the first prompt and the reply as the model wrote it; the template renders
	// the reply the same way, so the whole of it is reusable.
	if got.ExpectedCachedTokens != int64(len(held)) {
		t.Errorf("ExpectedCachedTokens = %d; want the previous prompt and reply, %d", got.ExpectedCachedTokens, len(held))
	}
	if got.DivergenceToken != nil || got.DivergenceSegment != (cachesim.Segment{}) {
		t.Errorf("divergence = %v %q; want none (the prompt extends the cache)", got.DivergenceToken, got.DivergenceSegment)
	}
	if got.Split(got.ExpectedCachedTokens, got.PromptTokens).Total() != prompt-got.ExpectedCachedTokens {
		t.Errorf("Reread.Total() = %d; want prompt − expected = %d", got.Split(got.ExpectedCachedTokens, got.PromptTokens).Total(), prompt-got.ExpectedCachedTokens)
	}
	want := cachesim.Reread{
		ToolResult: int64(len("\n<|im_start|>tool\n<tool_response>\n" + result.Content)),
		Other:      int64(len("\n</tool_response><|im_end|>\n<|im_start|>assistant\n")),
	}
	if diff := cmp.Diff(want, got.Split(got.ExpectedCachedTokens, got.PromptTokens)); diff != "" {
		t.Errorf("Reread (-want +got):\n%s", diff)
	}
	if got.ReasoningTokensSent != int64(len(answer.Reasoning)) {
		t.Errorf("ReasoningTokensSent = %d; want %d", got.ReasoningTokensSent, len(answer.Reasoning))
	}
	if len(got.Warnings) != 0 {
		t.Errorf("Warnings = %q; want none", got.Warnings)
	}
}

func TestAttributorDivergence(t *testing.T) {
	t.Parallel()
	user2 := chat.Message{Role: chat.RoleUser, Content: "Now run the tests."}
	noReasoning := answer
	noReasoning.Reasoning = ""
	changedResult := result
	changedResult.Content = "package parse\n\nfunc Parse() error {}"
	for _, tc := range []struct {
		name string
		// first and second are the two requests; the cache holds first and answer after the first.
		first, second *chat.Request
		// wantAt is the byte (= token) where second first differs from the cache, in second's
		// rendering.
		wantAt      string
		wantSegment string
	}{
		{
			name:        "changed system prompt",
			first:       conversation("You are a coding agent. Today is Monday."),
			second:      conversation("You are a coding agent. Today is Tuesday."),
			wantAt:      "<|im_start|>system\nYou are a coding agent. Today is ",
			wantSegment: "system",
		},
		{
			name:        "changed system prompt at its first byte",
			first:       conversation("Monday. You are a coding agent."),
			second:      conversation("Tuesday. You are a coding agent."),
			wantAt:      "<|im_start|>system\n",
			wantSegment: "system",
		},
		{
			name:   "changed tool list",
			first:  conversation("You are a coding agent."),
			second: &chat.Request{Messages: conversation("You are a coding agent.").Messages, Tools: tools[:1]},
			wantAt: "<|im_start|>system\nYou are a coding agent.\n\n# Tools\nread: Read a file.\n",
			// The anchor is the last tool's description, which the second request renders
			// before the divergence: the divergence falls after it, in the user message.
			wantSegment: "message 1",
		},
		{
			name:        "changed note",
			first:       conversation("You are a coding agent."),
			second:      withNote(conversation("You are a coding agent."), "Today is Tuesday."),
			wantAt:      strings.Split(render(conversation("You are a coding agent.")), "Monday")[0],
			wantSegment: "note",
		},
		{
			name:        "dropped reasoning",
			first:       conversation("You are a coding agent.", answer, result),
			second:      conversation("You are a coding agent.", noReasoning, result, user2),
			wantAt:      strings.Split(render(conversation("You are a coding agent.", answer)), "<think>")[0] + "<t", // <think> vs <tool_call>
			wantSegment: "reasoning 2",
		},
		{
			name:        "changed tool result",
			first:       conversation("You are a coding agent.", answer, result),
			second:      conversation("You are a coding agent.", answer, changedResult),
			wantAt:      strings.Split(render(conversation("You are a coding agent.", answer, result)), "() {}")[0] + "() ",
			wantSegment: "tool result 3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
			observe(t, a, tc.first, cacheText(tc.first, answer))
			got := observe(t, a, tc.second, "")
			at := int64(len(tc.wantAt))
			if got.DivergenceToken == nil || *got.DivergenceToken != at || got.DivergenceSegment.String() != tc.wantSegment {
				d := "nil"
				if got.DivergenceToken != nil {
					d = fmt.Sprint(*got.DivergenceToken)
				}
				t.Errorf("divergence = %s %q; want %d %q", d, got.DivergenceSegment, at, tc.wantSegment)
			}
			if got.ExpectedCachedTokens != at {
				t.Errorf("ExpectedCachedTokens = %d; want %d", got.ExpectedCachedTokens, at)
			}
			if want := got.PromptTokens - got.ExpectedCachedTokens; got.Split(got.ExpectedCachedTokens, got.PromptTokens).Total() != want {
				t.Errorf("Reread.Total() = %d (%+v); want prompt − expected = %d", got.Split(got.ExpectedCachedTokens, got.PromptTokens).Total(), got.Split(got.ExpectedCachedTokens, got.PromptTokens), want)
			}
		})
	}
}

// withNote returns req with its first user message's note text replaced.
func withNote(req *chat.Request, note string) *chat.Request {
	req.Messages[1].Content = strings.Replace(req.Messages[1].Content, "Today is Monday.", note, 1)
	return req
}

func TestAttributorIdenticalPromptLeavesOneToken(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}}
	req := conversation("You are a coding agent.")
	observe(t, a, req, "")
	got := observe(t, a, req, "")
	// A server evaluates at least the last prompt token to sample from it.
	if got.ExpectedCachedTokens != got.PromptTokens-1 || got.DivergenceToken != nil {
		t.Errorf("same prompt twice: expected %d, divergence %v; want %d, nil", got.ExpectedCachedTokens, got.DivergenceToken, got.PromptTokens-1)
	}
	// That last token, in the generation prompt, is the one re-read.
	if r := got.Split(got.ExpectedCachedTokens, got.PromptTokens); r != (cachesim.Reread{Other: 1}) {
		t.Errorf("Split(expected, prompt) = %+v; want the last token in other", r)
	}
}

func TestAttributorContextOverflow(t *testing.T) {
	t.Parallel()
	req := conversation("You are a coding agent.")
	prompt, held := len(render(req)), len(cacheText(req, answer))
	for _, tc := range []struct {
		name   string
		numCtx int
		want   bool
	}{
		{"unknown window", 0, false},
		{"prompt over the window", prompt - 1, true},
		{"prompt fits, reply does not", held - 1, true},
		{"exactly the prompt and reply", held, false},
		{"room to spare", held + 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NumCtx: tc.numCtx}
			got := observe(t, a, req, cacheText(req, answer))
			if got.ContextOverflow != tc.want {
				t.Errorf("NumCtx %d (prompt %d, with reply %d): ContextOverflow = %v; want %v", tc.numCtx, prompt, held, got.ContextOverflow, tc.want)
			}
			overflowWarned := len(got.Warnings) == 1 && strings.HasPrefix(got.Warnings[0], cachesim.WarningContextOverflow+": ")
			if overflowWarned != tc.want || (!tc.want && len(got.Warnings) > 0) {
				t.Errorf("Warnings = %q; want an overflow warning: %v", got.Warnings, tc.want)
			}
			if overflowWarned && !strings.Contains(got.Warnings[0], fmt.Sprintf("take %d tokens, more than the context window of %d", held, tc.numCtx)) {
				t.Errorf("warning %q does not give the tokens used (%d) and the window (%d)", got.Warnings[0], held, tc.numCtx)
			}
		})
	}
}

func TestAttributorWarnsOnCountMismatch(t *testing.T) {
	t.Parallel()
	req := conversation("You are a coding agent.")
	rendered := render(req)
	for _, tc := range []struct {
		server int64
		want   []string
	}{
		{int64(len(rendered)), nil},
		{-1, nil}, // unknown: no comparison
		{int64(len(rendered)) + 2, []string{fmt.Sprintf("the lab's tokenizer counts %d prompt tokens, the server %d", len(rendered), len(rendered)+2)}},
	} {
		a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}}
		got, err := a.Observe(req, rendered, "", tc.server)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got.Warnings); diff != "" {
			t.Errorf("server count %d: Warnings (-want +got):\n%s", tc.server, diff)
		}
	}
}

func TestAttributorUnknownKeepsTheCache(t *testing.T) {
	t.Parallel()
	if got, err := (&cachesim.Attributor{}).Observe(conversation("x"), "rendered", "", 3); err != nil || !got.Unknown {
		t.Errorf("no tokenizer: Observe = %+v, %v; want Unknown", got, err)
	}
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}}
	req1 := conversation("You are a coding agent.")
	held := cacheText(req1, answer)
	observe(t, a, req1, held)
	got, err := a.Observe(req1, "", "", 10)
	if err != nil || !got.Unknown || got.PromptTokens != 0 {
		t.Errorf("no rendered prompt: Observe = %+v, %v; want Unknown and nothing else", got, err)
	}
	// The unknown request left the cache as the first request did.
	got = observe(t, a, conversation("You are a coding agent.", answer, result), "")
	if got.ExpectedCachedTokens != int64(len(held)) {
		t.Errorf("after an unknown request: ExpectedCachedTokens = %d; want %d", got.ExpectedCachedTokens, len(held))
	}
}

// failingTokenizer fails on text containing bad.
type failingTokenizer struct{ bad string }

var errTokenize = errors.New("tokenizer failed")

func (f failingTokenizer) Encode(s string) ([]int32, error) {
	if strings.Contains(s, f.bad) {
		return nil, errTokenize
	}
	return tinytokenizer.Bytes{}.Encode(s)
}

func TestAttributorTokenizerError(t *testing.T) {
	t.Parallel()
	req := conversation("You are a coding agent.", answer, result)
	for _, bad := range []string{"<|im_start|>system", answer.Reasoning, "reply only"} {
		a := &cachesim.Attributor{Tok: failingTokenizer{bad: bad}}
		rendered := render(req)
		_, err := a.Observe(req, rendered, rendered+"reply only", int64(len(rendered)))
		if !errors.Is(err, errTokenize) {
			t.Errorf("tokenizer failing on %q: Observe error = %v; want it to wrap %v", bad, err, errTokenize)
		}
	}
}

func TestParts(t *testing.T) {
	t.Parallel()
	req := &chat.Request{
		Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: "sys"},
			{Role: chat.RoleUser, Content: "do it\n\n<n>first</n> and more\n\n<n>date</n>"},
			{Role: chat.RoleAssistant, Reasoning: "think", ToolCalls: []chat.ToolCall{{Name: "read"}, {Name: "grep"}}},
			{Role: chat.RoleTool, Content: "out"},
			{Role: chat.RoleAssistant, Content: "done", ToolCalls: []chat.ToolCall{{Name: "read"}}},
			{Role: chat.RoleSystem, Content: "late system"},
		},
		Tools: tools,
	}
	want := []cachesim.Part{
		{Name: seg("system"), Text: "sys"},
		{Name: seg("tools"), Text: "Search files for a pattern."},
		{Name: seg("message 1"), Text: "do it\n\n<n>first</n> and more"},
		{Name: seg("note"), Text: "\n\n<n>date</n>"},
		{Name: seg("reasoning 2"), Text: "think"},
		{Name: seg("message 2"), Text: `"read"`},
		{Name: seg("tool result 3"), Text: "out"},
		{Name: seg("message 4"), Text: "done"},
		{Name: seg("system 5"), Text: "late system"},
	}
	if diff := cmp.Diff(want, cachesim.Parts(req, "<n>")); diff != "" {
		t.Errorf("Parts (-want +got):\n%s", diff)
	}
	// Without a note opener the user message stays whole.
	got := cachesim.Parts(req, "")
	if got[2].Text != req.Messages[1].Content || got[3].Name != seg("reasoning 2") {
		t.Errorf(`Parts(req, "")[2:4] = %+v; want message 1 whole, then reasoning 2`, got[2:4])
	}
	// No tools, no "tools" part.
	if got := cachesim.Parts(&chat.Request{Messages: req.Messages[:1]}, ""); len(got) != 1 {
		t.Errorf("Parts without tools = %+v; want only system", got)
	}
}

// Follow a conversation from request to request: the second request appends to what the cache
// held (the first prompt and the model's reply), the third changes the system prompt.
func ExampleAttributor() {
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NumCtx: 4096, NoteOpen: "<session-note>"}
	turn := func(role, text string) string { return "<|im_start|>" + role + "\n" + text + "<|im_end|>\n" }
	for _, step := range []struct{ system, history string }{
		{"You are terse.", ""},
		{"You are terse.", turn("assistant", "Hello.") + turn("user", "Bye")},
		{"You are brief.", turn("assistant", "Hello.") + turn("user", "Bye")},
	} {
		req := &chat.Request{Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: step.system},
			{Role: chat.RoleUser, Content: "Hi"},
		}}
		if step.history != "" {
			req.Messages = append(req.Messages,
				chat.Message{Role: chat.RoleAssistant, Content: "Hello."},
				chat.Message{Role: chat.RoleUser, Content: "Bye"})
		}
		// The prompt as the server rendered it, and what its cache holds after the reply.
		rendered := turn("system", step.system) + turn("user", "Hi") + step.history + "<|im_start|>assistant\n"
		cache := rendered + "Hello.<|im_end|>"
		at, err := a.Observe(req, rendered, cache, int64(len(rendered)))
		if err != nil {
			panic(err)
		}
		fmt.Printf("prompt %d, expected cached %d, diverged at %q, re-read %d (system %d, messages %d)\n",
			at.PromptTokens, at.ExpectedCachedTokens, at.DivergenceSegment, at.Split(at.ExpectedCachedTokens, at.PromptTokens).Total(), at.Split(at.ExpectedCachedTokens, at.PromptTokens).System, at.Split(at.ExpectedCachedTokens, at.PromptTokens).Message)
	}
	// Output:
	// prompt 96, expected cached 0, diverged at "", re-read 96 (system 33, messages 30)
	// prompt 166, expected cached 112, diverged at "", re-read 54 (system 0, messages 21)
	// prompt 166, expected cached 27, diverged at "system", re-read 139 (system 6, messages 100)
}

// With the server's window (Ollama's runner), what the cache holds after an overflow is what the
// runner kept: its first num_keep tokens. The next request's expected cached tokens count against
// that, and the divergence names the segment of the first token the slot lost; without a window
// the whole prompt and reply count as held (the figure real Ollama never reaches).
func TestAttributorWindowAfterAnOverflow(t *testing.T) {
	t.Parallel()
	first := conversation("You are a coding agent.")
	held := len(cacheText(first, answer))
	next := conversation("You are a coding agent.", answer, result)
	for _, tc := range []struct {
		name     string
		window   cachesim.Window
		expected int64
		segment  string
	}{
		{"Ollama's window", cachesim.NewWindow(held - 10), cachesim.OllamaNumKeep, "system"},
		{"no window modelled", cachesim.Window{}, int64(len(render(first))), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NumCtx: held - 10, Window: tc.window}
			if got := observe(t, a, first, cacheText(first, answer)); !got.ContextOverflow {
				t.Fatalf("first request: no overflow at NumCtx %d with %d tokens held", held-10, held)
			}
			got := observe(t, a, next, cacheText(next, answer))
			if got.ExpectedCachedTokens < tc.expected || (tc.segment != "" && got.ExpectedCachedTokens != tc.expected) {
				t.Errorf("expected cached tokens %d; want %d", got.ExpectedCachedTokens, tc.expected)
			}
			if tc.segment != "" {
				if got.DivergenceToken == nil || *got.DivergenceToken != tc.expected || got.DivergenceSegment.String() != tc.segment {
					t.Errorf("divergence at %v in %q; want token %d in %q", got.DivergenceToken, got.DivergenceSegment, tc.expected, tc.segment)
				}
			}
		})
	}
}

// A prompt and reply that fill the window exactly are shifted by the runner: marked as an
// overflow when the window is modelled.
func TestAttributorWindowExactFill(t *testing.T) {
	t.Parallel()
	req := conversation("You are a coding agent.")
	held := len(cacheText(req, answer))
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NumCtx: held, Window: cachesim.NewWindow(held)}
	if got := observe(t, a, req, cacheText(req, answer)); !got.ContextOverflow || len(got.Warnings) != 1 {
		t.Errorf("ContextOverflow %v, warnings %q; want one overflow warning", got.ContextOverflow, got.Warnings)
	}
}

// With llama-server's chunk reuse modelled (CacheReuse), a prompt that leaves a message out
// of the history is expected to get the chunk after the gap from the cache too: the expected
// cached tokens are the prefix plus that chunk, ChunkReusedTokens names the chunk's part, and
// the re-read split leaves the chunk out (it adds up to prompt − cached all the same).
func TestAttributorChunkReuse(t *testing.T) {
	t.Parallel()
	long := chat.Message{Role: chat.RoleUser, Content: strings.Repeat("The parser drops the last field. ", 8)}
	first := conversation("You are a coding agent.", answer, result, long)
	// The next request drops the tool call and its result: a gap, then the long message again.
	second := conversation("You are a coding agent.", long)
	for _, tc := range []struct {
		name   string
		reuse  *int
		chunk  bool
		reused *int64
	}{
		{"not modelled", nil, false, nil},
		{"off", new(0), false, new(int64(0))},
		{"on", new(64), true, nil},
	} {
		a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>", CacheReuse: tc.reuse}
		observe(t, a, first, render(first))
		got := observe(t, a, second, "")
		prefix := int64(cachesim.CommonPrefixBytes(render(first), render(second)))
		switch {
		case !tc.chunk && got.ExpectedCachedTokens != prefix:
			t.Errorf("%s: expected %d; want the common prefix %d", tc.name, got.ExpectedCachedTokens, prefix)
		case tc.chunk && got.ExpectedCachedTokens < prefix+int64(len(long.Content)):
			t.Errorf("%s: expected %d; want the prefix %d and the long message's %d bytes at least", tc.name, got.ExpectedCachedTokens, prefix, len(long.Content))
		}
		if tc.reused != nil && (got.ChunkReusedTokens == nil || *got.ChunkReusedTokens != *tc.reused) {
			t.Errorf("%s: ChunkReusedTokens = %v; want %d", tc.name, got.ChunkReusedTokens, *tc.reused)
		}
		if tc.reuse == nil && got.ChunkReusedTokens != nil {
			t.Errorf("%s: ChunkReusedTokens = %d; want nil", tc.name, *got.ChunkReusedTokens)
		}
		if tc.chunk {
			if got.ChunkReusedTokens == nil || *got.ChunkReusedTokens != got.ExpectedCachedTokens-prefix || len(got.ReusedChunks) == 0 {
				t.Errorf("%s: ChunkReusedTokens %v, chunks %v; want %d in chunks", tc.name, got.ChunkReusedTokens, got.ReusedChunks, got.ExpectedCachedTokens-prefix)
			}
		}
		r := got.Split(got.ExpectedCachedTokens, got.PromptTokens)
		if r.Total() != got.PromptTokens-got.ExpectedCachedTokens || r.Unattributed != 0 {
			t.Errorf("%s: Split = %+v (total %d); want %d, none unattributed", tc.name, r, r.Total(), got.PromptTokens-got.ExpectedCachedTokens)
		}
		// The long message lies in the chunk: only its framing and the generation prompt are
		// re-read of it.
		if tc.chunk && r.Message > 16 {
			t.Errorf("%s: %d message tokens re-read; want the long message's reused", tc.name, r.Message)
		}
	}
}

// With the host-memory prompt cache the slot's prompt that a mostly different one replaced is
// saved and comes back when a later prompt extends it: two sessions alternating on one slot.
func TestAttributorHostCache(t *testing.T) {
	t.Parallel()
	long := func(tag string) chat.Message {
		return chat.Message{Role: chat.RoleUser, Content: strings.Repeat(tag+" says the build is red. ", 40)}
	}
	a1 := conversation("You are a coding agent.", long("alice"))
	b1 := conversation("You are a coding agent.", long("bob"))
	a2 := conversation("You are a coding agent.", long("alice"), answer, result)
	shared := int64(cachesim.CommonPrefixBytes(render(a1), render(b1)))
	for _, tc := range []struct {
		name string
		host *cachesim.HostCache
		want int64
	}{
		{"with", &cachesim.HostCache{}, int64(len(render(a1)))},
		{"without", nil, shared},
	} {
		a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>", HostCache: tc.host}
		observe(t, a, a1, "")
		observe(t, a, b1, "")
		got := observe(t, a, a2, "")
		if got.ExpectedCachedTokens != tc.want {
			t.Errorf("%s the host cache: ExpectedCachedTokens = %d; want %d", tc.name, got.ExpectedCachedTokens, tc.want)
		}
	}
}

// After a slot restore the cache holds the saved prompt: the next request reuses its common
// prefix with it; a saved prompt past the slot's context is refused and leaves the cache empty.
func TestAttributorRestoreSlot(t *testing.T) {
	t.Parallel()
	a1 := conversation("You are a coding agent.")
	a2 := conversation("You are a coding agent.", answer, result)
	saved, _ := tinytokenizer.Bytes{}.Encode(cacheText(a1, answer))
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	if err := a.RestoreSlot(saved, 0); err != nil {
		t.Fatal(err)
	}
	got := observe(t, a, a2, "")
	if got.ExpectedCachedTokens != int64(len(saved)) {
		t.Errorf("ExpectedCachedTokens after a restore = %d; want the saved prompt, %d", got.ExpectedCachedTokens, len(saved))
	}
	b := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	observe(t, b, a1, cacheText(a1, answer))
	if err := b.RestoreSlot(saved, len(saved)-1); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("RestoreSlot past the context: %v; want a refusal", err)
	}
	if got := observe(t, b, a2, ""); got.ExpectedCachedTokens != 0 {
		t.Errorf("ExpectedCachedTokens after a refused restore = %d; want 0 (the slot is empty)", got.ExpectedCachedTokens)
	}
}

// A line a practice wrote at the end of the system prompt is found there, not at an earlier
// occurrence of its text: a counter whose line is a bare "3" in a prompt that mentions 3.
func TestPracticeMarkAtTheEnd(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	sys := func(n string) *chat.Request {
		req := conversation("Keep 3 files open at most.\n\n" + n)
		req.Messages[0].Marks = []chat.Mark{{Practice: "counter", Text: n, End: true}}
		return req
	}
	first := sys("3")
	observe(t, a, first, render(first))
	got := observe(t, a, sys("4"), "")
	if got.DivergenceSegment.String() != "counter in system" {
		t.Errorf("diverged at %q; want counter in system", got.DivergenceSegment)
	}
	if want := int64(len("<|im_start|>system\nKeep 3 files open at most.\n\n")); got.ExpectedCachedTokens != want {
		t.Errorf("expected %d cached; want %d, up to the counter", got.ExpectedCachedTokens, want)
	}
}

// Where the last prompt held a practice's text and this one holds other text (a clock line at
// the latest user message that moved on to the next one), the practice names the divergence,
// not the segment that now stands there (the session note).
func TestPracticeTextTheCacheNoLongerMatches(t *testing.T) {
	t.Parallel()
	a := &cachesim.Attributor{Tok: tinytokenizer.Bytes{}, NoteOpen: "<session-note>"}
	line := "Current time: 23:59"
	withLine := conversation("You are a coding agent.")
	u := &withLine.Messages[1]
	text, note := cachesim.SplitNote(u.Content, "<session-note>")
	u.Content, u.Marks = text+"\n\n"+line+note, []chat.Mark{{Practice: "clock", Text: line, End: true}}
	observe(t, a, withLine, render(withLine))
	moved := conversation("You are a coding agent.", chat.Message{Role: chat.RoleAssistant, Content: "Done."},
		chat.Message{Role: chat.RoleUser, Content: "Thanks.\n\n" + line, Marks: []chat.Mark{{Practice: "clock", Text: line, End: true}}})
	got := observe(t, a, moved, "")
	if got.DivergenceSegment.String() != "clock in message 1" {
		t.Errorf("diverged at %q; want clock in message 1, the line the cache held", got.DivergenceSegment)
	}
	if want := int64(strings.Index(render(withLine), line)); got.ExpectedCachedTokens != want { // "\n\n" before the line and the note alike
		t.Errorf("expected %d cached; want %d, up to where the line stood", got.ExpectedCachedTokens, want)
	}
}
