package report

import (
	"strings"
	"testing"
	"time"

	"lab/metrics"
)

// An agent whose rows all have cached and re-read tokens unknown (null) must show them
// unknown in the agents' table, not a 0.0% cached share and 0 re-read tokens: SummarizeAgent
// sums a null as 0 and CachedShare divides it by the prompt tokens.
func TestAgentsSummaryUnknownNotZero(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	run := AgentRun{Agent: "pi", Version: "1", Rows: []metrics.Sample{
		{Scenario: "conversation-0001", RequestIndex: 0, PromptTokens: 1000, StartedAt: t0},
		{Scenario: "conversation-0001", RequestIndex: 1, PromptTokens: 1200, StartedAt: t0.Add(time.Second)},
	}}
	var b strings.Builder
	if err := WriteAgentsReport(&b, []AgentRun{run}); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| pi |") {
			line = l
			break
		}
	}
	cells := strings.Split(line, "|")
	if len(cells) < 6 {
		t.Fatalf("no agent line in\n%s", b.String())
	}
	share, reread := strings.TrimSpace(cells[4]), strings.TrimSpace(cells[5])
	if share == "0.0%" || reread == "0" {
		t.Errorf("every cached and re-read count unknown, table says cached share %q, re-read %q (want unknown)", share, reread)
	}
	// Half known: the share over the known rows only, not the known cached over every prompt.
	c := int64(1200)
	run.Rows[1].CachedTokens = &c
	s := SummarizeAgent(run, AgentRequests(run))
	if got := s.CachedShare(); got == nil || *got != 1 {
		t.Errorf("cached share with one row unknown = %v, want 1 (1200 of the 1200 prompt tokens whose cached count is known)", derefShare(got))
	}
}

func derefShare(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
