package llamacpp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"lab/chat"
)

// rendered is what the fake server's /apply-template answers.
const rendered = "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\ngo<|im_end|>\n<|im_start|>assistant\n<think>\n"

// call is one request the fake server received.
type call struct {
	Method, Path, Query, Auth string
	Body                      []byte
}

// fake answers like llama-server, from the files in testdata. Zero fields give the defaults.
type fake struct {
	t *testing.T
	// chat is the testdata file /v1/chat/completions answers with (an .sse file is sent as an
	// event stream, a .json file as application/json), status its status (200 when 0).
	chat   string
	status int
	// chatType and chatBody, when chatType is set, are the /v1/chat/completions answer instead
	// of chat's file.
	chatType, chatBody string
	// slots is the status of GET /slots (200 when 0) and erase that of an erase (200 when 0).
	slots, erase int
	// echoAuth makes every answer a 401 that echoes the Authorization header.
	echoAuth bool
	// render, when set, is what /apply-template answers for a request body; nil answers the
	// constant rendered.
	render func(body []byte) string
	// bos, when set, is the start token's piece /tokenize gives an empty text with add_special
	// (a model that adds a BOS); unset, an empty text has no tokens.
	bos string

	mu    sync.Mutex
	calls []call
}

func (f *fake) file(name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	body.ReadFrom(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, call{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), body.Bytes()})
	f.mu.Unlock()
	if f.echoAuth {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"code":401,"message":"Invalid API Key: %s","type":"authentication_error"}}`, r.Header.Get("Authorization"))
		return
	}
	answer := func(status int, name string) {
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(f.file(name))
	}
	switch {
	case r.URL.Path == "/apply-template":
		w.Header().Set("Content-Type", "application/json")
		if f.render != nil {
			json.NewEncoder(w).Encode(map[string]string{"prompt": f.render(body.Bytes())})
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"prompt": rendered})
	case r.URL.Path == "/v1/chat/completions":
		if f.chatType != "" {
			w.Header().Set("Content-Type", f.chatType)
			io.WriteString(w, f.chatBody)
			return
		}
		if strings.HasSuffix(f.chat, ".json") {
			answer(f.status, f.chat)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(f.file(f.chat))
	case r.URL.Path == "/completion":
		answer(0, "completion.json")
	case r.URL.Path == "/slots" && r.Method == http.MethodGet:
		if f.slots == http.StatusNotImplemented {
			answer(f.slots, "error_501_slots.json")
			return
		}
		answer(f.slots, "slots.json")
	case strings.HasPrefix(r.URL.Path, "/slots/") && r.Method == http.MethodPost:
		if f.erase == http.StatusNotImplemented {
			answer(f.erase, "error_501_slot_action.json")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id_slot":%s,"n_erased":1745}`, strings.TrimPrefix(r.URL.Path, "/slots/"))
	case r.URL.Path == "/props":
		answer(0, "props.json")
	case r.URL.Path == "/tokenize":
		var req map[string]any
		json.Unmarshal(body.Bytes(), &req)
		if req["content"] == "pieces" {
			answer(0, "tokenize_pieces.json")
			return
		}
		if req["content"] == "" && req["add_special"] == true {
			w.Header().Set("Content-Type", "application/json")
			if f.bos == "" {
				io.WriteString(w, `{"tokens":[]}`)
				return
			}
			b, _ := json.Marshal(map[string]any{"tokens": []map[string]any{{"id": 128000, "piece": f.bos}}})
			w.Write(b)
			return
		}
		answer(0, "tokenize.json")
	default:
		http.NotFound(w, r)
	}
}

func (f *fake) got() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// start serves f on loopback and returns a client for it.
func start(t *testing.T, f *fake, opts Options) *Client {
	t.Helper()
	f.t = t
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	opts.BaseURL = srv.URL
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request() *chat.Request {
	return &chat.Request{
		Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: "sys"},
			{Role: chat.RoleUser, Content: "go"},
			{Role: chat.RoleAssistant, Reasoning: "Look at a.go.", ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}}},
			{Role: chat.RoleTool, ToolCallID: "call_1", ToolName: "read_file", Content: "package a // i < n"},
		},
		Tools: []chat.Tool{{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
		Think: true,
	}
}

