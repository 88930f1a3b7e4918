package chattemplate

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/backend/ollama"
	"lab/chat"
	"lab/gguf"
)

var update = flag.Bool("update", false, "rewrite testdata/<family>/ from the cached llama-server (with the live test)")

// testCase is one recorded rendering: a request file of testdata/requests (a body the lab sent,
// as lab run --save-requests writes it) and whether the generation prompt is left out.
type testCase struct {
	name, request      string
	noGenerationPrompt bool
	// req, when set, is the request instead of a file (JSON the Ollama dialect would reshape).
	req func() *chat.Request
	// knownDiff, when set, turns llama-server's answer into what Render gives: a difference
	// the engine is known to have (see knownDiffRequest).
	knownDiff func(server string) string
}

// knownDiff is the server's rendering of [knownDiffRequest] with the engine's tojson
// differences applied.
func knownDiff(s string) string {
	return strings.NewReplacer(`: 1.0`, `: 1`, `-0.0`, `-0`, `1000.0`, `1000`, `: 0.0`, `: 0`, "\u2028", `\u2028`, "\u2029", `\u2029`).Replace(s)
}

// cases are the recorded renderings: midnight's first request (system prompt, tools, Think);
// its second without the generation prompt and with Think false; a late request cut to its
// last turn (reasoning and tool calls with integer arguments, tool results, an earlier
// assistant answer); a late request of reasoning-tool-loops cut to its last user message and
// three of its tool calls, one a message (reasoning in each: the one the Llama 3.2 template, which
// refuses two calls in a message, accepts); a short chat without tools (the one Gemma 3's template accepts besides
// the first); [edgeRequest].
var cases = []testCase{
	{name: "midnight-first", request: "midnight-first"},
	{name: "midnight-second-nogen", request: "midnight-second-nothink", noGenerationPrompt: true},
	{name: "midnight-reasoning", request: "midnight-reasoning"},
	{name: "loops-reasoning", request: "loops-reasoning"},
	{name: "chat", request: "chat"},
	{name: "edge", req: edgeRequest},
	{name: "known-diff", req: knownDiffRequest, knownDiff: knownDiff},
}

// edgeRequest is a short conversation whose tool schema and call arguments hold what a JSON
// re-encoding could change: floats, a large integer, null, booleans, keys out of alphabetical
// order, HTML characters, control characters, a slash and a backslash, non-ASCII text.
func edgeRequest() *chat.Request {
	return edgeWith(`{"zeta":0.75,"alpha":[1,2.5,true,null,1e-7,1.5e300],"nested":{"b":"é\"<>&\u001b\b\f\t\n\u007f/\\","a":-0.25},"big":10000000000}`,
		`{"type":"object","properties":{"zeta":{"type":"number","minimum":0.001,"maximum":3.25,"default":0.5},"alpha":{"type":"array"},"nested":{"type":"object"},"big":{"type":"integer"}},"required":["zeta"]}`)
}

// knownDiffRequest is [edgeRequest] with what the engine's tojson writes otherwise than
// llama.cpp's: floats whose value is an integer (1.0, 0.0, -0.0, 1e3; llama.cpp "1.0", the
// engine "1") and U+2028, U+2029 (llama.cpp raw, the engine escaped "\u2028"); [knownDiff]
// turns the server's answer into the engine's.
func knownDiffRequest() *chat.Request {
	return edgeWith(`{"zeta":1.0,"alpha":[1,-0.0,1e3],"s":"a\u2028b\u2029c"}`,
		`{"type":"object","properties":{"zeta":{"type":"number","minimum":0.0,"maximum":1e3}}}`)
}

func edgeWith(args, params string) *chat.Request {
	return &chat.Request{Think: true, Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "Système: naïve café ✓ 世界"},
		{Role: chat.RoleUser, Content: "Use the tool."},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "probe", Arguments: json.RawMessage(args)}}},
		{Role: chat.RoleTool, Content: "ok ✓", ToolCallID: "call_1", ToolName: "probe"},
		{Role: chat.RoleUser, Content: "Again?"},
	}, Tools: []chat.Tool{{Name: "probe", Description: "Probe — a tool with ünïcode", Parameters: json.RawMessage(params)}}}
}

