package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"lab/importer"
	"lab/transcript"
)

// newScenarioCmd is `lab scenario`: the scenarios of your own sessions.
func newScenarioCmd(s *streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "scenario",
		Short: "Make scenarios from your own sessions (lab scenario import)",
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newScenarioImportCmd(s))
	return c
}

// newScenarioImportCmd is `lab scenario import`: one library call (importer.Import) on the
// session one reader (transcript.Readers) reads.
func newScenarioImportCmd(s *streams) *cobra.Command {
	var from, out, name string
	c := &cobra.Command{
		Use:   "import --from claude-code|codex|capture FILE -o DIR",
		Short: "Write a scenario that replays a real agent session or a capture under every arm",
		Long: `Write a scenario into DIR (scenario.yaml, workspace.txtar) from a real session: a Claude Code
session file (--from claude-code), a Codex rollout file (--from codex) or a requests file of
lab proxy --save-requests or lab run --save-requests (--from capture: its longest conversation;
DIR then also holds requests.jsonl, which the capture-as-sent arm sends as it was sent).

The scenario has the person's turns, the model's steps (reasoning, text, tool calls), clock
steps from the session's times and its compactions. workspace.txtar holds what the session's
results show of the files: a read's whole content, taken back through the session's edits
before it; a file only a listing named, empty. A call the workspace cannot answer again (a tool
the lab has not, a shell command, a search, a read of a part of a file never shown whole, an
edit that no longer applies) replays its recorded answer (answer: in scenario.yaml), and a run
names those steps in its manifest and report. Secrets and home paths are redacted. What was
left out is listed under source: in scenario.yaml. A summary of what was kept, mapped,
recorded and skipped is printed.`,
		Example: `  lab scenario import --from capture results/capture/requests-0001-of-0001.jsonl -o my-session
  lab run --backend sim --scenario my-session/scenario.yaml --arm spec,plain
  lab run --backend sim --scenario my-session/scenario.yaml --arm capture-as-sent`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badInput("lab scenario import takes one FILE, the session's file (got %d)", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			read, ok := transcript.Readers[from]
			if !ok {
				return badInput("--from %q: want %s", from, strings.Join(transcript.Formats, ", "))
			}
			if out == "" {
				return badInput("-o DIR: the folder to write the scenario into")
			}
			file := args[0]
			if _, err := os.Stat(file); err != nil {
				return badInput("%s: %v", file, errors.Unwrap(err))
			}
			var opt importer.Options
			opt.Name = name
			var sess *transcript.Session
			var err error
			if from == "capture" {
				var c *transcript.Capture
				if c, err = transcript.ReadCaptureFile(file); err == nil {
					sess, opt.Capture = c.Session, c.Lines
				}
			} else {
				sess, err = read(file)
			}
			if err != nil {
				return &usageError{err}
			}
			sum, err := importer.Import(sess, out, opt)
			if err != nil {
				return err
			}
			printImportSummary(s, sum)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "the session file's format: "+strings.Join(transcript.Formats, ", "))
	f.StringVarP(&out, "output", "o", "", "the folder to write the scenario into (created)")
	f.StringVar(&name, "name", "", "the scenario's name (default: the session's project, else \"imported\")")
	_ = c.MarkFlagRequired("from")
	_ = c.MarkFlagRequired("output")
	return c
}

// printImportSummary prints what an import kept, mapped, recorded and skipped.
func printImportSummary(s *streams, sum *importer.Summary) {
	fmt.Fprintf(s.out, "scenario %s: %s/scenario.yaml\n", sum.Name, sum.Dir)
	fmt.Fprintf(s.out, "  steps: %d user, %d assistant (%d added where the session has no reply), %d compaction, %d clock\n",
		sum.Users, sum.Assistants, sum.Added, sum.Compacts, sum.Clocks)
	fmt.Fprintf(s.out, "  calls: %d, %d of the lab's tools; %d run on the workspace, %d replay their recorded answer\n", sum.Calls, sum.Mapped, sum.Run, sum.Recorded)
	var whys []string
	for w := range sum.RecordedWhy {
		whys = append(whys, w)
	}
	sort.Strings(whys)
	for _, w := range whys {
		fmt.Fprintf(s.out, "    %d: %s\n", sum.RecordedWhy[w], w)
	}
	if len(sum.AgentTools) > 0 {
		fmt.Fprintf(s.out, "  the agent's own tools (in every arm's tool list): %s\n", strings.Join(sum.AgentTools, ", "))
	}
	fmt.Fprintf(s.out, "  workspace: %d files with the content the session showed, %d only listed (empty)\n", sum.Files, sum.Listed)
	fmt.Fprintf(s.out, "  skipped: %d records (listed under source: in scenario.yaml)\n", len(sum.Skipped))
}
