package harness_test

import (
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	lab "lab"
	"lab/hygiene"
	"lab/tools"
)

// newWS makes a sandbox "p" with files (name, content pairs) and a session with measures m.
func newWS(t *testing.T, m hygiene.Measures, files ...string) (*tools.Workspace, *hygiene.Session) {
	t.Helper()
	loop, err := hygiene.ParseConfig(lab.LoopJSON)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hygiene.NewSession(loop, m)
	if err != nil {
		t.Fatal(err)
	}
	var tf []txtar.File
	for i := 0; i+1 < len(files); i += 2 {
		tf = append(tf, txtar.File{Name: files[i], Data: []byte(files[i+1])})
	}
	ws, err := tools.NewWorkspace(tf, t.TempDir(), "p")
	if err != nil {
		t.Fatal(err)
	}
	return ws, hs
}

// calls wraps scripted calls into a scenario: base's user step, one assistant step with the calls
// (line 9 on), and a final answer.
func calls(lines ...string) string {
	return base + "  - assistant:\n      calls:\n" + strings.Join(lines, "\n") + "\n  - assistant:\n      text: done\n"
}