func ptr(n int64) *int64 { return &n }

func TestNewRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, url, keyFile, want string }{
		{"empty", "", "", "Options.BaseURL"},
		{"no scheme", "127.0.0.1:8080", "", "Options.BaseURL"},
		{"ftp", "ftp://127.0.0.1:8080", "", "Options.BaseURL"},
		{"no host", "http://", "", "Options.BaseURL"},
		{"missing key file", "http://127.0.0.1:8080", filepath.Join(t.TempDir(), "none"), "Options.KeyFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Options{BaseURL: tc.url, KeyFile: tc.keyFile})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%q, %q) = %v; want an error naming %s", tc.url, tc.keyFile, err, tc.want)
			}
		})
	}
	c, err := New(Options{BaseURL: "http://127.0.0.1:8080/v1/"})
	if err != nil || c.URL() != "http://127.0.0.1:8080" {
		t.Errorf("New(.../v1/) URL = %q, %v; want http://127.0.0.1:8080", c.URL(), err)
	}
}

func TestChatBody(t *testing.T) {
	t.Parallel()
	c, _ := New(Options{BaseURL: "http://127.0.0.1:1", Model: "qwen3", Slot: 2, ChatTemplateKwargs: map[string]any{"preserve_thinking": true}})
	b, err := c.ChatBody(request())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": "qwen3", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_tokens": 1.0, "temperature": 0.0, "cache_prompt": true, "id_slot": 2.0,
		"chat_template_kwargs": map[string]any{"preserve_thinking": true, "enable_thinking": true},
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("body %s = %#v; want %#v", k, got[k], v)
		}
	}
	msgs := got["messages"].([]any)
	if a := msgs[2].(map[string]any); a["reasoning_content"] != "Look at a.go." {
		t.Errorf("assistant message = %v; want reasoning_content", a)
	}
	tools := got["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "read_file" || fn["parameters"].(map[string]any)["type"] != "object" {
		t.Errorf("tool = %v", tools[0])
	}
	if !bytes.Contains(b, []byte("i < n")) {
		t.Errorf("body escapes HTML characters: %s", b)
	}

	// enable_thinking follows Think unless the options set it.
	r := request()
	r.Think = false
	b, _ = c.ChatBody(r)
	if !bytes.Contains(b, []byte(`"enable_thinking":false`)) {
		t.Errorf("Think false: body %s lacks enable_thinking false", b)
	}
	c2, _ := New(Options{BaseURL: "http://127.0.0.1:1", ChatTemplateKwargs: map[string]any{"enable_thinking": false}})
	b, _ = c2.ChatBody(request())
	if !bytes.Contains(b, []byte(`"enable_thinking":false`)) || bytes.Contains(b, []byte(`"model"`)) {
		t.Errorf("options' enable_thinking false overridden, or an empty model sent: %s", b)
	}

	bad := request()
	bad.Tools[0].Parameters = json.RawMessage(`{"type":`)
	if _, err := c.ChatBody(bad); err == nil || !strings.Contains(err.Error(), "read_file") {
		t.Errorf("ChatBody(bad parameters) = %v; want an error naming the tool", err)
	}
	bad = request()
	bad.Messages[3].ToolCallID = ""
	if _, err := c.ChatBody(bad); err == nil || !strings.Contains(err.Error(), "message 3") {
		t.Errorf("ChatBody(tool message without id) = %v; want an error naming message 3", err)
	}
}

func qwenOutput(r *chat.Reply) string {
	return r.Reasoning + "\n</think>\n\n" + r.Content + "<|im_end|>"
}

