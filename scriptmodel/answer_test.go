package scriptmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"lab/backend/anthropic"
	"lab/backend/ollama"
	"lab/backend/openai"
	"lab/capture"
	"lab/chat"
	"lab/internal/wire"
)

// decoder is the lab's own reader of one API's answers, driven as lab/capture's parsers drive
// them (capture/api.go, newParser): the events of a server-sent event stream, the lines of an
// NDJSON stream, or a whole body.
type decoder interface {
	event(name string, data []byte) (content bool, err error)
	whole(body []byte) error
	end() error
	reply() *chat.Reply
	result() *chat.Result
}

type chatDecoder struct{ c openai.ChatCapture }

func (d *chatDecoder) event(name string, data []byte) (bool, error) {
	if name == "error" {
		return false, errors.New("error event: " + string(data))
	}
	return d.c.Chunk(data)
}
func (d *chatDecoder) whole(b []byte) error { return d.c.Whole(b) }
func (d *chatDecoder) end() error           { return d.c.End() }
func (d *chatDecoder) reply() *chat.Reply   { return d.c.Reply() }
func (d *chatDecoder) result() *chat.Result { return d.c.Result() }

type responsesDecoder struct{ c openai.ResponsesCapture }

func (d *responsesDecoder) event(_ string, data []byte) (bool, error) { return d.c.Event(data) }
func (d *responsesDecoder) whole(b []byte) error                      { return d.c.Whole(b) }
func (d *responsesDecoder) end() error                                { return d.c.End() }
func (d *responsesDecoder) reply() *chat.Reply                        { return d.c.Reply() }
func (d *responsesDecoder) result() *chat.Result                      { return d.c.Result() }

type anthropicDecoder struct{ c anthropic.Capture }

func (d *anthropicDecoder) event(name string, data []byte) (bool, error) {
	return d.c.Event(name, data)
}
func (d *anthropicDecoder) whole(b []byte) error { return d.c.Whole(b) }
func (d *anthropicDecoder) end() error           { return d.c.End() }
func (d *anthropicDecoder) reply() *chat.Reply   { return d.c.Reply() }
func (d *anthropicDecoder) result() *chat.Result { return d.c.Result() }

type ollamaDecoder struct{ c ollama.Capture }

func (d *ollamaDecoder) event(_ string, data []byte) (bool, error) { return d.c.Line(data) }
func (d *ollamaDecoder) whole(b []byte) error {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if _, err := d.c.Line(line); err != nil {
			return err
		}
	}
	return nil
}
func (d *ollamaDecoder) end() error           { return d.c.End() }
func (d *ollamaDecoder) reply() *chat.Reply   { return d.c.Reply() }
func (d *ollamaDecoder) result() *chat.Result { return d.c.Result() }

func newDecoder(api API) decoder {
	switch api {
	case OpenAIChat:
		return &chatDecoder{}
	case OpenAIResponses:
		return &responsesDecoder{}
	case Anthropic:
		return &anthropicDecoder{}
	case OllamaChat:
		return &ollamaDecoder{}
	}
	return nil
}

var apis = []API{OpenAIChat, OpenAIResponses, Anthropic, OllamaChat}

// decode reads a recorded answer with the lab's decoder for api, framed as lab/capture frames it
// (capture.framingOf over chat.SniffAnswer): server-sent events read by wire.ReadEventsIn,
// Ollama's JSON lines (its unstreamed answer one line) by wire.ReadLinesIn, a JSON body whole.
// It checks the form is the one stream asks for and that the decoder found the answer whole.
func decode(t *testing.T, api API, stream bool, rec *httptest.ResponseRecorder) (*chat.Reply, *chat.Result) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", rec.Code)
	}
	body := rec.Body.Bytes()
	head := body[:min(len(body), 64)]
	form := chat.SniffAnswer(rec.Header().Get("Content-Type"), head)
	want := chat.AnswerJSON
	switch {
	case stream && api == OllamaChat:
		want = chat.AnswerLines
	case stream:
		want = chat.AnswerEvents
	}
	if form != want {
		t.Fatalf("answer form %v (Content-Type %q), want %v", form, rec.Header().Get("Content-Type"), want)
	}
	d := newDecoder(api)
	pieces := [][]byte{body}
	var err error
	switch {
	case api == OllamaChat:
		_, err = wire.ReadLinesIn(pieces, func(line []byte, _ int) error {
			_, err := d.event("", line)
			return err
		})
	case form == chat.AnswerEvents:
		_, err = wire.ReadEventsIn(pieces, func(name string, data []byte, _ int) error {
			_, err := d.event(name, data)
			return err
		})
	default:
		err = d.whole(body)
	}
	if err != nil {
		t.Fatalf("decoding: %v\n%s", err, body)
	}
	if err := d.end(); err != nil {
		t.Fatalf("the answer is not whole: %v\n%s", err, body)
	}
	return d.reply(), d.result()
}

