package transcript

import (
	"os"
	"regexp"
	"strings"

	"lab/capture"
)

// secretPatterns are the shapes of credentials a session's text may hold outside a
// credential-named field: provider API keys (OpenAI and Anthropic "sk-…", GitHub "ghp_…" and
// "github_pat_…", AWS access key ids "AKIA…", Slack "xox…-…", Google "AIza…"), bearer tokens and
// JSON web tokens, and the value of NAME=VALUE or "name": "value" where the name says key,
// token, secret or password.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`AKIA[0-9A-Z]{16}`),
	regexp.MustCompile(`xox[abposr]-[A-Za-z0-9-]{10,}`),
	regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`),
	regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{12,}`),
	regexp.MustCompile(`(?i)((?:api[_-]?key|access[_-]?key|secret|token|password|passwd)[A-Za-z0-9_]*\s*[=:]\s*["']?)[^\s"']{8,}`),
}

// homePattern is a home directory in a path: /home/NAME, /Users/NAME, C:\Users\NAME, /root.
var homePattern = regexp.MustCompile(`(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)[A-Za-z0-9._-]+|/root\b`)

// RedactText returns text with every credential it recognises replaced by
// capture.Redacted ("[redacted]") and every home directory by "~": the patterns above, the
// recording machine's $HOME, and the value of every credential-named JSON field
// (capture.RedactBody) when text is a JSON document. It is what `lab scenario import` passes
// everything it writes through, whichever reader produced the session.
func RedactText(text string) string {
	if text == "" {
		return text
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		if b, secrets := capture.RedactBody([]byte(text)); b != nil {
			text = capture.Redact(string(b), secrets)
		}
	}
	for _, re := range secretPatterns {
		text = re.ReplaceAllStringFunc(text, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if len(sub) > 1 {
				if strings.Trim(m[len(sub[1]):], "0123456789") == "" {
					return m // a count (max_tokens=40960), not a secret
				}
				return sub[1] + capture.Redacted
			}
			return capture.Redacted
		})
	}
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		text = strings.ReplaceAll(text, home, "~")
	}
	return homePattern.ReplaceAllString(text, "~")
}
