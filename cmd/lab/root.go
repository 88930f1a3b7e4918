package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"lab/arms"
	"lab/harness"
	"lab/internal/fileerr"
	"lab/localserver"
	"lab/scenario"
	"lab/tools"
)

// Exit codes: 0 ok; 1 could not run; 2 bad input (flags, scenario files); 3 ran, and found an
// expectation that failed (lab conformance: a failing case; lab check, later).
const (
	exitOK       = 0
	exitError    = 1
	exitBadInput = 2
	exitFailed   = 3
)

// usageError marks an error in what the user gave (a flag, an argument): exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// streams are the command's output; tests pass buffers.
type streams struct {
	out, err io.Writer
	getenv   func(string) string
	// started is set when a command's RunE begins: an error before that (an unknown command,
	// a wrong argument count, a bad flag) is a usage error.
	started bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	s := &streams{out: stdout, err: stderr, getenv: os.Getenv}
	root := newRootCmd(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "lab:", err)
	if !s.started {
		return exitBadInput
	}
	return exitCode(err)
}

// exitCode maps an error to the documented exit code.
func exitCode(err error) int {
	var ue *usageError
	var se *scenario.SyntaxError
	var fe *failedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.As(err, &se):
		return exitBadInput
	case errors.As(err, &fe):
		return exitFailed
	default:
		return exitError
	}
}

func newRootCmd(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "lab",
		Short: "Measure what context-hygiene measures do to a model server's prompt cache",
		Long: `lab replays scripted agent sessions through a real agent harness that implements the
context-hygiene spec 3.2.0, against a real model server (by default a local Ollama serving a
synthetic Qwen3 model, which lab builds and starts itself), with each measure switched on or off.
It records, for every request, the prompt tokens, the tokens the server reused from its KV cache
and the tokens it could have reused, to results/run_id=<run-id>/ (Parquet), and writes plots and
a report.`,
		Example: `  lab run                          # the midnight scenario, every arm, on the local server
  lab run --arm spec --repeat 3
  lab server start && lab run && lab server stop
  lab model synth --hidden 256 --out /tmp/m.gguf`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(c *cobra.Command, _ []string) {
			s.started = true
			warnDeprecated(s.err, c.Flags())
		},
	}
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%w (see lab %s --help)", err, c.Name())}
	})
	root.AddCommand(newRunCmd(s), newCalibrateCmd(s), newServerCmd(s), newModelCmd(s), newArmsCmd(s), newVersionCmd(s), newConformanceCmd(s),
		newReportCmd(s), newCompareCmd(s), newCheckCmd(s), newProxyCmd(s), newRepairCmd(s), newAgentsCmd(s), newScenarioCmd(s))
	return root
}

// cacheDir returns --cache, else $LAB_CACHE, $XDG_CACHE_HOME/lab or ~/.cache/lab.
func cacheDir(s *streams, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return localserver.DefaultCacheDir(s.getenv)
}

// version returns the lab's version from the build information (VCS stamping).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	// Go stamps the revision into Main.Version (a pseudo-version) when it builds from a
	// repository; a build without VCS information is "(devel)".
	v := bi.Main.Version
	for _, st := range bi.Settings {
		if st.Key == "vcs.revision" && v == "(devel)" && len(st.Value) >= 12 {
			v += " " + st.Value[:12]
		}
		if st.Key == "vcs.modified" && st.Value == "true" && !strings.HasSuffix(v, "+dirty") {
			v += "+dirty"
		}
	}
	return v
}

func newVersionCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the lab's version and the versions it builds",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(s.out, "lab %s\nollama %s (built from its Go module)\ntokenizer %s\n", version(), localserver.OllamaVersion, localserver.TokenizerPackage)
			return nil
		},
	}
}

