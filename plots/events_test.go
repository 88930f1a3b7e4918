package plots

import (
	"bytes"
	"strings"
	"testing"

	"lab/metrics"
)

// Every per-request chart marks where the user turns begin and where the session compacted,
// from the spec arm's requests, and a sim run's charts say in their titles that they are the
// lab's model.
func TestSessionEvents(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for _, arm := range []string{"plain", metrics.SpecArm} {
		// Turn 1: requests 0–2, turn 2: 3–4 with a compaction at 4, turn 3: 5. The plain arm's
		// turn 2 starts one request later: the marks follow spec.
		turns := []int32{1, 1, 1, 2, 2, 3}
		if arm == "plain" {
			turns = []int32{1, 1, 1, 1, 2, 3}
		}
		for i, turn := range turns {
			kind := metrics.KindStep
			if i == 4 && arm == metrics.SpecArm {
				kind = metrics.KindCompaction
			}
			samples = append(samples, metrics.Sample{Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: int32(i), Turn: turn,
				Kind: kind, Backend: "sim", PromptTokens: 100, CachedTokens: new(int64(50)), RereadTokens: new(int64(50)), PrefillNs: 1e6})
		}
	}
	ev := addSessionEvents(newChart("x", "", ""), sequences("s", metrics.RowsOf(samples)))
	if ev == nil {
		t.Fatal("no session events")
	}
	if len(ev.turns) != 2 || ev.turns[0] != (turnStart{x: 2.5, turn: 2}) || ev.turns[1] != (turnStart{x: 4.5, turn: 3}) {
		t.Errorf("turn starts %v, want turn 2 before request 3 and turn 3 before request 5 (spec's)", ev.turns)
	}
	if len(ev.compaction) != 1 || ev.compaction[0] != 4 {
		t.Errorf("compaction at %v, want request 4", ev.compaction)
	}
	for _, c := range ScenarioCharts() {
		p, err := c.Build("s", samples)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if !strings.Contains(p.Title.Text, "(sim: ") {
			t.Errorf("%s: title %q does not say it is the sim's", c.Name, p.Title.Text)
		}
		var b bytes.Buffer
		if err := Write(&b, p, "svg", DefaultWidth, DefaultHeight); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{">t2</text>", ">t3</text>", ">user turn starts</text>", ">compaction</text>"} {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%s: svg lacks %s", c.Name, s)
			}
		}
	}
	// A server's rows: no sim note.
	for i := range samples {
		samples[i].Backend = "ollama"
	}
	p, err := CachedShare("s", samples)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Title.Text, "sim") {
		t.Errorf("title %q of a server's run names the sim", p.Title.Text)
	}
}
