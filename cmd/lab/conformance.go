package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"lab/conformance"
)

// failedError is returned by a command that ran and found cases, expectations or figures that
// failed: exit code 3. Its message is "<failed> of <total> <what>".
type failedError struct {
	failed, total int
	// what names what failed, in the plural with its verb: "conformance cases failed".
	what string
}

func (e *failedError) Error() string {
	return fmt.Sprintf("%d of %d %s", e.failed, e.total, e.what)
}

// conformanceOptions are `lab conformance`'s flags.
type conformanceOptions struct {
	// Area is the one area to run (context, reasoning or paths); "" runs every area.
	Area string
	// Format is text (a line per failing case and a summary) or json (the report).
	Format string
}

func newConformanceCmd(s *streams) *cobra.Command {
	o := &conformanceOptions{}
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the spec 3.2.0 conformance cases against the lab's implementation",
		Long: `conformance runs the cases of conformance/<area>.json (embedded in the binary) against the
lab's implementation of the context-hygiene spec: context (§1-§7 and §10's note), reasoning (§8),
paths (§11). It prints one line per failing case (id, section, first differing line) and a
closing "N passed, N failed"; --format json prints a JSON report instead. Exit code 3 when any case
fails, 2 for an unknown area.`,
		Example: `  lab conformance
  lab conformance --area context
  lab conformance --format json | jq '.cases[] | select(.passed | not)'`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runConformance(s, o)
		},
	}
	cmd.Flags().StringVar(&o.Area, "area", "", "run one area only: context, reasoning or paths (default: every area)")
	formatFlag(cmd.Flags(), &o.Format, "a line per failing case and a summary")
	return cmd
}

// runConformance is `lab conformance`: the cases of o.Area (every area for ""), run by
// [conformance.RunAreas], written to stdout in o.Format; a *failedError (exit 3) when a case
// failed, a usage error (exit 2) for an unknown area or format.
func runConformance(s *streams, o *conformanceOptions) error {
	if err := checkFormat(o.Format); err != nil {
		return err
	}
	var areas []string
	if o.Area != "" {
		areas = []string{o.Area}
	}
	rep, err := conformance.RunAreas(areas...)
	if errors.Is(err, conformance.ErrUnknownArea) {
		return &usageError{err}
	}
	if err != nil {
		return err
	}
	if o.Format == "json" {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for _, c := range rep.Cases {
			if !c.Passed {
				fmt.Fprintf(s.out, "%s %s %s\n", c.ID, c.Section, c.Error)
			}
		}
		fmt.Fprintf(s.out, "%d passed, %d failed\n", rep.Passed, rep.Failed)
	}
	if rep.Failed > 0 {
		return &failedError{failed: rep.Failed, total: rep.Passed + rep.Failed, what: "conformance cases failed"}
	}
	return nil
}