func TestSend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		chat     string
		prompt   int64
		cached   *int64
		compl    int64
		prefill  time.Duration
		usage    *chat.Usage
		warnings []string // substrings, one per warning, in order
	}{
		{
			name: "streamed text", chat: "stream_text.sse", prompt: 237, cached: ptr(200), compl: 1, prefill: 412500 * time.Microsecond,
			usage: &chat.Usage{Prompt: ptr(237), CachedRead: ptr(200), Uncached: ptr(37), Generated: ptr(1), Fields: map[chat.UsageField]string{
				chat.UsagePrompt: "usage.prompt_tokens", chat.UsageCachedRead: "timings.cache_n", chat.UsageUncached: "timings.prompt_n", chat.UsageGenerated: "usage.completion_tokens"}},
		},
		{
			name: "reasoning and tool calls, cached_tokens in usage", chat: "stream_reasoning_tools.sse", prompt: 4120, cached: ptr(4096), compl: 35, prefill: 30958 * time.Microsecond,
			usage: &chat.Usage{Prompt: ptr(4120), CachedRead: ptr(4096), Uncached: ptr(24), Generated: ptr(35), ReasoningGenerated: ptr(6), Fields: map[chat.UsageField]string{
				chat.UsagePrompt: "usage.prompt_tokens", chat.UsageCachedRead: "timings.cache_n", chat.UsageUncached: "timings.prompt_n", chat.UsageGenerated: "usage.completion_tokens",
				chat.UsageReasoningGenerated: "usage.completion_tokens_details.reasoning_tokens"}},
		},
		{
			name: "no usage chunk: figures from timings", chat: "stream_no_usage.sse", prompt: 512, cached: ptr(0), compl: 1, prefill: 2048 * time.Millisecond,
			usage: &chat.Usage{Prompt: ptr(512), CachedRead: ptr(0), Uncached: ptr(512), Generated: ptr(1), Fields: map[chat.UsageField]string{
				chat.UsagePrompt: "timings.cache_n+timings.prompt_n", chat.UsageCachedRead: "timings.cache_n", chat.UsageUncached: "timings.prompt_n", chat.UsageGenerated: "timings.predicted_n"}},
			warnings: []string{"no usage chunk"},
		},
		{
			name: "neither usage nor timings: unknown, not 0", chat: "stream_bare.sse",
			warnings: []string{"carried no usage", "no timings", "cached tokens unknown"},
		},
		{
			name: "whole answer", chat: "whole.json", prompt: 237, cached: ptr(236), compl: 35, prefill: 30958 * time.Microsecond,
			usage: &chat.Usage{Prompt: ptr(237), CachedRead: ptr(236), Uncached: ptr(1), Generated: ptr(35), Fields: map[chat.UsageField]string{
				chat.UsagePrompt: "usage.prompt_tokens", chat.UsageCachedRead: "timings.cache_n", chat.UsageUncached: "timings.prompt_n", chat.UsageGenerated: "usage.completion_tokens"}},
			warnings: []string{"time to first token unknown"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{chat: tc.chat}
			c := start(t, f, Options{Output: qwenOutput})
			reply := &chat.Reply{Reasoning: "Think.", Content: "Done."}
			res, err := c.Send(context.Background(), request(), reply)
			if err != nil {
				t.Fatal(err)
			}
			if res.PromptTokens != tc.prompt || res.CompletionTokens != tc.compl || res.Prefill != tc.prefill {
				t.Errorf("prompt, completion, prefill = %d, %d, %v; want %d, %d, %v", res.PromptTokens, res.CompletionTokens, res.Prefill, tc.prompt, tc.compl, tc.prefill)
			}
			switch {
			case tc.cached == nil && res.CachedTokens != nil:
				t.Errorf("CachedTokens = %d; want nil (unknown)", *res.CachedTokens)
			case tc.cached != nil && (res.CachedTokens == nil || *res.CachedTokens != *tc.cached || res.CachedSource != chat.SourceResponse):
				t.Errorf("CachedTokens = %v (%q); want %d from the response", res.CachedTokens, res.CachedSource, *tc.cached)
			}
			if !reflect.DeepEqual(res.Usage, tc.usage) {
				t.Errorf("Usage = %+v; want %+v", res.Usage, tc.usage)
			}
			if len(res.Warnings) != len(tc.warnings) {
				t.Fatalf("Warnings = %q; want %d matching %q", res.Warnings, len(tc.warnings), tc.warnings)
			}
			for i, w := range tc.warnings {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning %d = %q; want it to mention %q", i, res.Warnings[i], w)
				}
			}
			if res.Rendered != rendered {
				t.Errorf("Rendered = %q; want the /apply-template prompt", res.Rendered)
			}
			wantCache := rendered + "Think.\n</think>\n\nDone.<|im_end|>"
			if res.CacheText != wantCache {
				t.Errorf("CacheText = %q; want %q", res.CacheText, wantCache)
			}
			// A whole (unstreamed) answer has no time to first token.
			if unstreamed := strings.HasSuffix(tc.chat, ".json"); (res.TTFT > 0) == unstreamed || res.Total <= 0 || res.Total < res.TTFT {
				t.Errorf("TTFT %v, Total %v: want 0 < TTFT <= Total for a stream, TTFT 0 for a whole answer", res.TTFT, res.Total)
			}

			calls := f.got()
			var paths []string
			for _, c := range calls {
				paths = append(paths, c.Path)
			}
			if want := []string{"/apply-template", "/v1/chat/completions", "/completion"}; !reflect.DeepEqual(paths, want) {
				t.Fatalf("requests = %v; want %v", paths, want)
			}
			// /apply-template renders the very body the chat request carries.
			if !bytes.Equal(calls[0].Body, calls[1].Body) || !bytes.Equal(calls[1].Body, res.Body) || res.RequestBytes != int64(len(res.Body)) {
				t.Errorf("apply-template body, chat body and Result.Body differ")
			}
			var em map[string]any
			if err := json.Unmarshal(calls[2].Body, &em); err != nil {
				t.Fatal(err)
			}
			if em["prompt"] != wantCache || em["n_predict"] != 0.0 || em["cache_prompt"] != true || em["id_slot"] != 0.0 {
				t.Errorf("emulation request = %v; want the cache text, n_predict 0, cache_prompt, id_slot 0", em)
			}
		})
	}
}

func TestReadStreamAssemblesTheMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want completion
	}{
		{"stream_text.sse", completion{Content: "Hello", FinishReason: "length", Done: true}},
		{"stream_reasoning_tools.sse", completion{Reasoning: "Look at a.go.", FinishReason: "tool_calls", Done: true,
			ToolCalls: []chat.ToolCall{{ID: "call_a1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		firsts := 0
		got, err := readStream(bytes.NewReader(b), func() { firsts++ })
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		got.figures, got.timings = nil, false
		if !reflect.DeepEqual(*got, tc.want) || firsts != 1 {
			t.Errorf("%s: readStream = %+v, first called %d times; want %+v, once", tc.file, *got, firsts, tc.want)
		}
	}
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, chat string
		status     int
		want       int
		msg        string
	}{
		// A prompt past the window: the row's error names the prompt's tokens and the window.
		{"4xx body", "error_400.json", http.StatusBadRequest, 400, "the prompt (41234 tokens) does not fit llama-server's context window of 40960 tokens"},
		{"4xx body, the server's words kept", "error_400.json", http.StatusBadRequest, 400, "try increasing it (exceed_context_size_error)"},
		{"error event", "stream_error.sse", 0, 400, "exceeds the available context size"},
		{"error in a data chunk", "stream_error_data.sse", 0, 500, "Failed to decode the batch (server_error)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{chat: tc.chat, status: tc.status}
			c := start(t, f, Options{Output: qwenOutput})
			res, err := c.Send(context.Background(), request(), &chat.Reply{Content: "x"})
			var ae *chat.APIError
			if !errors.As(err, &ae) || ae.StatusCode != tc.want || !strings.Contains(ae.Body, tc.msg) || ae.Backend != "llamacpp" ||
				!strings.HasSuffix(ae.URL, "/v1/chat/completions") {
				t.Fatalf("Send = %#v; want a *chat.APIError %d at .../v1/chat/completions with %q", err, tc.want, tc.msg)
			}
			if res == nil || res.Rendered != rendered {
				t.Errorf("the result so far is lost: %+v", res)
			}
			for _, c := range f.got() {
				if c.Path == "/completion" {
					t.Error("emulated a generation after a failed request")
				}
			}
		})
	}
	// A body that is not JSON is quoted and cut.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>"+strings.Repeat("x", 2000)+"</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := New(Options{BaseURL: srv.URL})
	_, err := c.Send(context.Background(), request(), nil)
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 502 || !strings.HasPrefix(ae.Body, `"<html>xxx`) || len(ae.Body) > 600 {
		t.Errorf("Send(HTML 502) = %v; want a quoted, cut body", err)
	}
}

// qwen3Template renders a /v1/chat/completions body as the Qwen3 GGUF's own chat template does
// on llama-server b11669 (seen with /apply-template): an assistant message after the last user
// query renders "<think>\n{reasoning}\n</think>\n\n" when it has reasoning, its text, each tool
// call on a line of its own with the arguments re-spaced, and <|im_end|>; the generation prompt
// is "<|im_start|>assistant\n" with no think block.
func qwen3Template(body []byte) string {
	var b struct {
		Messages []struct {
			Role             string `json:"role"`
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		AddGenerationPrompt *bool `json:"add_generation_prompt"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return "bad body: " + err.Error()
	}
	var out strings.Builder
	for _, m := range b.Messages {
		switch m.Role {
		case "assistant":
			out.WriteString("<|im_start|>assistant\n")
			if m.ReasoningContent != "" {
				out.WriteString("<think>\n" + m.ReasoningContent + "\n</think>\n\n")
			}
			out.WriteString(m.Content)
			for i, tc := range m.ToolCalls {
				if i > 0 || m.Content != "" {
					out.WriteString("\n")
				}
				args := strings.NewReplacer(`":`, `": `, `,"`, `, "`).Replace(tc.Function.Arguments)
				out.WriteString("<tool_call>\n{\"name\": \"" + tc.Function.Name + "\", \"arguments\": " + args + "}\n</tool_call>")
			}
			out.WriteString("<|im_end|>\n")
		case "tool":
			out.WriteString("<|im_start|>user\n<tool_response>\n" + m.Content + "\n</tool_response><|im_end|>\n")
		default:
			out.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		}
	}
	if b.AddGenerationPrompt == nil || *b.AddGenerationPrompt {
		out.WriteString("<|im_start|>assistant\n")
	}
	return out.String()
}

// Without an Output function the scripted reply is written as the server's own template renders
// it in history: after the emulation the slot's cache holds exactly what the next request's
// rendering starts with, through the reply's <|im_end|>, for a reply with tool calls and for a
// final one.
func TestReplyTextFromTheServersTemplate(t *testing.T) {
	t.Parallel()
	for _, reply := range []*chat.Reply{
		{Reasoning: "Read b.go too.", Content: "Reading.", ToolCalls: []chat.ToolCall{{ID: "call_2", Name: "read_file", Arguments: json.RawMessage(`{"path":"b.go","n":1}`)}}},
		{Reasoning: "Done.", Content: "It is in a.go."},
		{Content: "No reasoning."},
	} {
		f := &fake{chat: "stream_text.sse", render: qwen3Template}
		c := start(t, f, Options{})
		req := request()
		res, err := c.Send(context.Background(), req, reply)
		if err != nil {
			t.Fatal(err)
		}
		var fills []string
		for _, cl := range f.got() {
			if cl.Path == "/completion" {
				var cr completionRequest
				json.Unmarshal(cl.Body, &cr)
				fills = append(fills, cr.Prompt)
			}
		}
		if len(fills) != 1 || fills[0] != res.CacheText {
			t.Fatalf("reply %+v: fills %q, CacheText %q; want one, the CacheText", reply, fills, res.CacheText)
		}
		next := request()
		next.Messages = append(next.Messages, chat.Message{Role: chat.RoleAssistant, Reasoning: reply.Reasoning, Content: reply.Content, ToolCalls: reply.ToolCalls},
			chat.Message{Role: chat.RoleTool, ToolCallID: "call_2", ToolName: "read_file", Content: "package b"})
		body, _ := c.ChatBody(next)
		want := qwen3Template(body)
		want = want[:strings.Index(want, "<|im_start|>user\n<tool_response>\npackage b")]
		if want = strings.TrimSuffix(want, "\n"); res.CacheText != want {
			t.Errorf("reply %+v: the cache holds\n%q\nwant the next request's rendering up to the reply's end\n%q", reply, res.CacheText, want)
		}
		if !strings.HasPrefix(res.CacheText, res.Rendered) || len(res.CacheText) <= len(res.Rendered) {
			t.Errorf("CacheText %q does not extend the prompt %q", res.CacheText, res.Rendered)
		}
	}
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	const key = "sk-llama-secret-4242"
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
	f := &fake{echoAuth: true}
	c := start(t, f, Options{KeyFile: keyFile})
	res, err := c.Send(context.Background(), request(), &chat.Reply{Content: "x"})
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Send = %v; want a 401 *chat.APIError", err)
	}
	if got := f.got(); len(got) == 0 || got[0].Auth != "Bearer "+key {
		t.Fatalf("the server got Authorization %q; want the key from the file", got[0].Auth)
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %q: the key must be redacted", err)
	}
	if dump := fmt.Sprintf("%+v %s", res, res.Body); strings.Contains(dump, key) {
		t.Errorf("the key appears in the result: %s", dump)
	}
	for _, op := range []func() error{
		func() error { return c.Reset(context.Background()) },
		func() error { _, err := c.Props(context.Background()); return err },
		func() error { _, err := c.Tokenizer().Encode("x"); return err },
	} {
		if err := op(); err == nil || strings.Contains(err.Error(), key) {
			t.Errorf("error %v: want an error without the key", err)
		}
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		slots, erase int
		own          bool
		wantErased   []string // request paths + queries of the erases
		wantErr      string
	}{
		{"every listed slot", 0, 0, false, []string{"/slots/0?action=erase", "/slots/1?action=erase"}, ""},
		{"slots list disabled: the pinned slot", http.StatusNotImplemented, 0, false, []string{"/slots/3?action=erase"}, ""},
		{"no --slot-save-path", 0, http.StatusNotImplemented, false, []string{"/slots/0?action=erase"}, "--slot-save-path"},
		// One of several sessions at once: the other slots hold the other sessions' caches.
		{"own slot only", 0, 0, true, []string{"/slots/3?action=erase"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{slots: tc.slots, erase: tc.erase}
			c := start(t, f, Options{Slot: 3, OwnSlot: tc.own})
			err := c.Reset(context.Background())
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Reset = %v; want error %q", err, tc.wantErr)
			}
			var erased []string
			for _, c := range f.got() {
				if c.Method == http.MethodPost {
					erased = append(erased, c.Path+"?"+c.Query)
				}
			}
			if !reflect.DeepEqual(erased, tc.wantErased) {
				t.Errorf("erase requests = %v; want %v", erased, tc.wantErased)
			}
		})
	}
}

func TestProps(t *testing.T) {
	t.Parallel()
	c := start(t, &fake{}, Options{})
	p, err := c.Props(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.ModelPath != "/models/Qwen3-8B-Q4_K_M.gguf" || p.NCtx != 40960 || p.TotalSlots != 1 || p.BuildInfo != "b7212-a1b2c3d4" || !strings.HasPrefix(p.ChatTemplate, "{%- if tools") {
		t.Errorf("Props = %+v", p)
	}
	if v, err := c.Version(context.Background()); v != "b7212-a1b2c3d4" || err != nil {
		t.Errorf("Version = %q, %v; want b7212-a1b2c3d4", v, err)
	}
	// An unreachable server is an APIError with the address and no status.
	c2, _ := New(Options{BaseURL: "http://127.0.0.1:1"})
	_, err = c2.Props(context.Background())
	var ae *chat.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 0 || ae.URL != "http://127.0.0.1:1/props" {
		t.Errorf("Props(unreachable) = %#v; want an APIError naming the address", err)
	}
}

func TestTokenizer(t *testing.T) {
	t.Parallel()
	f := &fake{}
	c := start(t, f, Options{})
	tok := c.Tokenizer()
	ids, err := tok.Encode("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645, 198}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("Encode = %v; want %v", ids, want)
	}
	ids[0] = -1 // the caller owns the slice; the memo stays intact
	again, _ := tok.Encode("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
	if !reflect.DeepEqual(again, want) {
		t.Errorf("second Encode = %v; want %v", again, want)
	}
	pieces, err := tok.Encode("pieces")
	if err != nil || !reflect.DeepEqual(pieces, []int32{151644, 8948, 198}) {
		t.Errorf("Encode(answer with pieces) = %v, %v", pieces, err)
	}
	var tokenizes int
	for _, cl := range f.got() {
		if cl.Path != "/tokenize" {
			continue
		}
		tokenizes++
		var req map[string]any
		json.Unmarshal(cl.Body, &req)
		if req["parse_special"] != true || req["add_special"] != false || req["with_pieces"] != false {
			t.Errorf("/tokenize request = %v; want parse_special, no add_special, no pieces", req)
		}
	}
	if tokenizes != 2 {
		t.Errorf("%d /tokenize requests; want 2 (the repeated text is remembered)", tokenizes)
	}
	if ids, err := tok.Encode(""); err != nil || len(ids) != 0 {
		t.Errorf("Encode(\"\") = %v, %v; want nothing", ids, err)
	}
}

// A base URL's password (http://user:secret@host) is in no error text: an HTTP error, an
// answer that is not the API's, a reply past the limit, a bad address.
func TestBaseURLPasswordNotInErrors(t *testing.T) {
	const secret = "pa55w0rd-secret"
	answers := map[string]func(w http.ResponseWriter){
		"HTTP 500": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		},
		"not the API": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>hello</html>")
		},
		"reply too long": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, sseChunk(2000)+streamEnd)
		},
	}
	for name, answer := range answers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w) }))
		u := strings.Replace(srv.URL, "http://", "http://user:"+secret+"@", 1)
		c, err := New(Options{BaseURL: u})
		if err != nil {
			t.Fatal(err)
		}
		req := request()
		req.MaxReplyBytes, req.Generate = 1000, 100
		_, err = c.Send(context.Background(), req, nil)
		srv.Close()
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error %v; want one without the base URL's password", name, err)
		}
	}
	if _, err := New(Options{BaseURL: "ftp://user:" + secret + "@host"}); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a bad base URL: error %v; want one without its password", err)
	}
}

// closingServer serves f as llama-server does: every answer says keep-alive, but the server
// closes the connection after a streamed answer (here: when the next request arrives on it,
// unanswered, so a client that reuses the connection reads EOF).
func closingServer(t *testing.T, f *fake) string {
	t.Helper()
	f.t = t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for closing := false; ; {
					r, err := http.ReadRequest(br)
					if err != nil || closing {
						return
					}
					rec := httptest.NewRecorder()
					f.ServeHTTP(rec, r)
					resp := rec.Result()
					resp.Header.Set("Keep-Alive", "timeout=5, max=100")
					resp.ContentLength = int64(rec.Body.Len())
					if resp.Write(conn) != nil {
						return
					}
					closing = r.URL.Path == "/v1/chat/completions"
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// The streamed request is sent with Connection: close, so the requests after it (the
// generation emulation, the next rendering) never reuse a connection the server is closing.
func TestNoReuseOfAClosingConnection(t *testing.T) {
	t.Parallel()
	f := &fake{chat: "stream_text.sse"}
	c, err := New(Options{BaseURL: closingServer(t, f), Output: qwenOutput})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.Send(context.Background(), request(), &chat.Reply{Content: "ok"}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := len(f.got()); n != 9 {
		t.Errorf("%d requests answered; want 9 (render, chat, emulation, three times)", n)
	}
}

// With ReadStartToken, the rendered prompt and the cache text start with the BOS the server adds
// (Llama 3.1's <|begin_of_text|>), and the generation emulation sends the prompt without it (the
// server adds it); a model without one (Qwen3) leaves them as the server renders them.
func TestReadStartToken(t *testing.T) {
	t.Parallel()
	for _, bos := range []string{"<|begin_of_text|>", ""} {
		f := &fake{chat: "stream_text.sse", bos: bos}
		c := start(t, f, Options{Output: qwenOutput})
		got, err := c.ReadStartToken(context.Background())
		if err != nil || got != bos {
			t.Fatalf("ReadStartToken = %q, %v; want %q", got, err, bos)
		}
		res, err := c.Send(context.Background(), request(), &chat.Reply{Content: "Done."})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rendered != bos+rendered || !strings.HasPrefix(res.CacheText, bos+rendered) {
			t.Errorf("bos %q: Rendered %q, CacheText %q; want both to start with the BOS and the rendering", bos, res.Rendered, res.CacheText)
		}
		calls := f.got()
		last := calls[len(calls)-1]
		var comp struct {
			Prompt string `json:"prompt"`
		}
		json.Unmarshal(last.Body, &comp)
		if last.Path != "/completion" || comp.Prompt != strings.TrimPrefix(res.CacheText, bos) {
			t.Errorf("bos %q: emulation %s prompt %q; want /completion of the cache text without the BOS", bos, last.Path, comp.Prompt)
		}
	}
}
