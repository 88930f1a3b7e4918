//go:build stress

package stress

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
	"syscall"
	"testing"
	"time"
)

// toolCallAnswer streams an OpenAI Chat Completions answer that calls one tool.
func toolCallAnswer(w http.ResponseWriter, id, name string, args map[string]any) {
	a, _ := json.Marshal(args)
	call, _ := json.Marshal([]map[string]any{{"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}})
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":%s},\"finish_reason\":null}]}\n\n", call)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}\n\n")
	fmt.Fprintf(w, "data: [DONE]\n\n")
}

// lab run --driver live against a fake model that, once the session's project is in its
// sandbox, puts named pipes in it (one at the root, one in a folder) and calls read, grep,
// glob and list on them, one call per step: the run must end within its bound (60 s, with
// --turn-timeout 30s), whatever each tool answers. A tool that opens a pipe waits for a writer
// that never comes; the scenario then kills the run at the bound and fails.
func TestRunEndsWhenToolsMeetAPipe(t *testing.T) {
	scenario := scenarioDir(t, "stress-fifo", map[string]string{"main.go": "package main\n", "sub/a.txt": "hello\n"})
	calls := []struct {
		name string
		args map[string]any
	}{
		{"read", map[string]any{"path": "pipe"}},
		{"grep", map[string]any{"pattern": "hello", "path": "."}},
		{"glob", map[string]any{"pattern": "**"}},
		{"list", map[string]any{"path": "."}},
		{"read", map[string]any{"path": "sub/pipe"}},
	}
	var (
		mu       sync.Mutex
		requests int
		results  []string // the tool results the model was sent, in order
		fifoErr  error
	)
	project := make(chan string, 1) // the sandbox's project folder, once the child started
	var root string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notOllama(w, r) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		requests++
		if requests == 1 {
			root = <-project
			for _, p := range []string{"pipe", "sub/pipe"} {
				if err := syscall.Mkfifo(filepath.Join(root, p), 0o644); err != nil && fifoErr == nil {
					fifoErr = err
				}
			}
		}
		var req struct {
			Messages []struct{ Role, Content string }
		}
		json.Unmarshal(body, &req)
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
			results = append(results, req.Messages[n-1].Content)
		}
		if i := requests - 1; i < len(calls) {
			toolCallAnswer(w, fmt.Sprintf("call_%d", i), calls[i].name, calls[i].args)
			return
		}
		chatAnswer(w, true, "Done.", 0, 0)
	}))
	defer up.Close()
	results0 := t.TempDir()
	c := startLab(t, nil, "run", "--backend", "openai", "--base-url", up.URL+"/v1", "--model", "m", "--driver", "live",
		"--turn-timeout", "30s", "--max-steps", "10", "--scenario", scenario, "--arm", "spec", "--results", results0,
		"--run-id", "fifo", "--quiet")
	project <- filepath.Join(c.tmpDir(), "lab-sandbox", "stress-fifo", "stressproj")
	start := time.Now()
	code, timedOut := c.wait(60 * time.Second)
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	if fifoErr != nil {
		t.Fatalf("mkfifo in the sandbox %s: %v", root, fifoErr)
	}
	if _, err := os.Stat(root); err != nil && requests == 0 {
		t.Fatalf("the run sent no request: exit %d\n%s", code, c.stderr())
	}
	note := fmt.Sprintf("exit %d after %.1f s; %d requests, %d of %d tool calls answered", code, took.Seconds(), requests, len(results), len(calls))
	if timedOut {
		note += "; killed at the bound"
	}
	record("run-tools-meet-a-pipe", "time to end", "s", val(took.Seconds()), "≤ 60 s", !timedOut, note)
	if timedOut {
		t.Errorf("lab run whose tools meet a named pipe did not end within 60 s (%s)\n%s", note, c.stderr())
	}
	for i, r := range results {
		if i < len(calls) && strings.Contains(r, "pipe") && calls[i].name != "read" {
			t.Logf("%s named the pipe: %.200q", calls[i].name, r)
		}
	}
}
