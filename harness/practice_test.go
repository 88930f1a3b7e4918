package harness_test

import (
	"fmt"
	"regexp"
	"testing"

	"lab/chat"
	"lab/scenario"
	"lab/scenarios"
)

// stubRef finds what a stub names: a read's "Unchanged since #id" (§2) or a search's "Same
// result as #id" (§6), after the stub's own bracket.
var stubRef = regexp.MustCompile(`^\[#[0-9a-f]+[^\]\n]*\] (?:Unchanged since|Same result as) (#[0-9a-f]+)`)

// resultID is the id a tool result's bracket starts with.
var resultID = regexp.MustCompile(`^\[(#[0-9a-f]+)[ \]]`)

// danglingStubs counts, over every request, the stubs whose named result is not among the tool
// results that same request sends (spec 3.2.0 §2: "A stub names only a result that is in the
// request being built").
func danglingStubs(reqs []*chat.Request) (dangling, stubs, requests int, first string) {
	for i, req := range reqs {
		bad := false
		shown := map[string]bool{}
		for _, m := range req.Messages {
			if m.Role != chat.RoleTool {
				continue
			}
			if id := resultID.FindStringSubmatch(m.Content); id != nil && stubRef.FindStringSubmatch(m.Content) == nil {
				shown[id[1]] = true
			}
		}
		for _, m := range req.Messages {
			if m.Role != chat.RoleTool {
				continue
			}
			ref := stubRef.FindStringSubmatch(m.Content)
			if ref == nil {
				continue
			}
			stubs++
			if !shown[ref[1]] {
				dangling++
				bad = true
				if first == "" {
					first = fmt.Sprintf("request %d: %s", i, m.Content)
				}
			}
		}
		if bad {
			requests++
		}
	}
	return dangling, stubs, requests, first
}

// The practice arms that remove earlier results never send a stub naming a result the request
// no longer holds: a re-read after the practice removed the read it repeats is answered in full
// (spec 3.2.0 §2), over every embedded scenario.
func TestPracticeArmsSendNoDanglingStubs(t *testing.T) {
	for _, a := range []string{"last-5-observations", "prune-old-output", "spec"} {
		total, all, reqs := 0, 0, 0
		for _, name := range scenarios.Names() {
			sc, err := scenario.LoadScenarioFS(scenarios.FS, name+"/scenario.yaml", "scenarios/"+name+"/scenario.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, be := replay(t, sc, arm(t, a))
			n, s, r, first := danglingStubs(be.requests)
			total, all, reqs = total+n, all+s, reqs+r
			if n > 0 {
				t.Errorf("%s/%s: %d of %d stubs sent name a result the request does not hold; first: %.200q", name, a, n, s, first)
			}
		}
		t.Logf("%s: %d requests hold %d stubs naming a result they do not hold (of %d stubs sent)", a, reqs, total, all)
		// A stub whose result is still in the request stays a stub: the practice arms keep §2.
		if all == 0 {
			t.Errorf("%s sent no stub at all; want stubs where the result they name is in the request", a)
		}
	}
}
