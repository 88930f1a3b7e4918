package scenario

import (
	"errors"
	"os"
	"testing"
)

// FuzzParseScenario: any input either loads or fails with a *SyntaxError naming the file; never
// a panic.
func FuzzParseScenario(f *testing.F) {
	for _, p := range []string{"../harness/testdata/tiny.yaml", "../scenarios/midnight/scenario.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("name: x\nproject: p\nworkspace: w\nclock: \"2026-11-05T22:00:00Z\"\nsteps:\n  - user: &a hi\n  - assistant: {text: *a}\n"))
	f.Add([]byte("steps: [{user: }, {assistant: {calls: [{read: {path: ../x}}]}}]"))
	f.Add([]byte("- - - :\n\t"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseScenario("f.yaml", data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.File != "f.yaml" {
				t.Fatalf("error %v (%T) is not a *SyntaxError for f.yaml", err, err)
			}
			return
		}
		if len(s.Steps) == 0 || s.Start.IsZero() {
			t.Fatalf("loaded a scenario without steps or clock")
		}
	})
}
