package main

import (
	"fmt"
	"io"
	"strconv"

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
