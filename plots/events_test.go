package plots

import (
	"bytes"
	"slices"
	"strconv"
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
	zero := new(int64(0))
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
				Kind: kind, Backend: "sim", PromptTokens: 100, CachedTokens: new(int64(50)), RereadTokens: new(int64(50)), PrefillNs: 1e6,
				RereadSystemTokens: zero, RereadToolsTokens: zero, RereadMessageTokens: new(int64(50)), RereadToolResultTokens: zero,
				RereadReasoningTokens: zero, RereadNoteTokens: zero, RereadOtherTokens: zero, RereadUnattributedTokens: zero})
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
			if c.Name == "prompt-segments" && strings.HasPrefix(s, ">t") {
				continue // its panels draw the turn lines without their numbers
			}
			if !strings.Contains(b.String(), s) {
				t.Errorf("%s: svg lacks %s", c.Name, s)
			}
		}
	}
	// Scenario events: one where turn 3 starts (its label joins the turn's), one inside turn 1;
	// only the reference arm's (spec's) count.
	withEvents := slices.Clone(samples)
	for i := range withEvents {
		if withEvents[i].Arm != metrics.SpecArm {
			withEvents[i].ScenarioEvent = "mode plain" // not the reference's: no mark
			continue
		}
		switch withEvents[i].RequestIndex {
		case 1:
			withEvents[i].ScenarioEvent = "mode plan"
		case 5:
			withEvents[i].ScenarioEvent = "midnight"
		}
	}
	ev = addSessionEvents(newChart("x", "", ""), sequences("s", metrics.RowsOf(withEvents)))
	if len(ev.scenario) != 2 || ev.scenario[0] != (scenarioMark{x: 0.5, label: "mode plan"}) || ev.scenario[1] != (scenarioMark{x: 4.5, label: "midnight"}) {
		t.Errorf("scenario events %v, want mode plan before request 1 and midnight before request 5", ev.scenario)
	}
	p, err := CachedShare("s", withEvents)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, p, "svg", DefaultWidth, DefaultHeight); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{">t3 midnight</text>", ">mode plan</text>", ">scenario event (named at the top)</text>", ">t2</text>"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("cached share with scenario events: svg lacks %s", s)
		}
	}
	if strings.Contains(b.String(), "mode plain") {
		t.Error("an event of an arm other than the reference is marked")
	}

	// A server's rows: no sim note.
	for i := range samples {
		samples[i].Backend = "ollama"
	}
	p, err = CachedShare("s", samples)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Title.Text, "sim") {
		t.Errorf("title %q of a server's run names the sim", p.Title.Text)
	}
}

// With more arms than one chart holds, the cached share is drawn as small multiples: a panel
// per arm titled with its name, each against spec's line, on a larger canvas.
func TestCachedSharePanels(t *testing.T) {
	t.Parallel()
	arms := []string{metrics.SpecArm, "a1", "a2", "a3", "a4", "a5", "a6"}
	var samples []metrics.Sample
	for k, arm := range arms {
		for i := range 5 {
			samples = append(samples, metrics.Sample{Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: int32(i), Turn: 1,
				PromptTokens: 100, CachedTokens: new(int64(10 * k)), ExpectedCachedTokens: new(int64(10 * k)), RereadTokens: new(int64(100 - 10*k))})
		}
	}
	rows := metrics.RowsOf(samples)
	w, h := CachedShareSize("s", rows)
	if w <= DefaultWidth || h < 2*panelHeight {
		t.Errorf("size %v × %v for %d arms, want wider than the default and two rows of panels high", w, h, len(arms))
	}
	p, err := CachedShareRows("s", rows)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "one panel per arm") {
		t.Errorf("title %q", p.Title.Text)
	}
	var b bytes.Buffer
	if err := Write(&b, p, "svg", w, h); err != nil {
		t.Fatal(err)
	}
	for _, s := range append(arms, "the panel&#39;s arm", "spec", "expected") {
		if !strings.Contains(b.String(), ">"+s+"</text>") {
			t.Errorf("svg lacks the text %q", s)
		}
	}
	// One arm fewer: one chart, default size.
	rows = metrics.RowsOf(samples[:len(samples)-5])
	if w, h := CachedShareSize("s", rows); w != DefaultWidth || h != DefaultHeight {
		t.Errorf("size %v × %v for %d arms, want the default", w, h, len(arms)-1)
	}
	if p, err := CachedShareRows("s", rows); err != nil || strings.Contains(p.Title.Text, "panel") {
		t.Errorf("%d arms: title %q, error %v; want one chart", len(arms)-1, p.Title.Text, err)
	}
}

// Small multiples without a spec arm draw no spec line: neither the legend nor the title
// names one.
func TestCachedSharePanelsWithoutSpec(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for k := range MaxArmsOnOneChart + 1 {
		for i := range 5 {
			samples = append(samples, metrics.Sample{Scenario: "s", Arm: "a" + strconv.Itoa(k), Repetition: 1, RequestIndex: int32(i), Turn: 1,
				PromptTokens: 100, CachedTokens: new(int64(10 * k)), RereadTokens: new(int64(100 - 10*k))})
		}
	}
	rows := metrics.RowsOf(samples)
	p, err := CachedShareRows("s", rows)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Title.Text, "one panel per arm") || strings.Contains(p.Title.Text, "spec") {
		t.Errorf("title %q: want panels, no spec", p.Title.Text)
	}
	w, h := CachedShareSize("s", rows)
	var b bytes.Buffer
	if err := Write(&b, p, "svg", w, h); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), ">spec</text>") {
		t.Error("the legend names a spec line that no panel draws")
	}
	if !strings.Contains(b.String(), ">a6</text>") {
		t.Error("svg lacks the panel of arm a6")
	}
}

// The panel of an arm whose cached tokens are never known says so: it would otherwise show only
// spec's line and the arm's expected one, as if they were the arm's.
func TestCachedSharePanelNotMeasured(t *testing.T) {
	t.Parallel()
	var samples []metrics.Sample
	for k := range MaxArmsOnOneChart + 1 {
		arm := "a" + strconv.Itoa(k)
		if k == 0 {
			arm = metrics.SpecArm
		}
		for i := range 5 {
			s := metrics.Sample{Scenario: "s", Arm: arm, Repetition: 1, RequestIndex: int32(i), Turn: 1,
				PromptTokens: 100, CachedTokens: new(int64(50)), ExpectedCachedTokens: new(int64(50))}
			if k == 3 {
				s.CachedTokens = nil
			}
			samples = append(samples, s)
		}
	}
	rows := metrics.RowsOf(samples)
	p, err := CachedShareRows("s", rows)
	if err != nil {
		t.Fatal(err)
	}
	w, h := CachedShareSize("s", rows)
	var b bytes.Buffer
	if err := Write(&b, p, "svg", w, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ">a3 (cached share not measured)</text>") {
		t.Error("the panel of a3, whose cached tokens are unknown, does not say its share was not measured")
	}
	if strings.Contains(b.String(), ">a2 (cached share not measured)</text>") {
		t.Error("a measured arm's panel says it was not measured")
	}
}
