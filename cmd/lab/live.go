package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"lab/harness"
	"lab/tools"
)

// liveOptions are `lab run`'s flags for the driver: who decides the assistant's steps,
// and the live driver's bounds and sampling.
type liveOptions struct {
	// Driver is scripted (the scenario's steps) or live (the model decides).
	Driver string
	// MaxSteps bounds the step requests of one live turn.
	MaxSteps int
	// MaxTokens bounds the tokens one live request may generate, reasoning included.
	MaxTokens int
	// TurnTimeout bounds the wall time of one live turn.
	TurnTimeout time.Duration
	// Seed is repetition 1's sampling seed; repetition r uses seed + r − 1.
	Seed int64
	// Temperature is the live sampling temperature.
	Temperature float64
	// ToolTimeout bounds the wall time of one tool call, with either driver.
	ToolTimeout time.Duration
	// UnsandboxedShell lets a live shell run where the machine refuses its sandbox.
	UnsandboxedShell bool
}

// addLiveFlags adds the driver's flags to c.
func addLiveFlags(c *cobra.Command, o *liveOptions) {
	f := c.Flags()
	f.StringVar(&o.Driver, "driver", harness.DriverScripted, "scripted (the scenario gives every assistant step) or live (the model decides; the scenario gives the user turns and the workspace; any --backend)")
	f.IntVar(&o.MaxSteps, "max-steps", harness.DefaultMaxSteps, "with --driver live: the most requests of one turn")
	f.IntVar(&o.MaxTokens, "max-tokens", harness.DefaultMaxTokens, "with --driver live: the most tokens one request may generate, reasoning included (Ollama num_predict, llama-server and Chat Completions max_tokens or max_completion_tokens, Responses max_output_tokens, Anthropic max_tokens: above the thinking budget with --thinking enabled)")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", harness.DefaultTurnTimeout, "with --driver live: the most wall time of one turn")
	f.Int64Var(&o.Seed, "sampling-seed", 42, "with --driver live: the sampling seed of repetition 1 (Ollama option seed, llama-server and Chat Completions seed; the Responses and Anthropic APIs take none); repetition r uses it + r − 1 (--seed is the synthetic model's weights)")
	f.DurationVar(&o.ToolTimeout, "tool-timeout", tools.DefaultToolTimeout, "the most wall time of one tool call (read, list, glob, grep, edit, multiedit, write, apply_patch, recall; a live shell command whose scenario gives no shell timeout), within --turn-timeout; a call past it answers the model that it was stopped, a warning says so, and the run goes on")
	f.BoolVar(&o.UnsandboxedShell, "unsandboxed-shell", false, "with --driver live: where the machine refuses the shell's sandbox (its namespaces and filesystem view), run a scenario's real shell commands anyway with what it allows: a real shell that is not a sandbox, which may write anywhere your user can and, with no namespace at all, reach the network (without it such a machine runs no command)")
	f.Float64Var(&o.Temperature, "temperature", 0.7, "with --driver live: the sampling temperature (Anthropic: 0 to 1, and not sent when a request thinks; OpenAI reasoning models take only 1)")
}

// check validates the driver's flags against the backend, before anything starts. changed
// reports whether a flag was given.
func (o *liveOptions) check(backend string, changed func(name string) bool) error {
	if o.ToolTimeout <= 0 {
		return badInput("--tool-timeout %s: want a duration above 0, such as 30s", o.ToolTimeout)
	}
	switch o.Driver {
	case harness.DriverScripted:
		for _, name := range []string{"max-steps", "max-tokens", "turn-timeout", "sampling-seed", "temperature", "unsandboxed-shell"} {
			if changed(name) {
				return badInput("--%s is for --driver live", name)
			}
		}
		return nil
	case harness.DriverLive:
	default:
		return badInput("--driver %q: want scripted or live", o.Driver)
	}
	switch {
	case o.MaxSteps < 1:
		return badInput("--max-steps %d: want at least 1", o.MaxSteps)
	case o.MaxTokens < 1:
		return badInput("--max-tokens %d: want at least 1", o.MaxTokens)
	case o.TurnTimeout <= 0:
		return badInput("--turn-timeout %s: want a duration above 0", o.TurnTimeout)
	case o.Temperature < 0:
		return badInput("--temperature %g: want 0 or more", o.Temperature)
	case backend == "anthropic" && o.Temperature > 1:
		return badInput("--temperature %g: the Anthropic API takes 0 to 1", o.Temperature)
	case backend == "openai" && o.Temperature > 2:
		return badInput("--temperature %g: OpenAI-compatible APIs take 0 to 2", o.Temperature)
	}
	return nil
}

// driver is the harness's driver for the flags.
func (o *liveOptions) driver() harness.Driver {
	if o.Driver != harness.DriverLive {
		return harness.Driver{ToolTimeout: o.ToolTimeout}
	}
	return harness.Driver{Mode: harness.DriverLive, MaxSteps: o.MaxSteps, MaxTokens: o.MaxTokens, TurnTimeout: o.TurnTimeout, Seed: o.Seed, ToolTimeout: o.ToolTimeout, UnsandboxedShell: o.UnsandboxedShell}
}

// record writes the driver and, for a live run, its bounds and sampling into the manifest's
// settings.
func (o *liveOptions) record(settings map[string]string) {
	settings["tool_timeout"] = o.ToolTimeout.String()
	if o.Driver != harness.DriverLive {
		settings["driver"] = harness.DriverScripted
		return
	}
	settings["driver"] = harness.DriverLive
	settings["max_steps"] = fmt.Sprint(o.MaxSteps)
	settings["max_tokens"] = fmt.Sprint(o.MaxTokens)
	settings["turn_timeout"] = o.TurnTimeout.String()
	settings["seed"] = fmt.Sprintf("%d (repetition r: seed + r − 1)", o.Seed)
	settings["temperature"] = fmt.Sprint(o.Temperature)
	settings["unsandboxed_shell"] = fmt.Sprint(o.UnsandboxedShell)
}
