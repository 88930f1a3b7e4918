package harness_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lab/chat"
)

// A call with a recorded answer gets that text as its result, through the arm's measures (spec:
// §1's id bracket; plain: the text alone), never a stub; the file it names need not exist, and
// a later read of a file the workspace holds runs for real. The scenario's own tools are in every
// arm's tool list, after the lab's.
func TestRecordedAnswersThroughTheArm(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "w.txtar"), []byte("-- a.go --\npackage a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(`name: rec
project: p
workspace: w.txtar
clock: "2026-11-05T22:00:00Z"
tools:
  - {name: web_fetch, description: Fetch a page.}
steps:
  - user: hi
  - assistant:
      calls:
        - read: {path: gone.go}
          answer: "1: package gone"
        - read: {path: gone.go}
          answer: "1: package gone"
        - web_fetch: {url: "https://example.invalid"}
          answer: "<html>hello</html>\n"
        - read: {path: a.go}
  - assistant:
      text: done
`), 0o644)
	sc := load(t, filepath.Join(dir, "s.yaml"))
	for _, tc := range []struct {
		arm  string
		want []string
	}{
		{"spec", []string{"[#0001]\n1: package gone", "[#0002]\n1: package gone", "[#0003]\n<html>hello</html>"}},
		{"plain", []string{"1: package gone", "1: package gone", "<html>hello</html>"}},
	} {
		t.Run(tc.arm, func(t *testing.T) {
			_, be := replay(t, sc, arm(t, tc.arm))
			var results []string
			for _, m := range be.requests[1].Messages {
				if m.Role == chat.RoleTool {
					results = append(results, m.Content)
				}
			}
			if len(results) != 4 || !slices.Equal(results[:3], tc.want) {
				t.Errorf("results %q, want %q and the read of a.go", results, tc.want)
			}
			if !strings.Contains(results[3], "package a") {
				t.Errorf("read of a.go = %q, want the file run for real", results[3])
			}
			for _, req := range be.requests {
				names := []string{}
				for _, tl := range req.Tools {
					names = append(names, tl.Name)
				}
				if i := slices.Index(names, "web_fetch"); i < 0 || slices.Index(names, "read") > i {
					t.Errorf("tool list %v: want the scenario's web_fetch after the lab's tools", names)
				}
			}
		})
	}
}