func newArmsCmd(s *streams) *cobra.Command {
	var file string
	var asJSON bool
	c := &cobra.Command{
		Use:   "arms",
		Short: "List the arms (named sets of measures and practices) lab run can compare",
		Long: `List the arms lab run can compare. Without --file: the built-in ones, one line each. With
--file: only the arms of that YAML file (lab run --arms adds them to the built-in ones), each
with the measures it switches off, every practice with its parameters (defaults filled in) and
the harness behaviour it stands for, and a note on anything lab run refuses in it. The file is
checked as lab run --arms checks it: an error names the file and the line. --json prints the
same arms (the built-in ones, or only the file's) as the manifest records them.`,
		Example: `  lab arms
  lab arms --file my-arms.yaml
  lab arms --file my-arms.yaml --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			list := arms.Builtin()
			if file != "" {
				var err error
				if list, err = loadArmsFile("--file", file); err != nil {
					return err
				}
			}
			if asJSON {
				defs := make([]json.RawMessage, len(list))
				for i, a := range list {
					defs[i] = a.JSON()
					for _, n := range armNotes(a) {
						fmt.Fprintf(s.err, "lab: warning: arm %q (%s): %s\n", a.Name, a.Source, n)
					}
				}
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(defs)
			}
			if file != "" {
				for i, a := range list {
					if i > 0 {
						fmt.Fprintln(s.out)
					}
					fmt.Fprint(s.out, a.Describe())
					for _, n := range armNotes(a) {
						fmt.Fprintf(s.out, "  note: %s\n", n)
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%s\n", a.Name, a.Description)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&file, "file", "", "a YAML arm file (lab run --arms): show only its arms, what each does")
	c.Flags().BoolVar(&asJSON, "json", false, "print the arms' definitions as JSON, as the manifest records them")
	return c
}

// harnessSupports refuses an arm naming a practice the harness does not apply yet
// ([harness.Supported]); tests put a fake in its place.
var harnessSupports = harness.Supported

// loadArmsFile reads a user's arm file, given with flag (lab run's and lab check's --arms, lab
// arms' --file): a problem in it is bad input naming the file and line.
func loadArmsFile(flag, file string) ([]arms.Arm, error) {
	list, err := arms.Load(file)
	if err != nil {
		var se *fileerr.SyntaxError
		if errors.As(err, &se) {
			return nil, &usageError{err} // it names the file already
		}
		return nil, badInput("%s: %v", flag, err)
	}
	return list, nil
}

// knownArms returns the built-in arms and, with file set (--arms), the arms of that file after
// them. An arm of the file that names a practice the harness does not apply yet is bad input,
// refused here, before any backend opens.
func knownArms(file string) ([]arms.Arm, error) {
	if file == "" {
		return arms.Builtin(), nil
	}
	extra, err := loadArmsFile("--arms", file)
	if err != nil {
		return nil, err
	}
	for _, a := range extra {
		if err := harnessSupports(a); err != nil {
			return nil, &usageError{err}
		}
	}
	return arms.Known(extra), nil
}

// churnToolNotes checks the tool each arm's tool_list_churn practice names (arms.ToolListChurn)
// against the tool lists of the scenarios run: a name that is neither a built-in tool
// ([tools.Names]) nor a tool of an MCP server of one of the scenarios is an error; a name
// missing from one scenario's list for that arm (bash without a shell, recall with spec 3.2.0
// §4 off, another scenario's MCP tool) is a warning, one per arm and scenario: the practice
// changes nothing there.
func churnToolNotes(selected []arms.Arm, scs []*scenario.Scenario) (warnings []string, err error) {
	for _, a := range selected {
		p := a.Find("tool_list_churn")
		if p == nil || p.ToolListChurn.Tool == "" || p.ToolListChurn.Change == arms.ChurnAdd {
			continue
		}
		name := p.ToolListChurn.Tool
		known := slices.Contains(tools.Names(), name)
		var missing []string
		for _, sc := range scs {
			offered := false
			for _, t := range tools.ToolList(a.Measures, sc.HasShell()) {
				offered = offered || t.Name == name
			}
			for _, st := range sc.Steps {
				if st.MCP != nil {
					for _, t := range st.MCP.Tools {
						offered = offered || t.Name == name
					}
				}
			}
			known = known || offered
			if !offered {
				missing = append(missing, sc.Name)
			}
		}
		if !known {
			return nil, badInput("arm %q (%s): tool_list_churn: tool %q is neither a tool of the harness (%s) nor a tool of an MCP server of the scenarios run", a.Name, a.Source, name, strings.Join(tools.Names(), ", "))
		}
		for _, sc := range missing {
			warnings = append(warnings, fmt.Sprintf("arm %q (%s): tool_list_churn: tool %q is not in scenario %s's tool list for this arm: the practice changes nothing there", a.Name, a.Source, name, sc))
		}
	}
	return warnings, nil
}

// armNotes are the lines lab arms --file adds under an arm: a practice lab run refuses (the
// harness does not apply it yet), a tool_list_churn tool that is no built-in tool.
func armNotes(a arms.Arm) []string {
	var out []string
	if err := harnessSupports(a); err != nil {
		out = append(out, "lab run refuses this arm: "+strings.TrimPrefix(err.Error(), fmt.Sprintf("arm %q (%s): ", a.Name, a.Source)))
	}
	if p := a.Find("tool_list_churn"); p != nil && p.ToolListChurn.Tool != "" && p.ToolListChurn.Change != arms.ChurnAdd && !slices.Contains(tools.Names(), p.ToolListChurn.Tool) {
		out = append(out, fmt.Sprintf("tool_list_churn: tool %q is not a tool of the harness (%s): lab run refuses it unless a scenario's MCP server offers it", p.ToolListChurn.Tool, strings.Join(tools.Names(), ", ")))
	}
	return out
}
