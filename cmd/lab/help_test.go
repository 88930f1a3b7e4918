package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"lab/internal/golden"
)

// helpPaths are the command paths of lab and every command under it (lab's own, not cobra's
// help and completion), in the order of the tree.
func helpPaths(c *cobra.Command, path []string) [][]string {
	out := [][]string{path}
	for _, sub := range c.Commands() {
		out = append(out, helpPaths(sub, append(slices.Clone(path), sub.Name()))...)
	}
	return out
}

// Each command's --help, lab's own included, is the golden file testdata/help/<command>.golden
// (lab-server-start.golden for lab server start), so that a change of a flag or of a help text
// shows in review. go test ./cmd/lab -run TestHelpGolden -update rewrites them.
func TestHelpGolden(t *testing.T) {
	t.Setenv("LAB_CACHE", "")
	root := newRootCmd(&streams{out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	for _, path := range helpPaths(root, nil) {
		name := strings.Join(append([]string{"lab"}, path...), "-")
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runLab(t, append(slices.Clone(path), "--help")...)
			if code != exitOK || errOut != "" {
				t.Fatalf("lab %s --help: exit %d, stderr %q", strings.Join(path, " "), code, errOut)
			}
			golden.Check(t, "help/"+name+".golden", []byte(out))
		})
	}
}

// lab run --help shows every flag of lab run in one of its groups, none in two, names no flag
// lab run lacks, and keeps every line within 100 columns.
func TestRunHelpGroupsEveryFlag(t *testing.T) {
	c := findCmd(t, "run")
	in := map[string]string{}
	for _, g := range runFlagGroups {
		for _, name := range g.flags {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("group %q names --%s, which lab run does not take", g.title, name)
			}
			if other, dup := in[name]; dup {
				t.Errorf("--%s is in groups %q and %q", name, other, g.title)
			}
			in[name] = g.title
		}
	}
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if _, ok := in[fl.Name]; !ok && !fl.Hidden {
			t.Errorf("--%s is in no group of lab run --help (runFlagGroups)", fl.Name)
		}
	})
	code, out, _ := runLab(t, "run", "--help")
	if code != exitOK {
		t.Fatalf("lab run --help: exit %d", code)
	}
	for _, g := range runFlagGroups {
		if !strings.Contains(out, "\n"+g.title+":\n") {
			t.Errorf("lab run --help has no section %q", g.title)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > helpWidth {
			t.Errorf("lab run --help line %d is %d columns: %q", i+1, n, line)
		}
	}
}
