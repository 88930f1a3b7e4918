package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"lab/arms"
	"lab/chat"
	"lab/harness"
	"lab/metrics"
)

// reliabilityOptions are `lab run`'s flags for server faults and interrupts.
type reliabilityOptions struct {
	// Retries is how often a request that failed with a retryable error is sent again.
	Retries int
	// RequestTimeout bounds each attempt of each request.
	RequestTimeout time.Duration
	// Resume is the folder of a run to carry on (--resume results/run_id=<run-id>).
	Resume string
}

// settingRunFlags is the manifest setting that records the flags a run was started with, as a
// JSON object (flag name → value), for `lab run --resume`; a resume that gives a new server
// address records it there.
const settingRunFlags = metrics.SettingRunFlags

// notRecorded are the flags that do not describe what a run measures: not recorded in the
// manifest, and the only ones (with resumeAllows) that --resume takes.
var notRecorded = []string{"resume", "run-id", "results", "quiet", "png", "progress", "list-files", "retries", "request-timeout"}

// resumeAllows are the flags --resume takes beside notRecorded's: where things are on this
// machine, which a resumed run may need to find again.
var resumeAllows = []string{"quiet", "png", "progress", "list-files", "retries", "request-timeout", "cache", "key-file", "resume", "shard"}

// resumeAddresses are the recorded flags --resume may change: where the model server is now
// (a server that moved, or came back on another port). The new value replaces the run's in
// its recorded flags; the manifest keeps every address ([metrics.SettingServerURLs]).
var resumeAddresses = []string{"server", "base-url", "server-log"}

// urlFlags are the recorded flags whose value is a server's URL, recorded with its credentials
// redacted ([chat.RedactedURL]).
var urlFlags = []string{"server", "base-url"}

func addReliabilityFlags(c *cobra.Command, o *reliabilityOptions) {
	f := c.Flags()
	f.IntVar(&o.Retries, "retries", harness.DefaultAttempts-1, "times a request is sent again after a connection refused or reset, a timeout, HTTP 408, 429 or 5xx, or a stream cut short (waits 1s, 2s, 4s…, or the server's Retry-After, up to 1m)")
	f.DurationVar(&o.RequestTimeout, "request-timeout", harness.DefaultRequestTimeout, "the longest one request may take, its whole streamed answer included; a request that takes longer is retried")
	f.StringVar(&o.Resume, "resume", "", "carry on the run in this folder (results/run_id=<run-id>) that stopped early: keeps its completed sessions, runs the others, with the run's own settings; a run split into shards is resumed one shard at a time, named with --shard i/n; --server, --server-log or --base-url point it at a server that moved (the manifest keeps every address)")
}

// policy is the retry policy the options give: Retries+1 attempts, each within RequestTimeout.
func (r *reliabilityOptions) policy() harness.RetryPolicy {
	return harness.RetryPolicy{Attempts: r.Retries + 1, RequestTimeout: r.RequestTimeout}
}

// runCall is what runConfig needs from the command line beyond the harness.RunConfig each
// backend builds: the retry policy, the resume, and the flags to record.
type runCall struct {
	retry  harness.RetryPolicy
	resume bool
	flags  map[string]string
	// armsFromRun are a resumed run's arms of a user's file (--arms) as its manifest defines
	// them (arm_definitions): the run carries on with the arms it started with, wherever the
	// file is now and whatever it says.
	armsFromRun []arms.Arm
}

