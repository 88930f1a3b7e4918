package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"lab/capture"
	"lab/internal/wire"
)

// Redacted replaces a secret in a Session: the lab's one mark ([capture.Redacted]).
const Redacted = capture.Redacted

var (
	// authValue matches an Authorization (or Proxy-Authorization) header's value written as
	// text, in a command (curl -H "Authorization: Basic …") or an echoed request: the scheme
	// is kept, the credentials go. wire.Redact covers "Bearer …" alone and api-key headers.
	authValue = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization\s*[:=]\s*(?:[A-Za-z][A-Za-z0-9._-]*\s+)?)[^\s"',;\\]{4,}`)
	// homeDir matches a home directory of the shapes the agents run in, where a path starts
	// (not inside a URL's path): /home/NAME, /Users/NAME (macOS), C:\Users\NAME (Windows).
	homeDir = regexp.MustCompile(`(^|[^A-Za-z0-9._~/-])(?:(?:/home/|/Users/)[^/\s"'\\:]+|(?i:[a-z]:\\Users\\)[^\\\s"':]+)`)
)

// cleaner redacts every string a reader puts in a Session: secrets first (the values of
// credential-named fields found anywhere in the file, then the lab's key shapes: wire.Redact's
// sk-…/rk- keys, bearer tokens and api-key parameters, and Authorization values), then paths:
// the project root's absolute path becomes project-relative and a home directory becomes "~".
type cleaner struct {
	// root is the project root's absolute path, "" before it is known.
	root string
	// homes are the recording user's home folders known by name (from the file's own path, the
	// reading user's): each becomes "~" wherever it appears, on top of the homeDir shapes.
	homes []string
	// secrets are values found under credential names, redacted wherever they appear.
	secrets []string
	// names are the recording user's names (the last element of each home, and of every
	// /home/NAME, /Users/NAME, C:\Users\NAME the file holds), redacted where they stand in a
	// path ([redactNames]).
	names []string
}

// newCleaner returns the cleaner of a session read from file: its homes are the folder the
// file sits in under .claude/ or .codex/ (the recording user's) and the reading user's own; its
// names theirs and those of the homes the lines hold.
func newCleaner(file string, secrets []string, lines []rawLine) *cleaner {
	c := &cleaner{secrets: secrets}
	if abs, err := filepath.Abs(file); err == nil {
		abs = filepath.ToSlash(abs)
		for _, dir := range []string{"/.claude/", "/.codex/"} {
			if i := strings.LastIndex(abs, dir); i > 0 {
				c.homes = append(c.homes, abs[:i])
			}
		}
	}
	if h, err := os.UserHomeDir(); err == nil && h != "/" && h != "" {
		c.homes = append(c.homes, filepath.ToSlash(h))
	}
	// Longest first: a home inside another is replaced whole.
	slices.SortFunc(c.homes, func(a, b string) int { return len(b) - len(a) })
	c.homes = slices.Compact(c.homes)
	var known []string
	for _, h := range c.homes {
		known = append(known, path.Base(h))
	}
	for _, l := range lines {
		if bytes.Contains(l.text, []byte("Users")) || bytes.Contains(l.text, []byte("home")) {
			for _, m := range homeName.FindAllSubmatch(l.text, -1) {
				known = append(known, string(m[1]))
			}
		}
	}
	c.names = userNames("", known)
	return c
}

// setRoot sets the project root from the absolute directory the session started in.
func (c *cleaner) setRoot(dir string) {
	if c.root == "" && path.IsAbs(filepath.ToSlash(dir)) {
		c.root = path.Clean(filepath.ToSlash(dir))
	}
}

// project returns the project's name and the directory the session started in relative to it
// (the project root is the start directory: neither agent records another root).
// A session started in a home folder is the project "~": its base name is the user's name.
func (c *cleaner) project() (string, string) {
	if c.root == "" || c.root == "/" {
		return "", ""
	}
	if c.text(c.root) == "~" || homeDir.ReplaceAllString(c.root, "${1}~") == "~" {
		return "~", ""
	}
	return path.Base(c.root), ""
}