// requestFor is the case's request.
func (c testCase) requestFor(t *testing.T) *chat.Request {
	if c.req != nil {
		return c.req()
	}
	return readRequest(t, c.request)
}

// recordedTokens is testdata/<family>/tokens.json: the GGUF's special tokens, and the day the
// answers were recorded on (YYYY-MM-DD, the server's clock; a template that writes the date,
// Llama 3.2's, renders it).
type recordedTokens struct {
	BOS    string `json:"bos_token"`
	EOS    string `json:"eos_token"`
	AddBOS bool   `json:"add_bos_token"`
	Today  string `json:"today,omitempty"`
}

func readRequest(t *testing.T, name string) *chat.Request {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "requests", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := ollama.DecodeChatRequest(body)
	if err != nil {
		t.Fatalf("testdata/requests/%s.json: %v", name, err)
	}
	return req
}

// readFamily returns the family's recorded template ("" when the model has none), tokens and
// the time of the recording (noon of its day in UTC; the zero time when none is recorded).
func readFamily(t *testing.T, fam gguf.Family) (string, Tokens, time.Time) {
	t.Helper()
	dir := filepath.Join("testdata", string(fam))
	src, err := os.ReadFile(filepath.Join(dir, "template.jinja"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tok recordedTokens
	if err := json.Unmarshal(b, &tok); err != nil {
		t.Fatalf("%s/tokens.json: %v", dir, err)
	}
	var day time.Time
	if tok.Today != "" {
		if day, err = time.Parse(time.DateOnly, tok.Today); err != nil {
			t.Fatalf("%s/tokens.json: today: %v", dir, err)
		}
		day = day.Add(12 * time.Hour)
	}
	return string(src), Tokens{BOS: tok.BOS, EOS: tok.EOS, AddBOS: tok.AddBOS}, day
}

// readRecorded returns what llama-server answered for the case: the prompt, or its error.
func readRecorded(t *testing.T, fam gguf.Family, c testCase) (prompt, serverErr string) {
	t.Helper()
	dir := filepath.Join("testdata", string(fam))
	if b, err := os.ReadFile(filepath.Join(dir, c.name+".txt")); err == nil {
		return string(b), ""
	}
	b, err := os.ReadFile(filepath.Join(dir, c.name+".err"))
	if err != nil {
		t.Fatalf("%s: neither %s.txt nor %s.err is recorded (run the live test with -update)", dir, c.name, c.name)
	}
	return "", string(b)
}

// TestRenderMatchesRecordedLlamaServer renders every case with every family's template and
// compares with what the cached llama-server's /apply-template answered (testdata), byte for
// byte; where the server refused the conversation (Gemma 3's template raises on tool messages),
// Render must fail too.
func TestRenderMatchesRecordedLlamaServer(t *testing.T) {
	for _, fam := range gguf.Families() {
		t.Run(string(fam), func(t *testing.T) {
			src, tok, day := readFamily(t, fam)
			tmpl, err := Compile(src, tok)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				want, serverErr := readRecorded(t, fam, c)
				if c.knownDiff != nil {
					want = c.knownDiff(want)
				}
				got, err := tmpl.Render(c.requestFor(t), Options{NoGenerationPrompt: c.noGenerationPrompt, Now: day})
				switch {
				case serverErr != "" && err == nil:
					t.Errorf("%s: rendered %d bytes; llama-server refused it: %s", c.name, len(got), serverErr)
				case serverErr == "" && err != nil:
					t.Errorf("%s: %v", c.name, err)
				case got != want:
					t.Errorf("%s: %s", c.name, firstDiff(got, want))
				}
			}
		})
	}
}

// firstDiff describes where got first differs from want, with a little context.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-60)
	return "differs from llama-server at byte " + itoa(i) + " (got " + itoa(len(got)) + " bytes, want " + itoa(len(want)) + ")\n got: " +
		quote(got[lo:min(len(got), i+100)]) + "\nwant: " + quote(want[lo:min(len(want), i+100)])
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
func itoa(n int) string     { b, _ := json.Marshal(n); return string(b) }

func TestChatMLFallback(t *testing.T) {
	tmpl, err := Compile("", Tokens{BOS: "<|startoftext|>", EOS: "<|return|>"})
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Source() != ChatML {
		t.Fatalf("Source() = %q; want ChatML", tmpl.Source())
	}
	got, err := tmpl.Render(&chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "S"}, {Role: chat.RoleUser, Content: "U"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
}

// TestContextShape checks the variables a template sees: arguments as an ordered object with
// integers kept, reasoning_content only when there is reasoning, tools absent without tools,
// kwargs overriding enable_thinking, and the BOS strip only with AddBOS.
func TestContextShape(t *testing.T) {
	const src = "{{ bos_token }}{% for m in messages %}{{ m | tojson }};{% endfor %}" +
		"{{ tools is defined }}|{{ enable_thinking }}|{{ add_generation_prompt }}|{{ extra }}"
	req := &chat.Request{Think: true, Messages: []chat.Message{
		{Role: chat.RoleUser, Content: "hi"},
		{Role: chat.RoleAssistant, Reasoning: "r", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a","offset":16}`)}}},
		{Role: chat.RoleTool, Content: "ok", ToolCallID: "c1", ToolName: "read"},
		{Role: chat.RoleAssistant, Content: "done"},
	}}
	tmpl, err := Compile(src, Tokens{BOS: "<s>", AddBOS: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(req, Options{NoGenerationPrompt: true, Kwargs: map[string]any{"enable_thinking": false, "extra": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "user", "content": "hi"};` +
		`{"role": "assistant", "content": "", "reasoning_content": "r", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": {"path": "a", "offset": 16}}}]};` +
		`{"role": "tool", "content": "ok", "tool_call_id": "c1"};` +
		`{"role": "assistant", "content": "done"};` +
		"False|False|False|x"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	tmpl, err = Compile(src, Tokens{BOS: "<s>"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Render(req, Options{}); err != nil || !strings.HasPrefix(got, "<s>{") {
		t.Errorf("without AddBOS the template's BOS stays: got %.10q, %v", got, err)
	}
}

func TestRenderErrors(t *testing.T) {
	tmpl, err := Compile(ChatML, Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		msgs []chat.Message
		want string
	}{
		{"call without id", []chat.Message{{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{Name: "read"}}}}, "message 0: tool call 0 needs an id"},
		{"arguments not an object", []chat.Message{{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c", Name: "read", Arguments: json.RawMessage(`[1]`)}}}}, "message 0: tool call 0 (read): arguments are not a JSON object"},
		{"tool without call id", []chat.Message{{Role: chat.RoleUser}, {Role: chat.RoleTool, Content: "x"}}, "message 1: a tool message needs the tool_call_id"},
		{"unknown role", []chat.Message{{Role: "narrator"}}, `message 0: unknown role "narrator"`},
	} {
		if _, err := tmpl.Render(&chat.Request{Messages: tc.msgs}, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := tmpl.Render(&chat.Request{Tools: []chat.Tool{{Name: "read", Parameters: json.RawMessage(`{"type":`)}}}, Options{}); err == nil || !strings.Contains(err.Error(), "tool read: parameters are not JSON") {
		t.Errorf("bad parameters: error %v", err)
	}
	bad, err := Compile("{{ raise_exception('no tools here') }}", Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Render(&chat.Request{}, Options{}); err == nil || !strings.Contains(err.Error(), "no tools here") {
		t.Errorf("raise_exception: error %v; want the template's message", err)
	}
	if _, err := Compile("{% if %}", Tokens{}); err == nil {
		t.Error("Compile of a broken template: no error")
	}
}

// TestDateFollowsNow renders Llama 3.2's recorded template a second before and at midnight:
// the "Today Date" header of the system prompt is the day of Options.Now, so a conversation
// that crosses midnight changes its system prompt, as llama-server's does (its strftime_now
// formats its clock in its local time zone: TZ=Pacific/Kiritimati gave the next day's date).
func TestDateFollowsNow(t *testing.T) {
	src, tok, _ := readFamily(t, gguf.Llama32)
	tmpl, err := Compile(src, tok)
	if err != nil {
		t.Fatal(err)
	}
	req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleSystem, Content: "S"}, {Role: chat.RoleUser, Content: "U"}}}
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 12, 3, 23, 59, 59, 0, time.UTC), "Today Date: 03 Dec 2026\n\nS<|eot_id|>"},
		{time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), "Today Date: 04 Dec 2026\n\nS<|eot_id|>"},
		{time.Date(2027, 1, 9, 8, 0, 0, 0, time.FixedZone("X", -10*3600)), "Today Date: 09 Jan 2027\n\nS<|eot_id|>"},
	} {
		got, err := tmpl.Render(req, Options{Now: tc.now})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, "Cutting Knowledge Date: December 2023\n"+tc.want) {
			t.Errorf("Now %v: got %q; want it to hold %q", tc.now, got, tc.want)
		}
	}
}

func TestStrftime(t *testing.T) {
	at := time.Date(2026, 3, 7, 14, 5, 9, 0, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":          "07 Mar 2026",
		"%Y-%m-%d %H:%M:%S": "2026-03-07 14:05:09",
		"%A %B %e, %y":      "Saturday March  7, 26",
		"%a %I%p %j %Z %%":  "Sat 02PM 066 UTC %",
		"%q and %":          "%q and %",
	} {
		if got := Strftime(at, format); got != want {
			t.Errorf("Strftime(%q) = %q; want %q", format, got, want)
		}
	}
}

// TestIndentedToJSON checks tojson(indent=N) against the layout llama.cpp and Python write:
// keys in their order (the engine's own indented tojson sorts them), &, < and > raw, empty
// containers as [] and {}, scalars as the engine's compact tojson, and the compact form
// untouched.
func TestIndentedToJSON(t *testing.T) {
	tmpl, err := Compile(`{{ tools[0] | tojson(indent=2) }}|{{ tools[0].function.name | tojson }}|{{ tools[0] | tojson }}`, Tokens{})
	if err != nil {
		t.Fatal(err)
	}
	req := &chat.Request{Tools: []chat.Tool{{Name: "z<&>", Parameters: json.RawMessage(`{"type":"object","required":[],"properties":{"b":{"type":"integer","minimum":1.5},"a":{}},"n":null,"t":true}`)}}}
	got, err := tmpl.Render(req, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"type\": \"function\",\n  \"function\": {\n    \"name\": \"z<&>\",\n    \"parameters\": {\n      \"type\": \"object\",\n      \"required\": [],\n" +
		"      \"properties\": {\n        \"b\": {\n          \"type\": \"integer\",\n          \"minimum\": 1.5\n        },\n        \"a\": {}\n      },\n" +
		"      \"n\": null,\n      \"t\": true\n    }\n  }\n}" +
		`|"z<&>"|{"type": "function", "function": {"name": "z<&>", "parameters": {"type": "object", "required": [], "properties": {"b": {"type": "integer", "minimum": 1.5}, "a": {}}, "n": null, "t": true}}}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := Compile(`{{ 1 | tojson(indent=-1) }}`, Tokens{}); err != nil {
		t.Fatal(err)
	}
	bad, _ := Compile(`{{ 1 | tojson(indent="x") }}`, Tokens{})
	if _, err := bad.Render(&chat.Request{}, Options{}); err == nil || !strings.Contains(err.Error(), "indent must be a non-negative integer") {
		t.Errorf("indent \"x\": error %v", err)
	}
}
