package prompts

import (
	"io/fs"
	"regexp"
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

// The files the spec names exist, and no prompt names an absolute machine path (§11).
func TestRequiredFilesAndNoAbsolutePaths(t *testing.T) {
	for _, name := range []string{"system.md", "blocks/context.md", "tasks/compact.md", "tasks/init.md", "modes/default.md", "modes/plan.md"} {
		if _, err := Text(name); err != nil {
			t.Error(err)
		}
	}
	compact, _ := Text("tasks/compact.md")
	for _, p := range []string{"{{transcript}}", "{{previous_summary}}"} {
		if !strings.Contains(compact, p) {
			t.Errorf("tasks/compact.md has no %s (spec §7)", p)
		}
	}
	abs := regexp.MustCompile(`(^|[\s(])/(home|root|usr|tmp|Users|work)/`)
	fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := FS.ReadFile(p)
		if abs.Match(b) {
			t.Errorf("%s names an absolute path", p)
		}
		return nil
	})
	if got := strings.Join(Modes(), ","); got != "auto,default,plan" {
		t.Errorf("Modes() = %s", got)
	}
}
