package report

import (
	"strings"
	"unicode"

	"lab/cachesim"
)

// The history rules [historyRule] names, as a [TemplateDivergence]'s Rule.
const (
	// RuleSummary: the first request after a compaction, whose history starts afresh from the
	// summary (spec §7), so the KV cache's earlier conversation is not its prefix.
	RuleSummary = "the summary replaces the history"
	// RuleReasoningDropped: the KV cache held reasoning (the model's, in its reasoning tags)
	// that the prompt does not render there: the template drops it (Qwen3's before the last user
	// message), or the arm does not send it (reasoning-never).
	RuleReasoningDropped = "reasoning dropped"
)

// historyRule names, from one request's first divergence, the rule by which the chat template's
// rendering of the history differs from what the KV cache held: [RuleSummary] for the first
// request after a compaction (afterCompaction), "TAG left out" when the cache held a closing
// tag (the model's `</think>`, say) right where the prompt goes on with what followed it,
// [RuleReasoningDropped] when the cache held reasoning there (an opening tag in a reasoning
// segment, or one whose name says think) that the prompt lacks, and "" when the excerpt shows
// none of these (or there is no excerpt: e nil). segment is the divergence segment's kind
// ([segmentKind]: "reasoning", "message", …). The rules are read from the excerpt's texts
// ([cachesim.Excerpt]: up to 60 bytes after the divergence), not from the template's source.
func historyRule(segment string, afterCompaction bool, e *cachesim.Excerpt) string {
	if afterCompaction {
		return RuleSummary
	}
	if e == nil {
		return ""
	}
	cached := strings.TrimLeftFunc(e.Cached, unicode.IsSpace)
	tag := leadingTag(cached)
	switch {
	case tag == "":
	case strings.HasPrefix(tag, "</"):
		rest := strings.TrimLeftFunc(cached[len(tag):], unicode.IsSpace)
		prompt := strings.TrimLeftFunc(e.Prompt, unicode.IsSpace)
		if n := min(len(rest), len(prompt)); n > 0 && rest[:n] == prompt[:n] {
			return tag + " left out"
		}
	case segment == "reasoning" || strings.Contains(strings.ToLower(tag), "think"):
		if !strings.HasPrefix(e.Prompt, tag) {
			return RuleReasoningDropped
		}
	}
	return ""
}

// leadingTag returns the tag s starts with, after white space: "<think>", "</think>",
// "<|im_start|>", "<｜Assistant｜>"; "" when s does not start with one (a tag is "<", an optional
// "/", then up to 32 bytes without white space, "<" or ">", then ">").
func leadingTag(s string) string {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	if !strings.HasPrefix(s, "<") {
		return ""
	}
	end := strings.IndexByte(s, '>')
	if end < 2 || end > 34 {
		return ""
	}
	name := strings.TrimPrefix(s[1:end], "/")
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == '<' }) {
		return ""
	}
	return s[:end+1]
}
