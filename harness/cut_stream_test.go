package harness_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lab/backend/anthropic"
	"lab/backend/llamacpp"
	"lab/backend/ollama"
	"lab/backend/openai"
	"lab/chat"
	"lab/harness"
)

// sendOnly hides a backend's Reset: the fakes below have no cache to empty.
type sendOnly struct{ harness.Backend }

// cutServer answers the chat requests of a fake server: request n (1-based), when cut(n), with
// cutBody up to cutAt (a stream cut before its end marker), else with whole.
type cutServer struct {
	mu                    sync.Mutex
	n                     int
	cut                   func(n int) bool
	whole, cutBody, cutAt string
	// ctype is the answer's Content-Type; "" is text/event-stream.
	ctype string
}

func (f *cutServer) answer(w http.ResponseWriter) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	ct := f.ctype
	if ct == "" {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	if f.cut(n) {
		io.WriteString(w, f.cutBody[:strings.Index(f.cutBody, f.cutAt)])
		return
	}
	io.WriteString(w, f.whole)
}

// A stream cut before its end marker reaches the retry policy as a retryable error through the
// Anthropic, llama-server, OpenAI-compatible and Ollama backends: cut once, it is sent again and its row has the whole
// answer's figures (not the cut one's message_start); cut for good, the session ends with the
// error in its row after every attempt, and the run is incomplete.
func TestCutStreamsAreRetried(t *testing.T) {
	t.Parallel()
	// The cut answer's message_start says 999 input tokens; the whole one's 10 + 30 + 0.
	anthropicWhole := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":30,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	anthropicCut := strings.Replace(anthropicWhole, `"input_tokens":10`, `"input_tokens":999`, 1)
	llamaWhole := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"timings\":{\"cache_n\":30,\"prompt_n\":10,\"prompt_ms\":1}}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"
	// The cut answer's usage (as a server that sends it early would) says 999 prompt tokens.
	openaiWhole := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":30}}}\n\ndata: [DONE]\n\n"
	openaiCut := "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":999,\"completion_tokens\":0,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n" + openaiWhole
	ollamaWhole := `{"model":"m","message":{"role":"assistant","content":"o"},"done":false}` + "\n" +
		`{"model":"m","message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":40,"eval_count":1}` + "\n"
	for _, be := range []struct {
		name, cutAt, want string
		whole, cutBody    string
		start             func(t *testing.T, f *cutServer) harness.Backend
		// noCached: the backend has no cached count without a server log.
		noCached bool
	}{
		{"anthropic", "event: message_stop", "stream cut: no message_stop", anthropicWhole, anthropicCut, func(t *testing.T, f *cutServer) harness.Backend {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				f.answer(w)
			}))
			t.Cleanup(srv.Close)
			key := filepath.Join(t.TempDir(), "key")
			os.WriteFile(key, []byte("sk-ant-test"), 0o600)
			c, err := anthropic.New(anthropic.Options{BaseURL: srv.URL, Model: "claude-x", KeyFile: key})
			if err != nil {
				t.Fatal(err)
			}
			return sendOnly{c}
		}, false},
		{"llamacpp", "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\"", "stream cut: no data: [DONE] and no finish_reason", llamaWhole, llamaWhole, func(t *testing.T, f *cutServer) harness.Backend {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				switch r.URL.Path {
				case "/apply-template":
					json.NewEncoder(w).Encode(map[string]string{"prompt": string(b)})
				case "/completion": // the generation emulation
					io.WriteString(w, `{"content":""}`)
				default:
					f.answer(w)
				}
			}))
			t.Cleanup(srv.Close)
			c, err := llamacpp.New(llamacpp.Options{BaseURL: srv.URL, Output: func(r *chat.Reply) string { return r.Content }})
			if err != nil {
				t.Fatal(err)
			}
			return sendOnly{c}
		}, false},
		{"openai", "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\"", "stream cut: no data: [DONE] and no finish_reason", openaiWhole, openaiCut, func(t *testing.T, f *cutServer) harness.Backend {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				f.answer(w)
			}))
			t.Cleanup(srv.Close)
			c, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			return sendOnly{c}
		}, false},
		{"ollama", `{"model":"m","message":{"role":"assistant","content":""},"done":true`, "stream cut: no done message", ollamaWhole, ollamaWhole, func(t *testing.T, f *cutServer) harness.Backend {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Render bool `json:"_debug_render_only"`
				}
				json.NewDecoder(r.Body).Decode(&req)
				switch {
				case r.URL.Path == "/api/chat" && req.Render:
					io.WriteString(w, `{"model":"m","done":true,"_debug_info":{"rendered_template":"RENDERED"}}`)
				case r.URL.Path == "/api/chat":
					f.answer(w)
				default: // the generation emulation's /api/generate
					io.WriteString(w, `{"model":"m","done":true}`)
				}
			}))
			t.Cleanup(srv.Close)
			c, err := ollama.New(srv.URL, "m")
			if err != nil {
				t.Fatal(err)
			}
			return sendOnly{c}
		}, true},
	} {
		for _, forGood := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/for good %v", be.name, forGood), func(t *testing.T) {
				t.Parallel()
				f := &cutServer{cut: func(n int) bool { return n == 2 || forGood && n > 2 }, whole: be.whole, cutBody: be.cutBody, cutAt: be.cutAt}
				if be.name == "ollama" {
					f.ctype = "application/x-ndjson"
				}
				sl := &sleeps{}
				_, man, samples, err := runOne(t, be.start(t, f), harness.RetryPolicy{Sleep: sl.sleep})
				if forGood {
					if err == nil || man.Complete || len(samples) != 2 {
						t.Fatalf("run error %v, complete %v, %d rows; want an error, incomplete, 2 rows", err, man.Complete, len(samples))
					}
					if s := samples[1]; !strings.Contains(s.Error, be.want) || s.Retries != 2 {
						t.Errorf("row 1: error %q after %d retries; want %q after 2", s.Error, s.Retries, be.want)
					}
					return
				}
				if err != nil || !man.Complete {
					t.Fatalf("run error %v, complete %v; want a whole run", err, man.Complete)
				}
				s := samples[1]
				if s.Error != "" || s.Retries != 1 || !strings.Contains(s.Warnings, be.want) || s.PromptTokens != 40 || (s.CachedTokens == nil) != be.noCached || !be.noCached && *s.CachedTokens != 30 {
					t.Errorf("row 1: error %q, %d retries, warnings %q, prompt %d, cached %v; want none, 1, the cut named, 40, 30", s.Error, s.Retries, s.Warnings, s.PromptTokens, s.CachedTokens)
				}
			})
		}
	}
}

