// Command lab measures what each context-hygiene measure does to the prompt cache of a real model
// server. See README.md and `lab help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		// The first signal cancels ctx: the command closes its files and ends. Once it has,
		// the default handling comes back, so a second Ctrl-C ends a process that is stuck.
		<-ctx.Done()
		stop()
	}()
	stopProfile := startCPUProfile(os.Getenv, os.Stderr)
	stopTrace := startTrace(os.Getenv, os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopTrace()
	stopProfile()
	stop()
	os.Exit(code)
}
