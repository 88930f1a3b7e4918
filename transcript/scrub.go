package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"lab/capture"
	"lab/internal/wire"
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

var (
	// homePattern is a home directory in a path: /home/NAME, /Users/NAME, C:\Users\NAME, /root.
	homePattern = regexp.MustCompile(`(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)[A-Za-z0-9._-]+|/root\b`)
	// homeName is the NAME of a home directory written as a path.
	homeName = regexp.MustCompile(`(?:/home/|/Users/|[A-Za-z]:\\\\?Users\\\\?)([A-Za-z0-9._-]+)`)
	// dashedHome is a home directory in the form Claude Code names its project folders by
	// (~/.claude/projects/<the project's absolute path, every character but a letter or digit as
	// '-'>): -home-NAME, -Users-NAME, C--Users-NAME, -root, where a path component starts. A
	// NAME holding a '-' is known only by the names found elsewhere ([userNames]).
	dashedHome = regexp.MustCompile(`(^|[/\\\s"'=:(\[{,])(?:-home-[A-Za-z0-9_]+|-Users-[A-Za-z0-9_]+|[A-Za-z]--Users-[A-Za-z0-9_]+|-root)(?:$|[^A-Za-z0-9_])`)
	// tildeUser is a home directory written ~NAME/ (the shell's form of another user's home).
	tildeUser = regexp.MustCompile(`(^|[\s"'=:(\[{,])~[A-Za-z_][A-Za-z0-9._-]*/`)
)

// genericNames are last elements of a home directory that name no one: they are not redacted
// where they stand alone in a path (a "root" or "shared" folder is not the user's name).
var genericNames = map[string]bool{"root": true, "home": true, "user": true, "users": true, "shared": true, "public": true, "default": true, "admin": true, "guest": true, "nobody": true}

// RedactText returns text with every credential it recognises replaced by
// capture.Redacted ("[redacted]") and every home directory by "~": the patterns above, the
// recording machine's $HOME, a home written in Claude Code's dashed project-folder form
// (-home-NAME-src-app becomes ~-src-app) or as ~NAME/, the value of every credential-named JSON
// field (capture.RedactBody) when text is a JSON document, and the user's own name (the last
// element of $HOME, or of a /home/NAME, /Users/NAME or C:\Users\NAME the text holds) wherever
// it stands as a path's component. It is what `lab scenario import` passes everything it writes
// through, whichever reader produced the session.
//
// A JSON document (text that is valid JSON as a whole: tool arguments, captured request lines)
// stays valid JSON: each of its strings, keys included, is redacted as decoded and written back
// escaped, every other byte kept as it was.
func RedactText(text string) string {
	if text == "" {
		return text
	}
	return redactText(text, userNames(text, homeNames()))
}

// redactText is [RedactText] with the user names known: names are redacted where they stand as
// a path's component.
func redactText(text string, names []string) string {
	if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") || strings.HasPrefix(t, `"`)) && json.Valid([]byte(text)) {
		var secrets []string
		if b, found := capture.RedactBody([]byte(text)); b != nil {
			text, secrets = string(b), found
		}
		if out, ok := mapJSONStrings([]byte(text), func(s string) string {
			return redactPlain(capture.Redact(s, secrets), names)
		}); ok {
			return string(out)
		}
	}
	return redactPlain(text, names)
}

// redactPlain redacts a text that is not a JSON document (or one of its strings, decoded).
func redactPlain(text string, names []string) string {
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
	text = homePattern.ReplaceAllString(text, "~")
	return redactNames(text, names)
}

// homeNames are the user names the reading machine knows: the last element of $HOME.
func homeNames() []string {
	home, err := os.UserHomeDir()
	if err != nil || len(home) < 2 {
		return nil
	}
	return []string{filepath.Base(home)}
}

// userNames returns known with the names of the home directories text holds (/home/NAME,
// /Users/NAME, C:\Users\NAME), those that name no one ([genericNames]) and one-letter ones left
// out, longest first.
func userNames(text string, known []string) []string {
	out := slices.Clone(known)
	for _, m := range homeName.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	out = slices.DeleteFunc(out, func(n string) bool { return len(n) < 2 || genericNames[strings.ToLower(n)] })
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// dashed is a path as Claude Code writes it in a project folder's name: every character but
// an ASCII letter or digit as '-'.
func dashed(p string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, p)
}

// redactNames redacts the homes written in Claude Code's dashed form or as ~NAME/ (to "~"), and
// each name where it stands as a path's component (to [Redacted]): after or before a '/' or
// '\', or as the dashed home's NAME.
func redactNames(text string, names []string) string {
	for _, n := range names {
		text = dashedHomeOf(n).ReplaceAllString(text, "${1}~${2}")
		text = replaceWord(text, "~"+n, "~")
	}
	text = dashedHome.ReplaceAllStringFunc(text, func(m string) string {
		sub := dashedHome.FindStringSubmatch(m)
		end := m[len(m)-1]
		if end >= 'a' && end <= 'z' || end >= 'A' && end <= 'Z' || end >= '0' && end <= '9' || end == '_' {
			return sub[1] + "~" // the match ends at the text's end
		}
		return sub[1] + "~" + string(end)
	})
	text = tildeUser.ReplaceAllString(text, "${1}~/")
	for _, n := range names {
		text = replaceComponent(text, n)
	}
	return text
}

// dashedHomes are the compiled [dashedHomeOf], by name.
var dashedHomes sync.Map

// dashedHomeOf matches the home of the user name in Claude Code's dashed form (-home-NAME,
// -Users-NAME, C--Users-NAME, NAME dashed too) where a path component starts; ${1} is what
// precedes it and ${2} what follows.
func dashedHomeOf(name string) *regexp.Regexp {
	if re, ok := dashedHomes.Load(name); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_.-])(?:-home-|-Users-|[A-Za-z]--Users-)` + regexp.QuoteMeta(dashed(name)) + `($|[^A-Za-z0-9_])`)
	dashedHomes.Store(name, re)
	return re
}