// An Anthropic stream cut inside an event (its data JSON half written) is retried like one cut
// between events: whether the body ends there cleanly or the connection drops mid-body (fewer
// bytes than its Content-Length: an unexpected EOF), inside message_start (no usage at all) or
// inside message_delta. The retried row has the whole answer's figures.
func TestAnthropicCutInsideAnEventIsRetried(t *testing.T) {
	t.Parallel()
	whole := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":30,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"o\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, tc := range []struct {
		name, cutAt string
		// drop: the connection drops (Content-Length promises the whole body).
		drop bool
	}{
		{"message_delta, body ends", `"usage":{"output_tokens":1}}` + "\n\nevent: message_stop", false},
		{"message_delta, connection drops", `"usage":{"output_tokens":1}}` + "\n\nevent: message_stop", true},
		{"message_start, body ends", `"cache_read_input_tokens"`, false},
		{"message_start, connection drops", `"cache_read_input_tokens"`, true},
		{"text delta, connection drops", `"text":"o"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				n++
				cut := n == 2
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				if !cut {
					io.WriteString(w, whole)
					return
				}
				if tc.drop {
					w.Header().Set("Content-Length", fmt.Sprint(len(whole)))
				}
				io.WriteString(w, whole[:strings.Index(whole, tc.cutAt)])
			}))
			t.Cleanup(srv.Close)
			key := filepath.Join(t.TempDir(), "key")
			os.WriteFile(key, []byte("sk-ant-test"), 0o600)
			c, err := anthropic.New(anthropic.Options{BaseURL: srv.URL, Model: "claude-x", KeyFile: key})
			if err != nil {
				t.Fatal(err)
			}
			sl := &sleeps{}
			_, man, samples, err := runOne(t, sendOnly{c}, harness.RetryPolicy{Sleep: sl.sleep})
			if err != nil || !man.Complete || len(samples) < 2 {
				t.Fatalf("run error %v, complete %v, %d rows; want a whole run", err, man.Complete, len(samples))
			}
			s := samples[1]
			want := "stream cut: no "
			if tc.drop {
				want = "read the answer: unexpected EOF"
			}
			if !strings.Contains(s.Warnings, want) {
				t.Errorf("row 1 warnings %q; want the cut named (%q)", s.Warnings, want)
			}
			if s.Error != "" || s.Retries != 1 || s.PromptTokens != 40 || s.CachedTokens == nil || *s.CachedTokens != 30 {
				t.Errorf("row 1: error %q, %d retries, warnings %q, prompt %d, cached %v; want none, 1 retry, 40, 30", s.Error, s.Retries, s.Warnings, s.PromptTokens, s.CachedTokens)
			}
		})
	}
}
