package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"lab/check"
	"lab/metrics"
	"lab/scenarios"
)

// checkOptions are `lab check`'s flags.
type checkOptions struct {
	// File is the check file (the argument).
	File string
	// Backend is sim (the default) or ollama: where the file's scenarios run.
	Backend string
	// Run is an existing run folder to evaluate instead of running.
	Run string
	// ArmsFile is a user's arm file (--arms): its arms are known to the check file.
	ArmsFile string
	// Results, when set, keeps the run in Results/<run-id>/ instead of a temporary folder.
	Results string
	// CacheDir is the cache folder (tokenizer, server build); "" for the default.
	CacheDir string
	// Format is text (one line per failure and a summary) or json (one document).
	Format string
	Quiet  bool
	// PNG is --png: with Results, the kept run's charts as PNG too, beside their SVG.
	PNG bool
}

func newCheckCmd(s *streams) *cobra.Command {
	o := &checkOptions{}
	c := &cobra.Command{
		Use:   "check FILE",
		Short: "Run scenarios and check declared expectations (the CI gate)",
		Long: `check reads a check file (format: checks/README.md), runs the scenarios × arms it lists on the
sim backend (deterministic, seconds; --backend ollama runs them on the local server as lab run
does) and checks every expectation against the samples: a least cached share from a given request
on, no divergence before a given segment, a most re-read tokens per scenario × arm. With --run it
evaluates an existing run folder instead and runs nothing.

It prints one line per failure (scenario, arm, repetition, request, first divergent segment,
and the expectation's file:line) and a summary "N expectations, N held, N failed"; --format json
prints one JSON document instead. Exit codes: 0 every expectation held, 3 one failed, 2 bad input (a
flag, a check file error "file:line: message"), 1 could not run.`,
		Example: `  lab check checks/ci.yaml
  lab check checks/ci.yaml --format json | jq '.expectations[] | select(.status == "failed")'
  lab check checks/ci.yaml --run results/run_id=20261129-231502
  lab check checks/ci.yaml --backend ollama --results results`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			return runCheck(cmd.Context(), s, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Backend, "backend", "sim", "where to run the scenarios: sim (simulated, no server) or ollama (the local server)")
	f.StringVar(&o.ArmsFile, "arms", "", "a YAML file of arms of your own (as lab run --arms): the check file's arms and expectations may name them")
	f.StringVar(&o.Run, "run", "", "evaluate this run folder (results/run_id=<run-id>, every shard of it) instead of running")
	f.StringVar(&o.Results, "results", "", "keep the run in this folder's run_id=<run-id>/ (default: a temporary folder, removed afterwards)")
	f.BoolVar(&o.PNG, "png", false, "with --results: also write each chart of the kept run's report as a PNG beside its SVG")
	f.StringVar(&o.CacheDir, "cache", "", "cache folder for the tokenizer and the built server (default $LAB_CACHE or ~/.cache/lab)")
	formatFlag(f, &o.Format, "a line per failure and a summary")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress output")
	return c
}

func runCheck(ctx context.Context, s *streams, o *checkOptions) error {
	if err := checkFormat(o.Format); err != nil {
		return err
	}
	if o.PNG && o.Results == "" {
		return badInput("--png writes the kept run's charts: it needs --results")
	}
	if o.Run != "" && (o.Results != "" || o.Backend != "sim") {
		return badInput("--run evaluates a run folder and runs nothing: drop --backend and --results")
	}
	if o.Backend != "sim" && o.Backend != "ollama" {
		return badInput("--backend %q: want sim or ollama", o.Backend)
	}
	known := check.Known{Scenarios: scenarios.Names()}
	knownList, err := knownArms(o.ArmsFile)
	if err != nil {
		return err
	}
	for _, a := range knownList {
		known.Arms = append(known.Arms, a.Name)
	}

	// --run: the run folder's own scenarios and arms (a scenario loaded from a path) are known too.
	var samples []metrics.Sample
	var runs []*metrics.Manifest
	if o.Run != "" {
		// A folder that is missing, or whose manifest or samples cannot be read, is not a
		// readable run: bad input, as for lab report.
		man, ss, err := metrics.ReadRun(o.Run)
		if err != nil {
			return badInput("--run %s: not a readable run: %v", o.Run, err)
		}
		if !man.Complete {
			why := ""
			if man.Error != "" {
				why = ": " + man.Error
			}
			fmt.Fprintf(s.err, "lab: warning: run %s is incomplete (%d requests measured%s): the sessions that did not complete are left out, the expectations are checked on those that did\n", o.Run, man.Samples, why)
		}
		known.Scenarios = union(known.Scenarios, man.Scenarios)
		known.Arms = union(known.Arms, man.Arms)
		samples, runs = ss, []*metrics.Manifest{man}
	}
	file, err := check.Load(o.File, known)
	if err != nil {
		// A check file that is missing or wrong is bad input: exit 2.
		return &usageError{err}
	}
	if o.Run == "" {
		if runs, samples, err = runCheckMatrix(ctx, s, o, file); err != nil {
			return err
		}
	}

	res := check.EvaluateRuns(file, runs, samples)
	if o.Format == "json" {
		err = check.WriteJSON(s.out, res)
	} else {
		err = check.WriteText(s.out, res)
	}
	if err != nil {
		return err
	}
	if !res.OK() {
		return &failedError{failed: res.Failed, total: len(res.Expectations), what: "expectations failed"}
	}
	return nil
}

// runCheckMatrix runs the file's scenarios × arms as `lab run` runs them ([runMatrix], with
// [checkRunOptions]) and reads the manifest and samples back. With --results the run's folder is
// kept and reported as lab run reports it; else it is a temporary folder, removed afterwards.
func runCheckMatrix(ctx context.Context, s *streams, o *checkOptions, file *check.File) ([]*metrics.Manifest, []metrics.Sample, error) {
	if len(file.Scenarios) == 0 {
		return nil, nil, badInput("%s: nothing to run: list the scenarios under scenarios:, or name one in an expectation", file.Path)
	}
	if len(file.Arms) == 0 {
		return nil, nil, badInput("%s: nothing to run: list the arms under arms:, or name one in an expectation", file.Path)
	}
	ro := checkRunOptions(s, o, file)
	if o.Results == "" {
		dir, err := os.MkdirTemp("", "lab-check-")
		if err != nil {
			return nil, nil, fmt.Errorf("create a results folder: %w", err)
		}
		defer os.RemoveAll(dir)
		ro.ResultsDir = dir
	}
	dir, man, err := runMatrix(ctx, s, ro)
	if dir != "" && o.Results != "" {
		// The kept folder is reported as lab run reports it; its "results: ..." lines go to
		// stdout unless stdout carries JSON.
		s2 := *s
		if o.Format == "json" {
			s2.out = io.Discard
		}
		err = errors.Join(err, reportRun(&s2, dir, man, ro.shard, runOutput{noSummary: true, listFiles: true, png: o.PNG}))
	}
	if err != nil {
		return nil, nil, err
	}
	man, samples, err := metrics.ReadRun(dir)
	if err != nil {
		return nil, nil, err
	}
	return []*metrics.Manifest{man}, samples, nil
}

// checkRunFlags are the flags of `lab run` that a check's run sets from its check file and
// --backend, recorded in the manifest as lab run records its flags ([metrics.SettingRunFlags]):
// lab check and `lab run --backend B --scenario S --arm A --repeat N` record the same run.
var checkRunFlags = []string{"backend", "scenario", "arm", "repeat"}

// checkRunOptions returns the options of the run lab check makes of file: those of `lab run`
// with no flags ([runDefaults]) but the file's scenarios, arms and repetitions, o's backend,
// cache folder and quiet, in a new run folder of o.Results named check-<nanoseconds> (the run id
// names only the results folder; the sandbox path does not depend on it). The flags set
// ([checkRunFlags]) are recorded as given, with lab run's default retry policy.
func checkRunOptions(s *streams, o *checkOptions, file *check.File) *runOptions {
	ro := runDefaults(s)
	ro.Backend = o.Backend
	ro.Scenario = strings.Join(file.Scenarios, ",")
	ro.Arm = strings.Join(file.Arms, ",")
	ro.ArmsFile = o.ArmsFile
	ro.Repeat = file.Repeat
	ro.CacheDir = o.CacheDir
	ro.Quiet = o.Quiet
	// The nanoseconds keep two checks started in the same second apart.
	ro.RunID = fmt.Sprintf("check-%09d", time.Now().UnixNano()%1e9)
	ro.ResultsDir = o.Results
	flags := map[string]string{"backend": ro.Backend, "scenario": ro.Scenario, "arm": ro.Arm, "repeat": strconv.Itoa(ro.Repeat)}
	if o.ArmsFile != "" {
		flags["arms"] = o.ArmsFile
	}
	ro.call = &runCall{retry: ro.Reliability.policy(), flags: flags}
	ro.changed = func(name string) bool { _, ok := flags[name]; return ok }
	return ro
}

// runDefaults returns the options `lab run` has with no flags: those its flags hold before a
// command line is parsed, every flag's default (none read back from its text).
func runDefaults(s *streams) *runOptions {
	_, o := runCommand(s)
	return o
}

// union returns a with the names of b it lacks appended.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
