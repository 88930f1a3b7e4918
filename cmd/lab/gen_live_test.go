package main

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

	"lab/backend/llamacpp"
	"lab/backend/openai"
	"lab/harness"
	"lab/metrics"
)

// The backends that generate set their sampling seed from the live driver.
var (
	_ harness.Seeder = (*openai.Client)(nil)
	_ harness.Seeder = (*llamacpp.Client)(nil)
)

// liveModel is an OpenAI-compatible server that plays a model on loopback: to a request whose
// last message is not a tool result it answers with reasoning and two tool calls (glob and
// list, arguments streamed in pieces), to one after tool results with a final answer. It records
// every request body.
type liveModel struct {
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
}

func (m *liveModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var msgs []struct{ Role string }
	json.Unmarshal(body["messages"], &msgs)
	m.mu.Lock()
	m.bodies = append(m.bodies, body)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta string, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, f)
	}
	completion := 3
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		send(`{"role":"assistant","content":"Done: "}`, "")
		send(`{"content":"one Go file."}`, "stop")
	} else {
		completion = 40
		send(`{"role":"assistant","reasoning_content":"Find the Go files."}`, "")
		send(`{"tool_calls":[{"index":0,"id":"srv_a","type":"function","function":{"name":"glob","arguments":"{\"pat"}}]}`, "")
		send(`{"tool_calls":[{"index":0,"function":{"arguments":"tern\": \"*.go\"}"}}]}`, "")
		send(`{"tool_calls":[{"index":1,"id":"srv_b","type":"function","function":{"name":"list","arguments":""}}]}`, "")
		send(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`, "tool_calls")
	}
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n",
		len(raw)/4, completion, len(raw)/4+completion)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// liveScenario writes a one-turn scenario over a one-file project.
func liveScenario(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sc := "name: gen-live\nproject: demo\nworkspace: w.txtar\nclock: \"2026-11-05T10:00:00+01:00\"\nsteps:\n" +
		"  - user: Which Go files are there?\n  - assistant:\n      calls:\n        - glob: {pattern: \"*.go\"}\n  - assistant:\n      text: One.\n"
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- main.go --\npackage main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "scenario.yaml")
}

// lab run --driver live --backend openai: the model's tool calls run in the sandbox and their
// results go back, the turn ends answered, every request carries the live bound, temperature
// and each repetition's seed, and the rows are written.
func TestRunLiveOpenAI(t *testing.T) {
	m := &liveModel{}
	srv := httptest.NewServer(m)
	defer srv.Close()
	results := t.TempDir()
	code, out, errOut := runLab(t, "run", "--driver", "live", "--backend", "openai", "--base-url", srv.URL+"/v1", "--model", "m",
		"--scenario", liveScenario(t), "--arm", "spec", "--repeat", "2", "--max-tokens", "300", "--temperature", "0.2",
		"--sampling-seed", "5", "--results", results, "--run-id", "live", "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	man, samples, err := metrics.ReadRun(metrics.RunDir(results, "live"))
	if err != nil {
		t.Fatal(err)
	}
	if !man.Complete || man.Settings["driver"] != "live" || man.Settings["temperature"] != "0.2" || man.Settings["max_tokens"] != "300" {
		t.Errorf("manifest: complete %v, settings %v", man.Complete, man.Settings)
	}
	if len(samples) != 4 {
		t.Fatalf("%d rows; want 4 (two requests per repetition)", len(samples))
	}
	for _, s := range samples {
		if s.Driver != metrics.DriverLive {
			t.Errorf("row %d/%d: driver %q", s.Repetition, s.RequestIndex, s.Driver)
		}
		switch s.RequestIndex {
		case 0:
			if s.CompletionTokens == nil || *s.CompletionTokens != 40 || s.EndReason != "" {
				t.Errorf("repetition %d request 0: completion %v, end %q; want 40 and the turn going on", s.Repetition, s.CompletionTokens, s.EndReason)
			}
		case 1:
			if s.EndReason != metrics.EndAnswered || s.CompletionTokens == nil || *s.CompletionTokens != 3 {
				t.Errorf("repetition %d request 1: end %q, completion %v; want answered, 3", s.Repetition, s.EndReason, s.CompletionTokens)
			}
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.bodies) != 4 {
		t.Fatalf("the server got %d requests; want 4", len(m.bodies))
	}
	for i, b := range m.bodies {
		wantSeed := "5"
		if i >= 2 {
			wantSeed = "6"
		}
		if string(b["max_tokens"]) != "300" || string(b["temperature"]) != "0.2" || string(b["seed"]) != wantSeed {
			t.Errorf("request %d: max_tokens %s, temperature %s, seed %s; want 300, 0.2, %s", i, b["max_tokens"], b["temperature"], b["seed"], wantSeed)
		}
	}
	// The second request carries the model's step back (its reasoning, the calls under the
	// harness's ids) and the tools' results from the sandbox.
	msgs := string(m.bodies[1]["messages"])
	for _, want := range []string{`"reasoning_content":"Find the Go files."`, `"id":"call_1","type":"function","function":{"name":"glob","arguments":"{\"pattern\": \"*.go\"}"}`,
		`"name":"list","arguments":"{}"`, `"role":"tool"`, `main.go`} {
		if !strings.Contains(msgs, want) {
			t.Errorf("second request's messages lack %s:\n%s", want, msgs)
		}
	}
}

// A temperature the API would refuse exits 2 before anything starts.
func TestLiveTemperatureRange(t *testing.T) {
	for _, tc := range []struct{ backend, temp, want string }{
		{"anthropic", "1.5", "the Anthropic API takes 0 to 1"},
		{"openai", "2.5", "OpenAI-compatible APIs take 0 to 2"},
	} {
		results := t.TempDir()
		code, _, errOut := runLab(t, "run", "--driver", "live", "--backend", tc.backend, "--base-url", "http://127.0.0.1:1/v1", "--model", "m",
			"--temperature", tc.temp, "--results", results, "--quiet")
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s --temperature %s: exit %d, stderr %q; want exit 2 naming %q", tc.backend, tc.temp, code, errOut, tc.want)
		}
	}
}
