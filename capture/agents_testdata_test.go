package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/cachesim"
	"lab/chat"
)

// agentRequest is one line of testdata/agents/<agent>/requests.jsonl: a request a real agent
// sent through lab proxy (lab agents), its API, the headers that may name its session (from the
// agent's wire.jsonl) and its body as the capture saved it (credentials redacted).
type agentRequest struct {
	API     string            `json:"api"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// knownSplits are the agents whose session the lab still splits in two, and why.
var knownSplits = map[string]string{}

// TestAgentSessionsGrouped replays the saved request bodies of each real agent's session: the
// session is one conversation (side requests apart), and the first divergence the lab names for
// each request of it is where the two request bodies first differ.
func TestAgentSessionsGrouped(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "agents", "*"))
	if len(dirs) == 0 {
		t.Skip("no saved agent sessions in testdata/agents")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			reqs := readAgentRequests(t, filepath.Join(dir, "requests.jsonl"))
			var g grouper
			type last struct {
				req  *chat.Request
				body []byte
			}
			prev := map[*conversation]last{}
			var mains []*conversation
			type placed struct {
				c     *conversation
				tools int
			}
			var byTools []placed
			for i, ar := range reqs {
				h := http.Header{}
				for k, v := range ar.Headers {
					h.Set(k, v)
				}
				var env envelope
				_ = json.Unmarshal(ar.Body, &env)
				side := ""
				if v := h.Get(parentSessionHeader); v != "" {
					side = "parent " + v
				}
				req, err := DecodeRequest(ar.API, ar.Body)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				c, created := g.assign(sessionKey("", h, &env), side, req)
				t.Logf("request %d -> %s (new %v) side %q", i, c.name, created, c.side)
				if created && c.side == "" {
					mains = append(mains, c)
				}
				if p, ok := prev[c]; ok {
					seg := cachesim.FirstDifference(cachesim.DifferenceParts(p.req, ""), cachesim.DifferenceParts(req, ""))
					t.Logf("request %d: %d messages, diverges at %q", i, len(req.Messages), seg)
					checkDivergence(t, i, ar.API, p.body, ar.Body, req, seg)
				}
				g.update(c, req, nil, false)
				byTools = append(byTools, placed{c, len(req.Tools)})
				prev[c] = last{req, ar.Body}
			}
			// The session's own requests carry the agent's whole tool list; its side requests
			// (a title, a memory sub-agent) fewer tools or none.
			most := 0
			for _, r := range byTools {
				most = max(most, r.tools)
			}
			for i, r := range byTools {
				if r.tools == most && r.c.side != "" {
					t.Errorf("request %d, with the session's %d tools, went to %s, a side request (%s)", i, most, r.c.name, r.c.side)
				}
			}
			want := 1
			if why, ok := knownSplits[filepath.Base(dir)]; ok {
				want = 2
				t.Logf("known split in two: %s", why)
			}
			if len(mains) != want {
				names := []string{}
				for _, c := range mains {
					names = append(names, c.name)
				}
				t.Errorf("%d requests make %d session conversations %v (side requests apart), want %d", len(reqs), len(mains), names, want)
			}
		})
	}
}

func readAgentRequests(t *testing.T, path string) []agentRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []agentRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var r agentRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawElements returns a request body's conversation as its raw JSON elements, in the order the
// API lays them out: the system prompt or instructions (when a field of their own), then each
// element of messages or input; and its tool list's raw JSON.
func rawElements(t *testing.T, body []byte) (elems []json.RawMessage, tools string) {
	var b struct {
		System       json.RawMessage   `json:"system"`
		Instructions json.RawMessage   `json:"instructions"`
		Messages     []json.RawMessage `json:"messages"`
		Input        json.RawMessage   `json:"input"`
		Tools        json.RawMessage   `json:"tools"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []json.RawMessage{b.System, b.Instructions} {
		if len(s) > 0 && string(s) != "null" {
			elems = append(elems, s)
		}
	}
	elems = append(elems, b.Messages...)
	var input []json.RawMessage
	if json.Unmarshal(b.Input, &input) == nil {
		elems = append(elems, input...)
	} else if len(b.Input) > 0 {
		elems = append(elems, b.Input)
	}
	var c bytes.Buffer
	if json.Compact(&c, b.Tools) == nil {
		tools = c.String()
	}
	return elems, tools
}

// stringsOf returns every string value inside a JSON value.
func stringsOf(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// checkDivergence checks the segment the lab names between two requests of one conversation
// against the first raw element where their bodies differ: the segment's message must be drawn
// from that element (its text, a tool call's name or arguments, or the call id a result
// answers), the tool list only when the bodies' tools differ, and no segment only when every
// element is the same.
func checkDivergence(t *testing.T, i int, api string, prevBody, body []byte, req *chat.Request, seg cachesim.Segment) {
	t.Helper()
	pe, ptools := rawElements(t, prevBody)
	ce, ctools := rawElements(t, body)
	first := -1
	for k := 0; k < len(pe) || k < len(ce); k++ {
		if k >= len(pe) || k >= len(ce) || !jsonEqual(pe[k], ce[k]) {
			first = k
			break
		}
	}
	switch {
	case seg.Kind == cachesim.ToolList:
		if ptools == ctools {
			t.Errorf("request %d (%s): the lab names %q, but the two bodies' tools are the same", i, api, seg)
		}
		return
	case seg.Kind == cachesim.NoSegment:
		if first >= 0 && first < len(pe) && first < len(ce) {
			t.Errorf("request %d (%s): the lab names no divergence, but the bodies differ at element %d", i, api, first)
		}
		return
	}
	if first < 0 || first >= len(ce) {
		t.Errorf("request %d (%s): the lab names %q, but no element of the body differs from the previous one's (first %d of %d)", i, api, seg, first, len(ce))
		return
	}
	if !seg.Kind.Indexed() || seg.Index < 0 || seg.Index >= len(req.Messages) {
		t.Errorf("request %d (%s): segment %q names no message", i, api, seg)
		return
	}
	m := req.Messages[seg.Index]
	var clues []string
	if s := strings.TrimSpace(m.Content); s != "" {
		clues = append(clues, s)
	}
	for _, tc := range m.ToolCalls {
		clues = append(clues, tc.Name)
	}
	if m.ToolCallID != "" {
		clues = append(clues, m.ToolCallID)
	}
	if len(clues) == 0 {
		return // a message without text: nothing to find (an opaque item)
	}
	strs := stringsOf(ce[first])
	for _, clue := range clues {
		if len(clue) > 200 {
			clue = clue[:200]
		}
		for _, s := range strs {
			if strings.Contains(s, clue) {
				return
			}
		}
	}
	t.Errorf("request %d (%s): the lab names %q (%.80q), but the bodies first differ at element %d: %.200s", i, api, seg, clues[0], first, ce[first])
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}
