package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// findCmd returns the command at path (such as "server start") under a fresh root.
func findCmd(t *testing.T, path string) *cobra.Command {
	t.Helper()
	root := newRootCmd(&streams{out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	c, rest, err := root.Find(strings.Fields(path))
	if err != nil || len(rest) > 0 {
		t.Fatalf("find %q: %v (left %q)", path, err, rest)
	}
	return c
}

// A former flag name sets the flag of the new name, so that a user's script keeps working, and
// is hidden from the help: --json is --format json (check, conformance), the proxy's --out is
// --run (the capture's run folder), the server's --ctx-size is --num-ctx.
func TestDeprecatedFlagsSetTheirNewName(t *testing.T) {
	for _, tc := range []struct {
		cmd       string
		old       []string
		flag, val string
	}{
		{"check", []string{"--json"}, "format", "json"},
		{"conformance", []string{"--json"}, "format", "json"},
		{"conformance", []string{"--json=false"}, "format", "text"},
		{"proxy", []string{"--out", "/tmp/cap"}, "run", "/tmp/cap"},
		{"server start", []string{"--ctx-size", "8192"}, "num-ctx", "8192"},
	} {
		c := findCmd(t, tc.cmd)
		if err := c.ParseFlags(tc.old); err != nil {
			t.Errorf("lab %s %s: %v", tc.cmd, strings.Join(tc.old, " "), err)
			continue
		}
		fl := c.Flags().Lookup(tc.flag)
		if fl == nil {
			t.Errorf("lab %s has no --%s", tc.cmd, tc.flag)
			continue
		}
		if got := fl.Value.String(); got != tc.val {
			t.Errorf("lab %s %s: --%s = %q; want %q", tc.cmd, strings.Join(tc.old, " "), tc.flag, got, tc.val)
		}
		old := strings.TrimPrefix(strings.SplitN(tc.old[0], "=", 2)[0], "--")
		if fl := c.Flags().Lookup(old); fl == nil || !fl.Hidden || len(fl.Annotations[deprecatedAnnotation]) == 0 {
			t.Errorf("lab %s --%s: want a hidden, deprecated flag", tc.cmd, old)
		}
	}
}

// --json still works on lab conformance: the same document as --format json, and a line on
// stderr saying the flag is deprecated. An unknown --format is bad input.
func TestConformanceFormatJSON(t *testing.T) {
	code, want, _ := runLab(t, "conformance", "--area", "context", "--format", "json")
	if code != exitOK || !strings.HasPrefix(want, "{") {
		t.Fatalf("lab conformance --format json: exit %d, stdout %.80q", code, want)
	}
	code, got, errOut := runLab(t, "conformance", "--area", "context", "--json")
	if code != exitOK || got != want {
		t.Errorf("lab conformance --json: exit %d, stdout differs from --format json's", code)
	}
	if !strings.Contains(errOut, "lab: warning: --json is deprecated: use --format json instead") {
		t.Errorf("lab conformance --json: stderr %q; want a deprecation line", errOut)
	}
	if code, _, errOut := runLab(t, "conformance", "--format", "xml"); code != exitBadInput || !strings.Contains(errOut, "--format") {
		t.Errorf("lab conformance --format xml: exit %d, stderr %q; want %d naming --format", code, errOut, exitBadInput)
	}
}
