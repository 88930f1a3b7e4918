package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// deprecatedAnnotation marks a flag kept under a former name: its value is what to use instead.
// The root command warns on stderr when such a flag is given (warnDeprecated). pflag's own
// MarkDeprecated is not used: cobra prints its message on the command's output, stdout, where
// it would corrupt a JSON document.
const deprecatedAnnotation = "lab-deprecated"

// aliasFlag registers old as a deprecated name of the flag name on f: it sets the same value,
// is hidden from the help and, when given, warns that it is deprecated for --name, so a script
// written for the old name keeps working. name must be defined.
func aliasFlag(f *pflag.FlagSet, old, name string) {
	nf := f.Lookup(name)
	f.AddFlag(&pflag.Flag{Name: old, Usage: nf.Usage, Value: nf.Value, DefValue: nf.DefValue, NoOptDefVal: nf.NoOptDefVal,
		Hidden: true, Annotations: map[string][]string{deprecatedAnnotation: {"use --" + name + " instead"}}})
}

// warnDeprecated writes to w one warning for each deprecated flag given in f.
func warnDeprecated(w io.Writer, f *pflag.FlagSet) {
	f.Visit(func(fl *pflag.Flag) {
		if use := fl.Annotations[deprecatedAnnotation]; len(use) > 0 {
			fmt.Fprintf(w, "lab: warning: --%s is deprecated: %s\n", fl.Name, use[0])
		}
	})
}

// formatFlag adds --format (text or json, default text) writing to format, and --json, its
// deprecated former spelling (--json is --format json).
func formatFlag(f *pflag.FlagSet, format *string, what string) {
	f.StringVar(format, "format", "text", "output format: text ("+what+") or json (one JSON document)")
	f.AddFlag(&pflag.Flag{Name: "json", Usage: "the same as --format json", Value: (*jsonAlias)(format), DefValue: "false", NoOptDefVal: "true",
		Hidden: true, Annotations: map[string][]string{deprecatedAnnotation: {"use --format json instead"}}})
}

// jsonAlias is the value of --json: true sets the --format it points to to json.
type jsonAlias string

func (j *jsonAlias) String() string   { return strconv.FormatBool(*j == "json") }
func (j *jsonAlias) Type() string     { return "bool" }
func (j *jsonAlias) IsBoolFlag() bool { return true }
func (j *jsonAlias) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	if b {
		*j = "json"
	}
	return nil
}

// checkFormat reports a --format other than text or json as bad input.
func checkFormat(format string) error {
	if format != "text" && format != "json" {
		return badInput("--format %q: want text or json", format)
	}
	return nil
}

// flagGroup is one section of a command's flags in its help: a title and the flags' names in
// the order shown.
type flagGroup struct {
	title string
	flags []string
}

// helpWidth is the column the help's flag descriptions wrap at.
const helpWidth = 100

// groupedUsage is a usage function (cobra.Command.SetUsageFunc) that prints the command's flags
// in groups, each a section of its own wrapped at helpWidth columns; a flag in no group
// (--help, say) is under "Other flags".
func groupedUsage(groups []flagGroup) func(*cobra.Command) error {
	return func(c *cobra.Command) error {
		w := c.OutOrStderr()
		fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
		if c.HasExample() {
			fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
		}
		flags := c.LocalFlags()
		seen := map[string]bool{}
		section := func(title string, fs *pflag.FlagSet) {
			if fs.HasAvailableFlags() {
				fmt.Fprintf(w, "\n%s:\n%s", title, fs.FlagUsagesWrapped(helpWidth))
			}
		}
		for _, g := range groups {
			fs := pflag.NewFlagSet(g.title, pflag.ContinueOnError)
			fs.SortFlags = false
			for _, name := range g.flags {
				if fl := flags.Lookup(name); fl != nil {
					fs.AddFlag(fl)
					seen[name] = true
				}
			}
			section(g.title, fs)
		}
		rest := pflag.NewFlagSet("other", pflag.ContinueOnError)
		flags.VisitAll(func(fl *pflag.Flag) {
			if !seen[fl.Name] {
				rest.AddFlag(fl)
			}
		})
		section("Other flags", rest)
		return nil
	}
}
