package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"lab/metrics"
)

// A request whose prompt tokens and prefill time were not measured (a failed one) shows them
// as unknown, not as 0.
func TestProgressShowsUnknownFigures(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 2, progressRequests)
	p.Request(1, 2, &metrics.Sample{Scenario: "s", Arm: "spec", RequestIndex: 0, PromptTokens: 1000, CachedTokens: new(int64(500)), PrefillNs: 2.5e8})
	p.Request(2, 2, &metrics.Sample{Scenario: "s", Arm: "spec", RequestIndex: 1, Error: "HTTP 500"})
	out := b.String()
	if !strings.Contains(out, "request 0: 1000 prompt tokens, 50% cached, prefill 0.25s") ||
		!strings.Contains(out, "request 1: ? prompt tokens, ? cached, prefill ?s error: HTTP 500") {
		t.Errorf("progress:\n%s", out)
	}
}

// Off a terminal the progress is one line per session (its requests, its cached share over the
// requests whose cached tokens are known, its time), not per request; a failed request still
// gets a line of its own, and the time left appears only once a session has ended.
func TestProgressOneLinePerSessionOffATerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 5, progressAuto) // a bytes.Buffer is no terminal
	p.Request(1, 5, &metrics.Sample{Scenario: "midnight", Arm: "spec", Repetition: 1, RequestIndex: 0, PromptTokens: 1000, CachedTokens: new(int64(0))})
	p.Request(2, 5, &metrics.Sample{Scenario: "midnight", Arm: "spec", Repetition: 1, RequestIndex: 1, PromptTokens: 3000, CachedTokens: new(int64(2000))})
	p.Request(3, 5, &metrics.Sample{Scenario: "midnight", Arm: "spec", Repetition: 1, RequestIndex: 2, Error: "HTTP 500"})
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "[3/5] midnight/spec request 2: ? prompt tokens, ? cached, prefill ?s error: HTTP 500\n") {
		t.Fatalf("before the session ended, only the failed request has a line:\n%s", got)
	}
	b.Reset()
	p.Session(metrics.SessionRecord{Scenario: "midnight", Arm: "spec", Repetition: 1, Requests: 3, Error: "HTTP 500"})
	line := regexp.MustCompile(`^\[3/5\] midnight/spec repetition 1: 3 requests, 50\.0% cached, [0-9.]+m?s \(run [0-9.]+m?s, eta <?[0-9hms.]+\), failed: HTTP 500\n$`)
	if got := b.String(); !line.MatchString(got) {
		t.Errorf("session line %q; want it to match %s (2,000 of 4,000 prompt tokens cached: 50.0%%)", got, line)
	}
	b.Reset()
	p.Request(4, 5, &metrics.Sample{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, RequestIndex: 0, PromptTokens: 1000})
	p.Request(5, 5, &metrics.Sample{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, RequestIndex: 1, PromptTokens: 1200})
	p.Session(metrics.SessionRecord{Scenario: "midnight", Arm: "date-in-system-prompt", Repetition: 1, Requests: 2, Complete: true})
	// No cached tokens known: the share is unknown ("—"), never 0 %; the last session has no eta.
	line = regexp.MustCompile(`^\[5/5\] midnight/date-in-system-prompt repetition 1: 2 requests, — cached, [0-9.]+m?s \(run [0-9.]+m?s\)\n$`)
	if got := b.String(); !line.MatchString(got) {
		t.Errorf("session line %q; want it to match %s", got, line)
	}
}

// --progress requests writes one line per request; its time left appears only once a session
// has ended (the first requests' rate holds the server's start and the first cold prefill).
func TestProgressRequestsShowsNoEarlyETA(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 4, progressRequests)
	s := func(arm string, i int32) *metrics.Sample {
		return &metrics.Sample{Scenario: "m", Arm: arm, Repetition: 1, RequestIndex: i, PromptTokens: 10, CachedTokens: new(int64(5))}
	}
	p.Request(1, 4, s("spec", 0))
	p.Request(2, 4, s("spec", 1))
	p.Session(metrics.SessionRecord{Scenario: "m", Arm: "spec", Repetition: 1, Requests: 2, Complete: true})
	p.Request(3, 4, s("plain", 0))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || strings.Contains(lines[0], "eta") || strings.Contains(lines[1], "eta") || !strings.Contains(lines[2], " eta ") {
		t.Errorf("request lines (eta only after the first session):\n%s", b.String())
	}
}
