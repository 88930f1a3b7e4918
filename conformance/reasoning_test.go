package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReasoningCases runs every reasoning.json case through checkReasoning.
func TestReasoningCases(t *testing.T) {
	cases, err := Load("reasoning")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 25 {
		t.Fatalf("reasoning.json has %d cases, want at least 25", len(cases))
	}
	dialects := map[string]int{}
	for _, c := range cases {
		var in struct {
			Dialect string `json:"dialect"`
		}
		_ = json.Unmarshal(c.Input, &in)
		dialects[in.Dialect]++
		if c.Section != "§8" {
			t.Errorf("%s: section %q, want §8", c.ID, c.Section)
		}
		if err := checkReasoning(c); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
	}
	for _, d := range []string{"openai", "anthropic", "ollama"} {
		if dialects[d] == 0 {
			t.Errorf("no case for dialect %s", d)
		}
	}
}

// TestCheckReasoningNamesFirstDifference checks that a wrong want fails with the first differing
// line, and that an unknown input field is refused.
func TestCheckReasoningNamesFirstDifference(t *testing.T) {
	c := Case{ID: "x", Section: "§8",
		Input: json.RawMessage(`{"dialect": "openai", "history": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a", "reasoning": "r"}]}`),
		Want:  json.RawMessage(`{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a", "reasoning_content": ""}]}`)}
	err := checkReasoning(c)
	if err == nil || !strings.Contains(err.Error(), `messages: line 8: want "    \"reasoning_content\": \"\",", got "    \"reasoning_content\": \"r\","`) {
		t.Fatalf("err = %v", err)
	}
	c.Want = json.RawMessage(`{"messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a", "reasoning_content": "r"}]}`)
	if err := checkReasoning(c); err != nil {
		t.Fatalf("right want: %v", err)
	}
	c.Input = json.RawMessage(`{"dialect": "openai", "history": [], "measures": {}}`)
	if err := checkReasoning(c); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("unknown input field: err = %v", err)
	}
	c.Input = json.RawMessage(`{"dialect": "gemini", "history": []}`)
	if err := checkReasoning(c); err == nil || !strings.Contains(err.Error(), "gemini") {
		t.Fatalf("unknown dialect: err = %v", err)
	}
}
