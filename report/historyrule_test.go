package report

import (
	"testing"

	"lab/cachesim"
)

// Each rule from the excerpts the template section shows: Ollama's qwen3.5 renderer leaving out
// the model's </think> before a tool call, Qwen3's template dropping the reasoning at a new user
// message, the summary after a compaction; and the divergences that are none of these.
func TestHistoryRule(t *testing.T) {
	for _, c := range []struct {
		name, segment   string
		afterCompaction bool
		e               *cachesim.Excerpt
		want            string
	}{
		{"end tag left out", "message", false,
			&cachesim.Excerpt{Cached: "\n</think>\n\n<tool_call>\n{\"name\": \"read\", \"arguments\"", Prompt: "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\""},
			"</think> left out"},
		{"reasoning dropped at a new user message", "reasoning", false,
			&cachesim.Excerpt{Cached: "<think>\nEvery 30 seconds is the default", Prompt: "<tool_call>\n{\"name\": \"grep\""},
			RuleReasoningDropped},
		{"generated reasoning the arm does not send", "message", false,
			&cachesim.Excerpt{Cached: "<think>\nI've read store.go only in two pieces", Prompt: "<tool_call>\n{\"name\": \"read\""},
			RuleReasoningDropped},
		{"the summary", "message", true,
			&cachesim.Excerpt{Cached: "Our uptime monitor shows", Prompt: "Session so far"},
			RuleSummary},
		{"a closing tag the prompt replaces with other text", "message", false,
			&cachesim.Excerpt{Cached: "</think>\n\nDone.", Prompt: "It is done."},
			""},
		{"reasoning rendered the same way", "reasoning", false,
			&cachesim.Excerpt{Cached: "<think>\nA", Prompt: "<think>\nB"},
			""},
		{"text against text", "message", false,
			&cachesim.Excerpt{Cached: "Our uptime", Prompt: "Your uptime"},
			""},
		{"no excerpt", "message", false, nil, ""},
		{"not a tag: a comparison", "message", false,
			&cachesim.Excerpt{Cached: "< 3 and x > 2", Prompt: "x"},
			""},
	} {
		if got := historyRule(c.segment, c.afterCompaction, c.e); got != c.want {
			t.Errorf("%s: historyRule = %q; want %q", c.name, got, c.want)
		}
	}
}

func TestLeadingTag(t *testing.T) {
	for s, want := range map[string]string{
		"<think>\nx":         "<think>",
		"  </think>":         "</think>",
		"<｜Assistant｜>hello": "<｜Assistant｜>",
		"<|im_start|>user":   "<|im_start|>",
		"< 3 > 2":            "",
		"<>":                 "",
		"text <b>":           "",
		"<a very long tag name that is not a tag at all>": "",
	} {
		if got := leadingTag(s); got != want {
			t.Errorf("leadingTag(%q) = %q; want %q", s, got, want)
		}
	}
}