// text is long enough to stream in several pieces, with characters of two and three bytes that
// fall across piece boundaries and characters JSON encoders escape for HTML.
const text = "Grüße aus Köln — ünïcödé ✓ ✓ ✓: the file a.go holds <three> functions & one test."

const reasoning = "The user wants the functions of a.go; I should read the file first — ünïcödé ✓."

// kinds are the reply kinds every API and mode is tested with.
var kinds = []struct {
	name  string
	reply *chat.Reply
}{
	{"text", &chat.Reply{Content: text}},
	{"reasoning+text", &chat.Reply{Reasoning: reasoning, Content: text}},
	{"tool calls", &chat.Reply{ToolCalls: []chat.ToolCall{
		{Name: "read_file", Arguments: json.RawMessage(`{"path": "a.go", "line": 3}`)},
		{ID: "given-7", Name: "bash", Arguments: json.RawMessage(`{"command":"go test ./... && echo <ok>","timeout":120}`)},
	}}},
	{"everything", &chat.Reply{Reasoning: reasoning, Content: "Reading it.", ToolCalls: []chat.ToolCall{
		{Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
		{Name: "glob", Arguments: nil},
	}}},
	{"empty", nil},
}

// wantCalls returns the tool calls an API's decoder should read back: the arguments compacted
// ("" as {}) and the ids made in the API's style where the reply has none.
func wantCalls(api API, seed string, r *chat.Reply) []chat.ToolCall {
	if r == nil {
		return nil
	}
	prefix := "call_"
	if api == Anthropic {
		prefix = "toolu_"
	}
	var out []chat.ToolCall
	for i, tc := range r.ToolCalls {
		var b bytes.Buffer
		args := tc.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if err := json.Compact(&b, args); err != nil {
			panic(err)
		}
		id := tc.ID
		if id == "" {
			id = prefix + seed + "_" + string(rune('0'+i))
		}
		out = append(out, chat.ToolCall{ID: id, Name: tc.Name, Arguments: b.Bytes()})
	}
	return out
}

// TestAnswerRoundTrip writes every reply kind in every API, streamed and whole, and reads it
// back with the lab's own decoders: the text, the reasoning, the tool calls (names, arguments,
// ids given and made) and the token counts come back as written.
func TestAnswerRoundTrip(t *testing.T) {
	for _, api := range apis {
		for _, stream := range []bool{true, false} {
			for _, k := range kinds {
				name := string(api) + "/" + map[bool]string{true: "stream", false: "whole"}[stream] + "/" + k.name
				t.Run(name, func(t *testing.T) {
					rec := httptest.NewRecorder()
					a := Answer{Model: "scripted-1", Reply: k.reply, PromptTokens: 1234, CompletionTokens: 56, ID: "s1.step 2"}
					if err := WriteAnswer(rec, api, stream, a); err != nil {
						t.Fatal(err)
					}
					got, res := decode(t, api, stream, rec)
					want := k.reply
					if want == nil {
						want = &chat.Reply{}
					}
					if got.Content != want.Content {
						t.Errorf("content %q, want %q", got.Content, want.Content)
					}
					if got.Reasoning != want.Reasoning {
						t.Errorf("reasoning %q, want %q", got.Reasoning, want.Reasoning)
					}
					calls := wantCalls(api, "s1_step_2", k.reply)
					if len(got.ToolCalls) != len(calls) {
						t.Fatalf("tool calls %+v, want %+v", got.ToolCalls, calls)
					}
					for i, c := range calls {
						g := got.ToolCalls[i]
						// Ollama's decoder re-encodes the arguments object (encoding/json, HTML
						// characters escaped): its bytes are compared as JSON values.
						if g.ID != c.ID || g.Name != c.Name || !sameArgs(api, g.Arguments, c.Arguments) {
							t.Errorf("tool call %d: %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, c.ID, c.Name, c.Arguments)
						}
					}
					if api == Anthropic && want.Reasoning != "" {
						th := []chat.ThinkingBlock{{Text: want.Reasoning, Signature: "sig_s1_step_2"}}
						if !reflect.DeepEqual(got.Thinking, th) {
							t.Errorf("thinking blocks %+v, want %+v", got.Thinking, th)
						}
					}
					if res.PromptTokens != 1234 || res.CompletionTokens != 56 {
						t.Errorf("tokens: prompt %d, completion %d; want 1234, 56 (warnings %q)", res.PromptTokens, res.CompletionTokens, res.Warnings)
					}
					for _, c := range calls {
						if !stream && !strings.Contains(rec.Body.String(), jsonString(api, string(c.Arguments))) {
							t.Errorf("the answer does not carry the arguments %s as written:\n%s", c.Arguments, rec.Body.String())
						}
					}
					if s := rec.Body.String(); !strings.Contains(s, `"scripted-1"`) {
						t.Errorf("the model is not echoed:\n%s", s)
					}
				})
			}
		}
	}
}

// sameArgs reports whether two tool call arguments are the same: the same bytes, or for
// Ollama the same JSON value.
func sameArgs(api API, a, b json.RawMessage) bool {
	if api != OllamaChat {
		return string(a) == string(b)
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// jsonString returns the arguments args as an unstreamed answer of api carries them: a JSON
// string (HTML characters not escaped) in the OpenAI APIs, the object itself in the others.
func jsonString(api API, args string) string {
	if api == OllamaChat || api == Anthropic {
		return args
	}
	b, _ := marshal(args)
	return string(b)
}

// sseEvent is one server-sent event as the framing test splits it.
type sseEvent struct {
	name string
	data []byte
}

// splitSSE splits a body into events by the framing the APIs use: each event its lines (an
// `event:` line where the API names its events, one `data:` line) and a blank line.
func splitSSE(t *testing.T, body string, named bool) []sseEvent {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("the stream does not end with a blank line: %q", body[max(0, len(body)-40):])
	}
	var out []sseEvent
	for i, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		var ev sseEvent
		switch {
		case named && len(lines) == 2 && strings.HasPrefix(lines[0], "event: ") && strings.HasPrefix(lines[1], "data: "):
			ev = sseEvent{strings.TrimPrefix(lines[0], "event: "), []byte(strings.TrimPrefix(lines[1], "data: "))}
		case !named && len(lines) == 1 && strings.HasPrefix(lines[0], "data: "):
			ev = sseEvent{"", []byte(strings.TrimPrefix(lines[0], "data: "))}
		default:
			t.Fatalf("event %d is not framed as `event:`/`data:` lines and a blank line (named %v): %q", i, named, block)
		}
		if string(ev.data) != "[DONE]" && !json.Valid(ev.data) {
			t.Fatalf("event %d: data is not JSON: %s", i, ev.data)
		}
		out = append(out, ev)
	}
	return out
}

func stream(t *testing.T, api API, r *chat.Reply) string {
	t.Helper()
	rec := httptest.NewRecorder()
	if err := WriteAnswer(rec, api, true, Answer{Model: "m", Reply: r, PromptTokens: 10, CompletionTokens: 5, ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.Header().Get("Content-Type"); api != OllamaChat && got != "text/event-stream" {
		t.Fatalf("Content-Type %q", got)
	}
	if !rec.Flushed {
		t.Error("the stream was not flushed")
	}
	return rec.Body.String()
}

func whole(t *testing.T, api API, r *chat.Reply) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	if err := WriteAnswer(rec, api, false, Answer{Model: "m", Reply: r, PromptTokens: 10, CompletionTokens: 5, ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type %q", got)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSSEFraming checks every event stream's framing: `event:` and `data:` lines then a blank
// line for the Responses and Anthropic APIs (the event named as its data's type, Responses'
// sequence numbers counting from 0), `data:` lines only for Chat Completions, ending in
// `data: [DONE]` after the usage chunk.
func TestSSEFraming(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			evs := splitSSE(t, stream(t, OpenAIChat, k.reply), false)
			if last := evs[len(evs)-1]; string(last.data) != "[DONE]" {
				t.Errorf("the last event is %s, want [DONE]", last.data)
			}
			var usage struct {
				Choices []any `json:"choices"`
				Usage   *struct {
					Prompt     int64 `json:"prompt_tokens"`
					Completion int64 `json:"completion_tokens"`
					Total      int64 `json:"total_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(evs[len(evs)-2].data, &usage); err != nil || usage.Choices == nil || len(usage.Choices) != 0 ||
				usage.Usage == nil || usage.Usage.Prompt != 10 || usage.Usage.Completion != 5 || usage.Usage.Total != 15 {
				t.Errorf("the chunk before [DONE] is not a usage chunk with empty choices: %s", evs[len(evs)-2].data)
			}
			for _, api := range []API{OpenAIResponses, Anthropic} {
				for i, ev := range splitSSE(t, stream(t, api, k.reply), true) {
					var d struct {
						Type string `json:"type"`
						Seq  *int   `json:"sequence_number"`
					}
					if err := json.Unmarshal(ev.data, &d); err != nil {
						t.Fatal(err)
					}
					if d.Type != ev.name {
						t.Errorf("%s event %d: named %q, type %q", api, i, ev.name, d.Type)
					}
					if api == OpenAIResponses && (d.Seq == nil || *d.Seq != i) {
						t.Errorf("%s event %d (%s): sequence_number %v, want %d", api, i, d.Type, d.Seq, i)
					}
				}
			}
		})
	}
}

// TestResponsesEvents replays the Responses stream the way the openai-node ResponseStream
// accumulates it (response.created's response the snapshot, output_item.added pushed onto its
// output, content_part.added onto a message, deltas appended at output_index and
// content_index) and checks what Codex reads: output_item.done items of the shapes its
// ResponseItem takes, and a response.completed with an id, the usage it requires, and the
// output the deltas built.
func TestResponsesEvents(t *testing.T) {
	type part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type item struct {
		ID        string  `json:"id"`
		Type      string  `json:"type"`
		Role      string  `json:"role"`
		Content   []part  `json:"content"`
		Summary   []part  `json:"summary"`
		Name      string  `json:"name"`
		CallID    string  `json:"call_id"`
		Arguments *string `json:"arguments"`
	}
	type response struct {
		ID     string  `json:"id"`
		Status string  `json:"status"`
		Output []*item `json:"output"`
		Usage  *struct {
			InputTokens        *int64 `json:"input_tokens"`
			OutputTokens       *int64 `json:"output_tokens"`
			TotalTokens        *int64 `json:"total_tokens"`
			InputTokensDetails *struct {
				CachedTokens *int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			evs := splitSSE(t, stream(t, OpenAIResponses, k.reply), true)
			var snap *response
			var done []*item
			var final *response
			for i, ev := range evs {
				var e struct {
					Type         string    `json:"type"`
					Response     *response `json:"response"`
					Item         *item     `json:"item"`
					Part         *part     `json:"part"`
					OutputIndex  int       `json:"output_index"`
					ContentIndex int       `json:"content_index"`
					SummaryIndex int       `json:"summary_index"`
					Delta        string    `json:"delta"`
				}
				if err := json.Unmarshal(ev.data, &e); err != nil {
					t.Fatal(err)
				}
				if snap == nil {
					if e.Type != "response.created" || e.Response == nil || e.Response.Output == nil || len(e.Response.Output) != 0 {
						t.Fatalf("the first event is not response.created with an empty output: %s", ev.data)
					}
					snap = e.Response
					continue
				}
				if final != nil {
					t.Fatalf("event %d after response.completed: %s", i, ev.data)
				}
				at := func() *item {
					if e.OutputIndex < 0 || e.OutputIndex >= len(snap.Output) {
						t.Fatalf("event %d: missing output at index %d: %s", i, e.OutputIndex, ev.data)
					}
					return snap.Output[e.OutputIndex]
				}
				switch e.Type {
				case "response.output_item.added":
					if e.OutputIndex != len(snap.Output) {
						t.Fatalf("item added at output_index %d, want %d", e.OutputIndex, len(snap.Output))
					}
					if len(e.Item.Content) > 0 || len(e.Item.Summary) > 0 || (e.Item.Arguments != nil && *e.Item.Arguments != "") {
						t.Errorf("an added item is not empty: %s", ev.data)
					}
					snap.Output = append(snap.Output, e.Item)
				case "response.content_part.added":
					it := at()
					if it.Type != "message" || e.ContentIndex != len(it.Content) || e.Part.Text != "" {
						t.Fatalf("content_part.added: %s", ev.data)
					}
					it.Content = append(it.Content, *e.Part)
				case "response.output_text.delta":
					it := at()
					if it.Type != "message" || e.ContentIndex >= len(it.Content) || it.Content[e.ContentIndex].Type != "output_text" {
						t.Fatalf("output_text.delta without its output_text part: %s", ev.data)
					}
					it.Content[e.ContentIndex].Text += e.Delta
				case "response.reasoning_summary_part.added":
					it := at()
					if it.Type != "reasoning" || e.SummaryIndex != len(it.Summary) {
						t.Fatalf("reasoning_summary_part.added: %s", ev.data)
					}
					it.Summary = append(it.Summary, *e.Part)
				case "response.reasoning_summary_text.delta":
					it := at()
					if it.Type != "reasoning" || e.SummaryIndex >= len(it.Summary) {
						t.Fatalf("reasoning_summary_text.delta without its summary part: %s", ev.data)
					}
					it.Summary[e.SummaryIndex].Text += e.Delta
				case "response.function_call_arguments.delta":
					it := at()
					if it.Type != "function_call" || it.Arguments == nil {
						t.Fatalf("function_call_arguments.delta without its function_call: %s", ev.data)
					}
					*it.Arguments += e.Delta
				case "response.output_item.done":
					at()
					if e.OutputIndex != len(done) {
						t.Fatalf("item done at output_index %d, want %d", e.OutputIndex, len(done))
					}
					done = append(done, e.Item)
				case "response.completed":
					final = e.Response
				}
			}
			if final == nil {
				t.Fatal("no response.completed")
			}
			if final.ID == "" || final.Status != "completed" {
				t.Errorf("response.completed: id %q, status %q", final.ID, final.Status)
			}
			u := final.Usage
			if u == nil || u.InputTokens == nil || *u.InputTokens != 10 || u.OutputTokens == nil || *u.OutputTokens != 5 ||
				u.TotalTokens == nil || *u.TotalTokens != 15 || u.InputTokensDetails == nil || u.InputTokensDetails.CachedTokens == nil {
				t.Errorf("response.completed usage: %+v", u)
			}
			if len(final.Output) != len(snap.Output) || len(done) != len(snap.Output) {
				t.Fatalf("%d items added, %d done, %d in response.completed", len(snap.Output), len(done), len(final.Output))
			}
			for i, it := range final.Output {
				// What Codex's ResponseItem needs of each item.
				switch it.Type {
				case "message":
					if it.Role != "assistant" || len(it.Content) == 0 || it.Content[0].Type != "output_text" {
						t.Errorf("message item %d: %+v", i, it)
					}
				case "reasoning":
					if it.ID == "" || it.Summary == nil {
						t.Errorf("reasoning item %d: %+v", i, it)
					}
				case "function_call":
					if it.Name == "" || it.CallID == "" || it.Arguments == nil || !json.Valid([]byte(*it.Arguments)) {
						t.Errorf("function_call item %d: %+v", i, it)
					}
				default:
					t.Errorf("item %d of type %q", i, it.Type)
				}
				// The deltas built what the done events and response.completed carry.
				for _, other := range []*item{done[i], snap.Output[i]} {
					if !reflect.DeepEqual(it.Content, other.Content) || !reflect.DeepEqual(it.Summary, other.Summary) ||
						!reflect.DeepEqual(it.Arguments, other.Arguments) || it.ID != other.ID || it.CallID != other.CallID {
						t.Errorf("item %d: %+v in response.completed, %+v streamed", i, it, other)
					}
				}
			}
			var completed struct {
				Response map[string]any `json:"response"`
			}
			if err := json.Unmarshal(evs[len(evs)-1].data, &completed); err != nil {
				t.Fatal(err)
			}
			w := whole(t, OpenAIResponses, k.reply)
			for _, f := range []string{"id", "status", "model", "output", "usage"} {
				if !reflect.DeepEqual(w[f], completed.Response[f]) {
					t.Errorf("%s: %v unstreamed, %v in response.completed", f, w[f], completed.Response[f])
				}
			}
		})
	}
}

// TestAnthropicEvents replays the Messages stream the way the anthropic-sdk-typescript
// MessageStream accumulates it (message_start's message the snapshot, content_block_start
// pushed onto its content, each delta applied to the block at its index when of the block's
// kind, message_delta's stop_reason and usage.output_tokens) and checks the message it builds
// is the unstreamed answer's.
func TestAnthropicEvents(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var snap map[string]any
			var content []map[string]any
			partial := map[int]string{}
			evs := splitSSE(t, stream(t, Anthropic, k.reply), true)
			for i, ev := range evs {
				var e struct {
					Type         string         `json:"type"`
					Message      map[string]any `json:"message"`
					Index        int            `json:"index"`
					ContentBlock map[string]any `json:"content_block"`
					Delta        map[string]any `json:"delta"`
					Usage        map[string]any `json:"usage"`
				}
				if err := json.Unmarshal(ev.data, &e); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					c, ok := e.Message["content"].([]any)
					if e.Type != "message_start" || !ok || len(c) != 0 || e.Message["usage"] == nil {
						t.Fatalf("the first event is not message_start with empty content and a usage: %s", ev.data)
					}
					snap = e.Message
					continue
				}
				block := func() map[string]any {
					if e.Index < 0 || e.Index >= len(content) {
						t.Fatalf("event %d: no block at index %d: %s", i, e.Index, ev.data)
					}
					return content[e.Index]
				}
				switch e.Type {
				case "content_block_start":
					if e.Index != len(content) {
						t.Fatalf("block started at index %d, want %d", e.Index, len(content))
					}
					empty := map[string]any{"text": map[string]any{"type": "text", "text": ""},
						"thinking": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}
					if typ, _ := e.ContentBlock["type"].(string); typ == "tool_use" {
						if in, ok := e.ContentBlock["input"].(map[string]any); !ok || len(in) != 0 {
							t.Errorf("a tool_use block starts without input {}: %s", ev.data)
						}
					} else if !reflect.DeepEqual(e.ContentBlock, empty[typ]) {
						t.Errorf("a %s block does not start empty: %s", typ, ev.data)
					}
					content = append(content, e.ContentBlock)
				case "content_block_delta":
					b := block()
					kinds := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "thinking", "input_json_delta": "tool_use"}
					dt, _ := e.Delta["type"].(string)
					if kinds[dt] != b["type"] {
						t.Fatalf("a %s to a %s block: %s", dt, b["type"], ev.data)
					}
					switch dt {
					case "text_delta":
						b["text"] = b["text"].(string) + e.Delta["text"].(string)
					case "thinking_delta":
						b["thinking"] = b["thinking"].(string) + e.Delta["thinking"].(string)
					case "signature_delta":
						b["signature"] = e.Delta["signature"]
					case "input_json_delta":
						partial[e.Index] += e.Delta["partial_json"].(string)
					}
				case "content_block_stop":
					block()
				case "message_delta":
					if _, ok := e.Usage["output_tokens"]; !ok {
						t.Fatalf("message_delta without usage.output_tokens: %s", ev.data)
					}
					snap["stop_reason"] = e.Delta["stop_reason"]
					snap["usage"].(map[string]any)["output_tokens"] = e.Usage["output_tokens"]
				case "message_stop":
					if i != len(evs)-1 {
						t.Fatalf("message_stop is event %d of %d", i, len(evs))
					}
				default:
					t.Fatalf("event %d of type %q", i, e.Type)
				}
			}
			for i, js := range partial {
				var input any
				if err := json.Unmarshal([]byte(js), &input); err != nil {
					t.Fatalf("block %d: the input_json_delta pieces are not JSON: %q", i, js)
				}
				content[i]["input"] = input
			}
			built := make([]any, len(content))
			for i, c := range content {
				built[i] = c
			}
			snap["content"] = built
			w := whole(t, Anthropic, k.reply)
			if !reflect.DeepEqual(snap, w) {
				a, _ := json.Marshal(snap)
				b, _ := json.Marshal(w)
				t.Errorf("the streamed message\n%s\nis not the unstreamed one\n%s", a, b)
			}
			want := "end_turn"
			if k.reply != nil && len(k.reply.ToolCalls) > 0 {
				want = "tool_use"
			}
			if w["stop_reason"] != want {
				t.Errorf("stop_reason %v, want %s", w["stop_reason"], want)
			}
		})
	}
}

// TestChatChunks checks the Chat Completions stream against what the AI SDK's openai-compatible
// provider and the openai SDKs need: the role in the first chunk, each tool call's first delta
// with its index, id, type "function" and name, the finish_reason, and several content deltas
// for a long text.
func TestChatChunks(t *testing.T) {
	evs := splitSSE(t, stream(t, OpenAIChat, kinds[3].reply), false)
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Role      *string `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					Index    *int    `json:"index"`
					ID       *string `json:"id"`
					Type     *string `json:"type"`
					Function struct {
						Name      *string `json:"name"`
						Arguments *string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	var cks []chunk
	for _, ev := range evs[:len(evs)-1] {
		var c chunk
		if err := json.Unmarshal(ev.data, &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object %q", c.Object)
		}
		cks = append(cks, c)
	}
	if r := cks[0].Choices[0].Delta.Role; r == nil || *r != "assistant" {
		t.Errorf("the first chunk has no role assistant")
	}
	seen := map[int]bool{}
	for _, c := range cks {
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Fatal("a tool call delta without index")
				}
				if !seen[*tc.Index] {
					seen[*tc.Index] = true
					if tc.ID == nil || *tc.ID == "" || tc.Type == nil || *tc.Type != "function" || tc.Function.Name == nil || *tc.Function.Name == "" {
						t.Errorf("tool call %d's first delta lacks its id, type or name", *tc.Index)
					}
				}
			}
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d tool calls streamed, want 2", len(seen))
	}
	fin := cks[len(cks)-2].Choices[0].FinishReason
	if fin == nil || *fin != "tool_calls" {
		t.Errorf("finish_reason %v, want tool_calls", fin)
	}
	n := 0
	for _, ev := range splitSSE(t, stream(t, OpenAIChat, kinds[0].reply), false) {
		if bytes.Contains(ev.data, []byte(`"delta":{"content":`)) {
			n++
		}
	}
	if n < 3 {
		t.Errorf("a %d-byte text came in %d content deltas, want several", len(text), n)
	}
}

// TestOllamaLines checks each NDJSON line of an Ollama stream: model, created_at, an assistant
// message, done false but on the last line, which has done_reason and the counts.
func TestOllamaLines(t *testing.T) {
	body := stream(t, OllamaChat, kinds[3].reply)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		var m struct {
			Model     string `json:"model"`
			CreatedAt string `json:"created_at"`
			Message   struct {
				Role string `json:"role"`
			} `json:"message"`
			Done       bool   `json:"done"`
			DoneReason string `json:"done_reason"`
			Prompt     int64  `json:"prompt_eval_count"`
			Eval       int64  `json:"eval_count"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		last := i == len(lines)-1
		if m.Model != "m" || m.CreatedAt == "" || m.Message.Role != "assistant" || m.Done != last {
			t.Errorf("line %d: %s", i, l)
		}
		if last && (m.DoneReason != "stop" || m.Prompt != 10 || m.Eval != 5) {
			t.Errorf("done line: %s", l)
		}
	}
}

// TestWriteAnswerBadInput checks that a bad answer is refused before anything is written, the
// error naming the field.
func TestWriteAnswerBadInput(t *testing.T) {
	cases := []struct {
		name string
		api  API
		a    Answer
		want string
	}{
		{"no name", OpenAIChat, Answer{Reply: &chat.Reply{ToolCalls: []chat.ToolCall{{Arguments: json.RawMessage(`{}`)}}}}, "ToolCalls[0] has no Name"},
		{"array args", Anthropic, Answer{Reply: &chat.Reply{ToolCalls: []chat.ToolCall{{Name: "f", Arguments: json.RawMessage(`[1]`)}}}}, "ToolCalls[0] (f): Arguments are not a JSON object"},
		{"bad args", OllamaChat, Answer{Reply: &chat.Reply{ToolCalls: []chat.ToolCall{{Name: "f"}, {Name: "g", Arguments: json.RawMessage(`{"a":`)}}}}, "ToolCalls[1] (g)"},
		{"negative", OpenAIResponses, Answer{PromptTokens: -1}, "negative token count"},
		{"api", API("gemini"), Answer{}, `unknown API "gemini"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			err := WriteAnswer(rec, c.api, true, c.a)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
				t.Errorf("something was written: %q", rec.Body.String())
			}
		})
	}
}

// TestWriteError writes an error in every API's shape and reads it with the lab's decoders,
// which must see an error carrying the message, and with the lab's error reader.
func TestWriteError(t *testing.T) {
	const msg = "the scripted model has no reply for this request"
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, api, http.StatusTooManyRequests, msg)
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			body := rec.Body.Bytes()
			if got := wire.ErrorMessage(body); !strings.Contains(got, msg) {
				t.Errorf("ErrorMessage %q", got)
			}
			d := newDecoder(api)
			err := d.whole(body)
			var ae *chat.APIError
			if !errors.As(err, &ae) || !strings.Contains(ae.Body, msg) {
				t.Errorf("the decoder read %v, want an API error with the message", err)
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			switch api {
			case Anthropic:
				e, _ := m["error"].(map[string]any)
				if m["type"] != "error" || e["type"] != "rate_limit_error" {
					t.Errorf("body %s", body)
				}
			case OllamaChat:
				if m["error"] != msg {
					t.Errorf("body %s", body)
				}
			default:
				e, _ := m["error"].(map[string]any)
				if e["code"] != "rate_limit_exceeded" || e["type"] != "invalid_request_error" {
					t.Errorf("body %s", body)
				}
			}
		})
	}
}

// TestAPINames checks the API names are lab/capture's.
func TestAPINames(t *testing.T) {
	for got, want := range map[API]string{OpenAIChat: capture.APIOpenAIChat, OpenAIResponses: capture.APIOpenAIResponses, Anthropic: capture.APIAnthropic, OllamaChat: capture.APIOllamaChat} {
		if string(got) != want {
			t.Errorf("%q, capture's %q", got, want)
		}
	}
}

// TestPieces checks the cut into stream pieces: at most pieceBytes bytes, whole characters,
// nothing lost.
func TestPieces(t *testing.T) {
	s := strings.Repeat("aé✓", 40)
	ps := pieces(s)
	if len(ps) < 2 || strings.Join(ps, "") != s {
		t.Fatalf("%d pieces, joined %q", len(ps), strings.Join(ps, ""))
	}
	for _, p := range ps {
		if len(p) > pieceBytes || !utf8Valid(p) {
			t.Errorf("piece %q", p)
		}
	}
	if pieces("") != nil {
		t.Error(`pieces("") is not empty`)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