// prepareRun validates the reliability flags and, with --resume, sets every other flag as the
// run was started with (its manifest's lab_run_flags) and the results folder and run id to the
// run's. It returns what runConfig applies to the run's configuration.
func prepareRun(cmd *cobra.Command, o *runOptions) (*runCall, error) {
	r := &o.Reliability
	if r.Retries < 0 {
		return nil, badInput("--retries %d: want 0 or more", r.Retries)
	}
	if r.RequestTimeout <= 0 {
		return nil, badInput("--request-timeout %s: want a positive duration, such as 5m", r.RequestTimeout)
	}
	call := &runCall{retry: r.policy()}
	f := cmd.Flags()
	if r.Resume != "" {
		var given []string
		moved := map[string]string{} // the address flags given, with their new values
		f.Visit(func(fl *pflag.Flag) {
			switch {
			case slices.Contains(resumeAddresses, fl.Name):
				moved[fl.Name] = flagValue(fl)
			case !slices.Contains(resumeAllows, fl.Name):
				given = append(given, "--"+fl.Name)
			}
		})
		if len(given) > 0 {
			return nil, badInput("--resume carries on a run with its own settings: drop %s", strings.Join(given, ", "))
		}
		// A run split into shards is resumed one shard at a time: --shard names it.
		var shard metrics.Shard
		if fl := f.Lookup("shard"); fl != nil && fl.Changed {
			s, err := metrics.ParseShard(fl.Value.String())
			if err != nil {
				return nil, badInput("--shard: %v", err)
			}
			shard = s
		}
		man, err := metrics.ReadResumeManifest(r.Resume, shard)
		if errors.Is(err, fs.ErrNotExist) && metrics.IsRunDir(r.Resume) {
			return nil, badInput("--resume %s --shard %s: that shard never started here (the run has no manifest of it): start it with lab run --run-id %s --shard %s and the run's other flags", r.Resume, shard, strings.TrimPrefix(filepath.Base(filepath.Clean(r.Resume)), "run_id="), shard)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, badInput("--resume %s: no manifest there: not a run folder", r.Resume)
		}
		if err != nil {
			return nil, &usageError{fmt.Errorf("--resume: %w", err)}
		}
		if man.Complete {
			return nil, badInput("--resume %s: the run is complete; nothing to resume", r.Resume)
		}
		flags := map[string]string{}
		if raw := man.Settings[settingRunFlags]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &flags); err != nil {
				return nil, badInput("--resume %s: setting %s: %v", r.Resume, settingRunFlags, err)
			}
		} else {
			// A run made before the flags were recorded: what its manifest says.
			flags = map[string]string{"scenario": strings.Join(man.Scenarios, ","), "arm": strings.Join(man.Arms, ","),
				"repeat": strconv.Itoa(man.Repetitions), "backend": man.Backend, "model": man.Model}
		}
		if flags["arms"] != "" && len(man.ArmDefinitions) == len(man.Arms) {
			call.armsFromRun = []arms.Arm{}
			for i, raw := range man.ArmDefinitions {
				a, err := arms.FromJSON(raw)
				if err != nil {
					return nil, badInput("--resume %s: arm %s's definition: %v", r.Resume, man.Arms[i], err)
				}
				if a.Source != arms.BuiltinFile {
					call.armsFromRun = append(call.armsFromRun, a)
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(flags)) {
			if name == "arms" && call.armsFromRun != nil {
				continue // the definitions stand for the file (recorded again as it was)
			}
			fl := f.Lookup(name)
			if fl == nil || slices.Contains(notRecorded, name) {
				return nil, badInput("--resume %s: the run was started with --%s, which this lab run does not take", r.Resume, name)
			}
			if _, ok := moved[name]; ok {
				continue // the new address given on this command line
			}
			if err := setFlag(fl, flags[name]); err != nil {
				return nil, badInput("--resume %s: --%s %q: %v", r.Resume, name, flags[name], err)
			}
		}
		maps.Copy(flags, moved)
		o.ResultsDir, o.RunID = filepath.Dir(filepath.Clean(r.Resume)), filepath.Base(filepath.Clean(r.Resume))
		call.resume, call.flags = true, flags
		return call, nil
	}
	call.flags = map[string]string{}
	f.Visit(func(fl *pflag.Flag) {
		if slices.Contains(notRecorded, fl.Name) {
			return
		}
		v := flagValue(fl)
		// A file named on the command line is read again by a resume, from wherever it runs.
		if (fl.Name == "scenario" && isScenarioPath(v)) || (fl.Name == "arms" && v != "") {
			if abs, err := filepath.Abs(v); err == nil {
				v = abs
			}
		}
		call.flags[fl.Name] = v
	})
	return call, nil
}

// isScenarioPath reports a --scenario value that is a file, as loadScenarios tells them apart.
func isScenarioPath(v string) bool {
	return strings.HasSuffix(v, ".yaml") || strings.HasSuffix(v, ".yml") || strings.HasSuffix(v, ".json") || strings.ContainsRune(v, filepath.Separator)
}

// flagValue is a flag's value as setFlag takes it back: a list flag's items joined by commas.
func flagValue(fl *pflag.Flag) string {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return fl.Value.String()
}

// setFlag sets fl from flagValue's text.
func setFlag(fl *pflag.Flag, v string) error {
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		var items []string
		if v != "" {
			items = strings.Split(v, ",")
		}
		fl.Changed = true
		return sv.Replace(items)
	}
	fl.Changed = true
	return fl.Value.Set(v)
}

// apply gives cfg the command line's retry policy, resume and recorded flags (lab check's run
// has its own: [checkRunOptions]); a nil call leaves cfg as it is.
func (call *runCall) apply(cfg *harness.RunConfig) {
	if call == nil {
		return
	}
	cfg.Retry, cfg.Resume = call.retry, call.resume
	// An address is recorded with its password redacted: a resume of a server behind one gives
	// --base-url (or --server) again.
	recorded := maps.Clone(call.flags)
	for _, name := range urlFlags {
		if v, ok := recorded[name]; ok {
			recorded[name] = chat.RedactedURL(v)
		}
	}
	if b, err := json.Marshal(recorded); err == nil {
		settings := map[string]string{settingRunFlags: string(b)}
		for k, v := range cfg.Settings {
			settings[k] = v
		}
		cfg.Settings = settings
	}
}

// resumeHint is the line that tells how to carry on an incomplete run.
func resumeHint(dir string) string {
	return fmt.Sprintf("  carry on with: lab run --resume %s", dir)
}
