// Command lab measures what each context-hygiene measure does to the prompt cache of a real model
// server. See README.md and `lab help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// sessionGCPercent and sessionMemoryLimit are the garbage collector's settings of the commands
// that run sessions (lab run, lab check) when $GOGC and $GOMEMLIMIT are unset: the heap may grow
// to three times what was live after a collection, not Go's two, but never past 200 MiB while it
// can collect down to it. A run's live heap is mostly long-lived (the tokenizer's vocabulary and
// memo, the sessions' remembered prompts), which every cycle scans again: with Go's defaults the
// sim matrix spent a fifth of its CPU time in the collector. Measured on the sim matrix on 2
// cores, three runs each alternated: 3.6–3.9 s of CPU with Go's defaults, 3.3–3.4 s with these,
// peak RSS 202–211 and 213–223 MiB; a run whose tool argument is 11 MiB peaked at 226 MiB
// instead of 266. backend/sim's tighten still lowers GOGC for a huge request's own steps.
const (
	sessionGCPercent   = 200
	sessionMemoryLimit = 200 << 20
)

// tuneGC applies sessionGCPercent and sessionMemoryLimit for the command args names, when it
// runs sessions and the user set neither $GOGC nor $GOMEMLIMIT.
func tuneGC(args []string, getenv func(string) string) {
	if len(args) == 0 || (args[0] != "run" && args[0] != "check") || getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(sessionGCPercent)
	debug.SetMemoryLimit(sessionMemoryLimit)
}

func main() {
	tuneGC(os.Args[1:], os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// The first signal cancels ctx: the command closes its files and ends. Once it has,
		// the default handling comes back, so a second Ctrl-C ends a process that is stuck.
		<-ctx.Done()
		stop()
	}()
	stopProfile := startCPUProfile(os.Getenv, os.Stderr)
	stopTrace := startTrace(os.Getenv, os.Stderr)
	writeAllocs := startAllocProfile(os.Getenv, os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	writeAllocs()
	stopTrace()
	stopProfile()
	stop()
	os.Exit(code)
}
