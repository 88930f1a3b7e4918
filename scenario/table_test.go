package scenario_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"lab/tools"
)

// A scenario's scripted calls are checked by their tool's table entry alone: an entry added to
// the table is a known tool whose argument rules (names, required, kinds), own check and path
// replay decide whether the scenario loads, and a read-only mode skips its replay when it
// changes files.
func TestATableEntryChecksScriptedCalls(t *testing.T) {
	entry := &tools.Tool{
		Name:         "touch_file",
		Schema:       `{"type":"object","properties":{"path":{"type":"string"},"times":{"type":"integer"},"note":{}},"required":["path"]}`,
		Args:         []tools.Arg{{Name: "path", Required: true, Kind: tools.PathArg}, {Name: "times", Kind: tools.CountArg}, {Name: "note"}},
		ChangesFiles: true,
		Check: func(args map[string]any) error {
			if n, ok := args["note"]; ok && n != "ok" {
				return errors.New("note: want ok")
			}
			return nil
		},
		Replay: func(tr *tools.Tree, a tools.CallArgs) string {
			if why := tr.NeedFile(tools.ScriptPath(a.Path)); why != "" {
				return "touch_file " + a.Path + ": " + why
			}
			return ""
		},
	}
	old := tools.Table
	tools.Table = append(slices.Clone(old), entry)
	t.Cleanup(func() { tools.Table = old })

	for _, tc := range []struct{ name, yaml, want string }{
		{"loads", calls(`        - touch_file: {path: a.go, times: 2, note: ok}`), ""},
		{"missing", calls(`        - touch_file: {times: 2}`), `:9: touch_file: missing argument "path"`},
		{"unknown argument", calls(`        - touch_file: {path: a.go, mode: x}`), `:9: touch_file: unknown argument "mode"`},
		{"kind", calls(`        - touch_file: {path: a.go, times: -1}`), `:9: touch_file: times: want a whole number ≥ 0`},
		{"outside", calls(`        - touch_file: {path: ../a.go}`), `:9: touch_file: path "../a.go" is outside the workspace`},
		{"own check", calls(`        - touch_file: {path: a.go, note: no}`), `:9: touch_file: note: want ok`},
		{"replay", calls(`        - touch_file: {path: b.go}`), `:9: touch_file b.go: the workspace holds no such file`},
		{"plan mode", "mode: plan\n" + calls(`        - touch_file: {path: b.go}`), ""},
		{"not an MCP name", base + "  - mcp: {server: s, tools: [{name: touch_file}]}\n  - assistant:\n      text: done\n", `:7: mcp: tool "touch_file": empty or the name of a built-in tool`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadWithPathsArchive(t, tc.yaml)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("LoadScenario = %v; want it to load", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), p+tc.want)):
				t.Fatalf("LoadScenario = %v; want %s%s", err, p, tc.want)
			}
		})
	}
}
