package fakellama

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is an in-process stand-in for llama-server b11669 with one slot, for tests that run the
// lab's llama.cpp client or `lab proxy --render llamacpp` against it. Its tokens are the bytes of
// the text (/tokenize answers each byte as an id), its chat template is the Qwen3 GGUF's own as
// llama-server renders it ([Qwen3Template]), and its slot holds the last prompt it evaluated:
//
//   - POST /v1/chat/completions renders the body, answers a stream of one content chunk, a
//     finish_reason "length", a usage chunk with `timings` (cache_n the prompt's common prefix
//     with the slot, at most the prompt less one token: llama-server evaluates the last token
//     again) and `data: [DONE]`, and leaves the slot holding the prompt;
//   - POST /completion evaluates its `prompt` into the slot (n_predict 0: the lab's cache fill)
//     and answers its final object;
//   - POST /apply-template answers {"prompt": …}; POST /tokenize {"tokens": […]}; GET /props the
//     eos_token <|im_end|>, one slot and n_ctx 40960; GET /slots one slot; POST
//     /slots/0?action=erase empties the slot; GET /health ok.
//
// As the real server does, every answer says keep-alive, but the connection is closed after a
// streamed answer (when the next request arrives on it, unanswered: a client that reuses it
// reads EOF). Safe for concurrent use.
type Server struct {
	// URL is the server's address, http://127.0.0.1:port.
	URL string
	// HoldAfterDone is how long the streamed answer's end (the last chunk of its chunked body)
	// waits after `data: [DONE]`: a client that stops reading at [DONE] has gone by then.
	HoldAfterDone time.Duration

	mu    sync.Mutex
	slot  string
	paths []string
}

// Start serves a Server on a loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

// Paths returns the method and path (with its query) of every request served, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

func (s *Server) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for closing := false; ; {
		r, err := http.ReadRequest(br)
		if err != nil || closing {
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.paths = append(s.paths, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
			if s.stream(conn, body) != nil || r.Close {
				return
			}
			closing = true
			continue
		}
		rec := httptest.NewRecorder()
		s.answer(rec, r, body)
		resp := rec.Result()
		resp.Header.Set("Keep-Alive", "timeout=5, max=100")
		resp.ContentLength = int64(rec.Body.Len())
		if resp.Write(conn) != nil || r.Close {
			return
		}
	}
}

// stream writes a streamed chat answer in chunked encoding, each event a chunk.
func (s *Server) stream(w io.Writer, body []byte) error {
	prompt := Qwen3Template(body)
	s.mu.Lock()
	cached := int64(common(s.slot, prompt))
	s.slot = prompt
	s.mu.Unlock()
	n := int64(len(prompt))
	cached = min(cached, n-1)
	events := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}`,
		`{"choices":[{"index":0,"delta":{"content":"o"}}],"object":"chat.completion.chunk"}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"object":"chat.completion.chunk"}`,
		fmt.Sprintf(`{"choices":[],"object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}},"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":1.5,"predicted_n":1,"predicted_ms":0.5}}`, n, n+1, cached, cached, n-cached),
		`[DONE]`,
	}
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, e := range events {
		d := "data: " + e + "\n\n"
		fmt.Fprintf(bw, "%x\r\n%s\r\n", len(d), d)
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	time.Sleep(s.HoldAfterDone)
	fmt.Fprint(bw, "0\r\n\r\n")
	return bw.Flush()
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/health":
		fmt.Fprint(w, `{"status":"ok"}`)
	case r.URL.Path == "/props":
		fmt.Fprint(w, `{"build_info":"b11669-fake","model_path":"fake.gguf","total_slots":1,"eos_token":"<|im_end|>","chat_template":"","default_generation_settings":{"n_ctx":40960}}`)
	case r.URL.Path == "/slots" && r.Method == http.MethodGet:
		fmt.Fprint(w, `[{"id":0}]`)
	case r.URL.Path == "/slots/0" && r.URL.Query().Get("action") == "erase":
		s.mu.Lock()
		n := len(s.slot)
		s.slot = ""
		s.mu.Unlock()
		fmt.Fprintf(w, `{"id_slot":0,"n_erased":%d}`, n)
	case r.URL.Path == "/apply-template":
		b, _ := json.Marshal(map[string]string{"prompt": Qwen3Template(body)})
		w.Write(b)
	case r.URL.Path == "/tokenize":
		var in struct {
			Content string `json:"content"`
		}
		json.Unmarshal(body, &in)
		ids := make([]int, len(in.Content))
		for i := range len(in.Content) {
			ids[i] = int(in.Content[i])
		}
		b, _ := json.Marshal(map[string][]int{"tokens": ids})
		w.Write(b)
	case r.URL.Path == "/completion":
		var in struct {
			Prompt string `json:"prompt"`
		}
		json.Unmarshal(body, &in)
		s.mu.Lock()
		cached := int64(common(s.slot, in.Prompt))
		s.slot = in.Prompt
		s.mu.Unlock()
		n := int64(len(in.Prompt))
		cached = min(cached, n-1)
		fmt.Fprintf(w, `{"content":"","stop":true,"tokens_evaluated":%d,"tokens_predicted":0,"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":1,"predicted_n":0}}`, n, cached, n-cached)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`)
	}
}

// common is the length in bytes of the longest common prefix of a and b.
func common(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Qwen3Template renders a /v1/chat/completions or /apply-template body as the Qwen3 GGUF's own
// chat template does on llama-server b11669: each message as <|im_start|>role\n…<|im_end|>\n; an
// assistant message "<think>\n{reasoning}\n</think>\n\n" when it has reasoning, its text and each
// tool call as <tool_call>\n{"name": …, "arguments": …}\n</tool_call>; a tool result as a user
// message holding <tool_response>; the generation prompt "<|im_start|>assistant\n" unless
// add_generation_prompt is false. A body that is not JSON renders as "bad body: " and the error.
func Qwen3Template(body []byte) string {
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
				out.WriteString("<tool_call>\n{\"name\": \"" + tc.Function.Name + "\", \"arguments\": " + tc.Function.Arguments + "}\n</tool_call>")
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