// nameChar says whether c can continue a user name or a path component.
func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c >= 0x80
}

// replaceWord replaces word with by in text where it does not continue a name on either side.
func replaceWord(text, word, by string) string {
	return replaceWhere(text, word, by, func(before, after byte, first, last bool) bool {
		return !(!first && nameChar(before) && before != '-') && !(!last && nameChar(after) && after != '-' && after != '.')
	})
}

// replaceComponent replaces name by [Redacted] where it is a whole component of a path: a '/'
// or '\' on one side, nothing a name continues with on the other.
func replaceComponent(text, name string) string {
	sep := func(c byte) bool { return c == '/' || c == '\\' }
	return replaceWhere(text, name, Redacted, func(before, after byte, first, last bool) bool {
		if first {
			before = ' '
		}
		if last {
			after = ' '
		}
		return !nameChar(before) && !nameChar(after) && (sep(before) || sep(after))
	})
}

// replaceWhere replaces each occurrence of word in text (left to right, not overlapping) with by
// where at says so, given the bytes before and after it (first: it starts text, so before is
// none; last: it ends text, so after is none).
func replaceWhere(text, word, by string, at func(before, after byte, first, last bool) bool) string {
	if word == "" || !strings.Contains(text, word) {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, word)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		j := i + len(word)
		var before, after byte
		if i > 0 {
			before = text[i-1]
		}
		if j < len(text) {
			after = text[j]
		}
		if at(before, after, i == 0, j == len(text)) {
			b.WriteString(text[:i])
			b.WriteString(by)
		} else {
			b.WriteString(text[:j])
		}
		text = text[j:]
	}
}

// mapJSONStrings returns the JSON text raw with every string in it, keys included, replaced by
// f of its decoded value, written back escaped; every byte outside a changed string is kept.
// ok is false when raw is not a JSON text.
func mapJSONStrings(raw []byte, f func(string) string) ([]byte, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out []byte
	last := 0 // raw[:last] is written (or unchanged)
	prevEnd := 0
	changed := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false
		}
		end := int(d.InputOffset())
		if s, isString := tok.(string); isString {
			// The string starts at its opening quote after the previous token (past white
			// space, ',' and ':').
			start := prevEnd + bytes.IndexByte(raw[prevEnd:end], '"')
			if red := f(s); red != s {
				out = append(out, raw[last:start]...)
				out = wire.AppendString(out, red)
				last, changed = end, true
			}
		}
		prevEnd = end
	}
	if d.More() {
		return nil, false
	}
	if !changed {
		return raw, true
	}
	return append(out, raw[last:]...), true
}

// redact passes every text of the session through f: the turns, the replies' reasoning and
// text, the calls' arguments (each JSON string, [mapJSONStrings]) and results, the compactions'
// summaries and the skipped records' kinds and whys. File is kept as the caller gave it.
func (s *Session) redact(f func(string) string) {
	js := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 {
			return raw
		}
		if out, ok := mapJSONStrings(raw, f); ok {
			return out
		}
		return raw
	}
	s.Agent, s.Model, s.Project, s.StartDir = f(s.Agent), f(s.Model), f(s.Project), f(s.StartDir)
	for i := range s.Events {
		e := &s.Events[i]
		switch {
		case e.User != nil:
			e.User = ptr(f(*e.User))
		case e.Compact != nil:
			e.Compact.Summary = f(e.Compact.Summary)
		case e.Assistant != nil:
			a := e.Assistant
			a.Reasoning, a.Text = f(a.Reasoning), f(a.Text)
			for k := range a.Calls {
				c := &a.Calls[k]
				c.Args, c.ToolArgs, c.Result = js(c.Args), js(c.ToolArgs), f(c.Result)
			}
		}
	}
	s.redactSkipped(f)
}

// redactSkipped passes the skipped records' kinds and whys through f: both may quote the file
// (a record's type, a conversation's name).
func (s *Session) redactSkipped(f func(string) string) {
	for i := range s.Skipped {
		s.Skipped[i].Kind, s.Skipped[i].Why = f(s.Skipped[i].Kind), f(s.Skipped[i].Why)
	}
}
