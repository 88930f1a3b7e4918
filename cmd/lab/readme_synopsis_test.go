package main

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// readmeSynopsis returns the lines of the README's command synopsis (the code block under
// "## Commands") that start with "lab <command> ".
func readmeSynopsis(t *testing.T, command string) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## Commands\n\n```\n")
	block, _, ok2 := strings.Cut(rest, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("README.md: no code block under ## Commands")
	}
	var out []string
	for l := range strings.SplitSeq(block, "\n") {
		if strings.HasPrefix(l, "lab "+command+" ") {
			out = append(out, l)
		}
	}
	return out
}

// The README's synopsis of a command names every flag its --help lists (but --help and the
// hidden former names): a flag the help shows is one a reader of the README can find.
func TestReadmeSynopsisNamesEveryFlag(t *testing.T) {
	for _, command := range []string{"report", "compare", "repair"} {
		lines := readmeSynopsis(t, command)
		if len(lines) == 0 {
			t.Errorf("README.md: no synopsis of lab %s", command)
			continue
		}
		synopsis := strings.Join(lines, "\n")
		findCmd(t, command).Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.Hidden || fl.Name == "help" {
				return
			}
			if !strings.Contains(synopsis, "--"+fl.Name+" ") && !strings.Contains(synopsis, "--"+fl.Name+"]") {
				t.Errorf("README.md's synopsis of lab %s lacks --%s:\n%s", command, fl.Name, synopsis)
			}
		})
	}
}
