package capture_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The whole answers of each API, as a stream and as one JSON document, and where a stream of
// each is cut before its end marker.
var apiAnswers = []struct {
	api, path, request string
	// stream is a whole stream, cutAt the text it is cut before, cut the row's error then.
	stream, cutAt, cut string
	// json is the API's unstreamed answer.
	json string
	// prompt and cached are the figures of the whole answers.
	prompt, cached int64
}{
	{
		api: "openai-chat", path: "/v1/chat/completions", request: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		stream: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\ndata: [DONE]\n\n",
		cutAt: "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\"", cut: "stream cut: no data: [DONE] and no finish_reason",
		json:   `{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":16}}}`,
		prompt: 20, cached: 16,
	},
	{
		api: "openai-responses", path: "/v1/responses", request: `{"model":"m","stream":true,"input":"hi"}`,
		stream: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Hi\"}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":24},\"output_tokens\":2}}}\n\n",
		cutAt: "event: response.completed", cut: "stream cut: no response.completed, response.incomplete or response.failed",
		json:   `{"status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}],"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":24},"output_tokens":2}}`,
		prompt: 30, cached: 24,
	},
	{
		api: "anthropic", path: "/v1/messages", request: `{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
		stream: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":30,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		cutAt: "event: message_delta", cut: "stream cut: no message_stop",
		json:   `{"id":"msg_1","type":"message","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":30,"cache_creation_input_tokens":0,"output_tokens":5}}`,
		prompt: 40, cached: 30,
	},
	{
		api: "ollama-chat", path: "/api/chat", request: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		stream: `{"message":{"role":"assistant","content":"Hi"},"done":false}` + "\n" + `{"message":{"role":"assistant","content":""},"done":true,"prompt_eval_count":50,"eval_count":2,"prompt_eval_cached_count":48}` + "\n",
		cutAt:  `{"message":{"role":"assistant","content":""},"done":true`, cut: "stream cut: no done message",
		json:   `{"message":{"role":"assistant","content":"Hi"},"done":true,"prompt_eval_count":50,"eval_count":2,"prompt_eval_cached_count":48}`,
		prompt: 50, cached: 48,
	},
}

// proxyOnce sends one request of the API a through a proxy in front of an upstream answering
// with body under ctype, and returns the one row's error, prompt and cached tokens.
func proxyOnce(t *testing.T, path, request, ctype, body string) (errText string, prompt int64, cached *int64) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		io.WriteString(w, body)
	}))
	defer up.Close()
	url, _, stop := startProxy(t, up.URL, nil, false)
	code, got := post(t, url, path, request, nil)
	if code != 200 || got != body {
		t.Errorf("the client got HTTP %d %q; want the upstream's answer unchanged", code, got)
	}
	_, rows := stop()
	if len(rows) != 1 {
		t.Fatalf("%d rows; want 1", len(rows))
	}
	return rows[0].Error, rows[0].PromptTokens, rows[0].CachedTokens
}

// A stream of each API cut before its end marker gets an error row naming what it lacked (the
// client retries, the proxy does not); a cut inside an event too. The whole stream and a JSON
// answer to the streamed request are read with their usage.
func TestProxyCutStreamsAndJSONAnswers(t *testing.T) {
	for _, a := range apiAnswers {
		t.Run(a.api, func(t *testing.T) {
			streamType := "text/event-stream"
			if strings.HasPrefix(a.api, "ollama") {
				streamType = "application/x-ndjson"
			}
			if e, p, c := proxyOnce(t, a.path, a.request, streamType, a.stream); e != "" || p != a.prompt || !eqPtr(c, n(a.cached)) {
				t.Errorf("whole stream: error %q prompt %d cached %s; want none, %d, %d", e, p, show(c), a.prompt, a.cached)
			}
			if e, p, c := proxyOnce(t, a.path, a.request, "application/json", a.json); e != "" || p != a.prompt || !eqPtr(c, n(a.cached)) {
				t.Errorf("JSON answer: error %q prompt %d cached %s; want none, %d, %d", e, p, show(c), a.prompt, a.cached)
			}
			i := strings.Index(a.stream, a.cutAt)
			if e, _, _ := proxyOnce(t, a.path, a.request, streamType, a.stream[:i]); e != a.cut {
				t.Errorf("cut before its end marker: error %q; want %q", e, a.cut)
			}
			if e, _, _ := proxyOnce(t, a.path, a.request, streamType, a.stream[:i+len(a.cutAt)]); e != a.cut {
				t.Errorf("cut inside an event: error %q; want %q", e, a.cut)
			}
		})
	}
}

// An HTTP 200 that is not the API's answer (an HTML page, a JSON body of another shape), an
// empty 200 and a stream with no events (or none but [DONE]) get an error row whose figures
// stay unknown.
func TestProxyNotTheAPIsAnswer(t *testing.T) {
	for _, a := range apiAnswers {
		t.Run(a.api, func(t *testing.T) {
			for _, tc := range []struct{ ctype, body, want string }{
				{"text/html; charset=utf-8", "<!DOCTYPE html><html>Sign in</html>", `HTTP 200 with a text/html body, not the API's answer: "<!DOCTYPE html><html>Sign in</html>"`},
				{"text/event-stream", "", "stream cut: HTTP 200 with an empty body"},
				{"application/json", " \n", "stream cut: HTTP 200 with an empty body"},
			} {
				if e, p, c := proxyOnce(t, a.path, a.request, tc.ctype, tc.body); e != tc.want || p != 0 || c != nil {
					t.Errorf("%s %q: error %q prompt %d cached %s; want %q and no figures", tc.ctype, tc.body, e, p, show(c), tc.want)
				}
			}
			// A JSON body that is not the API's answer (a gateway's own JSON) is no answer either.
			wantJSON := "HTTP 200 with a JSON body that is not "
			if strings.HasPrefix(a.api, "ollama") {
				wantJSON = "stream cut: no done message"
			}
			if e, p, c := proxyOnce(t, a.path, a.request, "application/json", `{"detail":"Not Found"}`); !strings.HasPrefix(e, wantJSON) || p != 0 || c != nil {
				t.Errorf("a JSON body that is not an answer: error %q prompt %d cached %s; want one starting %q and no figures", e, p, show(c), wantJSON)
			}
			if !strings.HasPrefix(a.api, "ollama") {
				if e, _, _ := proxyOnce(t, a.path, a.request, "text/event-stream", "data: [DONE]\n\n"); e == "" {
					t.Errorf("a stream of no event but [DONE]: no error; want one")
				}
			}
			zero, ctype := ": ping\n\n", "text/event-stream"
			if strings.HasPrefix(a.api, "ollama") {
				// Ollama's stream of no line is an empty body; one line without done is cut.
				zero, ctype = `{"message":{"role":"assistant","content":""},"done":false}`+"\n", "application/x-ndjson"
			}
			want := "stream cut: no events"
			if strings.HasPrefix(a.api, "ollama") {
				want = "stream cut: no done message"
			}
			if e, _, _ := proxyOnce(t, a.path, a.request, ctype, zero); e != want {
				t.Errorf("a stream with no events: error %q; want %q", e, want)
			}
		})
	}
}

