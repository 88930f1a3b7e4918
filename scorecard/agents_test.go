package scorecard_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"lab"
	"lab/capture"
	"lab/hygiene"
	"lab/metrics"
	"lab/row"
	"lab/scorecard"
	"lab/scriptmodel"
)

// savedAgent reads testdata/<agent>/: requests.jsonl.gz, the request bodies a lab proxy saved in
// front of the scripted model (lab agents --scripted, the default script), and meta.json, the
// absolute paths of that run's agent folder.
func savedAgent(t *testing.T, agent string) ([]metrics.Sample, []row.RequestLine, []string) {
	t.Helper()
	dir := filepath.Join("testdata", agent)
	f, err := os.Open(filepath.Join(dir, "requests.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 64<<20)
	var rows []metrics.Sample
	var bodies []row.RequestLine
	for n := 1; sc.Scan(); n++ {
		var l row.RequestLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s line %d: %v", agent, n, err)
		}
		bodies = append(bodies, l)
		rows = append(rows, metrics.Sample{Scenario: l.Scenario, RequestIndex: l.RequestIndex})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Absolute []string `json:"absolute"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("%s meta.json: %v", agent, err)
	}
	return rows, bodies, meta.Absolute
}

func scoreSaved(t *testing.T, agent string) map[string]scorecard.Entry {
	t.Helper()
	rows, bodies, abs := savedAgent(t, agent)
	reqs, skipped, err := scorecard.Session(rows, bodies, capture.DecodeRequest)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Fatalf("%s: bodies left out: %v", agent, skipped)
	}
	cfg, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	facts := scriptmodel.DefaultScript().Facts(scriptmodel.DefaultWorkspace())
	out := map[string]scorecard.Entry{}
	for _, e := range scorecard.Score(scorecard.Input{Requests: reqs, Facts: facts, Absolute: abs, Config: cfg}) {
		out[e.Rule] = e
	}
	return out
}

// Two entries of each real agent's scorecard, judged from the request bodies the agent sent
// through the scripted model (the default script, its clock crossing midnight before turn 3):
// each entry's verdict and the request where the rule first broke.
func TestScorecardOnSavedAgentBodies(t *testing.T) {
	type want struct {
		rule    string
		verdict scorecard.Verdict
		request int32
		times   int
	}
	cases := map[string][]want{
		// Codex has no read tool: it reads with its shell (a command, which §2 does not judge),
		// sends seq's output whole (2,229 of its 3,000 lines) and keeps its tool list.
		"codex": {{scorecard.RuleStubs, scorecard.NotSeen, -1, 0}, {scorecard.RuleCap, scorecard.Broken, 17, 1}, {scorecard.RuleToolsStable, scorecard.Kept, -1, 0}},
		// Claude Code sends seq's 3000 lines whole; its system prompt holds no date (the date
		// goes in a system message after the history), which names the project's absolute path.
		"claude": {{scorecard.RuleCap, scorecard.Broken, 17, 1}, {scorecard.RuleSystemStable, scorecard.Kept, -1, 0}, {scorecard.RuleNoAbsolutePaths, scorecard.Broken, 0, 20}},
		// opencode writes the date into its system prompt, so midnight rewrites it at turn 3's
		// first request.
		"opencode": {{scorecard.RuleSystemStable, scorecard.Broken, 13, 1}, {scorecard.RuleNoClock, scorecard.Broken, 0, 20}},
		// Qwen Code moves a system reminder out of its first user message on the next turn, and
		// sends seq's output whole.
		"qwen": {{scorecard.RuleAppendOnly, scorecard.Broken, 6, 2}, {scorecard.RuleCap, scorecard.Broken, 17, 1}},
		// pi's system prompt holds the date: broken on every request, rewritten at turn 3.
		"pi": {{scorecard.RuleNoClock, scorecard.Broken, 0, 20}, {scorecard.RuleSystemStable, scorecard.Broken, 13, 1}},
	}
	for agent, ws := range cases {
		t.Run(agent, func(t *testing.T) {
			got := scoreSaved(t, agent)
			for _, w := range ws {
				e := got[w.rule]
				if e.Verdict != w.verdict || e.Request != w.request || e.Times != w.times {
					t.Errorf("%s: %s at #%d ×%d (%s), want %s at #%d ×%d", w.rule, e.Verdict, e.Request, e.Times, e.Detail, w.verdict, w.request, w.times)
				}
			}
		})
	}
}
