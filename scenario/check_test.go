package scenario

import "testing"

// Each tool's scripted arguments are checked by the rules of its table entry.
func TestCheckCallNewTools(t *testing.T) {
	for _, tc := range []struct{ tool, args, err string }{
		{"write", `{"path":"a.md","content":"x"}`, ""},
		{"write", `{"path":"a.md"}`, `missing argument "content"`},
		{"write", `{"path":"a.md","content":1}`, "content: want a string"},
		{"multiedit", `{"path":"a","edits":[{"old_string":"x","new_string":"y"}]}`, ""},
		{"multiedit", `{"path":"a","edits":[]}`, "edits: want a non-empty list of {old_string, new_string}"},
		{"multiedit", `{"path":"a","edits":[{"old_string":"","new_string":"y"}]}`, "edits[0].old_string: empty"},
		{"multiedit", `{"path":"a","edits":[{"old_string":"x","new_string":"y","replace_all":true}]}`, `edits[0]: unknown argument "replace_all"`},
		{"multiedit", `{"path":"a","edits":[{"old_string":"x"}]}`, "edits[0].new_string: want a string"},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}`, ""},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: ../a\n+x\n*** End Patch"}`, `patch line 2: path "../a" is outside the workspace`},
		{"apply_patch", `{"patch":"*** Begin Patch\n*** Update File: a\n*** Move to: /tmp/b\n*** End Patch"}`, `patch line 2: path "/tmp/b" is outside the workspace: scenario paths are relative to the project root`},
		{"apply_patch", `{"patch":"nope"}`, `patch line 1: the first line must be "*** Begin Patch"`},
		{"recall", `{"id":"#0001","offset":3}`, ""},
		{"recall", `{"id":1}`, "id: want a string"},
		{"recall", `{}`, `missing argument "id"`},
		{"glob", `{}`, `missing argument "pattern"`},
		{"glob", `{"pattern":"**/*.go","path":"src"}`, ""},
		{"find", `{}`, "unknown tool (the tools are read, list, glob, grep, edit, write, multiedit, apply_patch, bash, recall, and the tools of MCP servers connected before the call)"},
	} {
		err := checkCall(Call{Tool: tc.tool, Args: []byte(tc.args)})
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("checkCall(%s %s) = %v, want %q", tc.tool, tc.args, err, tc.err)
		}
	}
}
