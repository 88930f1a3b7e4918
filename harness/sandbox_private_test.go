package harness_test

import (
	"context"
	"encoding/json"
	"lab/arms"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lab "lab"
	"lab/backend/ollama"
	"lab/chat"
	"lab/harness"
	"lab/hygiene"
	"lab/internal/tinytokenizer"
	"lab/metrics"
	"lab/scenario"
	"lab/scenarios"
)

// longTempDir points TMPDIR at a fresh folder of the test with a long path, and returns it: the
// sandbox's real folder is under it, and no answer may show it.
func longTempDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), strings.Repeat("a-long-temporary-folder-", 6))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", dir)
	return dir
}

// gateBackend holds its first request until open is closed: its session stays in its sandbox
// as long as the test wants.
type gateBackend struct {
	renderBackend
	open    <-chan struct{}
	started chan<- struct{}
	once    sync.Once
}

func (b *gateBackend) Send(ctx context.Context, req *chat.Request, reply *chat.Reply) (*chat.Result, error) {
	b.once.Do(func() {
		close(b.started)
		<-b.open
	})
	return b.renderBackend.Send(ctx, req, reply)
}

// runRows runs midnight under the spec arm in results with be and returns its rows as JSON, one
// per request, with the run id and the clock's columns cleared.
func runRows(t *testing.T, results, id string, be harness.Backend) []string {
	sc, err := scenario.LoadScenarioFS(scenarios.FS, "midnight/scenario.yaml", "scenarios/midnight/scenario.yaml")
	if err != nil {
		t.Error(err)
		return nil
	}
	loop, _ := hygiene.ParseConfig(lab.LoopJSON)
	if _, _, err := harness.Run(context.Background(), harness.RunConfig{
		Scenarios: []*scenario.Scenario{sc}, Arms: []arms.Arm{arm(t, "spec")}, ResultsDir: results, RunID: id,
		Loop: loop, Backend: be, Tokenizer: tinytokenizer.Bytes{},
	}); err != nil {
		t.Error(err)
		return nil
	}
	parts, _ := filepath.Glob(filepath.Join(metrics.RunDir(results, id), "part-*.parquet"))
	if len(parts) != 1 {
		t.Errorf("run %s: parts %v; want one", id, parts)
		return nil
	}
	samples, _, err := metrics.ReadSamples(parts[0])
	if err != nil {
		t.Error(err)
		return nil
	}
	var rows []string
	for _, s := range samples {
		s.RunID, s.StartedAt = "", time.Time{}
		s.TTFTNs, s.PrefillNs, s.TotalNs, s.LoadNs, s.RetryWaitNs = 0, 0, 0, nil, 0
		b, _ := json.Marshal(s)
		rows = append(rows, string(b))
	}
	return rows
}

// Two sessions of one scenario run at once in one process: the second does not wait for the
// first (each has a private sandbox of its own), both answers name the shown path
// /tmp/lab-sandbox/<scenario> whatever TMPDIR is, and both write the same rows.
func TestSessionsOfOneScenarioRunAtOnce(t *testing.T) {
	temp := longTempDir(t)
	conv, _ := ollama.New("http://127.0.0.1:1", "m")
	open, started := make(chan struct{}), make(chan struct{})
	first := &gateBackend{renderBackend: renderBackend{conv: conv}, open: open, started: started}
	results := t.TempDir()
	firstRows := make(chan []string, 1)
	go func() { firstRows <- runRows(t, results, "first", first) }()
	<-started // the first session is in its sandbox, at its first request

	second := &signalBackend{renderBackend: renderBackend{conv: conv}}
	secondDone := make(chan []string, 1)
	go func() { secondDone <- runRows(t, results, "second", second) }()
	var rows2 []string
	select {
	case rows2 = <-secondDone:
	case <-time.After(60 * time.Second):
		close(open)
		<-firstRows
		<-secondDone
		t.Fatal("the second session of midnight did not finish within 60s while the first was in its sandbox")
	}
	close(open)
	rows1 := <-firstRows
	if len(rows1) == 0 || strings.Join(rows1, "\n") != strings.Join(rows2, "\n") {
		t.Errorf("two sessions of midnight at once wrote other rows (%d and %d)", len(rows1), len(rows2))
	}
	all := strings.Join(second.rendered, "")
	if !strings.Contains(all, "/tmp/lab-sandbox/midnight/") {
		t.Errorf("the requests never name the shown path /tmp/lab-sandbox/midnight/")
	}
	if strings.Contains(all, temp) {
		t.Errorf("the requests name the real temporary folder %s", temp)
	}
}