// An unstreamed answer has no time to first token: the proxy writes ttft_ns null (0 in the
// Sample) for a JSON answer of each API, as lab run does, and keeps the total time; a whole
// stream's time to first token is measured.
func TestProxyUnstreamedAnswerHasNoTTFT(t *testing.T) {
	for _, a := range apiAnswers {
		t.Run(a.api, func(t *testing.T) {
			streamType := "text/event-stream"
			if strings.HasPrefix(a.api, "ollama") {
				streamType = "application/x-ndjson"
			}
			for _, tc := range []struct {
				ctype, body string
				ttft        bool
			}{{streamType, a.stream, true}, {"application/json", a.json, false}} {
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", tc.ctype)
					io.WriteString(w, tc.body)
				}))
				url, _, stop := startProxy(t, up.URL, nil, false)
				post(t, url, a.path, a.request, nil)
				_, rows := stop()
				up.Close()
				if len(rows) != 1 {
					t.Fatalf("%s: %d rows; want 1", tc.ctype, len(rows))
				}
				s := rows[0]
				if (s.TTFTNs > 0) != tc.ttft || s.TotalNs <= 0 || s.Error != "" {
					t.Errorf("%s: ttft_ns %d total_ns %d error %q; want ttft measured %v, a total time, no error", tc.ctype, s.TTFTNs, s.TotalNs, s.Error, tc.ttft)
				}
				if !tc.ttft && !strings.Contains(s.Warnings, "time to first token unknown") {
					t.Errorf("%s: warnings %q; want one saying the time to first token is unknown", tc.ctype, s.Warnings)
				}
			}
		})
	}
}
