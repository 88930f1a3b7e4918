package scriptmodel

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"lab/backend/anthropic"
	"lab/backend/openai"
	"lab/chat"
)

// captured names, per agent, the request of capture/testdata/agents/<agent>/requests.jsonl
// whose tool list the tests map onto: the first request of the main session (Qwen Code's first
// request is a side request with a subagent's tool list; opencode's is its title request,
// without tools).
var captured = []struct {
	name  string
	index int
}{
	{"codex", 0},
	{"claude", 0},
	{"opencode", 1},
	{"pi", 0},
	{"qwen", 1},
}

// agentTools decodes the tool list of request index of an agent's capture with the lab's own
// decoders for the request's API.
func agentTools(t *testing.T, agent string, index int) []chat.Tool {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "capture", "testdata", "agents", agent, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for i := 0; sc.Scan(); i++ {
		if i != index {
			continue
		}
		var line struct {
			API  string          `json:"api"`
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s request %d: %v", agent, index, err)
		}
		var req *chat.Request
		switch line.API {
		case "anthropic":
			req, err = anthropic.DecodeRequest(line.Body)
		case "openai-responses":
			req, err = openai.DecodeResponsesRequest(line.Body)
		case "openai-chat":
			req, err = openai.DecodeChatRequest(line.Body)
		default:
			t.Fatalf("%s request %d: unknown api %q", agent, index, line.API)
		}
		if err != nil {
			t.Fatalf("%s request %d: %v", agent, index, err)
		}
		if len(req.Tools) == 0 {
			t.Fatalf("%s request %d has no tools", agent, index)
		}
		return req.Tools
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s: no request %d", agent, index)
	return nil
}
