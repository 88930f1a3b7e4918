package hygiene

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ResolvePath resolves a path a tool call gave (spec 3.2.0 §11 "Relative paths are resolved
// against the project root"; "Absolute paths are still accepted"): a relative path against the
// project root, "~" and "~/…" against the person's home directory, an absolute path as it is; the
// result is cleaned (no ".", "..", doubled or trailing separators). "" is the root itself. Only
// "~" alone or followed by a separator means home: "~ann/x" and "~x" are relative names. root
// and home are absolute; the result is then absolute too. A ".." may take the result outside
// the project: refusing it is the caller's business (§1: a refusal names the absolute path).
func ResolvePath(p, root, home string) string {
	switch {
	case p == "~":
		return filepath.Clean(home)
	case strings.HasPrefix(p, "~"+string(filepath.Separator)) || strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	default:
		return filepath.Join(root, p)
	}
}

// DisplayPath names a file for the system prompt, a note or a task message (spec 3.2.0 §11 "A
// file in the project is named relative to its root …; a file under the person's home directory
// outside the project as ~/…. Only a file outside both is named by its absolute path."): relative
// to the root when abs is inside the project ("docs/AGENTS.md"; "." for the root itself), "~/…"
// when under home but outside the project ("~" for home itself), else abs. All three are cleaned
// first; the project wins when the root is the home directory or lies above it. A project path
// whose first component is literally "~" is named "./~/…", so that [ResolvePath] takes it back
// to the same file: ResolvePath(DisplayPath(abs, root, home), root, home) is always the cleaned
// abs. An empty home means none: nothing is named with "~".
func DisplayPath(abs, root, home string) string {
	abs = filepath.Clean(abs)
	if rel, ok := within(abs, filepath.Clean(root)); ok {
		if rel == "~" || strings.HasPrefix(rel, "~"+string(filepath.Separator)) {
			return "." + string(filepath.Separator) + rel
		}
		return rel
	}
	if home != "" {
		if rel, ok := within(abs, filepath.Clean(home)); ok {
			if rel == "." {
				return "~"
			}
			return "~" + string(filepath.Separator) + rel
		}
	}
	return abs
}

// within reports whether the cleaned path p is base or below it (by whole path components:
// /home/ann/app2 is not below /home/ann/app) and returns p relative to base ("." for base).
func within(p, base string) (string, bool) {
	if p == base {
		return ".", true
	}
	prefix := base
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if strings.HasPrefix(p, prefix) {
		return p[len(prefix):], true
	}
	return "", false
}

// Environment returns the environment block of an agent session's system prompt from the project
// root and the directory the session was started in, both absolute (spec 3.2.0 §11): the project
// is named by the root's last path component, and a start directory below the root is named
// relative to it ([Config.EnvironmentLines]). No absolute path appears in it. A start directory
// outside the root is an error naming both: the root is found from where the session starts, so
// it is at or above it. A root with no last component ("/") is an error too.
func (c *Config) Environment(root, startDir string) (string, error) {
	root = filepath.Clean(root)
	name := filepath.Base(root)
	if name == string(filepath.Separator) || name == "." || !filepath.IsAbs(root) {
		return "", fmt.Errorf("hygiene: project root %q has no name to give the model (§11)", root)
	}
	rel, ok := within(filepath.Clean(startDir), root)
	if !ok {
		return "", fmt.Errorf("hygiene: start directory %s is outside the project root %s (§11)", filepath.Clean(startDir), root)
	}
	return c.EnvironmentLines(name, filepath.ToSlash(rel)), nil
}