// text returns s with every secret and absolute path redacted.
func (c *cleaner) text(s string) string {
	if s == "" {
		return s
	}
	s = capture.Redact(s, c.secrets)
	s = wire.Redact(s)
	s = authValue.ReplaceAllString(s, "${1}"+Redacted)
	if c.root != "" && c.root != "/" {
		s = replacePath(s, c.root, ".", "")
	}
	for _, h := range c.homes {
		s = replacePath(s, h, "~", "~/")
		s = replaceWord(s, dashed(h), "~")
	}
	s = homeDir.ReplaceAllString(s, "${1}~")
	return redactNames(s, c.names)
}

// replacePath replaces dir where it stands as a whole path in s: dir followed by "/" becomes
// under (then the rest), dir followed by anything else a path cannot continue with becomes
// whole; "/home/ada/greeting" is not "/home/ada/greet" followed by something.
func replacePath(s, dir, whole, under string) string {
	if !strings.Contains(s, dir) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		rest := s[i+len(dir):]
		switch {
		case rest == "":
			b.WriteString(whole)
		case rest[0] == '/':
			b.WriteString(under)
			rest = rest[1:]
		case rest[0] == '.' && (len(rest) == 1 || !pathChar(rest[1])):
			// A sentence's full stop after the path does not continue it: "in /w/p." is
			// "in ." (the full stop standing for the root), "in ~/." would be wrong.
			if whole != "." {
				b.WriteString(whole)
			}
		case !pathChar(rest[0]):
			b.WriteString(whole)
		default:
			b.WriteString(dir)
		}
		s = rest
	}
}

// pathChar says whether c can continue a file name.
func pathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c >= 0x80
}

// json returns a JSON value with every string value in it cleaned ([cleaner.text]), its keys,
// their order and its numbers kept as written (white space is not kept). A value that is not
// JSON is returned as a JSON string, cleaned.
func (c *cleaner) json(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	type frame struct {
		obj bool
		n   int // tokens written in it: keys and values
	}
	var stack []frame
	out := make([]byte, 0, len(raw))
	sep := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		switch {
		case f.obj && f.n%2 == 1:
			out = append(out, ':')
		case f.n > 0:
			out = append(out, ',')
		}
		f.n++
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b, _ := wire.Marshal(c.text(string(raw)))
			return b
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				sep()
				stack = append(stack, frame{obj: t == '{'})
			} else if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			out = append(out, byte(t))
		case string:
			key := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].n%2 == 0
			sep()
			if !key {
				t = c.text(t)
			}
			out = wire.AppendString(out, t)
		case json.Number:
			sep()
			out = append(out, t.String()...)
		case bool:
			sep()
			out = strconv.AppendBool(out, t)
		case nil:
			sep()
			out = append(out, "null"...)
		}
		if len(stack) == 0 {
			break
		}
	}
	return out
}

// rel returns a tool argument's path relative to the project root ("." for the root) when it
// is inside it, with ok; a relative path is taken relative to cwd (the project-relative folder
// the call ran in, "" for the root). A path outside the root is not ok: no lab tool can use it.
func (c *cleaner) rel(p, cwd string) (string, bool) {
	p = filepath.ToSlash(p)
	if p == "" || strings.HasPrefix(p, "~") {
		return "", false
	}
	var r string
	switch {
	case path.IsAbs(p):
		if c.root == "" {
			return "", false
		}
		if p == c.root {
			return ".", true
		}
		rest, ok := strings.CutPrefix(p, c.root+"/")
		if !ok {
			return "", false
		}
		r = path.Clean(rest)
	default:
		r = path.Clean(path.Join(cwd, p))
	}
	if r == ".." || strings.HasPrefix(r, "../") {
		return "", false
	}
	return r, true
}

// cwdOf returns a line's working directory relative to the project root ("" for the root or
// when outside it).
func (c *cleaner) cwdOf(dir string) string {
	if r, ok := c.rel(dir, ""); ok && r != "." {
		return r
	}
	return ""
}
