package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"lab/metrics"
)

// lostRowsError is the error of a command that read or repaired runs whose journals lost rows
// (lines cut short by a kill, or corrupt), or whose parts could not be repaired: exit code 1.
// The lines are named on stderr before it.
type lostRowsError struct{ msg string }

func (e *lostRowsError) Error() string { return e.msg }

// warnLost writes one warning line per journal line lost (file:line: why) to w.
func warnLost(w io.Writer, bad []metrics.BadLine) {
	for _, b := range bad {
		fmt.Fprintf(w, "lab: %s: skipped, its row is lost\n", b)
	}
}

func newRepairCmd(s *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "repair RUN...",
		Short: "Write the part files a killed run left unfinished from their journals",
		Long: `repair makes a run folder whose run was killed (SIGKILL, a crash, a power cut) whole again,
without measuring anything again. Each part whose Parquet file is missing or has no footer gets
its file written from the rows of its journal (part-000i-of-000n.journal.jsonl), atomically, with
the run's metadata; its manifest records the repair (when, by which lab, how many rows; complete
stays false for a run that did not complete); then the journal and the unfinished file go.

A journal line that holds no sample (the last one cut short by the kill, or a corrupt one) is
named (file:line) and skipped; every other row is kept. A part that a lab process is still
writing is left alone. A folder of the old layout (manifest.json, samples.parquet) is read only:
repair names it and writes nothing into it (lab report reads a killed old run's rows from its
journal as they are). RUN is a run folder or a quoted glob, as for lab report.

repair exits 1 when a row was lost or a part could not be repaired, 2 for a folder that holds no
run, whose manifest does not read (naming its file and line) or of the old layout, and 0
otherwise, a run with nothing to repair included.`,
		Example: `  lab repair results/run_id=20261129-231502
  lab repair 'results/run_id=*'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dirs, err := expandRuns(args, s.err)
			if err != nil {
				return err
			}
			var lost, failed, kept int
			var old []string
			for _, d := range dirs {
				parts, err := metrics.RepairRun(d, version(), time.Now())
				if errors.Is(err, metrics.ErrOldLayout) {
					// Read only: named, left as it is, and the other folders repaired.
					fmt.Fprintf(s.err, "lab: %v\n", err)
					old = append(old, d)
					continue
				}
				if err != nil {
					// A folder that holds no run, or whose manifest does not read: bad input,
					// as for lab report.
					return badInput("%v", err)
				}
				l, f, k := printRepair(s, d, parts)
				lost, failed, kept = lost+l, failed+f, kept+k
			}
			if lost == 0 && failed == 0 {
				if len(old) > 0 {
					return badInput("%s of the old layout, read only: not repaired (see above)", strings.Join(old, ", "))
				}
				return nil
			}
			var why []string
			if lost > 0 {
				why = append(why, fmt.Sprintf("%d %s lost (named above)", lost, plural(lost, "row", "rows")))
			}
			if failed > 0 {
				why = append(why, fmt.Sprintf("%d %s not repaired", failed, plural(failed, "part", "parts")))
			}
			msg := strings.Join(why, ", ")
			if kept > 0 {
				msg += fmt.Sprintf("; %d rows kept in the repaired parts", kept)
			}
			return &lostRowsError{msg}
		},
	}
}

// printRepair writes what RepairRun did in the run folder dir, one line per part that needed
// something (or one line saying the run is whole), and the journal lines lost to stderr. It
// returns the rows lost, the parts that could not be repaired and the rows written.
func printRepair(s *streams, dir string, parts []metrics.PartRepair) (lost, failed, kept int) {
	whole, rows := 0, 0
	for i := range parts {
		p := &parts[i]
		name := filepath.Base(p.File)
		switch p.Action {
		case metrics.RepairWhole:
			whole++
			rows += p.Rows
			if p.Note != "" {
				fmt.Fprintf(s.out, "%s: part %s: %s is whole (%d rows); %s\n", dir, p.Shard, name, p.Rows, p.Note)
			}
		case metrics.RepairNoRows:
			whole++
		case metrics.RepairWritten:
			kept += p.Rows
			var removed []string
			for _, r := range p.Removed {
				removed = append(removed, filepath.Base(r))
			}
			fmt.Fprintf(s.out, "%s: part %s: wrote %s from %s: %d rows", dir, p.Shard, name, filepath.Base(p.Journal), p.Rows)
			if len(p.Lost) > 0 {
				fmt.Fprintf(s.out, ", %d journal %s skipped", len(p.Lost), plural(len(p.Lost), "line", "lines"))
			}
			fmt.Fprintf(s.out, "; the manifest records the repair; removed %s\n", strings.Join(removed, ", "))
			warnLost(s.err, p.Lost)
			lost += len(p.Lost)
			if n := p.Counted - p.Rows - len(p.Lost); n > 0 {
				fmt.Fprintf(s.err, "lab: %s: part %s: its manifest counted %d rows, the journal held %d\n", dir, p.Shard, p.Counted, p.Rows+len(p.Lost))
				lost += n
			}
		case metrics.RepairFailed:
			failed++
			fmt.Fprintf(s.err, "lab: %s: part %s: not repaired: %v\n", dir, p.Shard, p.Err)
		}
	}
	if whole == len(parts) {
		fmt.Fprintf(s.out, "%s: whole (%d %s, %d rows): nothing to repair\n", dir, len(parts), plural(len(parts), "part", "parts"), rows)
	}
	return lost, failed, kept
}

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
