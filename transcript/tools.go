package transcript

import (
	"encoding/json"
	"strings"

	"lab/internal/wire"
)

// labArgs builds a lab tool's arguments in the lab's schema (tools.Table): the fields in the
// table's order, optional ones left out when empty.
type labArgs []labArg

type labArg struct {
	key string
	val any
}

// MarshalJSON writes the fields in order.
func (a labArgs) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range a {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := wire.Marshal(f.key)
		v, err := wire.Marshal(f.val)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// mapped sets the call's lab tool and arguments, their strings cleaned (secrets and paths
// redacted, [cleaner.text]).
func (c *Call) mapped(cl *cleaner, tool string, args labArgs) {
	b, err := wire.Marshal(cl.args(args))
	if err != nil {
		return
	}
	c.Tool, c.ToolArgs = tool, b
}

// args returns a copy of a with its strings cleaned.
func (c *cleaner) args(a labArgs) labArgs {
	out := make(labArgs, len(a))
	for i, f := range a {
		switch v := f.val.(type) {
		case string:
			f.val = c.text(v)
		case []labArgs:
			list := make([]labArgs, len(v))
			for j, e := range v {
				list[j] = c.args(e)
			}
			f.val = list
		}
		out[i] = f
	}
	return out
}

// argString returns a string argument, "" when absent or not a string.
func argString(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// argCount returns a whole-number argument ≥ 0 and whether the call gave one.
func argCount(m map[string]any, key string) (int64, bool) {
	switch v := m[key].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil && n >= 0
	case float64:
		return int64(v), v >= 0 && v == float64(int64(v))
	}
	return 0, false
}

// argTrue says whether a boolean argument is true.
func argTrue(m map[string]any, key string) bool {
	b, _ := m[key].(bool)
	return b
}

// decodeArgs decodes a call's arguments (a JSON object) with numbers kept as json.Number; nil
// when they are not an object.
func decodeArgs(raw json.RawMessage) map[string]any {
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

// relPatch returns a patch in the apply_patch format (tools' patch format, Codex's) with every
// file path made project-relative, and false when one is outside the project.
func (c *cleaner) relPatch(patch, cwd string) (string, bool) {
	lines := strings.Split(patch, "\n")
	for i, l := range lines {
		for _, head := range []string{"*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "} {
			p, ok := strings.CutPrefix(l, head)
			if !ok {
				continue
			}
			r, ok := c.rel(strings.TrimSpace(p), cwd)
			if !ok || r == "." {
				return "", false
			}
			lines[i] = head + r
		}
	}
	return strings.Join(lines, "\n"), true
}

// bashArgs returns the lab bash tool's arguments: the command and, when not the root, the
// project-relative folder it runs in.
func bashArgs(command, cwd string) labArgs {
	a := labArgs{{"command", command}}
	if cwd != "" && cwd != "." {
		a = append(a, labArg{"cwd", cwd})
	}
	return a
}

// shellScript returns the script of a command given as argv when it is a shell's -c form
// (["bash", "-lc", "go test ./..."]), or the argv joined with single quotes where needed.
func shellScript(argv []string) string {
	if len(argv) == 3 {
		switch strings.TrimPrefix(argv[0], "/bin/") {
		case "bash", "sh", "zsh", "/usr/bin/bash", "/usr/bin/zsh":
			if argv[1] == "-c" || argv[1] == "-lc" {
				return argv[2]
			}
		}
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes a word for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
