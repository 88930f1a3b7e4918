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
