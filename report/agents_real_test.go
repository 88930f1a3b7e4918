package report

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// On saved real captures of the agents (testdata/agents/<agent>/: lab agents' capture of Codex,
// opencode and pi, request bodies included), the body change the agents' report names for each
// request is at the byte where its saved body first differs from the previous body of its
// conversation, computed here on its own.
func TestAgentsReportOnSavedRealBodies(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "agents", "*"))
	if len(dirs) < 3 {
		t.Fatalf("%d saved agent captures, want 3", len(dirs))
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		rows, bodies, err := LoadAgentCapture(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rows) == 0 || len(bodies) != len(rows) {
			t.Fatalf("%s: %d rows, %d bodies", name, len(rows), len(bodies))
		}
		// The previous body of each request's conversation, by request index.
		byConv := map[string][]int{}
		for i, b := range bodies {
			byConv[b.Scenario] = append(byConv[b.Scenario], i)
		}
		want := map[string]int{}
		for conv, idx := range byConv {
			sort.Slice(idx, func(i, j int) bool { return bodies[idx[i]].RequestIndex < bodies[idx[j]].RequestIndex })
			for k := 1; k < len(idx); k++ {
				a, b := bodies[idx[k-1]].Body, bodies[idx[k]].Body
				off := 0
				for off < len(a) && off < len(b) && a[off] == b[off] {
					off++
				}
				want[conv+"#"+fmt.Sprint(bodies[idx[k]].RequestIndex)] = off
			}
		}
		found := 0
		for _, r := range AgentRequests(AgentRun{Agent: name, Rows: rows, Bodies: bodies}) {
			w, ok := want[r.Conversation+"#"+fmt.Sprint(r.Index)]
			if !ok {
				if r.Offset != -1 {
					t.Errorf("%s %s #%d: offset %d for a first request", name, r.Conversation, r.Index, r.Offset)
				}
				continue
			}
			found++
			if r.Offset != w {
				t.Errorf("%s %s #%d: offset %d, the bodies first differ at %d", name, r.Conversation, r.Index, r.Offset, w)
			}
			var cur []byte
			for _, b := range bodies {
				if b.Scenario == r.Conversation && b.RequestIndex == r.Index {
					cur = b.Body
				}
			}
			if tail := cur[w:min(len(cur), w+8)]; !strings.Contains(r.After, string(tail)) {
				t.Errorf("%s %s #%d: after excerpt %q lacks the body's bytes %q at the difference", name, r.Conversation, r.Index, r.After, tail)
			}
		}
		if found == 0 {
			t.Errorf("%s: no request with a previous one in its conversation", name)
		}
	}
}
