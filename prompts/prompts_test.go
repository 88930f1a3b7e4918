package prompts

import (
	"strings"
	"testing"
)

func TestSystemHasNoClockOrAbsolutePath(t *testing.T) {
	s := System()
	if len(s) < 200 {
		t.Fatalf("System() is %d bytes; want the whole system.md", len(s))
	}
	// Spec 3.2.0 §10.2 and §11: no date and no absolute machine path in the system prompt.
	for _, bad := range []string{"{{date}}", "/home/", "/root/", "/work/", "2026-"} {
		if strings.Contains(s, bad) {
			t.Errorf("System() contains %q", bad)
		}
	}
}
