package main

import (
	"bytes"
	"strings"
	"testing"

	"lab/metrics"
)

// A request whose prompt tokens and prefill time were not measured (a failed one) shows them
// as unknown, not as 0.
func TestProgressShowsUnknownFigures(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 2)
	p(1, 2, &metrics.Sample{Scenario: "s", Arm: "spec", RequestIndex: 0, PromptTokens: 1000, CachedTokens: new(int64(500)), PrefillNs: 2.5e8})
	p(2, 2, &metrics.Sample{Scenario: "s", Arm: "spec", RequestIndex: 1, Error: "HTTP 500"})
	out := b.String()
	if !strings.Contains(out, "request 0: 1000 prompt tokens, 50% cached, prefill 0.25s") ||
		!strings.Contains(out, "request 1: ? prompt tokens, ? cached, prefill ?s error: HTTP 500") {
		t.Errorf("progress:\n%s", out)
	}
}
